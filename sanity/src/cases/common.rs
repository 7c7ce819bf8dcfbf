//! Steps many cases share: create a volume or a ready snapshot, walk a volume through
//! controller publish → stage → publish and back with the spec's checks at each step, and
//! write/read data through the published target.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use crate::check::{ok, Stop};
use crate::config::AccessType;
use crate::context::Ctx;
use crate::paths;
use crate::pb::controller_service_capability::rpc::Type as CtrlCap;
use crate::pb::node_service_capability::rpc::Type as NodeCap;
use crate::pb::*;
use crate::{ensure, fail};

/// A random UUID: a well-formed id that names no volume, snapshot or node.
pub fn unknown_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// The basic checks on a volume the driver returned.
pub fn check_volume(v: Option<Volume>, what: &str, min_size: i64) -> Result<Volume, Stop> {
    let v = v.ok_or_else(|| fail!("{what}: the response has no volume"))?;
    ensure!(
        !v.volume_id.is_empty(),
        "{what}: the volume has an empty volume_id"
    );
    ensure!(
        v.capacity_bytes >= 0,
        "{what}: negative capacity_bytes {}",
        v.capacity_bytes
    );
    ensure!(
        v.capacity_bytes == 0 || v.capacity_bytes >= min_size,
        "{what}: capacity_bytes {} is less than the required {min_size}",
        v.capacity_bytes
    );
    Ok(v)
}

/// CreateVolume with the run's size and parameters; the volume is cleaned up after the case.
pub async fn create_volume(ctx: &mut Ctx<'_>, tag: &str) -> Result<Volume, Stop> {
    let req = ctx.create_request(&ctx.unique_name(tag));
    let size = ctx.cfg.volume_size;
    let r = ok(ctx.create_volume(req).await, "CreateVolume")?;
    check_volume(r.volume, "CreateVolume", size)
}

/// The checks every snapshot must pass.
pub fn check_snapshot(s: Option<Snapshot>, source: &str, what: &str) -> Result<Snapshot, Stop> {
    let s = s.ok_or_else(|| fail!("{what}: the response has no snapshot"))?;
    ensure!(!s.snapshot_id.is_empty(), "{what}: empty snapshot_id");
    ensure!(
        s.source_volume_id == source,
        "{what}: source_volume_id is {:?}, expected {source:?}",
        s.source_volume_id
    );
    ensure!(
        s.creation_time.is_some(),
        "{what}: creation_time is not set (REQUIRED)"
    );
    ensure!(
        s.size_bytes >= 0,
        "{what}: negative size_bytes {}",
        s.size_bytes
    );
    Ok(s)
}

/// Issue CreateSnapshot (the same request, as a CO does) until `ready_to_use` is true.
pub async fn create_ready_snapshot(
    ctx: &mut Ctx<'_>,
    req: CreateSnapshotRequest,
) -> Result<Snapshot, Stop> {
    let deadline = tokio::time::Instant::now() + ctx.cfg.snapshot_ready_timeout;
    let mut wait = Duration::from_millis(100);
    let source = req.source_volume_id.clone();
    loop {
        let r = ok(ctx.create_snapshot(req.clone()).await, "CreateSnapshot")?;
        let s = check_snapshot(r.snapshot, &source, "CreateSnapshot")?;
        if s.ready_to_use {
            return Ok(s);
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(fail!(
                "snapshot {} was not ready_to_use within {:?}",
                s.snapshot_id,
                ctx.cfg.snapshot_ready_timeout
            ));
        }
        tokio::time::sleep(wait).await;
        wait = (wait * 2).min(Duration::from_secs(5));
    }
}

/// A volume and a ready snapshot of it.
pub async fn create_snapshot_of_new_volume(
    ctx: &mut Ctx<'_>,
    tag: &str,
) -> Result<(Volume, Snapshot), Stop> {
    let vol = create_volume(ctx, tag).await?;
    let req = ctx.snapshot_request(&ctx.unique_name(tag), &vol.volume_id);
    let snap = create_ready_snapshot(ctx, req).await?;
    Ok((vol, snap))
}

