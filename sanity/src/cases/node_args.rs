//! Node RPCs with missing or unknown arguments: each must fail with the code the spec names
//! and change nothing.

use tonic::Code;

use super::common::{attach, create_volume, node_id, unknown_id};
use super::{case, Case};
use crate::caps::Need;
use crate::check::{code, CaseResult};
use crate::context::Ctx;
use crate::pb::controller_service_capability::rpc::Type as CtrlCap;
use crate::pb::node_service_capability::rpc::Type as NodeCap;
use crate::pb::*;

const G: &str = "Node";
const CREATE: Need = Need::Ctrl(CtrlCap::CreateDeleteVolume);
const STAGE: Need = Need::Node(NodeCap::StageUnstageVolume);
const STATS: Need = Need::Node(NodeCap::GetVolumeStats);
const EXPAND: Need = Need::Node(NodeCap::ExpandVolume);

pub fn cases() -> Vec<Case> {
    vec![
        case!(
            G,
            "NodePublishVolume fails with InvalidArgument without a volume_id",
            [],
            publish_no_id
        ),
        case!(
            G,
            "NodePublishVolume fails with InvalidArgument without a target_path",
            [],
            publish_no_target
        ),
        case!(
            G,
            "NodePublishVolume fails with InvalidArgument without a volume_capability",
            [],
            publish_no_cap
        ),
        case!(
            G,
            "NodePublishVolume fails with NotFound for an unknown volume",
            [],
            publish_unknown
        ),
        case!(
            G,
            "NodeUnpublishVolume fails with InvalidArgument without a volume_id",
            [],
            unpublish_no_id
        ),
        case!(
            G,
            "NodeUnpublishVolume fails with InvalidArgument without a target_path",
            [],
            unpublish_no_target
        ),
        case!(
            G,
            "NodeStageVolume fails with InvalidArgument without a volume_id",
            [STAGE],
            stage_no_id
        ),
        case!(
            G,
            "NodeStageVolume fails with InvalidArgument without a staging_target_path",
            [STAGE],
            stage_no_path
        ),
        case!(
            G,
            "NodeStageVolume fails with InvalidArgument without a volume_capability",
            [STAGE],
            stage_no_cap
        ),
        case!(
            G,
            "NodeStageVolume fails with NotFound for an unknown volume",
            [STAGE],
            stage_unknown
        ),
        case!(
            G,
            "NodeUnstageVolume fails with InvalidArgument without a volume_id",
            [STAGE],
            unstage_no_id
        ),
        case!(
            G,
            "NodeUnstageVolume fails with InvalidArgument without a staging_target_path",
            [STAGE],
            unstage_no_path
        ),
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
    ]
}

fn publish_req(
    ctx: &Ctx<'_>,
    id: &str,
    target: &str,
    cap: Option<VolumeCapability>,
) -> NodePublishVolumeRequest {
    let staging = if ctx.caps.has_node(NodeCap::StageUnstageVolume) {
        ctx.staging_path()
    } else {
        String::new()
    };
    NodePublishVolumeRequest {
        volume_id: id.to_string(),
        publish_context: Default::default(),
        staging_target_path: staging,
        target_path: target.to_string(),
        volume_capability: cap,
        readonly: false,
        secrets: ctx.cfg.secrets.node_publish_volume_secret.clone(),
        volume_context: Default::default(),
    }
}

async fn publish_no_id(ctx: &mut Ctx<'_>) -> CaseResult {
    let req = publish_req(ctx, "", &ctx.target_path(), Some(ctx.cap()));
    code(
        ctx.raw_node_publish_volume(req).await,
        &[Code::InvalidArgument],
        "NodePublishVolume without volume_id",
    )?;
    Ok(())
}

async fn publish_no_target(ctx: &mut Ctx<'_>) -> CaseResult {
    let req = publish_req(ctx, &unknown_id(), "", Some(ctx.cap()));
    code(
        ctx.raw_node_publish_volume(req).await,
        &[Code::InvalidArgument],
        "NodePublishVolume without target_path",
    )?;
    Ok(())
}

async fn publish_no_cap(ctx: &mut Ctx<'_>) -> CaseResult {
    let req = publish_req(ctx, &unknown_id(), &ctx.target_path(), None);
    code(
        ctx.raw_node_publish_volume(req).await,
        &[Code::InvalidArgument],
        "NodePublishVolume without volume_capability",
    )?;
    Ok(())
}

async fn publish_unknown(ctx: &mut Ctx<'_>) -> CaseResult {
    let req = publish_req(ctx, &unknown_id(), &ctx.target_path(), Some(ctx.cap()));
    // With staging, an unknown volume is also "not staged": FailedPrecondition is as right.
    let codes: &[Code] = if ctx.caps.has_node(NodeCap::StageUnstageVolume) {
        &[Code::NotFound, Code::FailedPrecondition]
    } else {
        &[Code::NotFound]
    };
    code(
        ctx.raw_node_publish_volume(req).await,
        codes,
        "NodePublishVolume of an unknown volume",
    )?;
    Ok(())
}

