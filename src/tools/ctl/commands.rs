//! One function per `ctl` subcommand: build the request, call the RPC, render the response.

use serde_json::{json, Value};

use super::args::*;
use super::client::Client;
use super::render;
use super::requests::{capability, capacity_range, kv_map, optional_capability, secrets, topology};
use super::rpc::{call_rpc, rpc_err, CtlError};
use crate::server::csi::pb;

fn local(e: String) -> CtlError {
    CtlError::Local(e)
}

pub async fn run(c: &Client, rpc: &Rpc) -> Result<Value, CtlError> {
    match rpc {
        Rpc::Info => {
            let r = call_rpc!(
                c,
                identity,
                get_plugin_info,
                "GetPluginInfo",
                pb::GetPluginInfoRequest {}
            )?;
            Ok(json!({"name": r.name, "vendor_version": r.vendor_version,
                "manifest": render::string_map(&r.manifest)}))
        }
        Rpc::Probe => {
            let r = call_rpc!(c, identity, probe, "Probe", pb::ProbeRequest {})?;
            Ok(json!({"ready": r.ready}))
        }
        Rpc::Capabilities => super::capabilities::run(c).await,
        Rpc::CreateVolume(a) => create_volume(c, a).await,
        Rpc::DeleteVolume(a) => {
            let msg = pb::DeleteVolumeRequest {
                volume_id: a.volume_id.clone(),
                secrets: secrets(&a.secrets).map_err(local)?,
            };
            call_rpc!(c, controller, delete_volume, "DeleteVolume", msg)?;
            Ok(json!({}))
        }
        Rpc::GetVolume(a) => {
            let msg = pb::ControllerGetVolumeRequest {
                volume_id: a.volume_id.clone(),
            };
            let r = call_rpc!(
                c,
                controller,
                controller_get_volume,
                "ControllerGetVolume",
                msg
            )?;
            let status = r.status.as_ref();
            Ok(json!({
                "volume": r.volume.as_ref().map(render::volume),
                "published_node_ids": status.map(|s| s.published_node_ids.clone()).unwrap_or_default(),
                "volume_condition": render::condition(status.and_then(|s| s.volume_condition.as_ref())),
            }))
        }
        Rpc::ListVolumes(a) => {
            let msg = pb::ListVolumesRequest {
                max_entries: a.max_entries,
                starting_token: a.starting_token.clone(),
            };
            let r = call_rpc!(c, controller, list_volumes, "ListVolumes", msg)?;
            let entries: Vec<Value> = r
                .entries
                .iter()
                .map(|e| {
                    let mut v = e.volume.as_ref().map(render::volume).unwrap_or(json!({}));
                    v["published_node_ids"] = json!(e
                        .status
                        .as_ref()
                        .map(|s| s.published_node_ids.clone())
                        .unwrap_or_default());
                    v
                })
                .collect();
            Ok(json!({"entries": entries, "next_token": r.next_token}))
        }
        Rpc::Validate(a) => {
            let msg = pb::ValidateVolumeCapabilitiesRequest {
                volume_id: a.volume_id.clone(),
                volume_context: kv_map(&a.context),
                volume_capabilities: vec![capability(&a.capability)],
                parameters: kv_map(&a.params),
                secrets: secrets(&a.secrets).map_err(local)?,
                mutable_parameters: Default::default(),
            };
            let r = call_rpc!(
                c,
                controller,
                validate_volume_capabilities,
                "ValidateVolumeCapabilities",
                msg
            )?;
            Ok(json!({
                "confirmed": r.confirmed.as_ref().map(|c| json!({
                    "volume_capabilities": c.volume_capabilities.iter().map(render::capability).collect::<Vec<_>>(),
                    "volume_context": render::string_map(&c.volume_context),
                    "parameters": render::string_map(&c.parameters),
                })),
                "message": r.message,
            }))
        }
        Rpc::Publish(a) => {
            let msg = pb::ControllerPublishVolumeRequest {
                volume_id: a.volume_id.clone(),
                node_id: a.node.clone(),
                volume_capability: Some(capability(&a.capability)),
                readonly: a.readonly,
                secrets: secrets(&a.secrets).map_err(local)?,
                volume_context: kv_map(&a.context),
            };
            let r = call_rpc!(
                c,
                controller,
                controller_publish_volume,
                "ControllerPublishVolume",
                msg
            )?;
            Ok(json!({"publish_context": render::string_map(&r.publish_context)}))
        }
        Rpc::Unpublish(a) => {
            let msg = pb::ControllerUnpublishVolumeRequest {
                volume_id: a.volume_id.clone(),
                node_id: a.node.clone(),
                secrets: secrets(&a.secrets).map_err(local)?,
            };
            call_rpc!(
                c,
                controller,
                controller_unpublish_volume,
                "ControllerUnpublishVolume",
                msg
            )?;
            Ok(json!({}))
        }
        Rpc::Expand(a) => {
            let msg = pb::ControllerExpandVolumeRequest {
                volume_id: a.volume_id.clone(),
                capacity_range: capacity_range(Some(a.size), a.limit),
                secrets: secrets(&a.secrets).map_err(local)?,
                volume_capability: optional_capability(&a.capability),
            };
            let r = call_rpc!(
                c,
                controller,
                controller_expand_volume,
                "ControllerExpandVolume",
                msg
            )?;
            Ok(json!({"capacity_bytes": r.capacity_bytes,
                "capacity": render::human_bytes(r.capacity_bytes),
                "node_expansion_required": r.node_expansion_required}))
        }
        Rpc::ModifyVolume(a) => {
            let msg = pb::ControllerModifyVolumeRequest {
                volume_id: a.volume_id.clone(),
                secrets: secrets(&a.secrets).map_err(local)?,
                mutable_parameters: kv_map(&a.mutable),
            };
            call_rpc!(
                c,
                controller,
                controller_modify_volume,
                "ControllerModifyVolume",
                msg
            )?;
            Ok(json!({}))
        }
        Rpc::GetCapacity(a) => {
            let msg = pb::GetCapacityRequest {
                volume_capabilities: optional_capability(&a.capability).into_iter().collect(),
                parameters: kv_map(&a.params),
                accessible_topology: a.topology.as_ref().map(topology),
            };
            let r = call_rpc!(c, controller, get_capacity, "GetCapacity", msg)?;
            Ok(json!({
                "available_capacity": r.available_capacity,
                "available": render::human_bytes(r.available_capacity),
                "maximum_volume_size": r.maximum_volume_size,
                "minimum_volume_size": r.minimum_volume_size,
            }))
        }
        Rpc::CreateSnapshot(a) => {
            let msg = pb::CreateSnapshotRequest {
                source_volume_id: a.source.clone(),
                name: a.name.clone(),
                secrets: secrets(&a.secrets).map_err(local)?,
                parameters: kv_map(&a.params),
            };
            let r = call_rpc!(c, controller, create_snapshot, "CreateSnapshot", msg)?;
            Ok(r.snapshot
                .as_ref()
                .map(render::snapshot)
                .unwrap_or(Value::Null))
        }
        Rpc::DeleteSnapshot(a) => {
            let msg = pb::DeleteSnapshotRequest {
                snapshot_id: a.snapshot_id.clone(),
                secrets: secrets(&a.secrets).map_err(local)?,
            };
            call_rpc!(c, controller, delete_snapshot, "DeleteSnapshot", msg)?;
            Ok(json!({}))
        }
        Rpc::GetSnapshot(a) => {
            let msg = pb::GetSnapshotRequest {
                snapshot_id: a.snapshot_id.clone(),
                secrets: secrets(&a.secrets).map_err(local)?,
            };
            let r = call_rpc!(c, controller, get_snapshot, "GetSnapshot", msg)?;
            Ok(r.snapshot
                .as_ref()
                .map(render::snapshot)
                .unwrap_or(Value::Null))
        }
        Rpc::ListSnapshots(a) => {
            let msg = pb::ListSnapshotsRequest {
                max_entries: a.listing.max_entries,
                starting_token: a.listing.starting_token.clone(),
                source_volume_id: a.source.clone().unwrap_or_default(),
                snapshot_id: a.snapshot_id.clone().unwrap_or_default(),
                secrets: secrets(&a.secrets).map_err(local)?,
            };
            let r = call_rpc!(c, controller, list_snapshots, "ListSnapshots", msg)?;
            let entries: Vec<Value> = r
                .entries
                .iter()
                .filter_map(|e| e.snapshot.as_ref().map(render::snapshot))
                .collect();
            Ok(json!({"entries": entries, "next_token": r.next_token}))
        }
        Rpc::Stage(a) => {
            let msg = pb::NodeStageVolumeRequest {
                volume_id: a.volume_id.clone(),
                publish_context: kv_map(&a.publish_context),
                staging_target_path: a.staging_path.clone(),
                volume_capability: Some(capability(&a.capability)),
                secrets: secrets(&a.secrets).map_err(local)?,
                volume_context: kv_map(&a.context),
            };
            call_rpc!(c, node, node_stage_volume, "NodeStageVolume", msg)?;
            Ok(json!({}))
        }
        Rpc::Unstage(a) => {
            let msg = pb::NodeUnstageVolumeRequest {
                volume_id: a.volume_id.clone(),
                staging_target_path: a.staging_path.clone(),
            };
            call_rpc!(c, node, node_unstage_volume, "NodeUnstageVolume", msg)?;
            Ok(json!({}))
        }
        Rpc::NodePublish(a) => {
            let msg = pb::NodePublishVolumeRequest {
                volume_id: a.volume_id.clone(),
                publish_context: kv_map(&a.publish_context),
                staging_target_path: a.staging_path.clone(),
                target_path: a.target_path.clone(),
                volume_capability: Some(capability(&a.capability)),
                readonly: a.readonly,
                secrets: secrets(&a.secrets).map_err(local)?,
                volume_context: kv_map(&a.context),
            };
            call_rpc!(c, node, node_publish_volume, "NodePublishVolume", msg)?;
            Ok(json!({}))
        }
        Rpc::NodeUnpublish(a) => {
            let msg = pb::NodeUnpublishVolumeRequest {
                volume_id: a.volume_id.clone(),
                target_path: a.target_path.clone(),
            };
            call_rpc!(c, node, node_unpublish_volume, "NodeUnpublishVolume", msg)?;
            Ok(json!({}))
        }
        Rpc::NodeExpand(a) => {
            let msg = pb::NodeExpandVolumeRequest {
                volume_id: a.volume_id.clone(),
                volume_path: a.volume_path.clone(),
                capacity_range: capacity_range(a.size, None),
                staging_target_path: a.staging_path.clone(),
                volume_capability: optional_capability(&a.capability),
                secrets: secrets(&a.secrets).map_err(local)?,
            };
            let r = call_rpc!(c, node, node_expand_volume, "NodeExpandVolume", msg)?;
            Ok(json!({"capacity_bytes": r.capacity_bytes,
                "capacity": render::human_bytes(r.capacity_bytes)}))
        }
        Rpc::Stats(a) => {
            let msg = pb::NodeGetVolumeStatsRequest {
                volume_id: a.volume_id.clone(),
                volume_path: a.volume_path.clone(),
                staging_target_path: a.staging_path.clone(),
            };
            let r = call_rpc!(c, node, node_get_volume_stats, "NodeGetVolumeStats", msg)?;
            Ok(json!({
                "usage": r.usage.iter().map(render::usage).collect::<Vec<_>>(),
                "volume_condition": render::condition(r.volume_condition.as_ref()),
            }))
        }
        Rpc::CreateGroupSnapshot(a) => super::groups::create(c, a).await,
        Rpc::DeleteGroupSnapshot(a) => super::groups::delete(c, a).await,
        Rpc::GetGroupSnapshot(a) => super::groups::get(c, a).await,
        Rpc::NodeInfo => {
            let r = call_rpc!(
                c,
                node,
                node_get_info,
                "NodeGetInfo",
                pb::NodeGetInfoRequest {}
            )?;
            Ok(json!({
                "node_id": r.node_id,
                "max_volumes_per_node": r.max_volumes_per_node,
                "accessible_topology": render::topologies(r.accessible_topology.as_ref()),
            }))
        }
    }
}

