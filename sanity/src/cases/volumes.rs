//! DeleteVolume, ValidateVolumeCapabilities and ListVolumes (with pagination).

use std::collections::HashSet;

use tonic::Code;

use super::common::{create_volume, unknown_id};
use super::{case, Case};
use crate::caps::Need;
use crate::check::{code, ok, CaseResult, Stop};
use crate::context::Ctx;
use crate::pb::controller_service_capability::rpc::Type as CtrlCap;
use crate::pb::*;
use crate::{ensure, fail};

const G: &str = "Controller";
const CTRL: Need = Need::ControllerService;
const CREATE: Need = Need::Ctrl(CtrlCap::CreateDeleteVolume);
const LIST: Need = Need::Ctrl(CtrlCap::ListVolumes);

pub fn cases() -> Vec<Case> {
    vec![
        case!(
            G,
            "DeleteVolume fails with InvalidArgument without a volume_id",
            [CREATE],
            delete_no_id
        ),
        case!(
            G,
            "DeleteVolume succeeds for an unknown volume",
            [CREATE],
            delete_unknown
        ),
        case!(
            G,
            "DeleteVolume deletes the volume and is idempotent",
            [CREATE],
            delete_works
        ),
        case!(
            G,
            "ValidateVolumeCapabilities fails with InvalidArgument without a volume_id",
            [CTRL],
            validate_no_id
        ),
        case!(
            G,
            "ValidateVolumeCapabilities fails with InvalidArgument without volume_capabilities",
            [CREATE],
            validate_no_caps
        ),
        case!(
            G,
            "ValidateVolumeCapabilities fails with NotFound for an unknown volume",
            [CTRL],
            validate_unknown
        ),
        case!(
            G,
            "ValidateVolumeCapabilities confirms the capabilities the volume was created with",
            [CREATE],
            validate_confirms
        ),
        case!(G, "ListVolumes returns valid entries", [LIST], list_valid),
        case!(
            G,
            "ListVolumes fails with Aborted for an invalid starting_token",
            [LIST],
            list_bad_token
        ),
        case!(
            G,
            "ListVolumes shows new volumes and drops deleted ones",
            [LIST, CREATE],
            list_new_and_deleted
        ),
        case!(
            G,
            "ListVolumes pages with max_entries and next_token through every volume once",
            [LIST, CREATE],
            list_pages
        ),
        case!(
            G,
            "ListVolumes reports the nodes a volume is published to",
            [LIST, CREATE, Need::Ctrl(CtrlCap::ListVolumesPublishedNodes)],
            list_published_nodes
        ),
    ]
}

fn delete_req(ctx: &Ctx<'_>, id: &str) -> DeleteVolumeRequest {
    DeleteVolumeRequest {
        volume_id: id.to_string(),
        secrets: ctx.cfg.secrets.delete_volume_secret.clone(),
    }
}

async fn delete_no_id(ctx: &mut Ctx<'_>) -> CaseResult {
    code(
        ctx.delete_volume(delete_req(ctx, "")).await,
        &[Code::InvalidArgument],
        "DeleteVolume without volume_id",
    )?;
    Ok(())
}

async fn delete_unknown(ctx: &mut Ctx<'_>) -> CaseResult {
    ok(
        ctx.delete_volume(delete_req(ctx, &unknown_id())).await,
        "DeleteVolume of an unknown volume",
    )?;
    Ok(())
}

async fn delete_works(ctx: &mut Ctx<'_>) -> CaseResult {
    let vol = create_volume(ctx, "delete").await?;
    for i in 0..ctx.cfg.idempotent_count {
        ok(
            ctx.delete_volume(delete_req(ctx, &vol.volume_id)).await,
            format!("DeleteVolume (call {})", i + 1),
        )?;
    }
    // The volume must really be gone: ValidateVolumeCapabilities MUST then say NotFound.
    let req = validate_req(ctx, &vol.volume_id, vec![ctx.cap()]);
    code(
        ctx.validate_volume_capabilities(req).await,
        &[Code::NotFound],
        "ValidateVolumeCapabilities after DeleteVolume",
    )?;
    Ok(())
}

