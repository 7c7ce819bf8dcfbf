//! CSI Controller service. Until the controller core lands every RPC answers Unimplemented
//! and no controller capability is advertised.

use super::pb::controller_server::Controller;

/// Placeholder controller: advertises nothing.
pub struct ControllerService;

#[tonic::async_trait]
impl Controller for ControllerService {}
