//! ControllerService: the thin handlers of the CSI Controller service.

use super::*;

use std::sync::Arc;

use tonic::{Request, Response, Status};

use self::convert::*;
use super::super::convert::{
    capabilities, capability, capacity_range, deadline, record_volume, required,
    required_capability, topology_requirement,
};
use super::super::pb;
use super::super::pb::controller_server::Controller;
use super::super::pb::controller_service_capability::rpc::Type as Cap;
use crate::driver::controller::params::{
    cloud_name, named_cloud, MutableParams, SnapshotParams, VolumeParams,
};
use crate::driver::controller::{self as core};
use crate::driver::{Error, Invalid};

/// Every controller capability this driver implements, and nothing else.
pub const CAPABILITIES: &[Cap] = &[
    Cap::CreateDeleteVolume,
    Cap::PublishUnpublishVolume,
    Cap::ListVolumes,
    Cap::GetCapacity,
    Cap::CreateDeleteSnapshot,
    Cap::ListSnapshots,
    Cap::CloneVolume,
    Cap::ExpandVolume,
    Cap::ListVolumesPublishedNodes,
    Cap::VolumeCondition,
    Cap::GetVolume,
    Cap::SingleNodeMultiWriter,
    Cap::ModifyVolume,
    Cap::GetSnapshot,
];

pub struct ControllerService {
    pub(super) core: Arc<core::Controller>,
}

impl ControllerService {
    pub fn new(core: Arc<core::Controller>) -> Self {
        Self { core }
    }
}

pub(super) type Reply<T> = Result<Response<T>, Status>;

pub(super) fn ok<T>(t: T) -> Reply<T> {
    Ok(Response::new(t))
}

#[tonic::async_trait]
impl Controller for ControllerService {
    async fn create_volume(
        &self,
        req: Request<pb::CreateVolumeRequest>,
    ) -> Reply<pb::CreateVolumeResponse> {
        let deadline = deadline(&req);
        let r = req.into_inner();
        let name = required(&r.name, "name")?;
        let request = core::CreateVolume {
            name: name.to_string(),
            capacity: capacity_range(r.capacity_range.as_ref())?,
            capabilities: capabilities(&r.volume_capabilities)?,
            params: VolumeParams::parse(&r.parameters)?,
            mutable: MutableParams::parse(&r.mutable_parameters)?,
            cloud: cloud_name(&r.secrets),
            source: content_source(r.volume_content_source.as_ref())?,
            topology: topology_requirement(r.accessibility_requirements.as_ref()),
            deadline,
        };
        let _guard = self.core.lock_volume_name(name)?;
        let v = self.core.create_volume(request).await?;
        record_volume(&v.id);
        ok(pb::CreateVolumeResponse {
            volume: Some(volume_to_pb(&v)),
        })
    }

    async fn delete_volume(
        &self,
        req: Request<pb::DeleteVolumeRequest>,
    ) -> Reply<pb::DeleteVolumeResponse> {
        let deadline = deadline(&req);
        let r = req.into_inner();
        let id = required(&r.volume_id, "volume_id")?;
        record_volume(id);
        let _guard = self.core.lock_volume(id)?;
        self.core
            .delete_volume(core::DeleteVolume {
                volume_id: id.to_string(),
                cloud: cloud_name(&r.secrets),
                deadline,
            })
            .await?;
        ok(pb::DeleteVolumeResponse {})
    }

    async fn controller_publish_volume(
        &self,
        req: Request<pb::ControllerPublishVolumeRequest>,
    ) -> Reply<pb::ControllerPublishVolumeResponse> {
        let deadline = deadline(&req);
        let r = req.into_inner();
        let id = required(&r.volume_id, "volume_id")?;
        record_volume(id);
        let request = core::Publish {
            volume_id: id.to_string(),
            node_id: required(&r.node_id, "node_id")?.to_string(),
            capability: required_capability(r.volume_capability.as_ref())?,
            readonly: r.readonly,
            cloud: cloud_name(&r.secrets),
            deadline,
        };
        let _guard = self.core.lock_volume(id)?;
        let context = self.core.publish_volume(request).await?;
        ok(pb::ControllerPublishVolumeResponse {
            publish_context: context.into_iter().collect(),
        })
    }