fn validate_req(
    ctx: &Ctx<'_>,
    id: &str,
    caps: Vec<VolumeCapability>,
) -> ValidateVolumeCapabilitiesRequest {
    ValidateVolumeCapabilitiesRequest {
        volume_id: id.to_string(),
        volume_context: Default::default(),
        volume_capabilities: caps,
        parameters: ctx.cfg.parameters.clone(),
        secrets: ctx
            .cfg
            .secrets
            .controller_validate_volume_capabilities_secret
            .clone(),
        mutable_parameters: Default::default(),
    }
}

async fn validate_no_id(ctx: &mut Ctx<'_>) -> CaseResult {
    let req = validate_req(ctx, "", vec![ctx.cap()]);
    code(
        ctx.validate_volume_capabilities(req).await,
        &[Code::InvalidArgument],
        "ValidateVolumeCapabilities without volume_id",
    )?;
    Ok(())
}

async fn validate_no_caps(ctx: &mut Ctx<'_>) -> CaseResult {
    let vol = create_volume(ctx, "validate-nocaps").await?;
    let req = validate_req(ctx, &vol.volume_id, vec![]);
    code(
        ctx.validate_volume_capabilities(req).await,
        &[Code::InvalidArgument],
        "ValidateVolumeCapabilities without volume_capabilities",
    )?;
    Ok(())
}

async fn validate_unknown(ctx: &mut Ctx<'_>) -> CaseResult {
    let req = validate_req(ctx, &unknown_id(), vec![ctx.cap()]);
    code(
        ctx.validate_volume_capabilities(req).await,
        &[Code::NotFound],
        "ValidateVolumeCapabilities of an unknown volume",
    )?;
    Ok(())
}

async fn validate_confirms(ctx: &mut Ctx<'_>) -> CaseResult {
    let vol = create_volume(ctx, "validate").await?;
    for i in 0..ctx.cfg.idempotent_count {
        let mut req = validate_req(ctx, &vol.volume_id, vec![ctx.cap()]);
        req.volume_context = vol.volume_context.clone();
        let r = ok(
            ctx.validate_volume_capabilities(req).await,
            format!("ValidateVolumeCapabilities (call {})", i + 1),
        )?;
        let c = r.confirmed.ok_or_else(|| fail!("call {}: the capabilities the volume was created with are not confirmed (message: {:?})", i + 1, r.message))?;
        ensure!(
            !c.volume_capabilities.is_empty(),
            "call {}: confirmed without volume_capabilities (REQUIRED)",
            i + 1
        );
    }
    Ok(())
}

fn check_entries(ctx: &Ctx<'_>, r: &ListVolumesResponse) -> Result<Vec<String>, Stop> {
    let mut ids = Vec::new();
    for e in &r.entries {
        let v = e
            .volume
            .as_ref()
            .ok_or_else(|| fail!("a ListVolumes entry has no volume (REQUIRED)"))?;
        ensure!(
            !v.volume_id.is_empty(),
            "a ListVolumes entry has an empty volume_id"
        );
        if ctx.caps.has_ctrl(CtrlCap::ListVolumesPublishedNodes) {
            ensure!(
                e.status.is_some(),
                "entry {} has no status, REQUIRED with LIST_VOLUMES_PUBLISHED_NODES",
                v.volume_id
            );
        }
        ids.push(v.volume_id.clone());
    }
    Ok(ids)
}

/// Every volume id, following next_token to the end.
async fn list_all(ctx: &Ctx<'_>, max_entries: i32) -> Result<Vec<String>, Stop> {
    let mut ids = Vec::new();
    let mut token = String::new();
    for page in 0.. {
        ensure!(
            page < 10_000,
            "ListVolumes kept returning next_token after 10000 pages"
        );
        let r = ok(
            ctx.list_volumes(ListVolumesRequest {
                max_entries,
                starting_token: token.clone(),
            })
            .await,
            format!("ListVolumes (page {})", page + 1),
        )?;
        if max_entries > 0 {
            ensure!(
                r.entries.len() <= max_entries as usize,
                "ListVolumes returned {} entries for max_entries {max_entries}",
                r.entries.len()
            );
        }
        ids.extend(check_entries(ctx, &r)?);
        if r.next_token.is_empty() {
            break;
        }
        ensure!(
            r.next_token != token,
            "ListVolumes returned the starting_token {token:?} as next_token again"
        );
        token = r.next_token;
    }
    Ok(ids)
}

