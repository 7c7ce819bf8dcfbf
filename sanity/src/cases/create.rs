//! CreateVolume: argument checks, sizes, idempotency by name, names of the maximum length,
//! topology, and content sources (snapshot, volume).

use tonic::Code;

use super::common::{check_volume, create_snapshot_of_new_volume, create_volume, unknown_id};
use super::{case, Case};
use crate::caps::Need;
use crate::check::{code, ok, CaseResult};
use crate::context::Ctx;
use crate::ensure;
use crate::pb::controller_service_capability::rpc::Type as CtrlCap;
use crate::pb::volume_capability::AccessMode;
use crate::pb::volume_content_source::{SnapshotSource, Type as Source, VolumeSource};
use crate::pb::*;

const G: &str = "Controller";
const CREATE: Need = Need::Ctrl(CtrlCap::CreateDeleteVolume);
const SNAP: Need = Need::Ctrl(CtrlCap::CreateDeleteSnapshot);
const CLONE: Need = Need::Ctrl(CtrlCap::CloneVolume);

pub fn cases() -> Vec<Case> {
    vec![
        case!(
            G,
            "CreateVolume fails with InvalidArgument without a name",
            [CREATE],
            no_name
        ),
        case!(
            G,
            "CreateVolume fails with InvalidArgument without volume_capabilities",
            [CREATE],
            no_caps
        ),
        case!(
            G,
            "CreateVolume fails with InvalidArgument for a capability without access_mode",
            [CREATE],
            no_access_mode
        ),
        case!(
            G,
            "CreateVolume fails with InvalidArgument for a capability without access_type",
            [CREATE],
            no_access_type
        ),
        case!(
            G,
            "CreateVolume fails when limit_bytes is below required_bytes",
            [CREATE],
            bad_range
        ),
        case!(
            G,
            "CreateVolume succeeds without a capacity_range",
            [CREATE],
            no_capacity
        ),
        case!(
            G,
            "CreateVolume returns at least required_bytes",
            [CREATE],
            with_capacity
        ),
        case!(
            G,
            "CreateVolume returns no more than limit_bytes",
            [CREATE],
            within_limit
        ),
        case!(
            G,
            "CreateVolume with an existing name and the same arguments returns the same volume",
            [CREATE],
            same_name_same_size
        ),
        case!(
            G,
            "CreateVolume with an existing name and another size fails with AlreadyExists",
            [CREATE],
            same_name_other_size
        ),
        case!(
            G,
            "CreateVolume accepts a name of the maximum length (128 bytes)",
            [CREATE],
            max_len_name
        ),
        case!(
            G,
            "CreateVolume honours the requisite topology",
            [CREATE],
            topology
        ),
        case!(
            G,
            "CreateVolume from a snapshot succeeds",
            [CREATE, SNAP],
            from_snapshot
        ),
        case!(
            G,
            "CreateVolume from an unknown snapshot fails with NotFound",
            [CREATE, SNAP],
            from_unknown_snapshot
        ),
        case!(
            G,
            "CreateVolume from a volume (clone) succeeds",
            [CREATE, CLONE],
            from_volume
        ),
        case!(
            G,
            "CreateVolume from an unknown volume fails with NotFound",
            [CREATE, CLONE],
            from_unknown_volume
        ),
    ]
}

async fn no_name(ctx: &mut Ctx<'_>) -> CaseResult {
    let mut req = ctx.create_request("");
    req.name.clear();
    code(
        ctx.create_volume(req).await,
        &[Code::InvalidArgument],
        "CreateVolume without name",
    )?;
    Ok(())
}

async fn no_caps(ctx: &mut Ctx<'_>) -> CaseResult {
    let mut req = ctx.create_request(&ctx.unique_name("create-nocaps"));
    req.volume_capabilities.clear();
    code(
        ctx.create_volume(req).await,
        &[Code::InvalidArgument],
        "CreateVolume without volume_capabilities",
    )?;
    Ok(())
}

async fn no_access_mode(ctx: &mut Ctx<'_>) -> CaseResult {
    let mut req = ctx.create_request(&ctx.unique_name("create-nomode"));
    req.volume_capabilities[0].access_mode = None;
    code(
        ctx.create_volume(req).await,
        &[Code::InvalidArgument],
        "CreateVolume with a capability without access_mode",
    )?;
    Ok(())
}

