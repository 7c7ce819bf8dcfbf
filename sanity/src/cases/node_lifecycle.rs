//! A volume's whole way through the node: stage, publish, use, unpublish, unstage, with data
//! written and read back, idempotency, read-only publishing, incompatible re-publishing,
//! statistics and node expansion. Every step checks the driver left nothing behind.

use tonic::Code;

use super::common::*;
use super::data::*;
use super::{case, Case};
use crate::caps::Need;
use crate::check::{code, ok, CaseResult, Stop};
use crate::config::AccessType;
use crate::context::Ctx;
use crate::paths;
use crate::pb::controller_service_capability::rpc::Type as CtrlCap;
use crate::pb::node_service_capability::rpc::Type as NodeCap;
use crate::pb::plugin_capability::volume_expansion::Type as ExpansionCap;
use crate::pb::volume_capability::{AccessType as PbAccess, BlockVolume, MountVolume};
use crate::pb::volume_usage::Unit;
use crate::pb::*;
use crate::{ensure, fail};

const G: &str = "Node";
const CREATE: Need = Need::Ctrl(CtrlCap::CreateDeleteVolume);
const STAGE: Need = Need::Node(NodeCap::StageUnstageVolume);
const STATS: Need = Need::Node(NodeCap::GetVolumeStats);

pub fn cases() -> Vec<Case> {
    vec![
        case!(G, "volume lifecycle keeps the data written through the target across republish and restage", [CREATE], lifecycle),
        case!(G, "volume lifecycle is idempotent with every call repeated", [CREATE], lifecycle_idempotent),
        case!(G, "NodeUnpublishVolume succeeds when the volume is not published at the target", [CREATE], unpublish_not_published),
        case!(G, "NodeUnstageVolume succeeds when the volume is not staged", [CREATE, STAGE], unstage_not_staged),
        case!(G, "NodePublishVolume fails with FailedPrecondition without the staging_target_path", [CREATE, STAGE], publish_without_staging),
        case!(G, "NodePublishVolume readonly publishes a read-only target", [CREATE], publish_readonly),
        case!(G, "NodePublishVolume again at the target with another readonly flag fails with AlreadyExists", [CREATE], publish_incompatible),
        case!(G, "NodeStageVolume again with an incompatible capability fails with AlreadyExists", [CREATE, STAGE], stage_incompatible),
        case!(G, "NodeGetVolumeStats reports the usage of a published volume", [CREATE, STATS], stats_published),
        case!(G, "NodeGetVolumeStats reports the usage at the staging path", [CREATE, STATS, STAGE], stats_staged),
        case!(G, "NodeExpandVolume grows a published volume and is idempotent", [CREATE, Need::Node(NodeCap::ExpandVolume)], node_expand),
    ]
}

async fn lifecycle(ctx: &mut Ctx<'_>) -> CaseResult {
    let vol = create_volume(ctx, "node-lifecycle").await?;
    let node = node_id(ctx).await?;
    let pc = attach(ctx, &vol, &node).await?;
    let data = payload(&vol.volume_id);
    write_data(ctx, data.clone()).await?;
    unpublish(ctx, &vol, 1).await?;
    publish(ctx, &vol, &pc, false, 1).await?;
    ensure!(
        read_data(ctx, data.len()).await? == data,
        "data written before NodeUnpublishVolume is not there after republishing"
    );
    unpublish(ctx, &vol, 1).await?;
    unstage(ctx, &vol, 1).await?;
    // Restage: a driver that formats a device holding data would lose it here.
    stage(ctx, &vol, &pc, 1).await?;
    publish(ctx, &vol, &pc, false, 1).await?;
    ensure!(
        read_data(ctx, data.len()).await? == data,
        "data written before NodeUnstageVolume is not there after restaging"
    );
    detach(ctx, &vol, &node).await?;
    let req = DeleteVolumeRequest {
        volume_id: vol.volume_id.clone(),
        secrets: ctx.cfg.secrets.delete_volume_secret.clone(),
    };
    ok(ctx.delete_volume(req).await, "DeleteVolume")?;
    Ok(())
}

async fn lifecycle_idempotent(ctx: &mut Ctx<'_>) -> CaseResult {
    let n = ctx.cfg.idempotent_count;
    let vol = create_volume(ctx, "node-idempotent").await?;
    let node = node_id(ctx).await?;
    let pc = controller_publish(ctx, &vol, &node, n).await?;
    stage(ctx, &vol, &pc, n).await?;
    publish(ctx, &vol, &pc, false, n).await?;
    let data = payload(&vol.volume_id);
    write_data(ctx, data.clone()).await?;
    ensure!(
        read_data(ctx, data.len()).await? == data,
        "cannot read back what was written"
    );
    unpublish(ctx, &vol, n).await?;
    unstage(ctx, &vol, n).await?;
    controller_unpublish(ctx, &vol, &node, n).await?;
    for i in 0..n {
        let req = DeleteVolumeRequest {
            volume_id: vol.volume_id.clone(),
            secrets: ctx.cfg.secrets.delete_volume_secret.clone(),
        };
        ok(
            ctx.delete_volume(req).await,
            format!("DeleteVolume (call {})", i + 1),
        )?;
    }
    Ok(())
}

