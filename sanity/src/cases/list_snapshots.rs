//! ListSnapshots: filters by id and source, new and deleted snapshots, pagination, tokens.

use std::collections::HashSet;

use tonic::Code;

use super::common::{create_snapshot_of_new_volume, unknown_id};
use super::{case, Case};
use crate::caps::Need;
use crate::check::{code, ok, CaseResult, Stop};
use crate::context::Ctx;
use crate::pb::controller_service_capability::rpc::Type as CtrlCap;
use crate::pb::*;
use crate::{ensure, fail};

const G: &str = "Snapshot";
const CREATE: Need = Need::Ctrl(CtrlCap::CreateDeleteVolume);
const SNAP: Need = Need::Ctrl(CtrlCap::CreateDeleteSnapshot);
const LIST: Need = Need::Ctrl(CtrlCap::ListSnapshots);

pub fn cases() -> Vec<Case> {
    vec![
        case!(G, "ListSnapshots returns valid entries", [LIST], valid),
        case!(
            G,
            "ListSnapshots by snapshot_id returns exactly that snapshot",
            [LIST, SNAP, CREATE],
            by_id
        ),
        case!(
            G,
            "ListSnapshots by an unknown snapshot_id returns nothing",
            [LIST],
            by_unknown_id
        ),
        case!(
            G,
            "ListSnapshots by source_volume_id returns only that volume's snapshots",
            [LIST, SNAP, CREATE],
            by_source
        ),
        case!(
            G,
            "ListSnapshots by an unknown source_volume_id returns nothing",
            [LIST],
            by_unknown_source
        ),
        case!(
            G,
            "ListSnapshots shows new snapshots and drops deleted ones",
            [LIST, SNAP, CREATE],
            new_and_deleted
        ),
        case!(
            G,
            "ListSnapshots pages with max_entries and next_token through every snapshot once",
            [LIST, SNAP, CREATE],
            pages
        ),
        case!(
            G,
            "ListSnapshots fails with Aborted for an invalid starting_token",
            [LIST],
            bad_token
        ),
    ]
}

fn req(ctx: &Ctx<'_>) -> ListSnapshotsRequest {
    ListSnapshotsRequest {
        secrets: ctx.cfg.secrets.list_snapshots_secret.clone(),
        ..Default::default()
    }
}

fn check(r: &ListSnapshotsResponse) -> Result<Vec<Snapshot>, Stop> {
    let mut out = Vec::new();
    for e in &r.entries {
        let s = e
            .snapshot
            .clone()
            .ok_or_else(|| fail!("a ListSnapshots entry has no snapshot"))?;
        ensure!(
            !s.snapshot_id.is_empty(),
            "a listed snapshot has an empty snapshot_id"
        );
        ensure!(
            !s.source_volume_id.is_empty(),
            "snapshot {} has an empty source_volume_id (REQUIRED)",
            s.snapshot_id
        );
        ensure!(
            s.creation_time.is_some(),
            "snapshot {} has no creation_time (REQUIRED)",
            s.snapshot_id
        );
        out.push(s);
    }
    Ok(out)
}

async fn list_all(ctx: &Ctx<'_>, base: ListSnapshotsRequest) -> Result<Vec<Snapshot>, Stop> {
    let mut out = Vec::new();
    let mut token = String::new();
    for page in 0.. {
        ensure!(
            page < 10_000,
            "ListSnapshots kept returning next_token after 10000 pages"
        );
        let r = ok(
            ctx.list_snapshots(ListSnapshotsRequest {
                starting_token: token.clone(),
                ..base.clone()
            })
            .await,
            format!("ListSnapshots (page {})", page + 1),
        )?;
        if base.max_entries > 0 {
            ensure!(
                r.entries.len() <= base.max_entries as usize,
                "ListSnapshots returned {} entries for max_entries {}",
                r.entries.len(),
                base.max_entries
            );
        }
        out.extend(check(&r)?);
        if r.next_token.is_empty() {
            break;
        }
        ensure!(
            r.next_token != token,
            "ListSnapshots returned the starting_token {token:?} as next_token again"
        );
        token = r.next_token;
    }
    Ok(out)
}

async fn valid(ctx: &mut Ctx<'_>) -> CaseResult {
    list_all(ctx, req(ctx)).await?;
    Ok(())
}

async fn by_id(ctx: &mut Ctx<'_>) -> CaseResult {
    create_snapshot_of_new_volume(ctx, "lsnap-other1").await?;
    let (_, target) = create_snapshot_of_new_volume(ctx, "lsnap-target").await?;
    create_snapshot_of_new_volume(ctx, "lsnap-other2").await?;
    let r = ok(
        ctx.list_snapshots(ListSnapshotsRequest {
            snapshot_id: target.snapshot_id.clone(),
            ..req(ctx)
        })
        .await,
        "ListSnapshots by snapshot_id",
    )?;
    let got = check(&r)?;
    ensure!(
        got.len() == 1 && got[0].snapshot_id == target.snapshot_id,
        "expected exactly snapshot {}, got {:?}",
        target.snapshot_id,
        got.iter().map(|s| &s.snapshot_id).collect::<Vec<_>>()
    );
    ensure!(
        got[0].ready_to_use,
        "the cut snapshot {} is listed as not ready_to_use",
        target.snapshot_id
    );
    Ok(())
}

