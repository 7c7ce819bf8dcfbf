//! gRPC channels to the driver over a Unix socket (or TCP), one per distinct endpoint.

use std::path::PathBuf;
use std::time::Duration;

use hyper_util::rt::TokioIo;
use tonic::transport::{Channel, Endpoint};

use crate::pb::controller_client::ControllerClient;
use crate::pb::identity_client::IdentityClient;
use crate::pb::node_client::NodeClient;

/// The three CSI clients. Identity and Node talk to `--endpoint`; Controller talks to
/// `--controller-endpoint` when set.
#[derive(Clone)]
pub struct Clients {
    pub identity: IdentityClient<Channel>,
    pub controller: ControllerClient<Channel>,
    pub node: NodeClient<Channel>,
}

enum Target {
    Unix(PathBuf),
    Tcp(String),
}

fn parse(endpoint: &str) -> Result<Target, String> {
    if let Some(rest) = endpoint
        .strip_prefix("unix://")
        .or_else(|| endpoint.strip_prefix("unix:"))
    {
        let path = PathBuf::from(rest);
        if !path.is_absolute() {
            return Err(format!(
                "endpoint {endpoint:?}: the socket path must be absolute, e.g. unix:///csi/csi.sock"
            ));
        }
        return Ok(Target::Unix(path));
    }
    if let Some(rest) = endpoint.strip_prefix("tcp://") {
        return Ok(Target::Tcp(rest.to_string()));
    }
    if endpoint.starts_with('/') {
        // csi-sanity accepts a bare socket path; so do we.
        return Ok(Target::Unix(PathBuf::from(endpoint)));
    }
    Err(format!(
        "endpoint {endpoint:?}: expected unix:///abs/path.sock, /abs/path.sock or tcp://host:port"
    ))
}

/// Connect to one endpoint, retrying until `wait` has passed so a driver that is still starting
/// is given a chance.
pub async fn connect(endpoint: &str, wait: Duration) -> Result<Channel, String> {
    let target = parse(endpoint)?;
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        let res = match &target {
            Target::Unix(path) => {
                let path = path.clone();
                // The URI is a placeholder: the connector ignores it and dials the socket.
                Endpoint::from_static("http://csi.invalid")
                    .connect_with_connector(tower::service_fn(move |_| {
                        let path = path.clone();
                        async move {
                            let s = tokio::net::UnixStream::connect(path).await?;
                            Ok::<_, std::io::Error>(TokioIo::new(s))
                        }
                    }))
                    .await
            }
            Target::Tcp(addr) => match Endpoint::from_shared(format!("http://{addr}")) {
                Ok(ep) => ep.connect().await,
                Err(e) => return Err(format!("endpoint {endpoint:?}: {e}")),
            },
        };
        match res {
            Ok(ch) => return Ok(ch),
            Err(e) if tokio::time::Instant::now() >= deadline => {
                return Err(format!(
                    "cannot connect to {endpoint}: {e} (is the driver running and listening there?)"
                ))
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

impl Clients {
    pub async fn connect(
        endpoint: &str,
        controller_endpoint: Option<&str>,
        wait: Duration,
    ) -> Result<Self, String> {
        let node = connect(endpoint, wait).await?;
        let controller = match controller_endpoint {
            Some(ep) if ep != endpoint => connect(ep, wait).await?,
            _ => node.clone(),
        };
        Ok(Self {
            identity: IdentityClient::new(node.clone()),
            controller: ControllerClient::new(controller),
            node: NodeClient::new(node),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_parse_like_csi_sanity() {
        assert!(
            matches!(parse("unix:///a/b.sock"), Ok(Target::Unix(p)) if p == std::path::Path::new("/a/b.sock"))
        );
        assert!(matches!(parse("/a/b.sock"), Ok(Target::Unix(_))));
        assert!(
            matches!(parse("tcp://127.0.0.1:10000"), Ok(Target::Tcp(a)) if a == "127.0.0.1:10000")
        );
        assert!(parse("unix://rel.sock").is_err());
        assert!(parse("http://x").is_err());
    }
}
