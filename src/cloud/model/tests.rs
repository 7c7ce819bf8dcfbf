//! Cinder's rules, once: each test states one rule on the port's types, for both profiles
//! where they differ, and pins each refusal's words and, where the profiles differ, its code.

use super::copies::{delete_backup, delete_snapshot, CopyRefusal};
use super::groups::GroupSnapshotRefusal;
use super::volumes::VolumeRefusal;
use super::*;
use crate::cloud::{
    Attachment, CloudError, CopyKind, CopyStatus, RequestId, Volume, VolumeCopy, VolumeStatus,
    VolumeType,
};

const CINDER: Profile = Profile {
    instant: false,
    snapshot_in_use_needs_force: true,
    cross_az_attach: true,
    source_not_ready_is_bad_request: true,
    multiattach_not_asked_is_conflict: true,
};

const LOCAL: Profile = Profile {
    instant: true,
    snapshot_in_use_needs_force: false,
    cross_az_attach: false,
    source_not_ready_is_bad_request: false,
    multiattach_not_asked_is_conflict: false,
};

fn volume(status: VolumeStatus) -> Volume {
    Volume {
        id: "v1".into(),
        name: "n".into(),
        size_gib: 2,
        status,
        availability_zone: "az1".into(),
        volume_type: Some("ssd".into()),
        multiattach: false,
        bootable: false,
        metadata: Default::default(),
        attachments: Vec::new(),
        snapshot_id: None,
        source_volume_id: None,
        backup_id: None,
        created_at: None,
        group_id: None,
    }
}

fn attached(mut v: Volume, servers: &[&str]) -> Volume {
    v.status = VolumeStatus::InUse;
    v.attachments = servers
        .iter()
        .map(|s| Attachment {
            server_id: s.to_string(),
            attachment_id: None,
            device: None,
        })
        .collect();
    v
}

fn copy(kind: CopyKind, status: CopyStatus) -> VolumeCopy {
    VolumeCopy {
        kind,
        id: "c1".into(),
        name: "n".into(),
        volume_id: "v1".into(),
        snapshot_id: None,
        size_gib: 2,
        status,
        availability_zone: None,
        created_at: None,
        metadata: Default::default(),
        fail_reason: None,
        group_snapshot_id: None,
    }
}

fn vtype(name: &str, multiattach: bool) -> VolumeType {
    VolumeType {
        id: format!("{name}-id"),
        name: name.into(),
        multiattach,
    }
}

/// The message of `r` with the code an adapter of profile `p` gives it as.
fn said(p: &Profile, r: impl Into<Refusal>) -> (&'static str, String) {
    match r.into().into_error(p, RequestId(None)) {
        CloudError::Conflict { message, .. } => ("conflict", message),
        CloudError::BadRequest { message, .. } => ("bad request", message),
        CloudError::NotFound { resource, id } => ("not found", format!("{resource} {id}")),
        other => panic!("not a refusal: {other:?}"),
    }
}

#[test]
fn new_volumes_have_a_size_and_a_known_zone() {
    assert_eq!(new_volume_size(0), Err(VolumeRefusal::BadSize));
    new_volume_size(1).unwrap();
    let zones = ["a".to_string(), "b".to_string()];
    zone("b", &zones).unwrap();
    let r = zone("c", &zones).unwrap_err();
    assert_eq!(
        said(&LOCAL, r.clone()),
        (
            "bad request",
            r#"availability zone "c" is invalid: the local backend's zones are ["a", "b"]"#.into()
        )
    );
}

