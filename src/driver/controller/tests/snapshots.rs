use std::collections::BTreeSet;

use super::*;
use crate::cloud::Op;
use crate::cloud::{CopyKind, CopyStatus};
use crate::driver::{Cleanup, Error, Failure, Invalid, Mismatch, Refusal};

fn delete_req(id: &str) -> DeleteSnapshot {
    DeleteSnapshot {
        snapshot_id: id.into(),
        cloud: String::new(),
        deadline: deadline(),
    }
}

#[tokio::test(start_paused = true)]
async fn create_returns_at_once_then_reports_ready() {
    let e = env();
    let v = e.create("a", 2).await;
    e.fake.reset_calls();
    let first = e.snapshot("s", &v.id, &[]).await.unwrap();
    assert!(
        !first.ready_to_use,
        "returns while Cinder is still creating it"
    );
    assert_eq!(e.fake.calls(Op::SnapshotGet), 0, "no blocking wait");
    assert_eq!(first.source_volume_id, v.id);
    assert_eq!(first.size_bytes, 2 * GIB);
    let ready = e.snapshot_ready("s", &v.id, &[]).await;
    assert_eq!(ready.id, first.id);
    assert_eq!(ready.created_at, first.created_at);
    assert_eq!(e.fake.calls(Op::SnapshotCreate), 1);
    for _ in 0..3 {
        assert_eq!(e.snapshot("s", &v.id, &[]).await.unwrap(), ready);
    }
    let meta = e.fake.snapshot(&ready.id).unwrap().metadata;
    assert_eq!(
        meta.get(params::CLUSTER_KEY).map(String::as_str),
        Some("k8s-1")
    );
}

#[tokio::test(start_paused = true)]
async fn name_taken_for_another_volume_is_already_exists() {
    let e = env();
    let a = e.create("a", 1).await;
    let b = e.create("b", 1).await;
    e.snapshot("s", &a.id, &[]).await.unwrap();
    assert_matches!(
        e.snapshot("s", &b.id, &[]).await,
        Err(Error::Mismatch(Mismatch::CopyOfOther {
            kind: CopyKind::Snapshot,
            ..
        }))
    );
    e.snapshot("bk", &a.id, &[("type", "backup")])
        .await
        .unwrap();
    assert_matches!(
        e.snapshot("bk", &b.id, &[("type", "backup")]).await,
        Err(Error::Mismatch(Mismatch::CopyOfOther {
            kind: CopyKind::Backup,
            ..
        }))
    );
}

#[tokio::test(start_paused = true)]
async fn unknown_source_is_not_found() {
    let e = env();
    assert_matches!(
        e.snapshot("s", "nope", &[]).await,
        Err(Error::VolumeNotFound { .. })
    );
    assert_matches!(
        e.snapshot("s", "nope", &[("type", "backup")]).await,
        Err(Error::VolumeNotFound { .. })
    );
}

#[tokio::test(start_paused = true)]
async fn attached_volume_needs_force_create() {
    let e = env();
    let v = e.create("a", 1).await;
    e.publish(&v.id, "node-1").await.unwrap();
    assert_matches!(
        e.snapshot("s", &v.id, &[]).await,
        Err(e @ Error::Refused(Refusal::SnapshotNeedsForce { .. }))
            if e.to_string().contains("force-create")
    );
    e.snapshot_ready("s", &v.id, &[("force-create", "true")])
        .await;
}

#[tokio::test(start_paused = true)]
async fn failed_snapshot_is_deleted_and_retried_afresh() {
    let e = env();
    let v = e.create("a", 1).await;
    e.fake.fail_next_snapshot_creation();
    let first = e.snapshot("s", &v.id, &[]).await.unwrap();
    e.fake.settle_all();
    assert_eq!(
        e.fake.snapshot(&first.id).unwrap().status,
        CopyStatus::Error
    );
    assert_matches!(
        e.snapshot("s", &v.id, &[]).await,
        Err(Error::Failed(Failure::Copy {
            kind: CopyKind::Snapshot,
            status: CopyStatus::Error,
            cleanup: Cleanup::Deleted,
            ..
        }))
    );
    e.fake.settle_all();
    assert!(e.fake.snapshot(&first.id).is_none());
    let again = e.snapshot_ready("s", &v.id, &[]).await;
    assert_ne!(again.id, first.id);
}