/// This node's id, as NodeGetInfo reports it.
pub async fn node_id(ctx: &Ctx<'_>) -> Result<String, Stop> {
    if let Some(info) = &ctx.caps.node_info {
        if !info.node_id.is_empty() {
            return Ok(info.node_id.clone());
        }
    }
    let info = ok(
        ctx.node_get_info(NodeGetInfoRequest {}).await,
        "NodeGetInfo",
    )?;
    ensure!(
        !info.node_id.is_empty(),
        "NodeGetInfo returned an empty node_id"
    );
    Ok(info.node_id)
}

pub fn controller_publish_request(
    ctx: &Ctx<'_>,
    vol: &Volume,
    node: &str,
    readonly: bool,
) -> ControllerPublishVolumeRequest {
    ControllerPublishVolumeRequest {
        volume_id: vol.volume_id.clone(),
        node_id: node.to_string(),
        volume_capability: Some(ctx.cap()),
        readonly,
        secrets: ctx.cfg.secrets.controller_publish_volume_secret.clone(),
        volume_context: vol.volume_context.clone(),
    }
}

pub fn stage_request(
    ctx: &Ctx<'_>,
    vol: &Volume,
    pc: &HashMap<String, String>,
) -> NodeStageVolumeRequest {
    NodeStageVolumeRequest {
        volume_id: vol.volume_id.clone(),
        publish_context: pc.clone(),
        staging_target_path: ctx.staging_path(),
        volume_capability: Some(ctx.cap()),
        secrets: ctx.cfg.secrets.node_stage_volume_secret.clone(),
        volume_context: vol.volume_context.clone(),
    }
}

pub fn publish_request(
    ctx: &Ctx<'_>,
    vol: &Volume,
    pc: &HashMap<String, String>,
    readonly: bool,
) -> NodePublishVolumeRequest {
    let staging = if ctx.caps.has_node(NodeCap::StageUnstageVolume) {
        ctx.staging_path()
    } else {
        String::new()
    };
    NodePublishVolumeRequest {
        volume_id: vol.volume_id.clone(),
        publish_context: pc.clone(),
        staging_target_path: staging,
        target_path: ctx.target_path(),
        volume_capability: Some(ctx.cap()),
        readonly,
        secrets: ctx.cfg.secrets.node_publish_volume_secret.clone(),
        volume_context: vol.volume_context.clone(),
    }
}

/// ControllerPublishVolume to this node `times` times when the driver has the capability;
/// every answer must carry the same publish_context (it SHALL NOT be mutable).
pub async fn controller_publish(
    ctx: &mut Ctx<'_>,
    vol: &Volume,
    node: &str,
    times: usize,
) -> Result<HashMap<String, String>, Stop> {
    if !ctx.caps.has_ctrl(CtrlCap::PublishUnpublishVolume) {
        return Ok(HashMap::new());
    }
    let mut first: Option<HashMap<String, String>> = None;
    for i in 0..times {
        let req = controller_publish_request(ctx, vol, node, false);
        let r = ok(
            ctx.controller_publish_volume(req).await,
            format!("ControllerPublishVolume (call {})", i + 1),
        )?;
        match &first {
            None => first = Some(r.publish_context),
            Some(pc) => ensure!(
                *pc == r.publish_context,
                "ControllerPublishVolume call {} returned publish_context {:?}, the first call {:?}",
                i + 1,
                r.publish_context,
                pc
            ),
        }
    }
    Ok(first.unwrap_or_default())
}

pub async fn controller_unpublish(
    ctx: &mut Ctx<'_>,
    vol: &Volume,
    node: &str,
    times: usize,
) -> Result<(), Stop> {
    if !ctx.caps.has_ctrl(CtrlCap::PublishUnpublishVolume) {
        return Ok(());
    }
    for i in 0..times {
        let req = ControllerUnpublishVolumeRequest {
            volume_id: vol.volume_id.clone(),
            node_id: node.to_string(),
            secrets: ctx.cfg.secrets.controller_unpublish_volume_secret.clone(),
        };
        ok(
            ctx.controller_unpublish_volume(req).await,
            format!("ControllerUnpublishVolume (call {})", i + 1),
        )?;
    }
    Ok(())
}