#[test]
fn delete_needs_a_detached_settled_volume_without_snapshots() {
    let none = VolumeUse::default();
    for p in [&CINDER, &LOCAL] {
        delete_volume(p, &volume(VolumeStatus::Available), none, false).unwrap();
        delete_volume(p, &volume(VolumeStatus::ErrorExtending), none, false).unwrap();
        for s in [
            VolumeStatus::Creating,
            VolumeStatus::Extending,
            VolumeStatus::Maintenance,
        ] {
            let r = delete_volume(p, &volume(s), none, false).unwrap_err();
            assert!(matches!(r, VolumeRefusal::DeleteStatus { .. }), "{r:?}");
        }
        let r = delete_volume(
            p,
            &attached(volume(VolumeStatus::Available), &["s1"]),
            none,
            true,
        );
        assert!(matches!(r, Err(VolumeRefusal::DeleteAttached { .. })));
        let mut grouped = volume(VolumeStatus::Available);
        grouped.group_id = Some("g".into());
        let r = delete_volume(p, &grouped, none, true);
        assert!(matches!(r, Err(VolumeRefusal::DeleteInGroup { .. })));
        let snapped = VolumeUse {
            snapshots: 2,
            copying: false,
        };
        let r = delete_volume(p, &volume(VolumeStatus::Available), snapped, false);
        assert_eq!(
            r,
            Err(VolumeRefusal::HasSnapshots {
                id: "v1".into(),
                count: 2
            })
        );
        // `cascade` deletes the snapshots; a copy being made still holds the volume.
        delete_volume(p, &volume(VolumeStatus::Available), snapped, true).unwrap();
        let copying = VolumeUse {
            snapshots: 0,
            copying: true,
        };
        let r = delete_volume(p, &volume(VolumeStatus::Available), copying, true);
        assert!(matches!(r, Err(VolumeRefusal::VolumeBeingCopied { .. })));
    }
    // `deleting` is a delete under way on Cinder, a half-done one to finish locally.
    let deleting = volume(VolumeStatus::Deleting);
    assert!(delete_volume(&CINDER, &deleting, none, false).is_err());
    delete_volume(&LOCAL, &deleting, none, false).unwrap();
}

#[test]
fn delete_refusals_name_what_holds_the_volume() {
    let r = delete_volume(
        &LOCAL,
        &attached(volume(VolumeStatus::Available), &["s1", "s2"]),
        VolumeUse::default(),
        false,
    )
    .unwrap_err();
    assert_eq!(
        said(&LOCAL, r.clone()),
        (
            "conflict",
            "volume v1 is attached to s1, s2; detach it first".into()
        )
    );
    assert_eq!(said(&CINDER, r).0, "conflict");
    let r = VolumeRefusal::HasSnapshots {
        id: "v1".into(),
        count: 1,
    };
    assert_eq!(
        said(&LOCAL, r.clone()).1,
        "volume v1 has 1 dependent snapshot(s); delete them first or cascade"
    );
}

#[test]
fn extend_grows_available_or_online_in_use_volumes() {
    let v = volume(VolumeStatus::Available);
    extend(&v, 3, false).unwrap();
    let r = extend(&v, 2, false).unwrap_err();
    assert_eq!(
        said(&LOCAL, r.clone()),
        (
            "bad request",
            "new size 2 GiB must be greater than the current size 2 GiB".into()
        )
    );
    let used = attached(volume(VolumeStatus::Available), &["s1"]);
    extend(&used, 3, true).unwrap();
    assert_eq!(
        extend(&used, 3, false),
        Err(VolumeRefusal::ExtendAttached { id: "v1".into() })
    );
    let r = extend(&volume(VolumeStatus::Retyping), 3, true).unwrap_err();
    assert_eq!(
        said(&LOCAL, r.clone()).1,
        "volume v1 must be available or in-use to be extended, it is retyping"
    );
}

#[test]
fn retype_changes_the_type_of_a_settled_volume_outside_groups() {
    let v = volume(VolumeStatus::Available);
    retype(&v, &vtype("hdd", false)).unwrap();
    assert!(matches!(
        retype(&volume(VolumeStatus::Extending), &vtype("hdd", false)),
        Err(VolumeRefusal::RetypeStatus { .. })
    ));
    let r = retype(&v, &vtype("ssd", false)).unwrap_err();
    assert_eq!(said(&LOCAL, r.clone()).1, "volume v1 already has type ssd");
    assert_eq!(said(&CINDER, r).0, "bad request");
    let mut grouped = v.clone();
    grouped.group_id = Some("g".into());
    assert!(matches!(
        retype(&grouped, &vtype("hdd", false)),
        Err(VolumeRefusal::RetypeInGroup { .. })
    ));
    // A volume attached to two servers keeps a type that allows it.
    let mut shared = attached(v, &["s1", "s2"]);
    shared.multiattach = true;
    retype(&shared, &vtype("multi", true)).unwrap();
    let r = retype(&shared, &vtype("hdd", false)).unwrap_err();
    assert_eq!(
        said(&LOCAL, r).1,
        "volume v1 is attached to several servers; type hdd does not allow that"
    );
}

