//! ControllerPublishVolume and ControllerUnpublishVolume.

use tonic::Code;

use super::common::{
    controller_publish, controller_publish_request, controller_unpublish, create_volume, node_id,
    unknown_id,
};
use super::{case, Case};
use crate::caps::Need;
use crate::check::{code, ok, ok_or, CaseResult};
use crate::context::Ctx;
use crate::pb::controller_service_capability::rpc::Type as CtrlCap;
use crate::pb::*;

const G: &str = "Controller";
const CREATE: Need = Need::Ctrl(CtrlCap::CreateDeleteVolume);
const PUB: Need = Need::Ctrl(CtrlCap::PublishUnpublishVolume);

pub fn cases() -> Vec<Case> {
    vec![
        case!(G, "ControllerPublishVolume fails with InvalidArgument without a volume_id", [PUB], no_volume_id),
        case!(G, "ControllerPublishVolume fails with InvalidArgument without a node_id", [PUB], no_node_id),
        case!(G, "ControllerPublishVolume fails with InvalidArgument without a volume_capability", [PUB], no_capability),
        case!(G, "ControllerPublishVolume fails with NotFound for an unknown volume", [PUB], unknown_volume),
        case!(G, "ControllerPublishVolume fails with NotFound for an unknown node", [PUB, CREATE], unknown_node),
        case!(G, "ControllerPublishVolume fails with AlreadyExists when republished with another readonly flag", [PUB, CREATE, Need::Ctrl(CtrlCap::PublishReadonly)], incompatible),
        case!(G, "ControllerPublishVolume is idempotent and keeps the publish_context", [PUB, CREATE], publish_idempotent),
        case!(G, "ControllerUnpublishVolume fails with InvalidArgument without a volume_id", [PUB], unpublish_no_id),
        case!(G, "ControllerUnpublishVolume succeeds for a volume that is not published", [PUB, CREATE], unpublish_not_published),
        case!(G, "ControllerUnpublishVolume of an unknown volume succeeds or says NotFound", [PUB], unpublish_unknown),
        case!(G, "ControllerUnpublishVolume is idempotent", [PUB, CREATE], unpublish_idempotent),
        case!(G, "volume lifecycle create, publish, unpublish, delete works", [PUB, CREATE], lifecycle),
    ]
}

fn publish_req(
    ctx: &Ctx<'_>,
    id: &str,
    node: &str,
    cap: Option<VolumeCapability>,
) -> ControllerPublishVolumeRequest {
    ControllerPublishVolumeRequest {
        volume_id: id.to_string(),
        node_id: node.to_string(),
        volume_capability: cap,
        readonly: false,
        secrets: ctx.cfg.secrets.controller_publish_volume_secret.clone(),
        volume_context: Default::default(),
    }
}

fn unpublish_req(ctx: &Ctx<'_>, id: &str, node: &str) -> ControllerUnpublishVolumeRequest {
    ControllerUnpublishVolumeRequest {
        volume_id: id.to_string(),
        node_id: node.to_string(),
        secrets: ctx.cfg.secrets.controller_unpublish_volume_secret.clone(),
    }
}

async fn no_volume_id(ctx: &mut Ctx<'_>) -> CaseResult {
    let req = publish_req(ctx, "", &unknown_id(), Some(ctx.cap()));
    code(
        ctx.raw_controller_publish_volume(req).await,
        &[Code::InvalidArgument],
        "ControllerPublishVolume without volume_id",
    )?;
    Ok(())
}

async fn no_node_id(ctx: &mut Ctx<'_>) -> CaseResult {
    let req = publish_req(ctx, &unknown_id(), "", Some(ctx.cap()));
    code(
        ctx.raw_controller_publish_volume(req).await,
        &[Code::InvalidArgument],
        "ControllerPublishVolume without node_id",
    )?;
    Ok(())
}

