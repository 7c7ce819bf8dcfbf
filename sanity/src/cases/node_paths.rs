//! NodeGetVolumeStats and NodeExpandVolume with missing or wrong arguments.

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
const STATS: Need = Need::Node(NodeCap::GetVolumeStats);
const EXPAND: Need = Need::Node(NodeCap::ExpandVolume);

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