#[tokio::test(start_paused = true)]
async fn backup_state_machine_across_retries() {
    let e = env();
    let v = e.create("a", 3).await;
    let first = e
        .snapshot("bk", &v.id, &[("type", "backup"), ("availability", "az2")])
        .await
        .unwrap();
    assert!(!first.ready_to_use);
    let b = e
        .fake
        .backup(&first.id)
        .expect("the CSI id is the backup id");
    assert_eq!(b.availability_zone.as_deref(), Some("az2"));
    let temp = b
        .snapshot_id
        .clone()
        .expect("taken from a temporary snapshot");
    assert!(e
        .fake
        .snapshot(&temp)
        .unwrap()
        .metadata
        .contains_key(params::BACKUP_SOURCE_KEY));

    // The temporary snapshot never shows up as a CSI snapshot.
    let listed = e
        .ctl
        .list_snapshots(ListSnapshots::default())
        .await
        .unwrap();
    assert_eq!(
        listed
            .entries
            .iter()
            .map(|s| s.id.clone())
            .collect::<Vec<_>>(),
        vec![first.id.clone()]
    );

    let ready = e.snapshot_ready("bk", &v.id, &[("type", "backup")]).await;
    assert_eq!(ready.id, first.id);
    assert_eq!(ready.size_bytes, 3 * GIB);
    e.fake.settle_all();
    assert!(
        e.fake.snapshot(&temp).is_none(),
        "temporary snapshot deleted once the backup is done"
    );
    assert_eq!(e.fake.calls(Op::BackupCreate), 1);
    assert_eq!(e.fake.calls(Op::SnapshotCreate), 1);
    // Idempotent afterwards, with no further cleanup calls.
    let deletes = e.fake.calls(Op::SnapshotDelete);
    for _ in 0..3 {
        assert_eq!(
            e.snapshot("bk", &v.id, &[("type", "backup")])
                .await
                .unwrap(),
            ready
        );
    }
    assert_eq!(e.fake.calls(Op::SnapshotDelete), deletes);
}

#[tokio::test(start_paused = true)]
async fn backup_cut_wait_is_aborted_at_the_deadline_and_resumed() {
    let e = env();
    let v = e.create("a", 1).await;
    e.fake.set_settle_after(1_000_000);
    let r = e
        .ctl
        .create_snapshot(CreateSnapshot {
            name: "bk".into(),
            source_volume_id: v.id.clone(),
            params: SnapshotParams::parse(&params(&[("type", "backup")])).unwrap(),
            cloud: String::new(),
            deadline: Instant::now() + Duration::from_secs(5),
        })
        .await;
    assert_matches!(
        r,
        Err(Error::Cloud(crate::cloud::CloudError::WaitTimeout { .. }))
    );
    e.fake.set_settle_after(0);
    e.fake.settle_all();
    e.snapshot_ready("bk", &v.id, &[("type", "backup")]).await;
    assert_eq!(
        e.fake.calls(Op::SnapshotCreate),
        1,
        "the temporary snapshot is reused"
    );
}

#[tokio::test(start_paused = true)]
async fn failed_backup_is_deleted_with_its_temporary_snapshot() {
    let e = env();
    let v = e.create("a", 1).await;
    e.fake.fail_next_backup_creation();
    let first = e
        .snapshot("bk", &v.id, &[("type", "backup")])
        .await
        .unwrap();
    e.fake.settle_all();
    assert_eq!(e.fake.backup(&first.id).unwrap().status, CopyStatus::Error);
    assert_matches!(
        e.snapshot("bk", &v.id, &[("type", "backup")]).await,
        Err(Error::Failed(Failure::Copy {
            kind: CopyKind::Backup,
            ..
        }))
    );
    e.fake.settle_all();
    assert!(e.fake.backups().is_empty());
    assert!(e.fake.snapshots().is_empty());
}