async fn list_valid(ctx: &mut Ctx<'_>) -> CaseResult {
    list_all(ctx, 0).await?;
    Ok(())
}

async fn list_bad_token(ctx: &mut Ctx<'_>) -> CaseResult {
    let req = ListVolumesRequest {
        max_entries: 0,
        starting_token: format!("invalid-token-{}", unknown_id()),
    };
    code(
        ctx.list_volumes(req).await,
        &[Code::Aborted],
        "ListVolumes with an invalid starting_token",
    )?;
    Ok(())
}

async fn list_new_and_deleted(ctx: &mut Ctx<'_>) -> CaseResult {
    let vol = create_volume(ctx, "list-new").await?;
    let ids = list_all(ctx, 0).await?;
    ensure!(
        ids.contains(&vol.volume_id),
        "the new volume {} is not listed",
        vol.volume_id
    );
    ok(
        ctx.delete_volume(delete_req(ctx, &vol.volume_id)).await,
        "DeleteVolume",
    )?;
    let ids = list_all(ctx, 0).await?;
    ensure!(
        !ids.contains(&vol.volume_id),
        "the deleted volume {} is still listed",
        vol.volume_id
    );
    Ok(())
}

async fn list_pages(ctx: &mut Ctx<'_>) -> CaseResult {
    let mut created = Vec::new();
    for i in 0..3 {
        created.push(
            create_volume(ctx, &format!("list-page{i}"))
                .await?
                .volume_id,
        );
    }
    let all = list_all(ctx, 0).await?;
    let paged = list_all(ctx, 2).await?;
    let first = ok(
        ctx.list_volumes(ListVolumesRequest {
            max_entries: 2,
            starting_token: String::new(),
        })
        .await,
        "ListVolumes max_entries=2",
    )?;
    ensure!(first.entries.len() == 2 && !first.next_token.is_empty(), "with {} volumes and max_entries 2 the first page must hold 2 entries and a next_token; got {} entries and token {:?}", all.len(), first.entries.len(), first.next_token);
    let unique: HashSet<&String> = paged.iter().collect();
    ensure!(
        unique.len() == paged.len(),
        "paging returned duplicates: {} entries, {} distinct",
        paged.len(),
        unique.len()
    );
    for id in &created {
        ensure!(
            paged.contains(id),
            "paging with max_entries 2 never returned volume {id}"
        );
    }
    ensure!(
        unique.len() == all.iter().collect::<HashSet<_>>().len(),
        "paging returned {} volumes, one unpaged call {}",
        unique.len(),
        all.len()
    );
    Ok(())
}

async fn list_published_nodes(ctx: &mut Ctx<'_>) -> CaseResult {
    let vol = create_volume(ctx, "list-published").await?;
    let node = super::common::node_id(ctx).await?;
    super::common::controller_publish(ctx, &vol, &node, 1).await?;
    let mut token = String::new();
    loop {
        let r = ok(
            ctx.list_volumes(ListVolumesRequest {
                max_entries: 0,
                starting_token: token,
            })
            .await,
            "ListVolumes",
        )?;
        for e in &r.entries {
            if e.volume
                .as_ref()
                .is_some_and(|v| v.volume_id == vol.volume_id)
            {
                let nodes = e
                    .status
                    .as_ref()
                    .map(|s| s.published_node_ids.clone())
                    .unwrap_or_default();
                ensure!(
                    nodes.contains(&node),
                    "volume {} is published to {node} but ListVolumes reports {nodes:?}",
                    vol.volume_id
                );
                return Ok(());
            }
        }
        if r.next_token.is_empty() {
            return Err(fail!(
                "the published volume {} is not listed",
                vol.volume_id
            ));
        }
        token = r.next_token;
    }
}