#[test]
fn attach_takes_an_available_volume_or_a_multiattach_one_asked_so() {
    for p in [&CINDER, &LOCAL] {
        let v = volume(VolumeStatus::Available);
        attach(p, &v, "s1", "az1", false).unwrap();
        let used = attached(v.clone(), &["s1"]);
        assert!(matches!(
            attach(p, &used, "s1", "az1", true),
            Err(VolumeRefusal::AlreadyAttached { .. })
        ));
        assert!(matches!(
            attach(p, &used, "s2", "az1", true),
            Err(VolumeRefusal::AttachedElsewhere { .. })
        ));
        let mut shared = used.clone();
        shared.multiattach = true;
        attach(p, &shared, "s2", "az1", true).unwrap();
        assert!(matches!(
            attach(p, &shared, "s2", "az1", false),
            Err(VolumeRefusal::MultiattachNotAsked { .. })
        ));
        assert!(matches!(
            attach(p, &volume(VolumeStatus::Reserved), "s1", "az1", false),
            Err(VolumeRefusal::AttachStatus { .. })
        ));
    }
    // Another zone: Nova's default attaches across zones; the local backend does not.
    let v = volume(VolumeStatus::Available);
    attach(&CINDER, &v, "s1", "az2", false).unwrap();
    let r = attach(&LOCAL, &v, "s1", "az2", false).unwrap_err();
    assert_eq!(
        said(&LOCAL, r).1,
        r#"volume v1 is in availability zone "az1" and server s1 in "az2": a volume attaches only to servers of its own zone"#
    );
}

#[test]
fn attach_refusals_and_their_codes_in_each_profile() {
    let mut shared = attached(volume(VolumeStatus::Available), &["s1"]);
    shared.multiattach = true;
    let r = attach(&LOCAL, &shared, "s2", "az1", false).unwrap_err();
    assert_eq!(
        said(&LOCAL, r.clone()),
        (
            "bad request",
            "volume v1 is multiattach and already attached: attaching it again needs the \
             multiattach microversion"
                .into()
        )
    );
    // Cinder refuses the reservation itself, whatever the reason.
    assert_eq!(said(&CINDER, r).0, "conflict");
    let r = attach(
        &LOCAL,
        &attached(volume(VolumeStatus::Available), &["s1"]),
        "s2",
        "az1",
        true,
    )
    .unwrap_err();
    assert_eq!(
        said(&LOCAL, r).1,
        "volume v1 is attached to server s1 and is not multiattach"
    );
}

#[test]
fn detach_takes_an_in_use_volume_from_a_server_it_is_on() {
    let used = attached(volume(VolumeStatus::Available), &["s1"]);
    detach(&used, "s1").unwrap();
    let r = detach(&used, "s2").unwrap_err();
    assert_eq!(said(&LOCAL, r), ("not found", "attachment v1 on s2".into()));
    let mut detaching = used;
    detaching.status = VolumeStatus::Detaching;
    let r = detach(&detaching, "s1").unwrap_err();
    assert_eq!(
        said(&CINDER, r),
        (
            "conflict",
            "volume v1 must be in-use to be detached, it is detaching".into()
        )
    );
}

#[test]
fn snapshots_of_in_use_volumes_need_force_only_before_3_66() {
    let used = attached(volume(VolumeStatus::Available), &["s1"]);
    snapshot(&CINDER, &used, true).unwrap();
    let r = snapshot(&CINDER, &used, false).unwrap_err();
    assert_eq!(
        said(&CINDER, r).1,
        "volume v1 is in-use: a snapshot of it needs force (force-create)"
    );
    snapshot(&LOCAL, &used, false).unwrap();
    let r = snapshot(&LOCAL, &volume(VolumeStatus::Creating), true).unwrap_err();
    assert_eq!(
        said(&LOCAL, r).1,
        "volume v1 must be available or in-use to be snapshotted, it is creating"
    );
    group_member(&used).unwrap();
    assert!(group_member(&volume(VolumeStatus::Error)).is_err());
}

