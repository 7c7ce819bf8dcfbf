//! CSI Node service. Until the node core lands every RPC answers Unimplemented.

use super::pb::node_server::Node;

/// Placeholder node service.
pub struct NodeService;

#[tonic::async_trait]
impl Node for NodeService {}
