//! Node RPCs with missing or unknown arguments: each must fail with the code the spec names
//! and change nothing.

use tonic::Code;

use super::common::unknown_id;
use super::{case, Case};
use crate::caps::Need;
use crate::check::{code, CaseResult};
use crate::context::Ctx;
use crate::pb::node_service_capability::rpc::Type as NodeCap;
use crate::pb::*;

const G: &str = "Node";
const STAGE: Need = Need::Node(NodeCap::StageUnstageVolume);

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
