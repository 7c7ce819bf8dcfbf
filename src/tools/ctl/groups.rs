//! The GroupController subcommands: create, delete and get a volume group snapshot.

use serde_json::{json, Value};

use super::args::{CreateGroupSnapshot, GroupSnapshotId};
use super::client::Client;
use super::render;
use super::requests::{kv_map, secrets};
use super::rpc::{call_rpc, rpc_err, CtlError};
use crate::server::csi::pb;

fn group(g: Option<&pb::VolumeGroupSnapshot>) -> Value {
    let Some(g) = g else {
        return Value::Null;
    };
    json!({
        "group_snapshot_id": g.group_snapshot_id,
        "creation_time": g.creation_time.as_ref().map(render::timestamp),
        "ready_to_use": g.ready_to_use,
        "snapshots": g.snapshots.iter().map(render::snapshot).collect::<Vec<_>>(),
    })
}

pub async fn create(c: &Client, a: &CreateGroupSnapshot) -> Result<Value, CtlError> {
    let msg = pb::CreateVolumeGroupSnapshotRequest {
        name: a.name.clone(),
        source_volume_ids: a.sources.clone(),
        secrets: secrets(&a.secrets).map_err(CtlError::Local)?,
        parameters: kv_map(&a.params),
    };
    let r = call_rpc!(
        c,
        group_controller,
        create_volume_group_snapshot,
        "CreateVolumeGroupSnapshot",
        msg
    )?;
    Ok(group(r.group_snapshot.as_ref()))
}

pub async fn delete(c: &Client, a: &GroupSnapshotId) -> Result<Value, CtlError> {
    let msg = pb::DeleteVolumeGroupSnapshotRequest {
        group_snapshot_id: a.group_snapshot_id.clone(),
        snapshot_ids: a.snapshot_ids.clone(),
        secrets: secrets(&a.secrets).map_err(CtlError::Local)?,
    };
    call_rpc!(
        c,
        group_controller,
        delete_volume_group_snapshot,
        "DeleteVolumeGroupSnapshot",
        msg
    )?;
    Ok(json!({}))
}

pub async fn get(c: &Client, a: &GroupSnapshotId) -> Result<Value, CtlError> {
    let msg = pb::GetVolumeGroupSnapshotRequest {
        group_snapshot_id: a.group_snapshot_id.clone(),
        snapshot_ids: a.snapshot_ids.clone(),
        secrets: secrets(&a.secrets).map_err(CtlError::Local)?,
    };
    let r = call_rpc!(
        c,
        group_controller,
        get_volume_group_snapshot,
        "GetVolumeGroupSnapshot",
        msg
    )?;
    Ok(group(r.group_snapshot.as_ref()))
}