async fn no_capability(ctx: &mut Ctx<'_>) -> CaseResult {
    let req = publish_req(ctx, &unknown_id(), &unknown_id(), None);
    code(
        ctx.raw_controller_publish_volume(req).await,
        &[Code::InvalidArgument],
        "ControllerPublishVolume without volume_capability",
    )?;
    Ok(())
}

async fn unknown_volume(ctx: &mut Ctx<'_>) -> CaseResult {
    let node = node_id(ctx).await?;
    let req = publish_req(ctx, &unknown_id(), &node, Some(ctx.cap()));
    code(
        ctx.raw_controller_publish_volume(req).await,
        &[Code::NotFound],
        "ControllerPublishVolume of an unknown volume",
    )?;
    Ok(())
}

async fn unknown_node(ctx: &mut Ctx<'_>) -> CaseResult {
    let vol = create_volume(ctx, "publish-nonode").await?;
    let req = controller_publish_request(ctx, &vol, &unknown_id(), false);
    code(
        ctx.controller_publish_volume(req).await,
        &[Code::NotFound],
        "ControllerPublishVolume to an unknown node",
    )?;
    Ok(())
}

async fn incompatible(ctx: &mut Ctx<'_>) -> CaseResult {
    let vol = create_volume(ctx, "publish-incompatible").await?;
    let node = node_id(ctx).await?;
    controller_publish(ctx, &vol, &node, 1).await?;
    let req = controller_publish_request(ctx, &vol, &node, true);
    code(
        ctx.controller_publish_volume(req).await,
        &[Code::AlreadyExists],
        "ControllerPublishVolume again with readonly=true",
    )?;
    Ok(())
}

async fn publish_idempotent(ctx: &mut Ctx<'_>) -> CaseResult {
    let vol = create_volume(ctx, "publish-idempotent").await?;
    let node = node_id(ctx).await?;
    controller_publish(ctx, &vol, &node, ctx.cfg.idempotent_count).await?;
    Ok(())
}

async fn unpublish_no_id(ctx: &mut Ctx<'_>) -> CaseResult {
    let req = unpublish_req(ctx, "", &unknown_id());
    code(
        ctx.raw_controller_unpublish_volume(req).await,
        &[Code::InvalidArgument],
        "ControllerUnpublishVolume without volume_id",
    )?;
    Ok(())
}

async fn unpublish_not_published(ctx: &mut Ctx<'_>) -> CaseResult {
    let vol = create_volume(ctx, "unpublish-never").await?;
    let node = node_id(ctx).await?;
    ok(
        ctx.controller_unpublish_volume(unpublish_req(ctx, &vol.volume_id, &node))
            .await,
        "ControllerUnpublishVolume of a volume that is not published",
    )?;
    Ok(())
}

async fn unpublish_unknown(ctx: &mut Ctx<'_>) -> CaseResult {
    let node = node_id(ctx).await?;
    let req = unpublish_req(ctx, &unknown_id(), &node);
    ok_or(
        ctx.raw_controller_unpublish_volume(req).await,
        &[Code::NotFound],
        "ControllerUnpublishVolume of an unknown volume",
    )?;
    Ok(())
}

async fn unpublish_idempotent(ctx: &mut Ctx<'_>) -> CaseResult {
    let vol = create_volume(ctx, "unpublish-idempotent").await?;
    let node = node_id(ctx).await?;
    controller_publish(ctx, &vol, &node, 1).await?;
    controller_unpublish(ctx, &vol, &node, ctx.cfg.idempotent_count).await
}

async fn lifecycle(ctx: &mut Ctx<'_>) -> CaseResult {
    let vol = create_volume(ctx, "controller-lifecycle").await?;
    let node = node_id(ctx).await?;
    controller_publish(ctx, &vol, &node, 1).await?;
    controller_unpublish(ctx, &vol, &node, 1).await?;
    let req = DeleteVolumeRequest {
        volume_id: vol.volume_id.clone(),
        secrets: ctx.cfg.secrets.delete_volume_secret.clone(),
    };
    ok(ctx.delete_volume(req).await, "DeleteVolume")?;
    Ok(())
}