#[tokio::test(start_paused = true)]
async fn stuck_backup_is_reported() {
    let e = env();
    let v = e.create("a", 1).await;
    let b = e
        .snapshot("bk", &v.id, &[("type", "backup")])
        .await
        .unwrap();
    e.fake.set_backup_status(&b.id, CopyStatus::Creating);
    e.fake.backdate_backup(&b.id, Duration::from_secs(60));
    // 60 s old, 1 GiB: within 30 s + 100 s/GiB, beyond 30 s + 20 s/GiB (the default).
    let patient = [
        ("type", "backup"),
        ("backup-max-duration-seconds-per-gb", "100"),
    ];
    assert!(
        !e.snapshot("bk", &v.id, &patient)
            .await
            .unwrap()
            .ready_to_use
    );
    assert_matches!(
        e.snapshot("bk", &v.id, &[("type", "backup")]).await,
        Err(e @ Error::Failed(Failure::BackupStuck { .. }))
            if e.to_string().contains("backup-max-duration-seconds-per-gb")
    );
}

#[tokio::test(start_paused = true)]
async fn backups_unsupported_is_failed_precondition() {
    let e = env();
    let v = e.create("a", 1).await;
    e.fake.set_backups_supported(false);
    assert_matches!(
        e.snapshot("bk", &v.id, &[("type", "backup")]).await,
        Err(Error::Refused(Refusal::NoBackupService))
    );
    assert!(e.fake.snapshots().is_empty(), "nothing created");
}

#[tokio::test(start_paused = true)]
async fn delete_snapshot_and_backup_idempotently() {
    let e = env();
    let v = e.create("a", 1).await;
    let s = e.snapshot_ready("s", &v.id, &[]).await;
    let b = e.snapshot_ready("bk", &v.id, &[("type", "backup")]).await;
    assert_eq!(e.ctl.cleaned_len(), 1);
    for _ in 0..3 {
        e.ctl.delete_snapshot(delete_req(&s.id)).await.unwrap();
        e.ctl.delete_snapshot(delete_req(&b.id)).await.unwrap();
        e.ctl.delete_snapshot(delete_req("nope")).await.unwrap();
    }
    e.fake.settle_all();
    assert!(e.fake.snapshots().is_empty());
    assert!(e.fake.backups().is_empty());
    assert_eq!(e.fake.calls(Op::BackupDelete), 1);
    assert_eq!(e.ctl.cleaned_len(), 0, "a deleted backup leaves the cache");
}

/// Cinder refuses (400) to delete a backup that is still being created; DeleteSnapshot waits
/// until it is done and deletes it, with its temporary snapshot.
#[tokio::test(start_paused = true)]
async fn delete_of_an_unfinished_backup_waits_and_removes_its_temporary_snapshot() {
    let e = env();
    let v = e.create("a", 1).await;
    let b = e
        .snapshot("bk", &v.id, &[("type", "backup")])
        .await
        .unwrap();
    assert!(!b.ready_to_use);
    assert_eq!(
        e.fake.backups()[0].status,
        CopyStatus::Creating,
        "still creating when DeleteSnapshot comes"
    );
    e.ctl.delete_snapshot(delete_req(&b.id)).await.unwrap();
    assert!(e.fake.backups().is_empty(), "deleted, not only asked to");
    assert_eq!(e.fake.calls(Op::BackupDelete), 1, "no refused attempt");
    // The temporary snapshot's delete is asked for (not waited on).
    assert!(e
        .fake
        .snapshots()
        .iter()
        .all(|s| s.status == CopyStatus::Deleting));
    e.fake.settle_all();
    assert!(e.fake.snapshots().is_empty());
}

