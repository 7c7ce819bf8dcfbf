//! Volume group snapshots on the local backend, through the real binary and socket (all mode,
//! real loop devices, mounts and filesystems). Needs root.
//!
//! - While a writer appends a sequence across three mounted volumes (xfs, ext4, btrfs) in
//!   order, a group snapshot is taken; each member restored into a new volume holds its
//!   source's own data, and together the restores hold a prefix of the sequence with no gap
//!   (the write-order consistency CSI requires: the filesystems were frozen while copied).
//! - Members are ordinary snapshots (listed with their group, restorable) that cannot be
//!   deleted alone; deleting the group snapshot leaves no snapshot, record or frozen
//!   filesystem behind.
//! - What cannot be frozen is refused, with nothing created: an attached volume whose
//!   filesystem is not mounted (a raw block volume) and an ext2 volume (no freeze support).
//! - A freeze left by a crash (`frozen.json`) is thawed at the next start.

use crate::support::local_rig;
use crate::support::seq_writer;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

use cinder_csi::server::csi::pb;
use cinder_csi::server::csi::pb::volume_content_source::{SnapshotSource, Type};
use local_rig::*;
use seq_writer::{numbers, Writer};
use tonic::Code;

const FILESYSTEMS: [&str; 3] = ["xfs", "ext4", "btrfs"];

async fn create_group(
    c: &cinder_csi::tools::ctl::Client,
    name: &str,
    volumes: &[&str],
) -> Result<pb::VolumeGroupSnapshot, tonic::Status> {
    c.group_controller()
        .create_volume_group_snapshot(c.req(pb::CreateVolumeGroupSnapshotRequest {
            name: name.into(),
            source_volume_ids: volumes.iter().map(|v| v.to_string()).collect(),
            ..Default::default()
        }))
        .await
        .map(|r| r.into_inner().group_snapshot.unwrap())
}

/// DeleteVolumeGroupSnapshot of `g` (naming `snapshot_ids`, if any), which must succeed.
async fn delete_group(
    c: &cinder_csi::tools::ctl::Client,
    g: &pb::VolumeGroupSnapshot,
    snapshot_ids: Vec<String>,
) {
    c.group_controller()
        .delete_volume_group_snapshot(c.req(pb::DeleteVolumeGroupSnapshotRequest {
            group_snapshot_id: g.group_snapshot_id.clone(),
            snapshot_ids,
            ..Default::default()
        }))
        .await
        .unwrap();
}

