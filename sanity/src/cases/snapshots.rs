//! CreateSnapshot, DeleteSnapshot and GetSnapshot.

use tonic::Code;

use super::common::{
    check_snapshot, create_ready_snapshot, create_snapshot_of_new_volume, create_volume, unknown_id,
};
use super::{case, Case};
use crate::caps::Need;
use crate::check::{code, ok, CaseResult};
use crate::context::Ctx;
use crate::ensure;
use crate::pb::controller_service_capability::rpc::Type as CtrlCap;
use crate::pb::*;

const G: &str = "Snapshot";
const CREATE: Need = Need::Ctrl(CtrlCap::CreateDeleteVolume);
const SNAP: Need = Need::Ctrl(CtrlCap::CreateDeleteSnapshot);
const LIST: Need = Need::Ctrl(CtrlCap::ListSnapshots);
const GET: Need = Need::Ctrl(CtrlCap::GetSnapshot);

pub fn cases() -> Vec<Case> {
    vec![
        case!(
            G,
            "CreateSnapshot fails with InvalidArgument without a name",
            [SNAP],
            no_name
        ),
        case!(
            G,
            "CreateSnapshot fails with InvalidArgument without a source_volume_id",
            [SNAP],
            no_source
        ),
        case!(
            G,
            "CreateSnapshot of an unknown volume fails with NotFound or InvalidArgument",
            [SNAP],
            unknown_source
        ),
        case!(
            G,
            "CreateSnapshot cuts a snapshot that becomes ready_to_use",
            [SNAP, CREATE],
            creates
        ),
        case!(
            G,
            "CreateSnapshot with an existing name and the same source returns the same snapshot",
            [SNAP, CREATE],
            same_name
        ),
        case!(
            G,
            "CreateSnapshot with an existing name and another source fails with AlreadyExists",
            [SNAP, CREATE],
            same_name_other_source
        ),
        case!(
            G,
            "CreateSnapshot accepts a name of the maximum length (128 bytes)",
            [SNAP, CREATE],
            max_len_name
        ),
        case!(
            G,
            "DeleteSnapshot fails with InvalidArgument without a snapshot_id",
            [SNAP],
            delete_no_id
        ),
        case!(
            G,
            "DeleteSnapshot succeeds for an unknown snapshot",
            [SNAP],
            delete_unknown
        ),
        case!(
            G,
            "DeleteSnapshot deletes the snapshot and is idempotent",
            [SNAP, CREATE, LIST],
            delete_works
        ),
        case!(
            G,
            "GetSnapshot fails with InvalidArgument without a snapshot_id",
            [GET],
            get_no_id
        ),
        case!(
            G,
            "GetSnapshot fails with NotFound for an unknown snapshot",
            [GET],
            get_unknown
        ),
        case!(
            G,
            "GetSnapshot returns the created snapshot",
            [GET, SNAP, CREATE],
            get_created
        ),
    ]
}

async fn no_name(ctx: &mut Ctx<'_>) -> CaseResult {
    let req = ctx.snapshot_request("", &unknown_id());
    code(
        ctx.create_snapshot(req).await,
        &[Code::InvalidArgument],
        "CreateSnapshot without name",
    )?;
    Ok(())
}

async fn no_source(ctx: &mut Ctx<'_>) -> CaseResult {
    let req = ctx.snapshot_request(&ctx.unique_name("snap-nosource"), "");
    code(
        ctx.create_snapshot(req).await,
        &[Code::InvalidArgument],
        "CreateSnapshot without source_volume_id",
    )?;
    Ok(())
}

async fn unknown_source(ctx: &mut Ctx<'_>) -> CaseResult {
    let req = ctx.snapshot_request(&ctx.unique_name("snap-unknown-src"), &unknown_id());
    code(
        ctx.create_snapshot(req).await,
        &[Code::NotFound, Code::InvalidArgument],
        "CreateSnapshot of an unknown volume",
    )?;
    Ok(())
}

async fn creates(ctx: &mut Ctx<'_>) -> CaseResult {
    create_snapshot_of_new_volume(ctx, "snap-create").await?;
    Ok(())
}

async fn same_name(ctx: &mut Ctx<'_>) -> CaseResult {
    let vol = create_volume(ctx, "snap-twice").await?;
    let req = ctx.snapshot_request(&ctx.unique_name("snap-twice"), &vol.volume_id);
    let first = create_ready_snapshot(ctx, req.clone()).await?;
    for i in 1..ctx.cfg.idempotent_count {
        let r = ok(
            ctx.create_snapshot(req.clone()).await,
            format!("CreateSnapshot (call {})", i + 1),
        )?;
        let s = check_snapshot(r.snapshot, &vol.volume_id, "CreateSnapshot")?;
        ensure!(
            s.snapshot_id == first.snapshot_id,
            "call {} returned snapshot {:?}, the first {:?}",
            i + 1,
            s.snapshot_id,
            first.snapshot_id
        );
    }
    Ok(())
}

