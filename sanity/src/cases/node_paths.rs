//! NodeGetVolumeStats and NodeExpandVolume with missing or wrong arguments.

use tonic::Code;

use super::common::{
    attach, controller_publish, create_volume, node_id, publish_request, stage_request, unknown_id,
};
use super::{case, Case};
use crate::caps::Need;
use crate::check::{code, ok, CaseResult, Stop};
use crate::context::Ctx;
use crate::pb::controller_service_capability::rpc::Type as CtrlCap;
use crate::pb::node_service_capability::rpc::Type as NodeCap;
use crate::pb::volume_capability::access_mode::Mode;
use crate::pb::*;

const G: &str = "Node";
const CREATE: Need = Need::Ctrl(CtrlCap::CreateDeleteVolume);
const STATS: Need = Need::Node(NodeCap::GetVolumeStats);
const EXPAND: Need = Need::Node(NodeCap::ExpandVolume);
const SNMW: Need = Need::Node(NodeCap::SingleNodeMultiWriter);

/// What csi-sanity sends as a path where no volume is.
const NOWHERE: &str = "some/path";

pub fn cases() -> Vec<Case> {
    vec![
        case!(
            G,
            "NodeGetVolumeStats fails with InvalidArgument without a volume_id",
            [STATS],
            stats_no_id
        ),
        case!(
            G,
            "NodeGetVolumeStats fails with InvalidArgument without a volume_path",
            [STATS],
            stats_no_path
        ),
        case!(
            G,
            "NodeGetVolumeStats fails with NotFound for an unknown volume",
            [STATS],
            stats_unknown
        ),
        case!(
            G,
            "NodeGetVolumeStats fails with NotFound for a path the volume is not at",
            [STATS, CREATE],
            stats_wrong_path
        ),
        case!(
            G,
            "NodeExpandVolume fails with InvalidArgument without a volume_id",
            [EXPAND],
            expand_no_id
        ),
        case!(
            G,
            "NodeExpandVolume fails with InvalidArgument without a volume_path",
            [EXPAND, CREATE],
            expand_no_path
        ),
        case!(
            G,
            "NodeExpandVolume fails with NotFound for an unknown volume",
            [EXPAND],
            expand_unknown
        ),
        case!(
            G,
            "NodePublishVolume of a SINGLE_NODE_SINGLE_WRITER volume at a second target fails with FailedPrecondition",
            [CREATE, SNMW],
            single_writer_second_target
        ),
    ]
}

fn stats_req(id: &str, path: &str) -> NodeGetVolumeStatsRequest {
    NodeGetVolumeStatsRequest {
        volume_id: id.to_string(),
        volume_path: path.to_string(),
        staging_target_path: String::new(),
    }
}

async fn stats_no_id(ctx: &mut Ctx<'_>) -> CaseResult {
    code(
        ctx.node_get_volume_stats(stats_req("", &ctx.target_path()))
            .await,
        &[Code::InvalidArgument],
        "NodeGetVolumeStats without volume_id",
    )?;
    Ok(())
}

async fn stats_no_path(ctx: &mut Ctx<'_>) -> CaseResult {
    code(
        ctx.node_get_volume_stats(stats_req(&unknown_id(), ""))
            .await,
        &[Code::InvalidArgument],
        "NodeGetVolumeStats without volume_path",
    )?;
    Ok(())
}

async fn stats_unknown(ctx: &mut Ctx<'_>) -> CaseResult {
    for path in [ctx.target_path(), NOWHERE.to_string()] {
        code(
            ctx.node_get_volume_stats(stats_req(&unknown_id(), &path))
                .await,
            &[Code::NotFound],
            format!("NodeGetVolumeStats of an unknown volume at {path}"),
        )?;
    }
    Ok(())
}