async fn no_access_type(ctx: &mut Ctx<'_>) -> CaseResult {
    let mut req = ctx.create_request(&ctx.unique_name("create-notype"));
    req.volume_capabilities = vec![VolumeCapability {
        access_type: None,
        access_mode: Some(AccessMode {
            mode: volume_capability::access_mode::Mode::SingleNodeWriter as i32,
        }),
    }];
    code(
        ctx.create_volume(req).await,
        &[Code::InvalidArgument],
        "CreateVolume with a capability without access_type",
    )?;
    Ok(())
}

async fn bad_range(ctx: &mut Ctx<'_>) -> CaseResult {
    let mut req = ctx.create_request(&ctx.unique_name("create-badrange"));
    req.capacity_range = Some(CapacityRange {
        required_bytes: ctx.cfg.volume_size * 2,
        limit_bytes: ctx.cfg.volume_size,
    });
    code(
        ctx.create_volume(req).await,
        &[Code::InvalidArgument, Code::OutOfRange],
        "CreateVolume with limit_bytes < required_bytes",
    )?;
    Ok(())
}

async fn no_capacity(ctx: &mut Ctx<'_>) -> CaseResult {
    let mut req = ctx.create_request(&ctx.unique_name("create-nocapacity"));
    req.capacity_range = None;
    let r = ok(
        ctx.create_volume(req).await,
        "CreateVolume without capacity_range",
    )?;
    check_volume(r.volume, "CreateVolume", 0)?;
    Ok(())
}

async fn with_capacity(ctx: &mut Ctx<'_>) -> CaseResult {
    let mut req = ctx.create_request(&ctx.unique_name("create-capacity"));
    req.capacity_range = Some(CapacityRange {
        required_bytes: ctx.cfg.volume_size,
        limit_bytes: 0,
    });
    let r = ok(ctx.create_volume(req).await, "CreateVolume")?;
    check_volume(r.volume, "CreateVolume", ctx.cfg.volume_size)?;
    Ok(())
}

async fn within_limit(ctx: &mut Ctx<'_>) -> CaseResult {
    let req = ctx.create_request(&ctx.unique_name("create-limit"));
    let r = ok(
        ctx.create_volume(req).await,
        "CreateVolume with required_bytes = limit_bytes",
    )?;
    let v = check_volume(r.volume, "CreateVolume", ctx.cfg.volume_size)?;
    ensure!(
        v.capacity_bytes <= ctx.cfg.volume_size,
        "capacity_bytes {} exceeds limit_bytes {}",
        v.capacity_bytes,
        ctx.cfg.volume_size
    );
    Ok(())
}

async fn same_name_same_size(ctx: &mut Ctx<'_>) -> CaseResult {
    let req = ctx.create_request(&ctx.unique_name("create-twice"));
    let first = check_volume(
        ok(ctx.create_volume(req.clone()).await, "CreateVolume")?.volume,
        "CreateVolume",
        ctx.cfg.volume_size,
    )?;
    for i in 1..ctx.cfg.idempotent_count {
        let r = ok(
            ctx.create_volume(req.clone()).await,
            format!("CreateVolume (call {})", i + 1),
        )?;
        let v = check_volume(r.volume, "CreateVolume", ctx.cfg.volume_size)?;
        ensure!(
            v.volume_id == first.volume_id,
            "call {} returned volume {:?}, the first call {:?}: the same name must not provision twice",
            i + 1,
            v.volume_id,
            first.volume_id
        );
        ensure!(
            v.capacity_bytes == first.capacity_bytes,
            "call {} reports {} bytes, the first {}",
            i + 1,
            v.capacity_bytes,
            first.capacity_bytes
        );
        ensure!(
            v.volume_context == first.volume_context,
            "call {} returned another volume_context; it SHALL NOT change",
            i + 1
        );
    }
    Ok(())
}

async fn same_name_other_size(ctx: &mut Ctx<'_>) -> CaseResult {
    let req = ctx.create_request(&ctx.unique_name("create-conflict"));
    ok(ctx.create_volume(req.clone()).await, "CreateVolume")?;
    let mut other = req;
    let size = ctx.cfg.volume_size * 2;
    other.capacity_range = Some(CapacityRange {
        required_bytes: size,
        limit_bytes: size,
    });
    code(
        ctx.create_volume(other).await,
        &[Code::AlreadyExists],
        "CreateVolume with the same name and another size",
    )?;
    Ok(())
}

