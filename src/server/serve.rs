//! Serving the gRPC router until a signal, then draining: RPCs in flight finish, the socket
//! is removed.

use std::future::Future;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tonic::codegen::http;
use tonic::transport::server::Router;
use tower::{Layer, Service};

use super::authority::AuthorityFix;
use super::endpoint::Listener;
use super::tracker::RpcTracker;

/// After the last RPC's response body ended: time for connections to flush and close.
const FLUSH_WINDOW: Duration = Duration::from_millis(300);

/// Serve `router` until `shutdown` resolves; then stop accepting, give in-flight RPCs
/// `grace` to finish, and remove the socket.
pub async fn serve<L>(
    router: Router<L>,
    listener: Listener,
    shutdown: impl Future<Output = ()> + Send + 'static,
    grace: Duration,
    rpcs: Arc<RpcTracker>,
) -> Result<(), String>
where
    L: Layer<tonic::service::Routes> + Send + 'static,
    L::Service: Service<http::Request<tonic::body::Body>, Response = http::Response<tonic::body::Body>>
        + Clone
        + Send
        + 'static,
    <L::Service as Service<http::Request<tonic::body::Body>>>::Future: Send + 'static,
    <L::Service as Service<http::Request<tonic::body::Body>>>::Error:
        Into<Box<dyn std::error::Error + Send + Sync>> + Send,
{
    let (signal_tx, signal_rx) = tokio::sync::oneshot::channel::<()>();
    let stop = async move {
        let _ = signal_rx.await;
    };
    let (socket, server) = match listener {
        Listener::Unix(path, l) => {
            // Every Unix connection's header blocks pass through AuthorityFix (see there).
            let incoming = tokio_stream::StreamExt::map(
                tokio_stream::wrappers::UnixListenerStream::new(l),
                |conn| conn.map(AuthorityFix::new),
            );
            let fut = router.serve_with_incoming_shutdown(incoming, stop);
            (Some(path), tokio::spawn(fut))
        }
        Listener::Tcp(l) => {
            let incoming = tokio_stream::wrappers::TcpListenerStream::new(l);
            let fut = router.serve_with_incoming_shutdown(incoming, stop);
            (None, tokio::spawn(fut))
        }
    };
    let mut server = server;
    tokio::select! {
        res = &mut server => {
            remove_socket(socket.as_deref());
            return match res {
                Ok(Ok(())) => Ok(()),
                Ok(Err(e)) => Err(format!("gRPC server failed: {e}")),
                Err(e) => Err(format!("gRPC server task failed: {e}")),
            };
        }
        _ = shutdown => {}
    }
    tracing::info!(
        grace_seconds = grace.as_secs(),
        "shutting down: no new connections, draining in-flight RPCs"
    );
    // The socket goes first so nothing new can connect while in-flight RPCs drain.
    remove_socket(socket.as_deref());
    let _ = signal_tx.send(());
    // The server future ends only when every client has closed its connection, and sidecars
    // keep theirs open; so the drain ends when no RPC is in flight any more.
    let drained = async {
        tokio::select! {
            _ = &mut server => true,
            _ = rpcs.drained() => false,
        }
    };
    match tokio::time::timeout(grace, drained).await {
        Ok(server_done) => {
            if !server_done {
                // Last responses may still sit in connection buffers: give open connections
                // a moment to flush and close before cutting them.
                let _ = tokio::time::timeout(FLUSH_WINDOW, &mut server).await;
            }
            tracing::info!("all RPCs finished; stopped")
        }
        Err(_) => tracing::warn!(
            in_flight = rpcs.in_flight(),
            "in-flight RPCs did not finish within the grace period; aborting them"
        ),
    }
    server.abort();
    Ok(())
}

fn remove_socket(path: Option<&Path>) {
    if let Some(p) = path {
        match std::fs::remove_file(p) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => tracing::warn!(path = %p.display(), error = %e, "cannot remove socket"),
        }
    }
}

/// Resolves on the first SIGTERM or SIGINT.
pub async fn shutdown_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler");
    let mut int = signal(SignalKind::interrupt()).expect("SIGINT handler");
    let name = tokio::select! {
        _ = term.recv() => "SIGTERM",
        _ = int.recv() => "SIGINT",
    };
    tracing::info!(signal = name, "received signal");
}