async fn unpublish_not_published(ctx: &mut Ctx<'_>) -> CaseResult {
    let vol = create_volume(ctx, "node-unpublish-never").await?;
    let req = NodeUnpublishVolumeRequest {
        volume_id: vol.volume_id.clone(),
        target_path: ctx.target_path(),
    };
    ok(
        ctx.raw_node_unpublish_volume(req).await,
        "NodeUnpublishVolume of a volume that was never published",
    )?;
    paths::check_removed(&ctx.cfg.target_path()).map_err(Stop::Fail)
}

async fn unstage_not_staged(ctx: &mut Ctx<'_>) -> CaseResult {
    let vol = create_volume(ctx, "node-unstage-never").await?;
    let req = NodeUnstageVolumeRequest {
        volume_id: vol.volume_id.clone(),
        staging_target_path: ctx.staging_path(),
    };
    ok(
        ctx.raw_node_unstage_volume(req).await,
        "NodeUnstageVolume of a volume that was never staged",
    )?;
    paths::check_unstaged(&ctx.cfg.staging_dir).map_err(Stop::Fail)
}

async fn publish_without_staging(ctx: &mut Ctx<'_>) -> CaseResult {
    let vol = create_volume(ctx, "node-nostaging").await?;
    let node = node_id(ctx).await?;
    let pc = controller_publish(ctx, &vol, &node, 1).await?;
    stage(ctx, &vol, &pc, 1).await?;
    let mut req = publish_request(ctx, &vol, &pc, false);
    req.staging_target_path.clear();
    code(
        ctx.node_publish_volume(req).await,
        &[Code::FailedPrecondition],
        "NodePublishVolume without staging_target_path",
    )?;
    Ok(())
}

async fn publish_readonly(ctx: &mut Ctx<'_>) -> CaseResult {
    let vol = create_volume(ctx, "node-readonly").await?;
    let node = node_id(ctx).await?;
    let pc = controller_publish(ctx, &vol, &node, 1).await?;
    stage(ctx, &vol, &pc, 1).await?;
    publish(ctx, &vol, &pc, true, 1).await?;
    let target = ctx.cfg.target_path();
    match paths::mount_state(&target).map_err(Stop::Fail)? {
        None => {
            return Err(Stop::Skip(format!(
                "{} is not a mount point, so read-only cannot be checked",
                target.display()
            )))
        }
        Some(ro) => ensure!(
            ro,
            "{} is mounted read-write although readonly was requested",
            target.display()
        ),
    }
    let refused = write_refused_read_only(target.clone(), ctx.cfg.access_type)
        .await
        .map_err(|e| fail!("writing to the read-only target failed oddly: {e}"))?;
    ensure!(
        refused,
        "writing through the read-only target {} succeeded",
        target.display()
    );
    unpublish(ctx, &vol, 1).await
}

async fn publish_incompatible(ctx: &mut Ctx<'_>) -> CaseResult {
    let vol = create_volume(ctx, "node-incompatible").await?;
    let node = node_id(ctx).await?;
    let pc = attach(ctx, &vol, &node).await?;
    let req = publish_request(ctx, &vol, &pc, true);
    code(
        ctx.node_publish_volume(req).await,
        &[Code::AlreadyExists],
        "NodePublishVolume at the same target with readonly=true",
    )?;
    unpublish(ctx, &vol, 1).await
}

async fn stage_incompatible(ctx: &mut Ctx<'_>) -> CaseResult {
    let vol = create_volume(ctx, "node-stage-incompatible").await?;
    let node = node_id(ctx).await?;
    let pc = controller_publish(ctx, &vol, &node, 1).await?;
    stage(ctx, &vol, &pc, 1).await?;
    let mut req = stage_request(ctx, &vol, &pc);
    let other = match ctx.cfg.access_type {
        AccessType::Mount => PbAccess::Block(BlockVolume {}),
        AccessType::Block => PbAccess::Mount(MountVolume::default()),
    };
    if let Some(c) = req.volume_capability.as_mut() {
        c.access_type = Some(other);
    }
    code(
        ctx.node_stage_volume(req).await,
        &[Code::AlreadyExists],
        "NodeStageVolume again with the other access type",
    )?;
    unstage(ctx, &vol, 1).await
}

/// Check a stats answer; returns the BYTES total.
fn check_usage(r: &NodeGetVolumeStatsResponse) -> Result<i64, Stop> {
    let mut bytes_total = None;
    for u in &r.usage {
        let unit = Unit::try_from(u.unit).unwrap_or(Unit::Unknown);
        ensure!(
            unit != Unit::Unknown,
            "a usage entry has unit {} (REQUIRED: BYTES or INODES)",
            u.unit
        );
        ensure!(
            u.total >= 0 && u.available >= 0 && u.used >= 0,
            "negative usage values: {u:?}"
        );
        if unit == Unit::Bytes {
            bytes_total = Some(u.total);
        }
    }
    match bytes_total {
        Some(t) if t > 0 => Ok(t),
        _ => Err(fail!("no BYTES usage with a positive total: {:?}", r.usage)),
    }
}

