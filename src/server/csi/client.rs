//! A gRPC channel to a CSI endpoint (`unix:///path` or `tcp://host:port`), for the `ctl`
//! client, tests and benchmarks.

use std::path::PathBuf;

use hyper_util::rt::TokioIo;
use tonic::transport::{Channel, Endpoint as TonicEndpoint};

use crate::server::Endpoint;

/// Connect to `endpoint`; fails fast when nothing listens there.
pub async fn connect(endpoint: &str) -> Result<Channel, String> {
    match Endpoint::parse(endpoint)? {
        Endpoint::Unix(path) => connect_unix(path).await,
        Endpoint::Tcp(addr) => TonicEndpoint::from_shared(format!("http://{addr}"))
            .map_err(|e| format!("bad endpoint {endpoint:?}: {e}"))?
            .connect()
            .await
            .map_err(|e| format!("cannot connect to {endpoint}: {e}")),
    }
}

pub async fn connect_unix(path: PathBuf) -> Result<Channel, String> {
    let shown = path.display().to_string();
    // The URI is required by tonic but unused: the connector dials the socket.
    TonicEndpoint::from_static("http://localhost")
        .connect_with_connector(tower::service_fn(move |_| {
            let path = path.clone();
            async move {
                let stream = tokio::net::UnixStream::connect(path).await?;
                Ok::<_, std::io::Error>(TokioIo::new(stream))
            }
        }))
        .await
        .map_err(|e| format!("cannot connect to unix://{shown}: {e}"))
}