/// NodeStageVolume `times` times when the driver has STAGE_UNSTAGE_VOLUME.
pub async fn stage(
    ctx: &mut Ctx<'_>,
    vol: &Volume,
    pc: &HashMap<String, String>,
    times: usize,
) -> Result<(), Stop> {
    if !ctx.caps.has_node(NodeCap::StageUnstageVolume) {
        return Ok(());
    }
    for i in 0..times {
        let req = stage_request(ctx, vol, pc);
        ok(
            ctx.node_stage_volume(req).await,
            format!("NodeStageVolume (call {})", i + 1),
        )?;
    }
    ensure!(
        ctx.cfg.staging_dir.is_dir(),
        "after NodeStageVolume the staging directory {} is gone; it belongs to the CO",
        ctx.cfg.staging_dir.display()
    );
    Ok(())
}

/// NodeUnstageVolume `times` times, then check the staging directory is unmounted and empty.
pub async fn unstage(ctx: &mut Ctx<'_>, vol: &Volume, times: usize) -> Result<(), Stop> {
    if !ctx.caps.has_node(NodeCap::StageUnstageVolume) {
        return Ok(());
    }
    for i in 0..times {
        let req = NodeUnstageVolumeRequest {
            volume_id: vol.volume_id.clone(),
            staging_target_path: ctx.staging_path(),
        };
        ok(
            ctx.node_unstage_volume(req).await,
            format!("NodeUnstageVolume (call {})", i + 1),
        )?;
    }
    paths::check_unstaged(&ctx.cfg.staging_dir).map_err(|e| fail!("after NodeUnstageVolume: {e}"))
}

/// NodePublishVolume `times` times; the target must then exist and be of the right kind.
pub async fn publish(
    ctx: &mut Ctx<'_>,
    vol: &Volume,
    pc: &HashMap<String, String>,
    readonly: bool,
    times: usize,
) -> Result<(), Stop> {
    for i in 0..times {
        let req = publish_request(ctx, vol, pc, readonly);
        ok(
            ctx.node_publish_volume(req).await,
            format!("NodePublishVolume (call {})", i + 1),
        )?;
    }
    let target = ctx.cfg.target_path();
    let meta = std::fs::metadata(&target).map_err(|e| {
        fail!(
            "after NodePublishVolume the target {} is not there: {e}",
            target.display()
        )
    })?;
    match ctx.cfg.access_type {
        AccessType::Mount => ensure!(
            meta.is_dir(),
            "mount access: the target {} is not a directory",
            target.display()
        ),
        AccessType::Block => ensure!(
            !meta.is_dir(),
            "block access: the target {} is a directory, expected the block device",
            target.display()
        ),
    }
    Ok(())
}

/// NodeUnpublishVolume `times` times; the target must then be gone and unmounted.
pub async fn unpublish(ctx: &mut Ctx<'_>, vol: &Volume, times: usize) -> Result<(), Stop> {
    for i in 0..times {
        let req = NodeUnpublishVolumeRequest {
            volume_id: vol.volume_id.clone(),
            target_path: ctx.target_path(),
        };
        ok(
            ctx.node_unpublish_volume(req).await,
            format!("NodeUnpublishVolume (call {})", i + 1),
        )?;
    }
    paths::check_removed(&ctx.cfg.target_path())
        .map_err(|e| fail!("after NodeUnpublishVolume: {e}"))
}

/// Controller publish, stage and publish once each; returns the publish context.
pub async fn attach(
    ctx: &mut Ctx<'_>,
    vol: &Volume,
    node: &str,
) -> Result<HashMap<String, String>, Stop> {
    let pc = controller_publish(ctx, vol, node, 1).await?;
    stage(ctx, vol, &pc, 1).await?;
    publish(ctx, vol, &pc, false, 1).await?;
    Ok(pc)
}

/// Unpublish, unstage and controller unpublish once each, checking nothing is left behind.
pub async fn detach(ctx: &mut Ctx<'_>, vol: &Volume, node: &str) -> Result<(), Stop> {
    unpublish(ctx, vol, 1).await?;
    unstage(ctx, vol, 1).await?;
    controller_unpublish(ctx, vol, node, 1).await
}

/// Whether a path exists (without following a final symlink).
pub fn exists(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok()
}
