//! gRPC server on a Unix socket (or TCP for debugging) with graceful shutdown and one
//! tracing span per RPC.

use std::future::Future;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tonic::codegen::http;
use tonic::transport::server::Router;
use tower::{Layer, Service};
use tracing::Instrument;

use crate::metrics::Metrics;

mod authority;
pub use authority::AuthorityFix;

/// Where to listen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    Unix(PathBuf),
    Tcp(String),
}

impl Endpoint {
    /// Parse `unix:///abs/path`, `unix:/abs/path`, `unix://dir/path` or `tcp://host:port`.
    ///
    /// `unix://csi/csi.sock` (upstream's manifests and chart) is `/csi/csi.sock`, as upstream
    /// reads it: Go's `net/url` takes `csi` as the host and `/csi.sock` as the path, joins them
    /// and roots the result. The path is cleaned lexically the same way (`//`, `.`, `..`).
    pub fn parse(s: &str) -> Result<Self, String> {
        let scheme_is = |p: &str| s.get(..p.len()).is_some_and(|h| h.eq_ignore_ascii_case(p));
        if scheme_is("unix:") {
            let rest = &s["unix:".len()..];
            let path = if let Some(after) = rest.strip_prefix("//") {
                // Host and path alike become the path (`unix://csi/csi.sock`).
                format!("/{after}")
            } else if rest.starts_with('/') {
                rest.to_string()
            } else {
                return Err(format!(
                    "--endpoint {s:?}: the socket path must be absolute, e.g. unix:///csi/csi.sock"
                ));
            };
            let path = clean_path(&path);
            if path == Path::new("/") {
                return Err(format!(
                    "--endpoint {s:?}: no socket path, e.g. unix:///csi/csi.sock"
                ));
            }
            return Ok(Self::Unix(path));
        }
        if scheme_is("tcp://") {
            let rest = &s["tcp://".len()..];
            if rest.is_empty() || !rest.contains(':') {
                return Err(format!("--endpoint {s:?}: expected tcp://host:port"));
            }
            return Ok(Self::Tcp(rest.to_string()));
        }
        Err(format!(
            "--endpoint {s:?}: expected unix:///abs/path.sock or tcp://host:port"
        ))
    }
}

/// Lexical cleaning of an absolute path, like Go's `path.Clean`: repeated `/` and `.` go,
/// `..` removes the previous element (and stays at `/`).
fn clean_path(p: &str) -> PathBuf {
    let mut parts: Vec<&str> = Vec::new();
    for part in p.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            other => parts.push(other),
        }
    }
    PathBuf::from(format!("/{}", parts.join("/")))
}

/// Socket mode: kubelet and the sidecars run as root or in the socket's group.
pub const SOCKET_MODE: u32 = 0o660;

/// Prepare a Unix socket path: create the parent directory and remove a stale socket. Any
/// other kind of file at the path is refused rather than deleted.
pub fn prepare_socket_path(path: &Path) -> Result<(), String> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| format!("cannot create socket directory {}: {e}", parent.display()))?;
    }
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_socket() => std::fs::remove_file(path)
            .map_err(|e| format!("cannot remove stale socket {}: {e}", path.display())),
        Ok(_) => Err(format!(
            "{} exists and is not a socket; refusing to remove it",
            path.display()
        )),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(format!("cannot inspect {}: {e}", path.display())),
    }
}

/// Bind the Unix listener with mode 0660.
pub fn bind_unix(path: &Path) -> Result<tokio::net::UnixListener, String> {
    prepare_socket_path(path)?;
    let listener = tokio::net::UnixListener::bind(path)
        .map_err(|e| format!("cannot listen on {}: {e}", path.display()))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(SOCKET_MODE))
        .map_err(|e| format!("cannot set mode of {}: {e}", path.display()))?;
    Ok(listener)
}

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

/// After the last RPC's response body ended: time for connections to flush and close.
const FLUSH_WINDOW: Duration = Duration::from_millis(300);

/// Counts RPCs in flight so shutdown knows when the drain is over.
#[derive(Default)]
pub struct RpcTracker {
    count: AtomicUsize,
    idle: tokio::sync::Notify,
}

