//! ControllerGetVolume, ControllerExpandVolume and ControllerModifyVolume.

use std::collections::HashMap;

use tonic::Code;

use super::common::{create_volume, unknown_id};
use super::{case, Case};
use crate::caps::Need;
use crate::check::{code, ok, CaseResult};
use crate::context::Ctx;
use crate::pb::controller_service_capability::rpc::Type as CtrlCap;
use crate::pb::*;
use crate::{ensure, fail};

const C: &str = "Controller";
const CREATE: Need = Need::Ctrl(CtrlCap::CreateDeleteVolume);
const EXPAND: Need = Need::Ctrl(CtrlCap::ExpandVolume);
const GET: Need = Need::Ctrl(CtrlCap::GetVolume);
const MODIFY: Need = Need::Ctrl(CtrlCap::ModifyVolume);

pub fn cases() -> Vec<Case> {
    vec![
        case!(
            C,
            "ControllerGetVolume fails with InvalidArgument without a volume_id",
            [GET],
            get_volume_no_id
        ),
        case!(
            C,
            "ControllerGetVolume fails with NotFound for an unknown volume",
            [GET],
            get_volume_unknown
        ),
        case!(
            C,
            "ControllerGetVolume returns the created volume",
            [GET, CREATE],
            get_volume_created
        ),
        case!(
            C,
            "ControllerExpandVolume fails with InvalidArgument without a volume_id",
            [EXPAND],
            expand_no_id
        ),
        case!(
            C,
            "ControllerExpandVolume fails with InvalidArgument without a capacity_range",
            [EXPAND, CREATE],
            expand_no_range
        ),
        case!(
            C,
            "ControllerExpandVolume fails with NotFound for an unknown volume",
            [EXPAND],
            expand_unknown
        ),
        case!(
            C,
            "ControllerExpandVolume grows the volume and is idempotent",
            [EXPAND, CREATE],
            expand_works
        ),
        case!(
            C,
            "ControllerModifyVolume fails with InvalidArgument without a volume_id",
            [MODIFY],
            modify_no_id
        ),
        case!(
            C,
            "ControllerModifyVolume fails with NotFound for an unknown volume",
            [MODIFY],
            modify_unknown
        ),
        case!(
            C,
            "ControllerModifyVolume fails with InvalidArgument for an unsupported parameter",
            [MODIFY, CREATE],
            modify_unsupported
        ),
        case!(
            C,
            "ControllerModifyVolume applies the mutable parameters (none without a file) and is idempotent",
            [MODIFY, CREATE],
            modify_works
        ),
        case!(
            C,
            "CreateVolume accepts mutable_parameters",
            [MODIFY, CREATE, Need::MutableParameters],
            create_with_mutable
        ),
    ]
}

async fn get_volume_no_id(ctx: &mut Ctx<'_>) -> CaseResult {
    code(
        ctx.controller_get_volume(ControllerGetVolumeRequest::default())
            .await,
        &[Code::InvalidArgument],
        "ControllerGetVolume without volume_id",
    )?;
    Ok(())
}

async fn get_volume_unknown(ctx: &mut Ctx<'_>) -> CaseResult {
    let req = ControllerGetVolumeRequest {
        volume_id: unknown_id(),
    };
    code(
        ctx.controller_get_volume(req).await,
        &[Code::NotFound],
        "ControllerGetVolume of an unknown volume",
    )?;
    Ok(())
}

async fn get_volume_created(ctx: &mut Ctx<'_>) -> CaseResult {
    let vol = create_volume(ctx, "get-volume").await?;
    let r = ok(
        ctx.controller_get_volume(ControllerGetVolumeRequest {
            volume_id: vol.volume_id.clone(),
        })
        .await,
        "ControllerGetVolume",
    )?;
    let got = r
        .volume
        .ok_or_else(|| fail!("ControllerGetVolume: volume is REQUIRED but missing"))?;
    ensure!(
        got.volume_id == vol.volume_id,
        "ControllerGetVolume returned volume {:?} for {:?}",
        got.volume_id,
        vol.volume_id
    );
    ensure!(
        got.capacity_bytes == vol.capacity_bytes,
        "ControllerGetVolume reports {} bytes, CreateVolume reported {}",
        got.capacity_bytes,
        vol.capacity_bytes
    );
    ensure!(got.volume_context == vol.volume_context, "volume_context changed between CreateVolume and ControllerGetVolume; it SHALL NOT be mutable");
    ensure!(
        r.status.is_some(),
        "ControllerGetVolume: status is REQUIRED but missing"
    );
    Ok(())
}

fn expand_request(ctx: &Ctx<'_>, id: &str, bytes: Option<i64>) -> ControllerExpandVolumeRequest {
    ControllerExpandVolumeRequest {
        volume_id: id.to_string(),
        capacity_range: bytes.map(|b| CapacityRange {
            required_bytes: b,
            limit_bytes: 0,
        }),
        secrets: ctx.cfg.secrets.controller_expand_volume_secret.clone(),
        volume_capability: Some(ctx.cap()),
    }
}

