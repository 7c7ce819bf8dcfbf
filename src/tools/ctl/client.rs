//! A CSI gRPC client over the driver's socket (what kubelet and the sidecars speak), shared by
//! `ctl` and `demo`. Every call carries a deadline (grpc-timeout), like the sidecars send.

use std::time::Duration;

use tonic::transport::Channel;
use tonic::Request;

use crate::server::csi::pb::controller_client::ControllerClient;
use crate::server::csi::pb::group_controller_client::GroupControllerClient;
use crate::server::csi::pb::identity_client::IdentityClient;
use crate::server::csi::pb::node_client::NodeClient;

/// A connected client; cheap to clone.
#[derive(Clone)]
pub struct Client {
    channel: Channel,
    timeout: Duration,
}

impl Client {
    /// Connect to `endpoint` (`unix:///path.sock` or `tcp://host:port`).
    pub async fn connect(endpoint: &str, timeout: Duration) -> Result<Self, String> {
        let channel = crate::server::csi::client::connect(endpoint).await?;
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

    pub fn group_controller(&self) -> GroupControllerClient<Channel> {
        GroupControllerClient::new(self.channel.clone())
    }

    pub fn node(&self) -> NodeClient<Channel> {
        NodeClient::new(self.channel.clone())
    }
}