async fn by_unknown_id(ctx: &mut Ctx<'_>) -> CaseResult {
    let r = ok(
        ctx.list_snapshots(ListSnapshotsRequest {
            snapshot_id: unknown_id(),
            ..req(ctx)
        })
        .await,
        "ListSnapshots by an unknown snapshot_id",
    )?;
    ensure!(
        r.entries.is_empty(),
        "expected no entries, got {}",
        r.entries.len()
    );
    Ok(())
}

async fn by_source(ctx: &mut Ctx<'_>) -> CaseResult {
    create_snapshot_of_new_volume(ctx, "lsrc-other1").await?;
    let (vol, target) = create_snapshot_of_new_volume(ctx, "lsrc-target").await?;
    create_snapshot_of_new_volume(ctx, "lsrc-other2").await?;
    let got = list_all(
        ctx,
        ListSnapshotsRequest {
            source_volume_id: vol.volume_id.clone(),
            ..req(ctx)
        },
    )
    .await?;
    ensure!(
        got.iter().any(|s| s.snapshot_id == target.snapshot_id),
        "snapshot {} of volume {} is not listed",
        target.snapshot_id,
        vol.volume_id
    );
    for s in &got {
        ensure!(
            s.source_volume_id == vol.volume_id,
            "listing by source {} returned snapshot {} of {}",
            vol.volume_id,
            s.snapshot_id,
            s.source_volume_id
        );
    }
    Ok(())
}

async fn by_unknown_source(ctx: &mut Ctx<'_>) -> CaseResult {
    let r = ok(
        ctx.list_snapshots(ListSnapshotsRequest {
            source_volume_id: unknown_id(),
            ..req(ctx)
        })
        .await,
        "ListSnapshots by an unknown source_volume_id",
    )?;
    ensure!(
        r.entries.is_empty(),
        "expected no entries, got {}",
        r.entries.len()
    );
    Ok(())
}

async fn new_and_deleted(ctx: &mut Ctx<'_>) -> CaseResult {
    let (_, snap) = create_snapshot_of_new_volume(ctx, "lsnap-new").await?;
    let ids: Vec<String> = list_all(ctx, req(ctx))
        .await?
        .into_iter()
        .map(|s| s.snapshot_id)
        .collect();
    ensure!(
        ids.contains(&snap.snapshot_id),
        "the new snapshot {} is not listed",
        snap.snapshot_id
    );
    let del = DeleteSnapshotRequest {
        snapshot_id: snap.snapshot_id.clone(),
        secrets: ctx.cfg.secrets.delete_snapshot_secret.clone(),
    };
    ok(ctx.delete_snapshot(del).await, "DeleteSnapshot")?;
    let ids: Vec<String> = list_all(ctx, req(ctx))
        .await?
        .into_iter()
        .map(|s| s.snapshot_id)
        .collect();
    ensure!(
        !ids.contains(&snap.snapshot_id),
        "the deleted snapshot {} is still listed",
        snap.snapshot_id
    );
    Ok(())
}

async fn pages(ctx: &mut Ctx<'_>) -> CaseResult {
    let mut created = Vec::new();
    for i in 0..3 {
        created.push(
            create_snapshot_of_new_volume(ctx, &format!("lsnap-page{i}"))
                .await?
                .1
                .snapshot_id,
        );
    }
    let all = list_all(ctx, req(ctx)).await?;
    let paged = list_all(
        ctx,
        ListSnapshotsRequest {
            max_entries: 2,
            ..req(ctx)
        },
    )
    .await?;
    let first = ok(
        ctx.list_snapshots(ListSnapshotsRequest {
            max_entries: 2,
            ..req(ctx)
        })
        .await,
        "ListSnapshots max_entries=2",
    )?;
    ensure!(first.entries.len() == 2 && !first.next_token.is_empty(), "with {} snapshots and max_entries 2 the first page must hold 2 entries and a next_token; got {} entries and token {:?}", all.len(), first.entries.len(), first.next_token);
    let ids: Vec<&String> = paged.iter().map(|s| &s.snapshot_id).collect();
    let unique: HashSet<&&String> = ids.iter().collect();
    ensure!(
        unique.len() == ids.len(),
        "paging returned duplicates: {} entries, {} distinct",
        ids.len(),
        unique.len()
    );
    for id in &created {
        ensure!(
            ids.contains(&id),
            "paging with max_entries 2 never returned snapshot {id}"
        );
    }
    ensure!(
        unique.len() == all.len(),
        "paging returned {} snapshots, one unpaged listing {}",
        unique.len(),
        all.len()
    );
    Ok(())
}

async fn bad_token(ctx: &mut Ctx<'_>) -> CaseResult {
    let r = ListSnapshotsRequest {
        starting_token: format!("invalid-token-{}", unknown_id()),
        ..req(ctx)
    };
    code(
        ctx.list_snapshots(r).await,
        &[Code::Aborted],
        "ListSnapshots with an invalid starting_token",
    )?;
    Ok(())
}