async fn stats_published(ctx: &mut Ctx<'_>) -> CaseResult {
    let vol = create_volume(ctx, "node-stats").await?;
    let node = node_id(ctx).await?;
    attach(ctx, &vol, &node).await?;
    let staging = if ctx.caps.has_node(NodeCap::StageUnstageVolume) {
        ctx.staging_path()
    } else {
        String::new()
    };
    let req = NodeGetVolumeStatsRequest {
        volume_id: vol.volume_id.clone(),
        volume_path: ctx.target_path(),
        staging_target_path: staging,
    };
    let r = ok(ctx.node_get_volume_stats(req).await, "NodeGetVolumeStats")?;
    check_usage(&r)?;
    unpublish(ctx, &vol, 1).await
}

async fn stats_staged(ctx: &mut Ctx<'_>) -> CaseResult {
    let vol = create_volume(ctx, "node-stats-staged").await?;
    let node = node_id(ctx).await?;
    let pc = controller_publish(ctx, &vol, &node, 1).await?;
    stage(ctx, &vol, &pc, 1).await?;
    let req = NodeGetVolumeStatsRequest {
        volume_id: vol.volume_id.clone(),
        volume_path: ctx.staging_path(),
        staging_target_path: ctx.staging_path(),
    };
    let r = ok(
        ctx.node_get_volume_stats(req).await,
        "NodeGetVolumeStats at the staging path",
    )?;
    check_usage(&r)?;
    unstage(ctx, &vol, 1).await
}

async fn bytes_total(ctx: &Ctx<'_>, vol: &Volume) -> Result<Option<i64>, Stop> {
    if !ctx.caps.has_node(NodeCap::GetVolumeStats) {
        return Ok(None);
    }
    let staging = if ctx.caps.has_node(NodeCap::StageUnstageVolume) {
        ctx.staging_path()
    } else {
        String::new()
    };
    let req = NodeGetVolumeStatsRequest {
        volume_id: vol.volume_id.clone(),
        volume_path: ctx.target_path(),
        staging_target_path: staging,
    };
    Ok(Some(check_usage(&ok(
        ctx.node_get_volume_stats(req).await,
        "NodeGetVolumeStats",
    )?)?))
}

async fn controller_expand(ctx: &mut Ctx<'_>, vol: &Volume) -> CaseResult {
    let req = ControllerExpandVolumeRequest {
        volume_id: vol.volume_id.clone(),
        capacity_range: Some(CapacityRange {
            required_bytes: ctx.cfg.expand_size(),
            limit_bytes: 0,
        }),
        secrets: ctx.cfg.secrets.controller_expand_volume_secret.clone(),
        volume_capability: Some(ctx.cap()),
    };
    ok(
        ctx.controller_expand_volume(req).await,
        "ControllerExpandVolume",
    )?;
    Ok(())
}

async fn node_expand(ctx: &mut Ctx<'_>) -> CaseResult {
    let vol = create_volume(ctx, "node-expand").await?;
    let node = node_id(ctx).await?;
    let ctrl_expand = ctx.caps.has_ctrl(CtrlCap::ExpandVolume);
    let online = ctx.caps.expansion == Some(ExpansionCap::Online);
    if ctrl_expand && !online {
        controller_expand(ctx, &vol).await?; // OFFLINE: grow before the volume is in use
    }
    attach(ctx, &vol, &node).await?;
    let before = bytes_total(ctx, &vol).await?;
    if ctrl_expand && online {
        controller_expand(ctx, &vol).await?;
    }
    let staging = if ctx.caps.has_node(NodeCap::StageUnstageVolume) {
        ctx.staging_path()
    } else {
        String::new()
    };
    for i in 0..ctx.cfg.idempotent_count {
        let req = NodeExpandVolumeRequest {
            volume_id: vol.volume_id.clone(),
            volume_path: ctx.target_path(),
            capacity_range: Some(CapacityRange {
                required_bytes: ctx.cfg.expand_size(),
                limit_bytes: 0,
            }),
            staging_target_path: staging.clone(),
            volume_capability: Some(ctx.cap()),
            secrets: ctx.cfg.secrets.node_expand_volume_secret.clone(),
        };
        let r = ok(
            ctx.node_expand_volume(req).await,
            format!("NodeExpandVolume (call {})", i + 1),
        )?;
        ensure!(
            r.capacity_bytes >= 0,
            "NodeExpandVolume reports negative capacity_bytes {}",
            r.capacity_bytes
        );
    }
    if let (Some(b), true) = (before, online) {
        let after = bytes_total(ctx, &vol).await?.unwrap_or(b);
        ensure!(after > b, "NodeGetVolumeStats total is {after} bytes after expansion, {b} before: the volume did not grow");
    }
    unpublish(ctx, &vol, 1).await
}
