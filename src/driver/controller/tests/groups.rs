//! The GroupController use cases on the fake: every code the CSI spec names for them, each
//! repeated, the write-order-consistency refusals, and what a group snapshot leaves behind
//! (nothing, once deleted).

use super::*;
use crate::cloud::fake::HELPER_GROUP_PREFIX;
use crate::cloud::{CloudError, CopyStatus, GroupRefusal, Op};
use crate::driver::controller::group_params::GroupSnapshotParams;
use crate::driver::controller::groups::GROUP_SETTLE;
use crate::driver::{Cleanup, Error, Failure, Invalid, Mismatch, Refusal};

/// An env whose cloud has a consistent default group type and an inconsistent one.
fn genv() -> Env {
    let e = env();
    e.fake.add_group_type("consistent", true);
    e.fake.add_group_type("one-by-one", false);
    e.fake.set_default_group_type(Some("consistent"));
    e
}

fn greq(name: &str, vols: &[&str], p: &[(&str, &str)]) -> CreateGroupSnapshot {
    CreateGroupSnapshot {
        name: name.into(),
        source_volume_ids: vols.iter().map(|v| v.to_string()).collect(),
        params: GroupSnapshotParams::parse(&params(p)).unwrap(),
        cloud: String::new(),
        deadline: deadline(),
    }
}

fn gref(id: &str, snapshot_ids: &[&str]) -> GroupSnapshotRef {
    GroupSnapshotRef {
        group_snapshot_id: id.into(),
        snapshot_ids: snapshot_ids.iter().map(|s| s.to_string()).collect(),
        cloud: None,
        deadline: deadline(),
    }
}

impl Env {
    async fn volumes(&self, n: usize) -> Vec<String> {
        let mut ids = Vec::new();
        for i in 0..n {
            ids.push(self.create(&format!("v{i}"), 1 + i as u64).await.id);
        }
        ids
    }