async fn expand_no_id(ctx: &mut Ctx<'_>) -> CaseResult {
    let req = expand_request(ctx, "", Some(ctx.cfg.expand_size()));
    code(
        ctx.controller_expand_volume(req).await,
        &[Code::InvalidArgument],
        "ControllerExpandVolume without volume_id",
    )?;
    Ok(())
}

async fn expand_no_range(ctx: &mut Ctx<'_>) -> CaseResult {
    let vol = create_volume(ctx, "expand-norange").await?;
    let req = expand_request(ctx, &vol.volume_id, None);
    code(
        ctx.controller_expand_volume(req).await,
        &[Code::InvalidArgument],
        "ControllerExpandVolume without capacity_range",
    )?;
    Ok(())
}

async fn expand_unknown(ctx: &mut Ctx<'_>) -> CaseResult {
    let req = expand_request(ctx, &unknown_id(), Some(ctx.cfg.expand_size()));
    code(
        ctx.controller_expand_volume(req).await,
        &[Code::NotFound],
        "ControllerExpandVolume of an unknown volume",
    )?;
    Ok(())
}

async fn expand_works(ctx: &mut Ctx<'_>) -> CaseResult {
    let vol = create_volume(ctx, "expand").await?;
    let want = ctx.cfg.expand_size();
    for i in 0..ctx.cfg.idempotent_count {
        let req = expand_request(ctx, &vol.volume_id, Some(want));
        let r = ok(
            ctx.controller_expand_volume(req).await,
            format!("ControllerExpandVolume (call {})", i + 1),
        )?;
        ensure!(
            r.capacity_bytes >= want,
            "ControllerExpandVolume call {} reports {} bytes, requested at least {want}",
            i + 1,
            r.capacity_bytes
        );
    }
    if ctx.caps.has_ctrl(CtrlCap::GetVolume) {
        let r = ok(
            ctx.controller_get_volume(ControllerGetVolumeRequest {
                volume_id: vol.volume_id.clone(),
            })
            .await,
            "ControllerGetVolume",
        )?;
        let got = r.volume.map(|v| v.capacity_bytes).unwrap_or_default();
        ensure!(
            got == 0 || got >= want,
            "after expansion ControllerGetVolume reports {got} bytes, expected at least {want}"
        );
    }
    Ok(())
}

fn modify_request(
    ctx: &Ctx<'_>,
    id: &str,
    params: HashMap<String, String>,
) -> ControllerModifyVolumeRequest {
    ControllerModifyVolumeRequest {
        volume_id: id.to_string(),
        secrets: ctx.cfg.secrets.controller_modify_volume_secret.clone(),
        mutable_parameters: params,
    }
}

/// The `--mutable-parameters` file, or none: as stock csi-sanity, the NotFound and "modify a
/// volume" cases run without a file too (empty `mutable_parameters`: the volume is checked,
/// nothing changes).
fn mutable(ctx: &Ctx<'_>) -> HashMap<String, String> {
    ctx.cfg.mutable_parameters.clone().unwrap_or_default()
}

async fn modify_no_id(ctx: &mut Ctx<'_>) -> CaseResult {
    let req = modify_request(ctx, "", mutable(ctx));
    code(
        ctx.controller_modify_volume(req).await,
        &[Code::InvalidArgument],
        "ControllerModifyVolume without volume_id",
    )?;
    Ok(())
}

async fn modify_unknown(ctx: &mut Ctx<'_>) -> CaseResult {
    let req = modify_request(ctx, &unknown_id(), mutable(ctx));
    code(
        ctx.controller_modify_volume(req).await,
        &[Code::NotFound],
        "ControllerModifyVolume of an unknown volume",
    )?;
    Ok(())
}

async fn modify_unsupported(ctx: &mut Ctx<'_>) -> CaseResult {
    let vol = create_volume(ctx, "modify-bad").await?;
    let key = format!("sanity.invalid/unsupported-{}", &unknown_id()[..8]);
    let req = modify_request(ctx, &vol.volume_id, HashMap::from([(key, "x".to_string())]));
    code(
        ctx.controller_modify_volume(req).await,
        &[Code::InvalidArgument],
        "ControllerModifyVolume with an unsupported parameter",
    )?;
    Ok(())
}

async fn modify_works(ctx: &mut Ctx<'_>) -> CaseResult {
    let vol = create_volume(ctx, "modify").await?;
    for i in 0..ctx.cfg.idempotent_count {
        let req = modify_request(ctx, &vol.volume_id, mutable(ctx));
        ok(
            ctx.controller_modify_volume(req).await,
            format!("ControllerModifyVolume (call {})", i + 1),
        )?;
    }
    Ok(())
}

async fn create_with_mutable(ctx: &mut Ctx<'_>) -> CaseResult {
    let mut req = ctx.create_request(&ctx.unique_name("create-mutable"));
    req.mutable_parameters = mutable(ctx);
    let r = ok(
        ctx.create_volume(req).await,
        "CreateVolume with mutable_parameters",
    )?;
    super::common::check_volume(r.volume, "CreateVolume", ctx.cfg.volume_size)?;
    Ok(())
}
