//! CSI Identity service: plugin info, capabilities that match what this process serves, and
//! a Probe that reports the plugin's own health (never the cloud's: see `driver::probe`).

use std::sync::Arc;

use tonic::{Request, Response, Status};

use super::pb::identity_server::Identity;
use super::pb::plugin_capability::{self, service, volume_expansion};
use super::pb::{
    GetPluginCapabilitiesRequest, GetPluginCapabilitiesResponse, GetPluginInfoRequest,
    GetPluginInfoResponse, PluginCapability, ProbeRequest, ProbeResponse,
};
use crate::driver::probe::{check_all, Readiness};

pub struct IdentityService {
    pub driver_name: String,
    pub vendor_version: String,
    pub controller: bool,
    /// Serves the GroupController service (controller mode, on a backend that takes
    /// consistent group snapshots).
    pub group_controller: bool,
    pub topology: bool,
    /// Local, fast health checks; Probe fails when one does. No cloud check belongs here.
    pub health: Vec<Arc<dyn Readiness>>,
}

fn service_cap(t: service::Type) -> PluginCapability {
    PluginCapability {
        r#type: Some(plugin_capability::Type::Service(
            plugin_capability::Service { r#type: t as i32 },
        )),
    }
}

#[tonic::async_trait]
impl Identity for IdentityService {
    async fn get_plugin_info(
        &self,
        _req: Request<GetPluginInfoRequest>,
    ) -> Result<Response<GetPluginInfoResponse>, Status> {
        Ok(Response::new(GetPluginInfoResponse {
            name: self.driver_name.clone(),
            vendor_version: self.vendor_version.clone(),
            manifest: Default::default(),
        }))
    }

    async fn get_plugin_capabilities(
        &self,
        _req: Request<GetPluginCapabilitiesRequest>,
    ) -> Result<Response<GetPluginCapabilitiesResponse>, Status> {
        let mut capabilities = Vec::new();
        if self.controller {
            capabilities.push(service_cap(service::Type::ControllerService));
        }
        if self.group_controller {
            capabilities.push(service_cap(service::Type::GroupControllerService));
        }
        if self.topology {
            capabilities.push(service_cap(service::Type::VolumeAccessibilityConstraints));
        }
        capabilities.push(PluginCapability {
            r#type: Some(plugin_capability::Type::VolumeExpansion(
                plugin_capability::VolumeExpansion {
                    r#type: volume_expansion::Type::Online as i32,
                },
            )),
        });
        Ok(Response::new(GetPluginCapabilitiesResponse {
            capabilities,
        }))
    }

    async fn probe(&self, _req: Request<ProbeRequest>) -> Result<Response<ProbeResponse>, Status> {
        if let Err(not_ready) = check_all(&self.health).await {
            return Err(if not_ready.transient {
                Status::unavailable(not_ready.reason)
            } else {
                Status::failed_precondition(not_ready.reason)
            });
        }
        Ok(Response::new(ProbeResponse { ready: Some(true) }))
    }
}