async fn unpublish_no_id(ctx: &mut Ctx<'_>) -> CaseResult {
    let req = NodeUnpublishVolumeRequest {
        volume_id: String::new(),
        target_path: ctx.target_path(),
    };
    code(
        ctx.raw_node_unpublish_volume(req).await,
        &[Code::InvalidArgument],
        "NodeUnpublishVolume without volume_id",
    )?;
    Ok(())
}

async fn unpublish_no_target(ctx: &mut Ctx<'_>) -> CaseResult {
    let req = NodeUnpublishVolumeRequest {
        volume_id: unknown_id(),
        target_path: String::new(),
    };
    code(
        ctx.raw_node_unpublish_volume(req).await,
        &[Code::InvalidArgument],
        "NodeUnpublishVolume without target_path",
    )?;
    Ok(())
}

fn stage_req(
    ctx: &Ctx<'_>,
    id: &str,
    path: &str,
    cap: Option<VolumeCapability>,
) -> NodeStageVolumeRequest {
    NodeStageVolumeRequest {
        volume_id: id.to_string(),
        publish_context: Default::default(),
        staging_target_path: path.to_string(),
        volume_capability: cap,
        secrets: ctx.cfg.secrets.node_stage_volume_secret.clone(),
        volume_context: Default::default(),
    }
}

async fn stage_no_id(ctx: &mut Ctx<'_>) -> CaseResult {
    let req = stage_req(ctx, "", &ctx.staging_path(), Some(ctx.cap()));
    code(
        ctx.raw_node_stage_volume(req).await,
        &[Code::InvalidArgument],
        "NodeStageVolume without volume_id",
    )?;
    Ok(())
}

async fn stage_no_path(ctx: &mut Ctx<'_>) -> CaseResult {
    let req = stage_req(ctx, &unknown_id(), "", Some(ctx.cap()));
    code(
        ctx.raw_node_stage_volume(req).await,
        &[Code::InvalidArgument],
        "NodeStageVolume without staging_target_path",
    )?;
    Ok(())
}

async fn stage_no_cap(ctx: &mut Ctx<'_>) -> CaseResult {
    let req = stage_req(ctx, &unknown_id(), &ctx.staging_path(), None);
    code(
        ctx.raw_node_stage_volume(req).await,
        &[Code::InvalidArgument],
        "NodeStageVolume without volume_capability",
    )?;
    Ok(())
}

async fn stage_unknown(ctx: &mut Ctx<'_>) -> CaseResult {
    let req = stage_req(ctx, &unknown_id(), &ctx.staging_path(), Some(ctx.cap()));
    code(
        ctx.raw_node_stage_volume(req).await,
        &[Code::NotFound],
        "NodeStageVolume of an unknown volume",
    )?;
    Ok(())
}

async fn unstage_no_id(ctx: &mut Ctx<'_>) -> CaseResult {
    let req = NodeUnstageVolumeRequest {
        volume_id: String::new(),
        staging_target_path: ctx.staging_path(),
    };
    code(
        ctx.raw_node_unstage_volume(req).await,
        &[Code::InvalidArgument],
        "NodeUnstageVolume without volume_id",
    )?;
    Ok(())
}

async fn unstage_no_path(ctx: &mut Ctx<'_>) -> CaseResult {
    let req = NodeUnstageVolumeRequest {
        volume_id: unknown_id(),
        staging_target_path: String::new(),
    };
    code(
        ctx.raw_node_unstage_volume(req).await,
        &[Code::InvalidArgument],
        "NodeUnstageVolume without staging_target_path",
    )?;
    Ok(())
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
    code(
        ctx.node_get_volume_stats(stats_req(&unknown_id(), &ctx.target_path()))
            .await,
        &[Code::NotFound],
        "NodeGetVolumeStats of an unknown volume",
    )?;
    Ok(())
}

async fn stats_wrong_path(ctx: &mut Ctx<'_>) -> CaseResult {
    let vol = create_volume(ctx, "stats-wrongpath").await?;
    let node = node_id(ctx).await?;
    attach(ctx, &vol, &node).await?;
    let elsewhere = ctx.cfg.mount_dir.display().to_string();
    code(
        ctx.node_get_volume_stats(stats_req(&vol.volume_id, &elsewhere))
            .await,
        &[Code::NotFound],
        "NodeGetVolumeStats at a path the volume is not published at",
    )?;
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
    let req = expand_req(ctx, &unknown_id(), &ctx.target_path());
    code(
        ctx.node_expand_volume(req).await,
        &[Code::NotFound],
        "NodeExpandVolume of an unknown volume",
    )?;
    Ok(())
}