#[test]
fn backups_are_of_settled_volumes_or_their_available_snapshots() {
    let used = attached(volume(VolumeStatus::Available), &["s1"]);
    backup_volume(&volume(VolumeStatus::Available), false).unwrap();
    backup_volume(&used, true).unwrap();
    let r = backup_volume(&used, false).unwrap_err();
    assert_eq!(
        said(&LOCAL, r).1,
        "volume v1 must be available (or in-use with force) to be backed up, it is in-use"
    );
    let snap = copy(CopyKind::Snapshot, CopyStatus::Available);
    backup_from_snapshot("v1", &snap).unwrap();
    let r = backup_from_snapshot("v2", &snap).unwrap_err();
    assert_eq!(
        said(&LOCAL, r),
        ("bad request", "snapshot c1 is of volume v1, not v2".into())
    );
    let r = backup_from_snapshot("v1", &copy(CopyKind::Snapshot, CopyStatus::Creating));
    assert!(matches!(r, Err(CopyRefusal::BackupSnapshotStatus { .. })));
}

#[test]
fn copies_are_deleted_once_made_and_unread() {
    let none = CopyUse::default();
    for p in [&CINDER, &LOCAL] {
        for kind in [CopyKind::Snapshot, CopyKind::Backup] {
            let del = |c: &VolumeCopy, u: CopyUse| match kind {
                CopyKind::Snapshot => delete_snapshot(p, c, u),
                CopyKind::Backup => delete_backup(p, c, u),
            };
            del(&copy(kind, CopyStatus::Available), none).unwrap();
            del(&copy(kind, CopyStatus::Error), none).unwrap();
            assert!(del(&copy(kind, CopyStatus::Creating), none).is_err());
            let restoring = CopyUse {
                backing_up: false,
                restoring: true,
            };
            assert!(del(&copy(kind, CopyStatus::Available), restoring).is_err());
            // A delete under way is refused on Cinder, finished locally.
            let deleting = del(&copy(kind, CopyStatus::Deleting), none);
            assert_eq!(deleting.is_ok(), p.instant, "{kind:?} {p:?}");
        }
        let backing_up = CopyUse {
            backing_up: true,
            restoring: false,
        };
        let snap = copy(CopyKind::Snapshot, CopyStatus::Available);
        assert!(delete_snapshot(p, &snap, backing_up).is_err());
        let mut member = snap;
        member.group_snapshot_id = Some("g1".into());
        let r = delete_snapshot(p, &member, none).unwrap_err();
        assert_eq!(
            r,
            CopyRefusal::SnapshotInGroup {
                id: "c1".into(),
                group: "g1".into()
            }
        );
    }
    let r = delete_snapshot(
        &LOCAL,
        &copy(CopyKind::Snapshot, CopyStatus::Creating),
        none,
    );
    assert_eq!(
        said(&LOCAL, r.unwrap_err()).1,
        "snapshot c1 is still being created"
    );
    let r = delete_backup(
        &CINDER,
        &copy(CopyKind::Backup, CopyStatus::Restoring),
        none,
    );
    assert_eq!(
        said(&CINDER, r.unwrap_err()).1,
        "backup c1 must be available or in error to be deleted, it is restoring"
    );
}

#[test]
fn a_copy_is_deleted_by_its_kinds_rule() {
    let backing_up = CopyUse {
        backing_up: true,
        restoring: false,
    };
    // Being backed up stops a snapshot's delete, never a backup's.
    let snap = copy(CopyKind::Snapshot, CopyStatus::Available);
    assert_eq!(
        delete_copy(&LOCAL, &snap, backing_up),
        delete_snapshot(&LOCAL, &snap, backing_up)
    );
    assert!(delete_copy(&LOCAL, &snap, backing_up).is_err());
    let backup = copy(CopyKind::Backup, CopyStatus::Available);
    delete_copy(&LOCAL, &backup, backing_up).unwrap();
    let r = delete_copy(
        &CINDER,
        &copy(CopyKind::Backup, CopyStatus::Creating),
        backing_up,
    );
    assert!(matches!(r, Err(CopyRefusal::BackupDeleteStatus { .. })));
}