/// The VolumeSnapshot deleted right after it was made: DeleteSnapshot of a snapshot Cinder
/// still has `creating` waits it out and deletes it (was: Cinder's 400 as FailedPrecondition).
#[tokio::test(start_paused = true)]
async fn delete_right_after_create_waits_then_deletes() {
    let e = env();
    let v = e.create("a", 1).await;
    let s = e.snapshot("s", &v.id, &[]).await.unwrap();
    assert_eq!(e.fake.snapshot(&s.id).unwrap().status, CopyStatus::Creating);
    e.ctl.delete_snapshot(delete_req(&s.id)).await.unwrap();
    assert!(e.fake.snapshots().is_empty());
    // A snapshot that failed is deleted as well (Cinder deletes `error` snapshots).
    e.fake.fail_next_snapshot_creation();
    let s = e.snapshot("t", &v.id, &[]).await.unwrap();
    e.ctl.delete_snapshot(delete_req(&s.id)).await.unwrap();
    assert!(e.fake.snapshots().is_empty());
}

/// Seen on the real cloud: Cinder refuses the delete while the snapshot is `creating`, and by
/// the time the driver looks, it is `available`. One more delete, not FailedPrecondition.
#[tokio::test(start_paused = true)]
async fn a_refusal_that_raced_the_end_of_creation_is_retried() {
    let e = env();
    let v = e.create("a", 1).await;
    let s = e.snapshot_ready("s", &v.id, &[]).await;
    e.fake.fail_next(
        Op::SnapshotDelete,
        crate::cloud::CloudError::Conflict {
            message: "Invalid snapshot: Snapshot status must be available or error".into(),
            request_id: Default::default(),
        },
    );
    e.ctl.delete_snapshot(delete_req(&s.id)).await.unwrap();
    assert!(e.fake.snapshots().is_empty());
    assert_eq!(e.fake.calls(Op::SnapshotDelete), 2);
    // A refusal that stands is FailedPrecondition with Cinder's reason.
    let s = e.snapshot_ready("t", &v.id, &[]).await;
    for _ in 0..2 {
        e.fake.fail_next(
            Op::SnapshotDelete,
            crate::cloud::CloudError::Conflict {
                message: "snapshot is in use".into(),
                request_id: Default::default(),
            },
        );
    }
    assert_matches!(
        e.ctl.delete_snapshot(delete_req(&s.id)).await,
        Err(Error::Refused(Refusal::CopyDeleteRefused { kind: CopyKind::Snapshot, message, .. }))
            if message.contains("snapshot is in use")
    );
}

/// The wait is bounded by the RPC deadline: Aborted with the last status, nothing deleted,
/// and the retry deletes it once it has settled.
#[tokio::test(start_paused = true)]
async fn delete_of_a_snapshot_that_does_not_settle_is_aborted_at_the_deadline() {
    let e = env();
    let v = e.create("a", 1).await;
    e.fake.set_settle_after(1_000_000);
    let s = e.snapshot("s", &v.id, &[]).await.unwrap();
    let short = |id: &str| DeleteSnapshot {
        snapshot_id: id.into(),
        cloud: String::new(),
        deadline: Instant::now() + Duration::from_secs(5),
    };
    assert_matches!(
        e.ctl.delete_snapshot(short(&s.id)).await,
        Err(Error::Cloud(crate::cloud::CloudError::WaitTimeout { last_status, .. }))
            if last_status == "creating"
    );
    assert_eq!(e.fake.snapshot(&s.id).unwrap().status, CopyStatus::Creating);
    e.fake.set_settle_after(0);
    e.fake.settle_all();
    e.ctl.delete_snapshot(delete_req(&s.id)).await.unwrap();
    assert!(e.fake.snapshot(&s.id).is_none());
}

