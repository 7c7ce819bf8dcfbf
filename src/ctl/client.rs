//! A CSI gRPC client over the driver's socket (what kubelet and the sidecars speak), shared by
//! `ctl` and `demo`. Every call carries a deadline (grpc-timeout), like the sidecars send.

use std::path::PathBuf;
use std::time::Duration;

use hyper_util::rt::TokioIo;
use tonic::transport::{Channel, Endpoint as TonicEndpoint};
use tonic::Request;

use crate::csi::pb::controller_client::ControllerClient;
use crate::csi::pb::identity_client::IdentityClient;
use crate::csi::pb::node_client::NodeClient;
use crate::server::Endpoint;

/// A connected client; cheap to clone.
#[derive(Clone)]
pub struct Client {
    channel: Channel,
    timeout: Duration,
}

impl Client {
    /// Connect to `endpoint` (`unix:///path.sock` or `tcp://host:port`).
    pub async fn connect(endpoint: &str, timeout: Duration) -> Result<Self, String> {
        let parsed = Endpoint::parse(endpoint)?;
        let channel = match parsed {
            Endpoint::Unix(path) => {
                // The URI is required by the API but unused: the connector dials the socket.
                let path: PathBuf = path;
                let shown = path.display().to_string();
                TonicEndpoint::from_static("http://localhost")
                    .connect_with_connector(tower::service_fn(move |_| {
                        let path = path.clone();
                        async move {
                            tokio::net::UnixStream::connect(path)
                                .await
                                .map(TokioIo::new)
                        }
                    }))
                    .await
                    .map_err(|e| format!("cannot connect to {shown}: {}", source_chain(&e)))?
            }
            Endpoint::Tcp(addr) => TonicEndpoint::from_shared(format!("http://{addr}"))
                .map_err(|e| format!("bad endpoint {endpoint}: {e}"))?
                .connect()
                .await
                .map_err(|e| format!("cannot connect to {addr}: {}", source_chain(&e)))?,
        };
        Ok(Self { channel, timeout })
    }

    /// Wrap a message with this client's deadline.
    pub fn req<T>(&self, msg: T) -> Request<T> {
        let mut r = Request::new(msg);
        r.set_timeout(self.timeout);
        r
    }

    pub fn identity(&self) -> IdentityClient<Channel> {
        IdentityClient::new(self.channel.clone())
    }

    pub fn controller(&self) -> ControllerClient<Channel> {
        ControllerClient::new(self.channel.clone())
    }

    pub fn node(&self) -> NodeClient<Channel> {
        NodeClient::new(self.channel.clone())
    }
}

/// `error: cause: cause` (tonic's Display hides the interesting part).
fn source_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        let text = c.to_string();
        if !s.contains(&text) {
            s.push_str(": ");
            s.push_str(&text);
        }
        cur = c.source();
    }
    s
}
