//! CSI GroupController service: thin handlers, as the Controller's. Create takes the group
//! snapshot name's guard and every source volume's (one busy volume: Aborted, nothing
//! taken); get and delete take the group snapshot's. Secrets are read for the `cloud` key
//! only and never logged.

use std::sync::Arc;

use tonic::{Request, Response, Status};

use super::controller::convert::snapshot_to_pb;
use super::convert::{deadline, record_volume, required};
use super::pb;
use super::pb::group_controller_server::GroupController;
use super::pb::group_controller_service_capability::rpc::Type as Cap;
use crate::driver::controller::group_params::GroupSnapshotParams;
use crate::driver::controller::params::{cloud_name, named_cloud};
use crate::driver::controller::{self as core, GroupSnapshotInfo};

/// Every group controller capability this driver implements.
pub const CAPABILITIES: &[Cap] = &[Cap::CreateDeleteGetVolumeGroupSnapshot];

pub struct GroupControllerService {
    core: Arc<core::Controller>,
}

impl GroupControllerService {
    pub fn new(core: Arc<core::Controller>) -> Self {
        Self { core }
    }
}

type Reply<T> = Result<Response<T>, Status>;

fn group_to_pb(g: &GroupSnapshotInfo) -> pb::VolumeGroupSnapshot {
    pb::VolumeGroupSnapshot {
        group_snapshot_id: g.id.clone(),
        snapshots: g.snapshots.iter().map(snapshot_to_pb).collect(),
        creation_time: Some(prost_types::Timestamp::from(g.created_at)),
        ready_to_use: g.ready_to_use,
    }
}

#[tonic::async_trait]
impl GroupController for GroupControllerService {
    async fn group_controller_get_capabilities(
        &self,
        _req: Request<pb::GroupControllerGetCapabilitiesRequest>,
    ) -> Reply<pb::GroupControllerGetCapabilitiesResponse> {
        use pb::group_controller_service_capability::{Rpc, Type};
        Ok(Response::new(pb::GroupControllerGetCapabilitiesResponse {
            capabilities: CAPABILITIES
                .iter()
                .map(|c| pb::GroupControllerServiceCapability {
                    r#type: Some(Type::Rpc(Rpc { r#type: *c as i32 })),
                })
                .collect(),
        }))
    }

    async fn create_volume_group_snapshot(
        &self,
        req: Request<pb::CreateVolumeGroupSnapshotRequest>,
    ) -> Reply<pb::CreateVolumeGroupSnapshotResponse> {
        let deadline = deadline(&req);
        let r = req.into_inner();
        let name = required(&r.name, "name")?;
        let volumes = core::validate::source_volumes(&r.source_volume_ids)?;
        record_volume(&volumes.join(","));
        let request = core::CreateGroupSnapshot {
            name: name.to_string(),
            source_volume_ids: volumes.clone(),
            params: GroupSnapshotParams::parse(&r.parameters)?,
            cloud: cloud_name(&r.secrets),
            deadline,
        };
        let _name = self.core.lock_group_snapshot_name(name)?;
        let _volumes = self.core.lock_volumes(volumes.iter().map(String::as_str))?;
        let g = self.core.create_group_snapshot(request).await?;
        Ok(Response::new(pb::CreateVolumeGroupSnapshotResponse {
            group_snapshot: Some(group_to_pb(&g)),
        }))
    }

    async fn delete_volume_group_snapshot(
        &self,
        req: Request<pb::DeleteVolumeGroupSnapshotRequest>,
    ) -> Reply<pb::DeleteVolumeGroupSnapshotResponse> {
        let deadline = deadline(&req);
        let r = req.into_inner();
        let id = required(&r.group_snapshot_id, "group_snapshot_id")?;
        let _guard = self.core.lock_group_snapshot(id)?;
        self.core
            .delete_group_snapshot(core::GroupSnapshotRef {
                group_snapshot_id: id.to_string(),
                snapshot_ids: r.snapshot_ids,
                cloud: named_cloud(&r.secrets),
                deadline,
            })
            .await?;
        Ok(Response::new(pb::DeleteVolumeGroupSnapshotResponse {}))
    }

    async fn get_volume_group_snapshot(
        &self,
        req: Request<pb::GetVolumeGroupSnapshotRequest>,
    ) -> Reply<pb::GetVolumeGroupSnapshotResponse> {
        let deadline = deadline(&req);
        let r = req.into_inner();
        let id = required(&r.group_snapshot_id, "group_snapshot_id")?;
        let g = self
            .core
            .get_group_snapshot(core::GroupSnapshotRef {
                group_snapshot_id: id.to_string(),
                snapshot_ids: r.snapshot_ids,
                cloud: named_cloud(&r.secrets),
                deadline,
            })
            .await?;
        Ok(Response::new(pb::GetVolumeGroupSnapshotResponse {
            group_snapshot: Some(group_to_pb(&g)),
        }))
    }
}