async fn max_len_name(ctx: &mut Ctx<'_>) -> CaseResult {
    let req = ctx.create_request(&ctx.unique_name_of_len("create-maxlen", 128));
    let first = check_volume(
        ok(
            ctx.create_volume(req.clone()).await,
            "CreateVolume with a 128-byte name",
        )?
        .volume,
        "CreateVolume",
        ctx.cfg.volume_size,
    )?;
    let again = check_volume(
        ok(
            ctx.create_volume(req).await,
            "CreateVolume again with the 128-byte name",
        )?
        .volume,
        "CreateVolume",
        ctx.cfg.volume_size,
    )?;
    ensure!(
        again.volume_id == first.volume_id,
        "the 128-byte name gave two volumes ({} and {}): was it truncated?",
        first.volume_id,
        again.volume_id
    );
    Ok(())
}

async fn topology(ctx: &mut Ctx<'_>) -> CaseResult {
    let vol = create_volume(ctx, "create-topology").await?;
    match ctx.topology_requirement() {
        None => ensure!(
            vol.accessible_topology.is_empty() || ctx.caps.accessibility_constraints,
            "the volume has accessible_topology but the plugin does not advertise VOLUME_ACCESSIBILITY_CONSTRAINTS"
        ),
        Some(req) => {
            let want = &req.requisite[0];
            ensure!(
                vol.accessible_topology.is_empty() || vol.accessible_topology.contains(want),
                "requisite topology {:?} is not among the volume's accessible_topology {:?}",
                want.segments,
                vol.accessible_topology.iter().map(|t| &t.segments).collect::<Vec<_>>()
            );
        }
    }
    Ok(())
}

async fn from_snapshot(ctx: &mut Ctx<'_>) -> CaseResult {
    let (_, snap) = create_snapshot_of_new_volume(ctx, "create-src-snap").await?;
    let mut req = ctx.create_request(&ctx.unique_name("create-from-snap"));
    req.volume_content_source = Some(VolumeContentSource {
        r#type: Some(Source::Snapshot(SnapshotSource {
            snapshot_id: snap.snapshot_id,
        })),
    });
    let r = ok(ctx.create_volume(req).await, "CreateVolume from a snapshot")?;
    check_volume(r.volume, "CreateVolume", ctx.cfg.volume_size)?;
    Ok(())
}

async fn from_unknown_snapshot(ctx: &mut Ctx<'_>) -> CaseResult {
    let mut req = ctx.create_request(&ctx.unique_name("create-from-nosnap"));
    req.volume_content_source = Some(VolumeContentSource {
        r#type: Some(Source::Snapshot(SnapshotSource {
            snapshot_id: unknown_id(),
        })),
    });
    code(
        ctx.create_volume(req).await,
        &[Code::NotFound],
        "CreateVolume from an unknown snapshot",
    )?;
    Ok(())
}

async fn from_volume(ctx: &mut Ctx<'_>) -> CaseResult {
    let src = create_volume(ctx, "create-src-vol").await?;
    let mut req = ctx.create_request(&ctx.unique_name("create-clone"));
    req.volume_content_source = Some(VolumeContentSource {
        r#type: Some(Source::Volume(VolumeSource {
            volume_id: src.volume_id,
        })),
    });
    let r = ok(ctx.create_volume(req).await, "CreateVolume from a volume")?;
    check_volume(r.volume, "CreateVolume", ctx.cfg.volume_size)?;
    Ok(())
}

async fn from_unknown_volume(ctx: &mut Ctx<'_>) -> CaseResult {
    let mut req = ctx.create_request(&ctx.unique_name("create-from-novol"));
    req.volume_content_source = Some(VolumeContentSource {
        r#type: Some(Source::Volume(VolumeSource {
            volume_id: unknown_id(),
        })),
    });
    code(
        ctx.create_volume(req).await,
        &[Code::NotFound],
        "CreateVolume from an unknown volume",
    )?;
    Ok(())
}