#[test]
fn new_volumes_come_from_ready_sources_no_larger_than_them() {
    let snap = copy(CopyKind::Snapshot, CopyStatus::Available);
    restore_from(&snap, 2).unwrap();
    let r = restore_from(&snap, 1).unwrap_err();
    assert_eq!(
        said(&LOCAL, r.clone()),
        (
            "bad request",
            "requested size 1 GiB is smaller than the snapshot c1 (2 GiB)".into()
        )
    );
    // A source not ready: a state conflict locally, a bad request on Cinder.
    let r = restore_from(&copy(CopyKind::Backup, CopyStatus::Creating), 5).unwrap_err();
    assert_eq!(
        said(&LOCAL, r.clone()),
        (
            "conflict",
            "backup c1 must be available to restore from, it is creating".into()
        )
    );
    assert_eq!(said(&CINDER, r).0, "bad request");
    clone_from(&attached(volume(VolumeStatus::Available), &["s1"]), 2).unwrap();
    let r = clone_from(&volume(VolumeStatus::Error), 2).unwrap_err();
    assert_eq!(
        said(&LOCAL, r).1,
        "volume v1 must be available or in-use to clone, it is error"
    );
}

#[test]
fn group_snapshots_are_deleted_once_made_and_unread() {
    for p in [&CINDER, &LOCAL] {
        delete_group_snapshot(p, "g1", &CopyStatus::Available, false).unwrap();
        delete_group_snapshot(p, "g1", &CopyStatus::Error, false).unwrap();
        assert!(delete_group_snapshot(p, "g1", &CopyStatus::Creating, false).is_err());
        assert_eq!(
            delete_group_snapshot(p, "g1", &CopyStatus::Available, true),
            Err(GroupSnapshotRefusal::BeingRestored { id: "g1".into() })
        );
    }
    assert!(delete_group_snapshot(&CINDER, "g1", &CopyStatus::Deleting, false).is_err());
    delete_group_snapshot(&LOCAL, "g1", &CopyStatus::Deleting, false).unwrap();
}

#[test]
fn what_reads_a_volume_or_a_copy() {
    let creating = |mut v: Volume| {
        v.id = "v2".into();
        v.status = VolumeStatus::Creating;
        v
    };
    let clone = Volume {
        source_volume_id: Some("v1".into()),
        ..creating(volume(VolumeStatus::Available))
    };
    let none: [&VolumeCopy; 0] = [];
    let snap = copy(CopyKind::Snapshot, CopyStatus::Creating);
    // v1 is read while a copy or a clone of it is being made, not once they are made.
    assert!(copying("v1", none, [&clone]));
    assert!(copying("v1", [&snap], [&volume(VolumeStatus::Available)]));
    let made = copy(CopyKind::Snapshot, CopyStatus::Available);
    let cloned = Volume {
        status: VolumeStatus::Available,
        ..clone.clone()
    };
    assert!(!copying("v1", [&made], [&cloned]));
    assert!(!copying("v2", [&snap], [&clone]));
    // A copy is read while a volume is restored from it or (a snapshot) backed up.
    let restore = Volume {
        snapshot_id: Some("c1".into()),
        ..creating(volume(VolumeStatus::Available))
    };
    assert!(restoring(CopyKind::Snapshot, &["c0", "c1"], [&restore]));
    assert!(!restoring(CopyKind::Backup, &["c1"], [&restore]));
    let backup = VolumeCopy {
        snapshot_id: Some("c1".into()),
        ..copy(CopyKind::Backup, CopyStatus::Creating)
    };
    let uses = copy_uses(CopyKind::Snapshot, "c1", [&backup], [&restore]);
    assert_eq!(
        uses,
        CopyUse {
            backing_up: true,
            restoring: true
        }
    );
    let uses = copy_uses(CopyKind::Backup, "c1", [&backup], [&restore]);
    assert_eq!(uses, CopyUse::default());
}