async fn stats_wrong_path(ctx: &mut Ctx<'_>) -> CaseResult {
    let vol = create_volume(ctx, "stats-wrongpath").await?;
    let node = node_id(ctx).await?;
    attach(ctx, &vol, &node).await?;
    let elsewhere = ctx.cfg.mount_dir.display().to_string();
    for path in [elsewhere, NOWHERE.to_string()] {
        code(
            ctx.node_get_volume_stats(stats_req(&vol.volume_id, &path))
                .await,
            &[Code::NotFound],
            format!("NodeGetVolumeStats at {path}, where the volume is not published"),
        )?;
    }
    Ok(())
}

fn expand_req(ctx: &Ctx<'_>, id: &str, path: &str) -> NodeExpandVolumeRequest {
    NodeExpandVolumeRequest {
        volume_id: id.to_string(),
        volume_path: path.to_string(),
        capacity_range: Some(CapacityRange {
            required_bytes: ctx.cfg.expand_size(),
            limit_bytes: 0,
        }),
        staging_target_path: String::new(),
        volume_capability: Some(ctx.cap()),
        secrets: ctx.cfg.secrets.node_expand_volume_secret.clone(),
    }
}

async fn expand_no_id(ctx: &mut Ctx<'_>) -> CaseResult {
    let req = expand_req(ctx, "", &ctx.target_path());
    code(
        ctx.node_expand_volume(req).await,
        &[Code::InvalidArgument],
        "NodeExpandVolume without volume_id",
    )?;
    Ok(())
}

async fn expand_no_path(ctx: &mut Ctx<'_>) -> CaseResult {
    let vol = create_volume(ctx, "node-expand-nopath").await?;
    let req = expand_req(ctx, &vol.volume_id, "");
    code(
        ctx.node_expand_volume(req).await,
        &[Code::InvalidArgument],
        "NodeExpandVolume without volume_path",
    )?;
    Ok(())
}

async fn expand_unknown(ctx: &mut Ctx<'_>) -> CaseResult {
    for path in [ctx.target_path(), NOWHERE.to_string()] {
        let req = expand_req(ctx, &unknown_id(), &path);
        code(
            ctx.node_expand_volume(req).await,
            &[Code::NotFound],
            format!("NodeExpandVolume of an unknown volume at {path}"),
        )?;
    }
    Ok(())
}

/// CSI NodePublishVolume (second publish on one node, with SINGLE_NODE_MULTI_WRITER
/// advertised): SINGLE_NODE_SINGLE_WRITER at another target path → FAILED_PRECONDITION.
async fn single_writer_second_target(ctx: &mut Ctx<'_>) -> CaseResult {
    let vol = create_volume(ctx, "node-single-writer").await?;
    let node = node_id(ctx).await?;
    let pc = controller_publish(ctx, &vol, &node, 1).await?;
    let cap = ctx.cap_with(Mode::SingleNodeSingleWriter);
    if ctx.caps.has_node(NodeCap::StageUnstageVolume) {
        let mut req = stage_request(ctx, &vol, &pc);
        req.volume_capability = Some(cap.clone());
        ok(ctx.node_stage_volume(req).await, "NodeStageVolume")?;
    }
    let mut first = publish_request(ctx, &vol, &pc, false);
    first.volume_capability = Some(cap);
    ok(
        ctx.node_publish_volume(first.clone()).await,
        "NodePublishVolume at the first target",
    )?;
    let second = ctx.cfg.mount_dir.join("second-target");
    let mut req = first;
    req.target_path = second.display().to_string();
    let res = ctx.node_publish_volume(req).await;
    if res.is_ok() {
        // Undo it, or the cleanup's unstage would meet a busy volume.
        let _ = ctx
            .node_unpublish_volume(NodeUnpublishVolumeRequest {
                volume_id: vol.volume_id.clone(),
                target_path: second.display().to_string(),
            })
            .await;
    }
    code(
        res,
        &[Code::FailedPrecondition],
        "NodePublishVolume of a SINGLE_NODE_SINGLE_WRITER volume at a second target",
    )?;
    if second.exists() {
        return Err(Stop::Fail(format!(
            "the refused publish left {} behind",
            second.display()
        )));
    }
    super::common::unpublish(ctx, &vol, 1).await
}