    async fn controller_unpublish_volume(
        &self,
        req: Request<pb::ControllerUnpublishVolumeRequest>,
    ) -> Reply<pb::ControllerUnpublishVolumeResponse> {
        let deadline = deadline(&req);
        let r = req.into_inner();
        let id = required(&r.volume_id, "volume_id")?;
        record_volume(id);
        let _guard = self.core.lock_volume(id)?;
        self.core
            .unpublish_volume(core::Unpublish {
                volume_id: id.to_string(),
                node_id: optional(&r.node_id),
                cloud: cloud_name(&r.secrets),
                deadline,
            })
            .await?;
        ok(pb::ControllerUnpublishVolumeResponse {})
    }

    async fn validate_volume_capabilities(
        &self,
        req: Request<pb::ValidateVolumeCapabilitiesRequest>,
    ) -> Reply<pb::ValidateVolumeCapabilitiesResponse> {
        let r = req.into_inner();
        let id = required(&r.volume_id, "volume_id")?;
        record_volume(id);
        let request = core::ValidateCapabilities {
            volume_id: id.to_string(),
            capabilities: capabilities(&r.volume_capabilities)?,
            params: VolumeParams::parse(&r.parameters)?,
            mutable: MutableParams::parse(&r.mutable_parameters)?,
            cloud: cloud_name(&r.secrets),
        };
        // CSI: "confirmed" only when every requested capability is supported; it echoes what
        // was validated so the CO can compare.
        ok(match self.core.validate_capabilities(request).await? {
            Ok(()) => pb::ValidateVolumeCapabilitiesResponse {
                confirmed: Some(pb::validate_volume_capabilities_response::Confirmed {
                    volume_context: r.volume_context,
                    volume_capabilities: r.volume_capabilities,
                    parameters: r.parameters,
                    mutable_parameters: r.mutable_parameters,
                }),
                message: String::new(),
            },
            Err(why) => pb::ValidateVolumeCapabilitiesResponse {
                confirmed: None,
                message: why.to_string(),
            },
        })
    }

    async fn list_volumes(
        &self,
        req: Request<pb::ListVolumesRequest>,
    ) -> Reply<pb::ListVolumesResponse> {
        let r = req.into_inner();
        let page = self
            .core
            .list_volumes(core::ListVolumes {
                max_entries: max_entries(r.max_entries)?,
                starting_token: optional(&r.starting_token),
            })
            .await?;
        ok(pb::ListVolumesResponse {
            entries: page.entries.iter().map(list_entry_to_pb).collect(),
            next_token: page.next_token.unwrap_or_default(),
        })
    }

    async fn get_capacity(
        &self,
        req: Request<pb::GetCapacityRequest>,
    ) -> Reply<pb::GetCapacityResponse> {
        let r = req.into_inner();
        let caps = r
            .volume_capabilities
            .iter()
            .map(capability)
            .collect::<Result<Vec<_>, Error>>()?;
        let c = self
            .core
            .get_capacity(core::GetCapacity {
                capabilities: caps,
                params: VolumeParams::parse(&r.parameters)?,
                zone: zone(r.accessible_topology.as_ref()),
            })
            .await?;
        ok(pb::GetCapacityResponse {
            available_capacity: bytes(c.available_bytes),
            maximum_volume_size: c.maximum_volume_bytes.map(bytes),
            minimum_volume_size: c.minimum_volume_bytes.map(bytes),
        })
    }

    async fn controller_get_capabilities(
        &self,
        _req: Request<pb::ControllerGetCapabilitiesRequest>,
    ) -> Reply<pb::ControllerGetCapabilitiesResponse> {
        use pb::controller_service_capability::{Rpc, Type};
        ok(pb::ControllerGetCapabilitiesResponse {
            capabilities: CAPABILITIES
                .iter()
                .map(|c| pb::ControllerServiceCapability {
                    r#type: Some(Type::Rpc(Rpc { r#type: *c as i32 })),
                })
                .collect(),
        })
    }

    async fn create_snapshot(
        &self,
        req: Request<pb::CreateSnapshotRequest>,
    ) -> Reply<pb::CreateSnapshotResponse> {
        let deadline = deadline(&req);
        let r = req.into_inner();
        let name = required(&r.name, "name")?;
        let source = required(&r.source_volume_id, "source_volume_id")?;
        record_volume(source);
        let request = core::CreateSnapshot {
            name: name.to_string(),
            source_volume_id: source.to_string(),
            params: SnapshotParams::parse(&r.parameters)?,
            cloud: cloud_name(&r.secrets),
            deadline,
        };
        let _guard = self.core.lock_snapshot_name(name)?;
        let s = self.core.create_snapshot(request).await?;
        ok(pb::CreateSnapshotResponse {
            snapshot: Some(snapshot_to_pb(&s)),
        })
    }

