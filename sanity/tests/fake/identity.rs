use std::sync::Arc;

use cinder_csi_sanity::pb::plugin_capability::{
    service, volume_expansion, Service, Type, VolumeExpansion,
};
use cinder_csi_sanity::pb::*;
use tonic::{Request, Response, Status};

use super::{Fault, Inner};

pub struct Identity(pub Arc<Inner>);

#[tonic::async_trait]
impl identity_server::Identity for Identity {
    async fn get_plugin_info(
        &self,
        _: Request<GetPluginInfoRequest>,
    ) -> Result<Response<GetPluginInfoResponse>, Status> {
        let version = if self.0.has(Fault::EmptyVendorVersion) {
            ""
        } else {
            "1.0.0"
        };
        Ok(Response::new(GetPluginInfoResponse {
            name: "fake.csi.example.org".into(),
            vendor_version: version.into(),
            manifest: Default::default(),
        }))
    }

    async fn get_plugin_capabilities(
        &self,
        _: Request<GetPluginCapabilitiesRequest>,
    ) -> Result<Response<GetPluginCapabilitiesResponse>, Status> {
        let svc = |t: service::Type| PluginCapability {
            r#type: Some(Type::Service(Service { r#type: t as i32 })),
        };
        let mut capabilities = vec![svc(service::Type::ControllerService)];
        if self.0.full() {
            capabilities.push(svc(service::Type::VolumeAccessibilityConstraints));
            capabilities.push(PluginCapability {
                r#type: Some(Type::VolumeExpansion(VolumeExpansion {
                    r#type: volume_expansion::Type::Online as i32,
                })),
            });
        }
        Ok(Response::new(GetPluginCapabilitiesResponse {
            capabilities,
        }))
    }

    async fn probe(&self, _: Request<ProbeRequest>) -> Result<Response<ProbeResponse>, Status> {
        Ok(Response::new(ProbeResponse { ready: Some(true) }))
    }
}