impl RpcTracker {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    pub fn in_flight(&self) -> usize {
        self.count.load(Ordering::SeqCst)
    }

    fn enter(self: &Arc<Self>) -> RpcGuard {
        self.count.fetch_add(1, Ordering::SeqCst);
        RpcGuard(self.clone())
    }

    /// Resolves once no RPC is in flight (at once if none is).
    async fn drained(&self) {
        loop {
            let idle = self.idle.notified();
            if self.in_flight() == 0 {
                return;
            }
            idle.await;
        }
    }
}

/// Dropped when an RPC's response body is done or dropped (also on cancellation).
struct RpcGuard(Arc<RpcTracker>);

/// A response body that holds its RPC's guard until the body ends.
struct GuardedBody {
    body: tonic::body::Body,
    _guard: RpcGuard,
}

impl http_body::Body for GuardedBody {
    type Data = hyper::body::Bytes;
    type Error = tonic::Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

impl Drop for RpcGuard {
    fn drop(&mut self) {
        if self.0.count.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.idle.notify_waiters();
        }
    }
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

/// A bound listener.
pub enum Listener {
    Unix(PathBuf, tokio::net::UnixListener),
    Tcp(tokio::net::TcpListener),
}

impl Listener {
    pub async fn bind(endpoint: &Endpoint) -> Result<Self, String> {
        match endpoint {
            Endpoint::Unix(path) => Ok(Self::Unix(path.clone(), bind_unix(path)?)),
            Endpoint::Tcp(addr) => tokio::net::TcpListener::bind(addr)
                .await
                .map(Self::Tcp)
                .map_err(|e| format!("cannot listen on tcp://{addr}: {e}")),
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

/// Tower layer opening one span per RPC: `rpc{method=… volume_id=…}`. Handlers record the
/// volume id; the request body (which may hold secrets) is never logged.
/// It also feeds the RPC metrics.
#[derive(Clone)]
pub struct RpcSpanLayer {
    metrics: Arc<Metrics>,
    rpcs: Arc<RpcTracker>,
}

impl RpcSpanLayer {
    pub fn new(metrics: Arc<Metrics>, rpcs: Arc<RpcTracker>) -> Self {
        Self { metrics, rpcs }
    }
}

impl<S> Layer<S> for RpcSpanLayer {
    type Service = RpcSpan<S>;
    fn layer(&self, inner: S) -> Self::Service {
        RpcSpan {
            inner,
            metrics: self.metrics.clone(),
            rpcs: self.rpcs.clone(),
        }
    }
}

#[derive(Clone)]
pub struct RpcSpan<S> {
    inner: S,
    metrics: Arc<Metrics>,
    rpcs: Arc<RpcTracker>,
}

impl<S, B> Service<http::Request<B>> for RpcSpan<S>
where
    S: Service<http::Request<B>, Response = http::Response<tonic::body::Body>> + Send,
    S::Future: Send + 'static,
    S::Error: std::fmt::Display,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        let method = req
            .uri()
            .path()
            .rsplit('/')
            .next()
            .unwrap_or_default()
            .to_string();
        let span = tracing::info_span!(
            "rpc",
            method = %method,
            volume_id = tracing::field::Empty,
            duration_ms = tracing::field::Empty
        );
        let chatty = is_chatty(&method);
        let started = Instant::now();
        let metrics = self.metrics.clone();
        let guard = self.rpcs.enter();
        let fut = self.inner.call(req);
        Box::pin(
            async move {
                let res = fut.await;
                let secs = started.elapsed().as_secs_f64();
                let ms = secs * 1e3;
                match &res {
                    Ok(resp) => {
                        // Errors come trailers-only, so grpc-status is in the headers; a
                        // successful unary response carries it in the trailers.
                        let code = resp
                            .headers()
                            .get("grpc-status")
                            .and_then(|v| v.to_str().ok())
                            .and_then(|v| v.parse::<i32>().ok())
                            .map(tonic::Code::from_i32)
                            .unwrap_or(tonic::Code::Ok);
                        metrics.observe_rpc(&method, &format!("{code:?}"), secs);
                        tracing::Span::current().record("duration_ms", ms);
                        if chatty {
                            tracing::debug!(code = ?code, "rpc done");
                        } else {
                            tracing::info!(code = ?code, "rpc done");
                        }
                    }
                    Err(e) => {
                        metrics.observe_rpc(&method, "Transport", secs);
                        tracing::warn!(duration_ms = ms, error = %e, "rpc transport error")
                    }
                }
                // The RPC counts as in flight until its response body (message and trailers)
                // has been handed to the connection.
                res.map(|resp| {
                    resp.map(|body| {
                        tonic::body::Body::new(GuardedBody {
                            body,
                            _guard: guard,
                        })
                    })
                })
            }
            .instrument(span),
        )
    }
}

/// RPCs that kubelet, the sidecars and liveness probes call constantly: logged at debug.
fn is_chatty(method: &str) -> bool {
    matches!(
        method,
        "Probe"
            | "GetPluginInfo"
            | "GetPluginCapabilities"
            | "ControllerGetCapabilities"
            | "NodeGetCapabilities"
            | "NodeGetInfo"
            | "NodeGetVolumeStats"
            | "ListVolumes"
            | "ListSnapshots"
            | "GetCapacity"
            | "ControllerGetVolume"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_endpoints() {
        assert_eq!(
            Endpoint::parse("unix:///csi/csi.sock").unwrap(),
            Endpoint::Unix("/csi/csi.sock".into())
        );
        assert_eq!(
            Endpoint::parse("unix:/csi/csi.sock").unwrap(),
            Endpoint::Unix("/csi/csi.sock".into())
        );
        assert_eq!(
            Endpoint::parse("tcp://127.0.0.1:10000").unwrap(),
            Endpoint::Tcp("127.0.0.1:10000".into())
        );
        assert!(Endpoint::parse("/csi/csi.sock").is_err());
        assert!(Endpoint::parse("unix:csi.sock").is_err());
        assert!(Endpoint::parse("unix://").is_err());
        assert!(Endpoint::parse("unix:///").is_err());
        assert!(Endpoint::parse("ünix://x").is_err());
        assert!(Endpoint::parse("tcp://").is_err());
    }

    /// Upstream's `CSI_ENDPOINT=unix://csi/csi.sock` and its other spellings, as Go's net/url
    /// + path.Join read them.
    #[test]
    fn parses_upstream_endpoint_forms() {
        for (given, want) in [
            ("unix://csi/csi.sock", "/csi/csi.sock"),
            ("unix:///csi/csi.sock", "/csi/csi.sock"),
            ("unix:////csi//csi.sock", "/csi/csi.sock"),
            ("UNIX://csi/csi.sock", "/csi/csi.sock"),
            ("unix://relative.sock", "/relative.sock"),
            (
                "unix:///var/lib/kubelet/plugins/x/./csi.sock",
                "/var/lib/kubelet/plugins/x/csi.sock",
            ),
            ("unix:///a/b/../csi.sock", "/a/csi.sock"),
            ("unix:///../csi.sock", "/csi.sock"),
        ] {
            assert_eq!(
                Endpoint::parse(given).unwrap(),
                Endpoint::Unix(PathBuf::from(want)),
                "{given}"
            );
        }
        assert_eq!(
            Endpoint::parse("TCP://127.0.0.1:10000").unwrap(),
            Endpoint::Tcp("127.0.0.1:10000".into())
        );
    }

    #[test]
    fn refuses_to_remove_non_socket() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("x.sock");
        std::fs::write(&f, b"data").unwrap();
        assert!(prepare_socket_path(&f)
            .unwrap_err()
            .contains("not a socket"));
        assert!(f.exists());
    }

    #[test]
    fn creates_parent_dir() {
        let dir = tempfile::tempdir().unwrap();
        let sock = dir.path().join("a/b/csi.sock");
        prepare_socket_path(&sock).unwrap();
        assert!(sock.parent().unwrap().is_dir());
    }
}