async fn same_name_other_source(ctx: &mut Ctx<'_>) -> CaseResult {
    let vol1 = create_volume(ctx, "snap-conflict1").await?;
    let vol2 = create_volume(ctx, "snap-conflict2").await?;
    let name = ctx.unique_name("snap-conflict");
    let req = ctx.snapshot_request(&name, &vol1.volume_id);
    create_ready_snapshot(ctx, req).await?;
    let req = ctx.snapshot_request(&name, &vol2.volume_id);
    code(
        ctx.create_snapshot(req).await,
        &[Code::AlreadyExists],
        "CreateSnapshot with the same name and another source volume",
    )?;
    Ok(())
}

async fn max_len_name(ctx: &mut Ctx<'_>) -> CaseResult {
    let vol = create_volume(ctx, "snap-maxlen").await?;
    let req = ctx.snapshot_request(&ctx.unique_name_of_len("snap-maxlen", 128), &vol.volume_id);
    let first = create_ready_snapshot(ctx, req.clone()).await?;
    let again = create_ready_snapshot(ctx, req).await?;
    ensure!(
        first.snapshot_id == again.snapshot_id,
        "the 128-byte name gave two snapshots ({} and {})",
        first.snapshot_id,
        again.snapshot_id
    );
    Ok(())
}

fn delete_req(ctx: &Ctx<'_>, id: &str) -> DeleteSnapshotRequest {
    DeleteSnapshotRequest {
        snapshot_id: id.to_string(),
        secrets: ctx.cfg.secrets.delete_snapshot_secret.clone(),
    }
}

async fn delete_no_id(ctx: &mut Ctx<'_>) -> CaseResult {
    code(
        ctx.delete_snapshot(delete_req(ctx, "")).await,
        &[Code::InvalidArgument],
        "DeleteSnapshot without snapshot_id",
    )?;
    Ok(())
}

async fn delete_unknown(ctx: &mut Ctx<'_>) -> CaseResult {
    ok(
        ctx.delete_snapshot(delete_req(ctx, &unknown_id())).await,
        "DeleteSnapshot of an unknown snapshot",
    )?;
    Ok(())
}

async fn delete_works(ctx: &mut Ctx<'_>) -> CaseResult {
    let (_, snap) = create_snapshot_of_new_volume(ctx, "snap-delete").await?;
    for i in 0..ctx.cfg.idempotent_count {
        ok(
            ctx.delete_snapshot(delete_req(ctx, &snap.snapshot_id))
                .await,
            format!("DeleteSnapshot (call {})", i + 1),
        )?;
    }
    let req = ListSnapshotsRequest {
        snapshot_id: snap.snapshot_id.clone(),
        secrets: ctx.cfg.secrets.list_snapshots_secret.clone(),
        ..Default::default()
    };
    let r = ok(
        ctx.list_snapshots(req).await,
        "ListSnapshots by the deleted snapshot's id",
    )?;
    ensure!(
        r.entries.is_empty(),
        "the deleted snapshot {} is still listed",
        snap.snapshot_id
    );
    Ok(())
}

fn get_req(ctx: &Ctx<'_>, id: &str) -> GetSnapshotRequest {
    GetSnapshotRequest {
        snapshot_id: id.to_string(),
        secrets: ctx.cfg.secrets.get_snapshot_secret.clone(),
    }
}

async fn get_no_id(ctx: &mut Ctx<'_>) -> CaseResult {
    code(
        ctx.get_snapshot(get_req(ctx, "")).await,
        &[Code::InvalidArgument],
        "GetSnapshot without snapshot_id",
    )?;
    Ok(())
}

async fn get_unknown(ctx: &mut Ctx<'_>) -> CaseResult {
    code(
        ctx.get_snapshot(get_req(ctx, &unknown_id())).await,
        &[Code::NotFound],
        "GetSnapshot of an unknown snapshot",
    )?;
    Ok(())
}

async fn get_created(ctx: &mut Ctx<'_>) -> CaseResult {
    let (vol, snap) = create_snapshot_of_new_volume(ctx, "snap-get").await?;
    let r = ok(
        ctx.get_snapshot(get_req(ctx, &snap.snapshot_id)).await,
        "GetSnapshot",
    )?;
    let got = check_snapshot(r.snapshot, &vol.volume_id, "GetSnapshot")?;
    ensure!(
        got.snapshot_id == snap.snapshot_id,
        "GetSnapshot returned {:?} for {:?}",
        got.snapshot_id,
        snap.snapshot_id
    );
    ensure!(
        got.ready_to_use,
        "GetSnapshot says the ready snapshot is not ready_to_use"
    );
    Ok(())
}
