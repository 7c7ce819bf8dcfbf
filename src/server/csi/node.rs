//! CSI Node service: thin handlers. Each validates and converts the request, records the
//! volume id on the RPC's span, makes one call into the node core and builds the response.

use std::sync::Arc;

use tonic::{Request, Response, Status};

use super::convert::{self, record_volume, required};
use super::pb::node_server::Node;
use super::pb::node_service_capability::{rpc, Rpc, Type};
use super::pb::volume_usage::Unit;
use super::pb::*;
use crate::driver::node::{
    ExpandRequest, NodeCapability, NodeCore, PublishRequest, StageRequest, StatsRequest,
    UnpublishRequest, UnstageRequest, VolumeUsage as Usage, CAPABILITIES,
};

pub struct NodeService {
    pub core: Arc<NodeCore>,
}

impl NodeService {
    pub fn new(core: Arc<NodeCore>) -> Self {
        Self { core }
    }
}

fn capability_to_pb(c: NodeCapability) -> NodeServiceCapability {
    let t = match c {
        NodeCapability::StageUnstageVolume => rpc::Type::StageUnstageVolume,
        NodeCapability::ExpandVolume => rpc::Type::ExpandVolume,
        NodeCapability::GetVolumeStats => rpc::Type::GetVolumeStats,
        NodeCapability::VolumeCondition => rpc::Type::VolumeCondition,
        NodeCapability::SingleNodeMultiWriter => rpc::Type::SingleNodeMultiWriter,
    };
    NodeServiceCapability {
        r#type: Some(Type::Rpc(Rpc { r#type: t as i32 })),
    }
}

fn usage(unit: Unit, total: u64, available: u64, used: u64) -> VolumeUsage {
    let i = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
    VolumeUsage {
        available: i(available),
        total: i(total),
        used: i(used),
        unit: unit as i32,
    }
}

#[tonic::async_trait]
impl Node for NodeService {
    async fn node_stage_volume(
        &self,
        req: Request<NodeStageVolumeRequest>,
    ) -> Result<Response<NodeStageVolumeResponse>, Status> {
        let deadline = convert::deadline(&req);
        let r = req.into_inner();
        record_volume(required(&r.volume_id, "volume_id")?);
        required(&r.staging_target_path, "staging_target_path")?;
        let capability = convert::required_capability(r.volume_capability.as_ref())?;
        let req = StageRequest {
            volume_id: r.volume_id,
            staging_path: r.staging_target_path,
            capability,
            volume_context: r.volume_context,
        };
        self.core.stage(req, deadline).await?;
        Ok(Response::new(NodeStageVolumeResponse {}))
    }

    async fn node_unstage_volume(
        &self,
        req: Request<NodeUnstageVolumeRequest>,
    ) -> Result<Response<NodeUnstageVolumeResponse>, Status> {
        let r = req.into_inner();
        record_volume(required(&r.volume_id, "volume_id")?);
        required(&r.staging_target_path, "staging_target_path")?;
        let req = UnstageRequest {
            volume_id: r.volume_id,
            staging_path: r.staging_target_path,
        };
        self.core.unstage(req).await?;
        Ok(Response::new(NodeUnstageVolumeResponse {}))
    }

    async fn node_publish_volume(
        &self,
        req: Request<NodePublishVolumeRequest>,
    ) -> Result<Response<NodePublishVolumeResponse>, Status> {
        let r = req.into_inner();
        record_volume(required(&r.volume_id, "volume_id")?);
        required(&r.target_path, "target_path")?;
        let capability = convert::required_capability(r.volume_capability.as_ref())?;
        let req = PublishRequest {
            volume_id: r.volume_id,
            staging_path: r.staging_target_path,
            target_path: r.target_path,
            capability,
            read_only: r.readonly,
        };
        self.core.publish(req).await?;
        Ok(Response::new(NodePublishVolumeResponse {}))
    }

    async fn node_unpublish_volume(
        &self,
        req: Request<NodeUnpublishVolumeRequest>,
    ) -> Result<Response<NodeUnpublishVolumeResponse>, Status> {
        let r = req.into_inner();
        record_volume(required(&r.volume_id, "volume_id")?);
        required(&r.target_path, "target_path")?;
        let req = UnpublishRequest {
            volume_id: r.volume_id,
            target_path: r.target_path,
        };
        self.core.unpublish(req).await?;
        Ok(Response::new(NodeUnpublishVolumeResponse {}))
    }

    async fn node_get_volume_stats(
        &self,
        req: Request<NodeGetVolumeStatsRequest>,
    ) -> Result<Response<NodeGetVolumeStatsResponse>, Status> {
        let r = req.into_inner();
        record_volume(required(&r.volume_id, "volume_id")?);
        required(&r.volume_path, "volume_path")?;
        let stats = self
            .core
            .stats(StatsRequest {
                volume_id: r.volume_id,
                volume_path: r.volume_path,
            })
            .await?;
        let usage = match stats.usage {
            Usage::Filesystem(u) => vec![
                usage(Unit::Bytes, u.total_bytes, u.available_bytes, u.used_bytes),
                usage(Unit::Inodes, u.total_inodes, u.free_inodes, u.used_inodes),
            ],
            Usage::Block { total_bytes } => vec![usage(Unit::Bytes, total_bytes, 0, 0)],
            Usage::Unknown => Vec::new(),
        };
        Ok(Response::new(NodeGetVolumeStatsResponse {
            usage,
            volume_condition: Some(VolumeCondition {
                abnormal: stats.condition.abnormal,
                message: stats.condition.message,
            }),
        }))
    }

    async fn node_expand_volume(
        &self,
        req: Request<NodeExpandVolumeRequest>,
    ) -> Result<Response<NodeExpandVolumeResponse>, Status> {
        let deadline = convert::deadline(&req);
        let r = req.into_inner();
        record_volume(required(&r.volume_id, "volume_id")?);
        required(&r.volume_path, "volume_path")?;
        let capacity = convert::capacity_range(r.capacity_range.as_ref())?;
        let capability = r
            .volume_capability
            .as_ref()
            .map(convert::capability)
            .transpose()?;
        let size = self
            .core
            .expand(
                ExpandRequest {
                    volume_id: r.volume_id,
                    volume_path: r.volume_path,
                    staging_path: r.staging_target_path,
                    capacity,
                    capability,
                },
                deadline,
            )
            .await?;
        Ok(Response::new(NodeExpandVolumeResponse {
            capacity_bytes: i64::try_from(size).unwrap_or(i64::MAX),
        }))
    }

    async fn node_get_capabilities(
        &self,
        _req: Request<NodeGetCapabilitiesRequest>,
    ) -> Result<Response<NodeGetCapabilitiesResponse>, Status> {
        Ok(Response::new(NodeGetCapabilitiesResponse {
            capabilities: CAPABILITIES.iter().copied().map(capability_to_pb).collect(),
        }))
    }

    async fn node_get_info(
        &self,
        _req: Request<NodeGetInfoRequest>,
    ) -> Result<Response<NodeGetInfoResponse>, Status> {
        let info = self.core.info().await?;
        Ok(Response::new(NodeGetInfoResponse {
            node_id: info.node_id,
            max_volumes_per_node: info.max_volumes_per_node,
            accessible_topology: info.topology.as_ref().map(convert::topology_to_pb),
        }))
    }
}