fn state_files(rig: &Rig, sub: &str) -> Vec<PathBuf> {
    std::fs::read_dir(rig.dir.join("state").join(sub))
        .map(|rd| rd.flatten().map(|e| e.path()).collect())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_snapshot_under_writes_restores_a_consistent_point() {
    let mut rig = Rig::new();
    let c = rig.start().await;
    let caps = c
        .identity()
        .get_plugin_capabilities(c.req(pb::GetPluginCapabilitiesRequest {}))
        .await
        .unwrap()
        .into_inner();
    assert!(
        format!("{caps:?}").contains("GroupControllerService"),
        "GROUP_CONTROLLER_SERVICE advertised: {caps:?}"
    );

    let mut sources = Vec::new();
    let mut pods = Vec::new();
    for (i, fs) in FILESYSTEMS.iter().enumerate() {
        let v = create(&c, &format!("src-{fs}"), GIB, fs, None).await;
        let p = attach_and_mount(&rig, &c, &v, fs, &format!("pod-{i}")).await;
        write_durable(&p.target.join("own.bin"), &pattern(i as u64 + 7, 3 << 20));
        sources.push(v.volume_id.clone());
        pods.push(p);
    }
    let writer = Writer::start(pods.iter().map(|p| p.target.join("seq.log")).collect());
    while writer.written() < 3000 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let ids: Vec<&str> = sources.iter().map(String::as_str).collect();
    let g = create_group(&c, "group-1", &ids).await.unwrap();
    let before_end = writer.written();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let total = writer.finish();
    assert!(
        total > before_end,
        "the writer went on after the group snapshot ({before_end} then {total})"
    );
    assert!(g.ready_to_use, "local copies are done when create returns");
    assert_eq!(g.snapshots.len(), 3);
    let mut by_volume: Vec<&pb::Snapshot> = g.snapshots.iter().collect();
    by_volume.sort_by_key(|s| sources.iter().position(|v| *v == s.source_volume_id));
    for s in &by_volume {
        assert_eq!(s.group_snapshot_id, g.group_snapshot_id);
        assert!(s.ready_to_use);
    }
    // Idempotent by name; the same volumes in another order are the same set.
    let again = create_group(&c, "group-1", &[ids[2], ids[0], ids[1]])
        .await
        .unwrap();
    assert_eq!(again.group_snapshot_id, g.group_snapshot_id);
    let other = create_group(&c, "group-1", &ids[..2]).await.unwrap_err();
    assert_eq!(other.code(), Code::AlreadyExists, "{other:?}");

    // Members are ordinary snapshots: listed with their group ...
    let listed = c
        .controller()
        .list_snapshots(c.req(pb::ListSnapshotsRequest {
            snapshot_id: by_volume[0].snapshot_id.clone(),
            ..Default::default()
        }))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        listed.entries[0]
            .snapshot
            .as_ref()
            .unwrap()
            .group_snapshot_id,
        g.group_snapshot_id
    );
    // ... never deleted alone ...
    let alone = c
        .controller()
        .delete_snapshot(c.req(pb::DeleteSnapshotRequest {
            snapshot_id: by_volume[0].snapshot_id.clone(),
            ..Default::default()
        }))
        .await
        .unwrap_err();
    assert_eq!(alone.code(), Code::FailedPrecondition, "{alone:?}");
    // ... and restorable.
    let mut present = BTreeSet::new();
    let mut restored = Vec::new();
    for (i, (s, fs)) in by_volume.iter().zip(FILESYSTEMS).enumerate() {
        let v = create(
            &c,
            &format!("restored-{fs}"),
            GIB,
            fs,
            Some(Type::Snapshot(SnapshotSource {
                snapshot_id: s.snapshot_id.clone(),
            })),
        )
        .await;
        let p = attach_and_mount(&rig, &c, &v, fs, &format!("restore-{i}")).await;
        assert!(
            std::fs::read(p.target.join("own.bin")).unwrap() == pattern(i as u64 + 7, 3 << 20),
            "{fs}: the restore holds its own source's data"
        );
        for n in numbers(&p.target.join("seq.log")) {
            assert_eq!(n % 3, i as u64, "{fs}: a number of another volume");
            present.insert(n);
        }
        restored.push(p);
    }
    let last = *present.last().expect("the snapshot holds written numbers");
    let gaps: Vec<u64> = (0..=last).filter(|n| !present.contains(n)).collect();
    assert!(
        gaps.is_empty(),
        "the restores hold 0..={last} with gaps at {:?} (first 10): not one point in time",
        &gaps[..gaps.len().min(10)]
    );
    assert!(
        last + 1 >= 3000 && last < total,
        "snapshot at {last} of {total}"
    );
    eprintln!("group snapshot cut after write {last} of {total}");

    for p in restored.iter().chain(&pods) {
        unmount_and_detach(&c, p).await;
    }
    let ids_given: Vec<String> = g.snapshots.iter().map(|s| s.snapshot_id.clone()).collect();
    for _ in 0..2 {
        delete_group(&c, &g, ids_given.clone()).await;
    }
    let gone = c
        .group_controller()
        .get_volume_group_snapshot(c.req(pb::GetVolumeGroupSnapshotRequest {
            group_snapshot_id: g.group_snapshot_id.clone(),
            ..Default::default()
        }))
        .await
        .unwrap_err();
    assert_eq!(gone.code(), Code::NotFound);
    assert!(state_files(&rig, "snapshots").is_empty());
    assert!(state_files(&rig, "group-snapshots").is_empty());
    assert!(!rig.dir.join("state/frozen.json").exists());
    for p in restored.iter().chain(&pods) {
        delete(&c, &p.id).await;
    }
    assert!(rig.mounts().is_empty() && rig.loop_devices().is_empty());
    assert!(rig.data_files().is_empty(), "{:?}", rig.data_files());
    assert!(rig.stop());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_cannot_be_frozen_is_refused_and_nothing_is_created() {
    let mut rig = Rig::new();
    let c = rig.start().await;
    let plain = create(&c, "plain", GIB, "xfs", None).await;
    // Attached but not mounted: a raw block user could be writing to it.
    let raw = create(&c, "raw", GIB, "xfs", None).await;
    c.controller()
        .controller_publish_volume(c.req(pb::ControllerPublishVolumeRequest {
            volume_id: raw.volume_id.clone(),
            node_id: NODE.into(),
            volume_capability: Some(mount_cap("xfs")),
            ..Default::default()
        }))
        .await
        .unwrap();
    let e = match create_group(&c, "g", &[&plain.volume_id, &raw.volume_id]).await {
        Err(e) => e,
        Ok(g) => panic!("{g:?}\n{}", rig.log()),
    };
    assert_eq!(e.code(), Code::FailedPrecondition, "{e:?}");
    assert!(e.message().contains(&raw.volume_id), "{}", e.message());
    assert!(
        e.message().contains("no filesystem of it is mounted"),
        "{}",
        e.message()
    );
    assert!(state_files(&rig, "snapshots").is_empty());
    assert!(state_files(&rig, "group-snapshots").is_empty());
    assert!(!rig.dir.join("state/frozen.json").exists());
    // ext2: the kernel's own ext2 driver cannot freeze (EOPNOTSUPP: refused, nothing
    // created); where ext4's driver serves ext2 (6.x kernels built without it) it can, and
    // the snapshot is taken. Either way nothing stays frozen.
    let old = create(&c, "old", GIB, "ext2", None).await;
    let p = attach_and_mount(&rig, &c, &old, "ext2", "pod-old").await;
    match create_group(&c, "g-ext2", &[&plain.volume_id, &old.volume_id]).await {
        Err(e) => {
            assert_eq!(e.code(), Code::FailedPrecondition, "{e:?}");
            assert!(e.message().contains("ext2"), "{}", e.message());
            assert!(state_files(&rig, "snapshots").is_empty());
        }
        Ok(g) => delete_group(&c, &g, Vec::new()).await,
    }
    assert!(!rig.dir.join("state/frozen.json").exists());
    write_durable(&p.target.join("after.bin"), b"still writable");
    // Unattached volumes need no freeze; an unknown group type is refused.
    let bad = c
        .group_controller()
        .create_volume_group_snapshot(c.req(pb::CreateVolumeGroupSnapshotRequest {
            name: "g".into(),
            source_volume_ids: vec![plain.volume_id.clone()],
            parameters: [("group-type".to_string(), "gold".to_string())].into(),
            ..Default::default()
        }))
        .await
        .unwrap_err();
    assert_eq!(bad.code(), Code::InvalidArgument, "{bad:?}");
    let g = create_group(&c, "g", &[&plain.volume_id]).await.unwrap();
    assert!(g.ready_to_use);
    delete_group(&c, &g, Vec::new()).await;
    unmount_and_detach(&c, &p).await;
    c.controller()
        .controller_unpublish_volume(c.req(pb::ControllerUnpublishVolumeRequest {
            volume_id: raw.volume_id.clone(),
            node_id: NODE.into(),
            ..Default::default()
        }))
        .await
        .unwrap();
    for id in [&plain.volume_id, &raw.volume_id, &old.volume_id] {
        delete(&c, id).await;
    }
    assert!(rig.mounts().is_empty() && rig.loop_devices().is_empty());
    assert!(rig.stop());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_freeze_left_by_a_crash_is_thawed_at_the_next_start() {
    let mut rig = Rig::new();
    let c = rig.start().await;
    let v = create(&c, "v", GIB, "xfs", None).await;
    let p = attach_and_mount(&rig, &c, &v, "xfs", "pod").await;
    // As a kill -9 between FIFREEZE and FITHAW leaves it: frozen, and recorded.
    let record = rig.dir.join("state/frozen.json");
    std::fs::write(
        &record,
        serde_json::json!({"mount_points": [p.staging]}).to_string(),
    )
    .unwrap();
    assert!(std::process::Command::new("fsfreeze")
        .arg("-f")
        .arg(&p.staging)
        .status()
        .unwrap()
        .success());
    rig.kill9();
    let c = rig.start().await;
    // A write that a frozen filesystem would block: done within a second.
    let target = p.target.join("after-restart.bin");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        write_durable(&target, b"thawed");
        let _ = tx.send(());
    });
    if rx.recv_timeout(Duration::from_secs(5)).is_err() {
        // Do not leave the machine with a frozen filesystem.
        let _ = std::process::Command::new("fsfreeze")
            .arg("-u")
            .arg(&p.staging)
            .status();
        panic!(
            "the filesystem is still frozen after the restart:\n{}",
            rig.log()
        );
    }
    assert!(!record.exists());
    assert!(
        rig.log().contains("frozen filesystems thawed"),
        "{}",
        rig.log()
    );
    unmount_and_detach(&c, &p).await;
    delete(&c, &v.volume_id).await;
    assert!(rig.stop());
}