#[tokio::test(start_paused = true)]
async fn list_by_id_by_source_and_paginated() {
    let e = env();
    let a = e.create("a", 1).await;
    let b = e.create("b", 1).await;
    let mut all = BTreeSet::new();
    for i in 0..3 {
        all.insert(e.snapshot_ready(&format!("sa{i}"), &a.id, &[]).await.id);
    }
    let sb = e.snapshot_ready("sb", &b.id, &[]).await;
    all.insert(sb.id.clone());
    let bk = e.snapshot_ready("bk", &a.id, &[("type", "backup")]).await;
    all.insert(bk.id.clone());

    // By id: a snapshot and a backup, with the real ready state; unknown → empty.
    for id in [&sb.id, &bk.id] {
        let p = e
            .ctl
            .list_snapshots(ListSnapshots {
                snapshot_id: Some(id.clone()),
                ..Default::default()
            })
            .await
            .unwrap();
        assert_eq!(p.entries.len(), 1);
        assert!(p.entries[0].ready_to_use);
    }
    let p = e
        .ctl
        .list_snapshots(ListSnapshots {
            snapshot_id: Some("nope".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert!(p.entries.is_empty());

    // By source: snapshots and backups of that volume only.
    let p = e
        .ctl
        .list_snapshots(ListSnapshots {
            source_volume_id: Some(a.id.clone()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(p.entries.len(), 4);
    assert!(p.entries.iter().all(|s| s.source_volume_id == a.id));

    // Paginated, across snapshots and backups.
    for max in [1, 2, 4, 5] {
        let mut seen = Vec::new();
        let mut token = None;
        loop {
            let p = e
                .ctl
                .list_snapshots(ListSnapshots {
                    max_entries: max,
                    starting_token: token,
                    ..Default::default()
                })
                .await
                .unwrap();
            assert!(p.entries.len() <= max as usize);
            seen.extend(p.entries.into_iter().map(|s| s.id));
            token = p.next_token;
            if token.is_none() {
                break;
            }
        }
        assert_eq!(seen.len(), 5, "max {max}");
        assert_eq!(seen.into_iter().collect::<BTreeSet<_>>(), all);
    }
    let r = e
        .ctl
        .list_snapshots(ListSnapshots {
            starting_token: Some("cc1.v..".into()),
            ..Default::default()
        })
        .await;
    assert_matches!(r, Err(Error::BadToken { .. }));
}

#[tokio::test(start_paused = true)]
async fn get_snapshot() {
    let e = env();
    let v = e.create("a", 1).await;
    let s = e.snapshot("s", &v.id, &[]).await.unwrap();
    let got = e.ctl.get_snapshot(&s.id, None).await.unwrap();
    assert_eq!(got.id, s.id);
    assert_matches!(
        e.ctl.get_snapshot("nope", None).await,
        Err(Error::SnapshotNotFound { .. })
    );
    assert_matches!(
        e.ctl.get_snapshot(&s.id, Some("r9")).await,
        Err(Error::Invalid(Invalid::UnknownCloud { .. }))
    );
}

#[tokio::test(start_paused = true)]
async fn a_deleted_marker_snapshot_restarts_the_listing() {
    let e = env();
    let v = e.create("a", 1).await;
    for i in 0..3 {
        e.snapshot_ready(&format!("s{i}"), &v.id, &[]).await;
    }
    let page = e
        .ctl
        .list_snapshots(ListSnapshots {
            max_entries: 1,
            ..Default::default()
        })
        .await
        .unwrap();
    let gone = page.entries[0].id.clone();
    e.ctl.delete_snapshot(delete_req(&gone)).await.unwrap();
    let rest = e
        .ctl
        .list_snapshots(ListSnapshots {
            starting_token: page.next_token,
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(rest.entries.len(), 2);
    assert!(rest.entries.iter().all(|s| s.id != gone));
}

#[tokio::test(start_paused = true)]
async fn a_huge_backup_duration_bound_does_not_overflow() {
    let e = env();
    let v = e.create("a", 1).await;
    let b = e
        .snapshot("bk", &v.id, &[("type", "backup")])
        .await
        .unwrap();
    e.fake.set_backup_status(&b.id, CopyStatus::Creating);
    e.fake.backdate_backup(&b.id, Duration::from_secs(3600));
    let huge = [
        ("type", "backup"),
        ("backup-max-duration-seconds-per-gb", "18446744073709551615"),
    ];
    let s = e.snapshot("bk", &v.id, &huge).await.unwrap();
    assert!(!s.ready_to_use);
}