    /// CreateVolumeGroupSnapshot repeated (as the snapshotter does) until ready.
    async fn group_ready(&self, name: &str, vols: &[&str]) -> GroupSnapshotInfo {
        for _ in 0..20 {
            let g = self
                .ctl
                .create_group_snapshot(greq(name, vols, &[]))
                .await
                .expect("create group snapshot");
            if g.ready_to_use {
                return g;
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        panic!("group snapshot {name} never became ready");
    }
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

#[tokio::test(start_paused = true)]
async fn create_waits_until_every_member_is_ready_with_one_member_per_volume() {
    let e = genv();
    let vols = e.volumes(3).await;
    e.fake.reset_calls();
    // Any order of the source ids names the same set.
    let mut asked = strs(&vols);
    asked.reverse();
    let first = e
        .ctl
        .create_group_snapshot(greq("g", &asked, &[]))
        .await
        .unwrap();
    // The first answer is the one csi-snapshotter keeps for each member (groups.rs).
    assert!(first.ready_to_use, "answers once the members are cut");
    assert!(e.fake.calls(Op::GroupSnapshotGet) > 0, "waited for them");
    assert_eq!(first.snapshots.len(), 3);
    let sources: Vec<&str> = first
        .snapshots
        .iter()
        .map(|s| s.source_volume_id.as_str())
        .collect();
    assert_eq!(
        sources,
        strs(&vols),
        "one member per volume, in volume order"
    );
    for (i, s) in first.snapshots.iter().enumerate() {
        assert_eq!(s.group_snapshot_id.as_deref(), Some(first.id.as_str()));
        assert_eq!(s.size_bytes, (1 + i as u64) * GIB);
        assert!(s.ready_to_use);
    }
    let ready = e.group_ready("g", &asked).await;
    assert_eq!(ready.id, first.id);
    assert_eq!(ready.created_at, first.created_at);
    assert!(ready.snapshots.iter().all(|s| s.ready_to_use));
    for _ in 0..3 {
        let again = e
            .ctl
            .create_group_snapshot(greq("g", &strs(&vols), &[]))
            .await
            .unwrap();
        assert_eq!(again, ready);
    }
    assert_eq!(e.fake.calls(Op::GroupSnapshotCreate), 1, "created once");
    assert_eq!(e.fake.group_snapshots().len(), 1);
    // The members are ordinary snapshots: listed with their group, restorable.
    let listed = e
        .ctl
        .list_snapshots(ListSnapshots {
            snapshot_id: Some(ready.snapshots[1].id.clone()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(listed.entries, vec![ready.snapshots[1].clone()]);
    let mut restore = create_req("r", 2 * GIB);
    restore.source = Some(ContentSource::Snapshot(ready.snapshots[1].id.clone()));
    e.ctl.create_volume(restore).await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_group_snapshot_slower_than_the_settle_time_is_answered_not_ready() {
    let e = genv();
    let vols = e.volumes(2).await;
    // Cut after ~70 s of polls (100 ms each): longer than GROUP_SETTLE.
    e.fake.set_settle_after(700);
    let t0 = tokio::time::Instant::now();
    // An RPC deadline past GROUP_SETTLE: the settle time is what bounds the wait.
    let mut req = greq("g", &strs(&vols), &[]);
    req.deadline = t0 + GROUP_SETTLE * 5;
    let first = e.ctl.create_group_snapshot(req).await.unwrap();
    let waited = t0.elapsed();
    assert!(!first.ready_to_use);
    assert!(first.snapshots.iter().all(|s| !s.ready_to_use));
    assert!(
        waited >= GROUP_SETTLE && waited < GROUP_SETTLE + Duration::from_secs(1),
        "waited {waited:?}"
    );
    // The snapshotter's next call finds it cut: the same group snapshot, ready.
    let again = e
        .ctl
        .create_group_snapshot(greq("g", &strs(&vols), &[]))
        .await
        .unwrap();
    assert_eq!(again.id, first.id);
    assert!(again.ready_to_use && again.snapshots.iter().all(|s| s.ready_to_use));
    assert_eq!(e.fake.calls(Op::GroupSnapshotCreate), 1, "created once");
}

#[tokio::test(start_paused = true)]
async fn same_name_of_other_volumes_is_already_exists() {
    let e = genv();
    let vols = e.volumes(3).await;
    e.group_ready("g", &strs(&vols[..2])).await;
    assert_matches!(
        e.ctl
            .create_group_snapshot(greq("g", &strs(&vols), &[]))
            .await,
        Err(Error::Mismatch(Mismatch::GroupOfOther { ref of, ref wanted, .. }))
            if of.len() == 2 && wanted.len() == 3
    );
    assert_eq!(e.fake.calls(Op::GroupSnapshotCreate), 1);
}

#[tokio::test(start_paused = true)]
async fn bad_requests_change_nothing() {
    let e = genv();
    let vols = e.volumes(2).await;
    e.fake.reset_calls();
    for req in [greq("g", &[], &[]), greq("g", &[vols[0].as_str(), ""], &[])] {
        assert_matches!(
            e.ctl.create_group_snapshot(req).await,
            Err(Error::Invalid(Invalid::Required {
                field: "source_volume_ids"
            }))
        );
    }
    assert_matches!(
        e.ctl
            .create_group_snapshot(greq("g", &[&vols[0], &vols[1], &vols[0]], &[]))
            .await,
        Err(Error::Invalid(Invalid::DuplicateSourceVolume { ref id })) if *id == vols[0]
    );
    assert_matches!(
        e.ctl
            .create_group_snapshot(greq(&"n".repeat(256), &strs(&vols), &[]))
            .await,
        Err(Error::Invalid(Invalid::NameTooLong { .. }))
    );
    assert_eq!(e.fake.total_calls(), 0, "refused before any cloud call");
    assert_matches!(
        e.ctl
            .create_group_snapshot(greq("g", &[&vols[0], "nope"], &[]))
            .await,
        Err(Error::VolumeNotFound { ref id }) if id == "nope"
    );
    assert!(e.fake.group_snapshots().is_empty());
    assert!(e.fake.helper_groups().is_empty());
}

#[tokio::test(start_paused = true)]
async fn only_consistent_group_types_are_used() {
    let e = env();
    e.fake.add_group_type("consistent", true);
    e.fake.add_group_type("one-by-one", false);
    let vols = e.volumes(2).await;
    let v = strs(&vols);
    assert_matches!(
        e.ctl.create_group_snapshot(greq("g", &v, &[])).await,
        Err(Error::Cloud(CloudError::GroupRefused(
            GroupRefusal::NoGroupType
        )))
    );
    assert_matches!(
        e.ctl
            .create_group_snapshot(greq("g", &v, &[("group-type", "one-by-one")]))
            .await,
        Err(Error::Cloud(CloudError::GroupRefused(GroupRefusal::NotConsistent { ref group_type })))
            if group_type == "one-by-one"
    );
    assert_matches!(
        e.ctl
            .create_group_snapshot(greq("g", &v, &[("group-type", "gold")]))
            .await,
        Err(Error::Invalid(Invalid::UnknownGroupType { ref name })) if name == "gold"
    );
    assert!(
        e.fake.group_snapshots().is_empty(),
        "nothing taken one by one"
    );
    assert!(e.fake.snapshots().is_empty());
    // The class's group type wins over [BlockStorage] group-type.
    let e2 = env_with(with_block_storage(|b| {
        b.group_type = Some("one-by-one".into())
    }));
    e2.fake.add_group_type("consistent", true);
    e2.fake.add_group_type("one-by-one", false);
    let vols = e2.volumes(2).await;
    let v = strs(&vols);
    assert_matches!(
        e2.ctl.create_group_snapshot(greq("g", &v, &[])).await,
        Err(Error::Cloud(CloudError::GroupRefused(
            GroupRefusal::NotConsistent { .. }
        )))
    );
    e2.ctl
        .create_group_snapshot(greq("g", &v, &[("group-type", "consistent")]))
        .await
        .unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_volume_in_a_foreign_group_is_refused_one_in_another_helper_group_moves() {
    let e = genv();
    let vols = e.volumes(3).await;
    e.fake.put_in_group(&vols[2], "users-own-group");
    assert_matches!(
        e.ctl
            .create_group_snapshot(greq("g", &strs(&vols), &[]))
            .await,
        Err(Error::Cloud(CloudError::GroupRefused(GroupRefusal::ForeignGroup { ref volume_id, .. })))
            if *volume_id == vols[2]
    );
    assert!(e.fake.group_snapshots().is_empty());
    // Two overlapping sets: the shared volume moves to the second set's group.
    e.group_ready("g1", &strs(&vols[..2])).await;
    e.group_ready("g2", &strs(&vols[1..2])).await;
    let mut groups = e.fake.helper_groups();
    assert_eq!(
        groups.remove("users-own-group"),
        Some(vec![vols[2].clone()])
    );
    assert_eq!(groups.len(), 2, "{groups:?}");
    assert!(groups.keys().all(|g| g.starts_with(HELPER_GROUP_PREFIX)));
}

#[tokio::test(start_paused = true)]
async fn a_failed_group_snapshot_is_deleted_and_the_retry_takes_a_new_one() {
    let e = genv();
    let vols = e.volumes(2).await;
    let v = strs(&vols);
    // Failing while create waits for it, and failing after create answered (a slow one).
    for slow in [false, true] {
        e.fake.set_settle_after(if slow { 700 } else { 2 });
        e.fake.fail_next_group_snapshot_creation();
        let failed = if slow {
            let first = e
                .ctl
                .create_group_snapshot(greq("g", &v, &[]))
                .await
                .unwrap();
            assert!(!first.ready_to_use);
            e.fake.set_settle_after(2);
            e.fake.settle_all();
            e.ctl.create_group_snapshot(greq("g", &v, &[])).await
        } else {
            e.ctl.create_group_snapshot(greq("g", &v, &[])).await
        };
        let first_id = match failed {
            Err(Error::Failed(Failure::GroupSnapshot {
                id,
                status: CopyStatus::Error,
                cleanup: Cleanup::Deleted,
                ..
            })) => id,
            other => {
                panic!("slow={slow}: expected a failed, deleted group snapshot, got {other:?}")
            }
        };
        assert!(
            e.fake.group_snapshots().is_empty(),
            "the failed one is gone"
        );
        assert!(e.fake.snapshots().is_empty(), "with its members");
        e.fake.set_settle_after(2);
        let ok = e.group_ready("g", &v).await;
        assert_ne!(ok.id, first_id);
        assert_eq!(e.fake.group_snapshots().len(), 1);
        e.ctl
            .delete_group_snapshot(gref(&ok.id, &[]))
            .await
            .unwrap();
    }
}

#[tokio::test(start_paused = true)]
async fn get_reports_members_and_checks_the_ids_given() {
    let e = genv();
    let vols = e.volumes(2).await;
    let g = e.group_ready("g", &strs(&vols)).await;
    let ids: Vec<&str> = g.snapshots.iter().map(|s| s.id.as_str()).collect();
    for given in [vec![], ids.clone(), vec![ids[1], ids[0]]] {
        assert_eq!(
            e.ctl.get_group_snapshot(gref(&g.id, &given)).await.unwrap(),
            g
        );
    }
    assert_matches!(
        e.ctl.get_group_snapshot(gref(&g.id, &ids[..1])).await,
        Err(Error::Invalid(Invalid::GroupMembersMismatch { ref missing, .. }))
            if *missing == [ids[1].to_string()]
    );
    let other = e.snapshot("plain", &vols[0], &[]).await.unwrap();
    assert_matches!(
        e.ctl
            .get_group_snapshot(gref(&g.id, &[ids[0], ids[1], &other.id]))
            .await,
        Err(Error::Invalid(Invalid::GroupMembersMismatch { ref not_members, .. }))
            if *not_members == [other.id.clone()]
    );
    // An id the cloud no longer has at all is a member deleted on its own: not a mismatch.
    let vanished = "0ddba11-0000-4000-8000-000000000000";
    e.ctl
        .get_group_snapshot(gref(&g.id, &[ids[0], ids[1], vanished]))
        .await
        .unwrap();
    assert_matches!(
        e.ctl.get_group_snapshot(gref("nope", &[])).await,
        Err(Error::GroupSnapshotNotFound { ref id }) if id == "nope"
    );
}

#[tokio::test(start_paused = true)]
async fn delete_removes_members_and_the_helper_group_and_is_idempotent() {
    let e = genv();
    let vols = e.volumes(3).await;
    let g = e.group_ready("g", &strs(&vols)).await;
    let ids: Vec<&str> = g.snapshots.iter().map(|s| s.id.as_str()).collect();
    assert_matches!(
        e.ctl.delete_group_snapshot(gref(&g.id, &ids[1..])).await,
        Err(Error::Invalid(Invalid::GroupMembersMismatch { .. }))
    );
    assert_eq!(
        e.fake.group_snapshots().len(),
        1,
        "a mismatch deletes nothing"
    );
    // A member alone cannot be deleted, as in Cinder.
    assert_matches!(
        e.ctl
            .delete_snapshot(DeleteSnapshot {
                snapshot_id: ids[0].into(),
                cloud: String::new(),
                deadline: deadline(),
            })
            .await,
        Err(Error::Refused(Refusal::GroupMember { ref group_snapshot_id, .. }))
            if *group_snapshot_id == g.id
    );
    e.ctl
        .delete_group_snapshot(gref(&g.id, &ids))
        .await
        .unwrap();
    // A delete that finds the group snapshot gone already (the retry of an interrupted one)
    // sweeps what the cloud's adapter may have left behind.
    let sweeps = e.fake.calls(Op::GroupList);
    for _ in 0..2 {
        e.ctl
            .delete_group_snapshot(gref(&g.id, &ids))
            .await
            .unwrap();
    }
    assert_eq!(e.fake.calls(Op::GroupList), sweeps + 2);
    assert!(e.fake.group_snapshots().is_empty());
    assert!(e.fake.snapshots().is_empty(), "members deleted with it");
    assert!(
        e.fake.helper_groups().is_empty(),
        "the volumes left the group"
    );
    for v in &vols {
        e.ctl
            .delete_volume(DeleteVolume {
                volume_id: v.clone(),
                cloud: String::new(),
                deadline: deadline(),
            })
            .await
            .unwrap();
    }
    assert!(e.fake.volumes().is_empty());
}

#[tokio::test(start_paused = true)]
async fn delete_right_after_create_waits_for_the_group_snapshot_to_be_cut() {
    let e = genv();
    let vols = e.volumes(2).await;
    // Still being cut when create answers (longer than GROUP_SETTLE).
    e.fake.set_settle_after(700);
    let g = e
        .ctl
        .create_group_snapshot(greq("g", &strs(&vols), &[]))
        .await
        .unwrap();
    assert!(!g.ready_to_use);
    e.fake.set_settle_after(2);
    e.ctl.delete_group_snapshot(gref(&g.id, &[])).await.unwrap();
    assert!(e.fake.group_snapshots().is_empty());
    assert!(e.fake.snapshots().is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_grouped_volume_leaves_its_group_before_delete_or_retype() {
    let e = genv();
    e.fake.add_volume_type("bronze", false);
    e.fake.add_volume_type("gold", false);
    let mut ids = Vec::new();
    for n in ["a", "b"] {
        let mut req = create_req(n, GIB);
        req.params.volume_type = Some("bronze".into());
        ids.push(e.ctl.create_volume(req).await.unwrap().id);
    }
    let g = e.group_ready("g", &strs(&ids)).await;
    // With its member snapshot the volume cannot go.
    assert_matches!(
        e.ctl
            .delete_volume(DeleteVolume {
                volume_id: ids[0].clone(),
                cloud: String::new(),
                deadline: deadline(),
            })
            .await,
        Err(Error::Refused(Refusal::HasSnapshots { .. }))
    );
    // Retype takes it out of the group first.
    e.ctl
        .modify_volume(ModifyVolume {
            volume_id: ids[1].clone(),
            mutable: MutableParams::parse(&params(&[("type", "gold")])).unwrap(),
            cloud: String::new(),
            deadline: deadline(),
        })
        .await
        .unwrap();
    let b = e.fake.volume(&ids[1]).unwrap();
    assert_eq!(b.volume_type.as_deref(), Some("gold"));
    assert_eq!(b.group_id, None);
    e.ctl.delete_group_snapshot(gref(&g.id, &[])).await.unwrap();
    // A volume still in a helper group with no snapshots (a delete interrupted between the
    // group snapshot and its group) leaves it and is deleted.
    e.fake
        .put_in_group(&ids[0], &format!("{HELPER_GROUP_PREFIX}left"));
    e.ctl
        .delete_volume(DeleteVolume {
            volume_id: ids[0].clone(),
            cloud: String::new(),
            deadline: deadline(),
        })
        .await
        .unwrap();
    assert!(e.fake.volume(&ids[0]).is_none());
}

#[tokio::test(start_paused = true)]
async fn a_busy_member_makes_the_request_aborted_and_takes_nothing() {
    let e = genv();
    let vols = e.volumes(3).await;
    let held = e.ctl.lock_volume(&vols[1]).unwrap();
    match e.ctl.lock_volumes(strs(&vols)) {
        Err(Error::Busy { key }) => assert_eq!(key, vols[1]),
        Err(other) => panic!("{other:?}"),
        Ok(_) => panic!("a busy member was locked"),
    }
    assert!(
        e.ctl.lock_volume(&vols[0]).is_ok(),
        "the guards taken before the busy one were given back"
    );
    drop(held);
    let all = e.ctl.lock_volumes(strs(&vols)).unwrap();
    assert_eq!(all.len(), 3);
}