    async fn delete_snapshot(
        &self,
        req: Request<pb::DeleteSnapshotRequest>,
    ) -> Reply<pb::DeleteSnapshotResponse> {
        let deadline = deadline(&req);
        let r = req.into_inner();
        let id = required(&r.snapshot_id, "snapshot_id")?;
        let _guard = self.core.lock_snapshot(id)?;
        self.core
            .delete_snapshot(core::DeleteSnapshot {
                snapshot_id: id.to_string(),
                cloud: cloud_name(&r.secrets),
                deadline,
            })
            .await?;
        ok(pb::DeleteSnapshotResponse {})
    }

    async fn list_snapshots(
        &self,
        req: Request<pb::ListSnapshotsRequest>,
    ) -> Reply<pb::ListSnapshotsResponse> {
        let r = req.into_inner();
        let page = self
            .core
            .list_snapshots(core::ListSnapshots {
                max_entries: max_entries(r.max_entries)?,
                starting_token: optional(&r.starting_token),
                source_volume_id: optional(&r.source_volume_id),
                snapshot_id: optional(&r.snapshot_id),
                cloud: named_cloud(&r.secrets),
            })
            .await?;
        ok(pb::ListSnapshotsResponse {
            entries: page
                .entries
                .iter()
                .map(|s| pb::list_snapshots_response::Entry {
                    snapshot: Some(snapshot_to_pb(s)),
                })
                .collect(),
            next_token: page.next_token.unwrap_or_default(),
        })
    }

    async fn get_snapshot(
        &self,
        req: Request<pb::GetSnapshotRequest>,
    ) -> Reply<pb::GetSnapshotResponse> {
        let r = req.into_inner();
        let id = required(&r.snapshot_id, "snapshot_id")?;
        let cloud = named_cloud(&r.secrets);
        let s = self.core.get_snapshot(id, cloud.as_deref()).await?;
        ok(pb::GetSnapshotResponse {
            snapshot: Some(snapshot_to_pb(&s)),
        })
    }

    async fn controller_expand_volume(
        &self,
        req: Request<pb::ControllerExpandVolumeRequest>,
    ) -> Reply<pb::ControllerExpandVolumeResponse> {
        let deadline = deadline(&req);
        let r = req.into_inner();
        let id = required(&r.volume_id, "volume_id")?;
        record_volume(id);
        let Some(range) = r.capacity_range.as_ref() else {
            return Err(Error::from(Invalid::Required {
                field: "capacity_range",
            })
            .into());
        };
        let request = core::ExpandVolume {
            volume_id: id.to_string(),
            capacity: capacity_range(Some(range))?,
            capability: r.volume_capability.as_ref().map(capability).transpose()?,
            cloud: cloud_name(&r.secrets),
            deadline,
        };
        let _guard = self.core.lock_volume(id)?;
        let e = self.core.expand_volume(request).await?;
        ok(pb::ControllerExpandVolumeResponse {
            capacity_bytes: bytes(e.capacity_bytes),
            node_expansion_required: e.node_expansion_required,
        })
    }

    async fn controller_get_volume(
        &self,
        req: Request<pb::ControllerGetVolumeRequest>,
    ) -> Reply<pb::ControllerGetVolumeResponse> {
        let r = req.into_inner();
        let id = required(&r.volume_id, "volume_id")?;
        record_volume(id);
        let entry = self.core.get_volume(id).await?;
        ok(get_volume_to_pb(&entry))
    }

    async fn controller_modify_volume(
        &self,
        req: Request<pb::ControllerModifyVolumeRequest>,
    ) -> Reply<pb::ControllerModifyVolumeResponse> {
        let deadline = deadline(&req);
        let r = req.into_inner();
        let id = required(&r.volume_id, "volume_id")?;
        record_volume(id);
        let request = core::ModifyVolume {
            volume_id: id.to_string(),
            mutable: MutableParams::parse(&r.mutable_parameters)?,
            cloud: cloud_name(&r.secrets),
            deadline,
        };
        let _guard = self.core.lock_volume(id)?;
        self.core.modify_volume(request).await?;
        ok(pb::ControllerModifyVolumeResponse {})
    }
}