async fn create_volume(c: &Client, a: &CreateVolume) -> Result<Value, CtlError> {
    use pb::volume_content_source::{SnapshotSource, Type, VolumeSource};
    let source = match (&a.snapshot, &a.clone) {
        (Some(s), _) => Some(Type::Snapshot(SnapshotSource {
            snapshot_id: s.clone(),
        })),
        (None, Some(v)) => Some(Type::Volume(VolumeSource {
            volume_id: v.clone(),
        })),
        (None, None) => None,
    };
    let requirements =
        (!a.requisite.is_empty() || !a.preferred.is_empty()).then(|| pb::TopologyRequirement {
            requisite: a.requisite.iter().map(topology).collect(),
            preferred: a.preferred.iter().map(topology).collect(),
        });
    let msg = pb::CreateVolumeRequest {
        name: a.name.clone(),
        capacity_range: capacity_range(a.size, a.limit),
        volume_capabilities: vec![capability(&a.capability)],
        parameters: kv_map(&a.params),
        secrets: secrets(&a.secrets).map_err(local)?,
        volume_content_source: source.map(|t| pb::VolumeContentSource { r#type: Some(t) }),
        accessibility_requirements: requirements,
        mutable_parameters: kv_map(&a.mutable),
    };
    let r = call_rpc!(c, controller, create_volume, "CreateVolume", msg)?;
    Ok(r.volume.as_ref().map(render::volume).unwrap_or(Value::Null))
}
