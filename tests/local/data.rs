//! Data through the whole stack on the local backend: a snapshot restored into a larger
//! volume and a clone hold the source's bytes exactly, and the restored filesystem is grown
//! to its volume at stage. Needs root.

use crate::support::local_rig;

use cinder_csi::server::csi::pb;
use cinder_csi::server::csi::pb::volume_content_source::{SnapshotSource, Type, VolumeSource};
use local_rig::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshot_restore_and_clone_keep_bytes_and_restores_grow_at_stage() {
    for fs in ["xfs", "ext4"] {
        one_filesystem(fs).await;
    }
}

async fn one_filesystem(fs: &str) {
    let mut rig = Rig::new();
    let c = rig.start().await;
    let src = create(&c, &format!("src-{fs}"), GIB, fs, None).await;
    let a = attach_and_mount(&rig, &c, &src, fs, "pod-src").await;
    let data = pattern(42, 24 << 20);
    write_durable(&a.target.join("data.bin"), &data);

    let snap = c
        .controller()
        .create_snapshot(c.req(pb::CreateSnapshotRequest {
            source_volume_id: src.volume_id.clone(),
            name: format!("snap-{fs}"),
            ..Default::default()
        }))
        .await
        .unwrap()
        .into_inner()
        .snapshot
        .unwrap();
    assert!(
        snap.ready_to_use,
        "the local backend's snapshots are ready at once"
    );
    assert_eq!(snap.source_volume_id, src.volume_id);

    // Written after the snapshot: must not appear in the restore.
    write_durable(&a.target.join("later.bin"), b"after the snapshot");

    let restored = create(
        &c,
        &format!("restored-{fs}"),
        2 * GIB,
        fs,
        Some(Type::Snapshot(SnapshotSource {
            snapshot_id: snap.snapshot_id.clone(),
        })),
    )
    .await;
    assert_eq!(restored.capacity_bytes, 2 * GIB);
    let r = attach_and_mount(&rig, &c, &restored, fs, "pod-restored").await;
    assert!(
        std::fs::read(r.target.join("data.bin")).unwrap() == data,
        "{fs}: restored bytes differ"
    );
    assert!(!r.target.join("later.bin").exists());
    let size = fs_bytes(&c, &r).await;
    assert!(
        size > GIB + GIB / 2,
        "{fs}: restored filesystem is {size} bytes on a 2 GiB volume (not grown at stage)"
    );

    let clone = create(
        &c,
        &format!("clone-{fs}"),
        GIB,
        fs,
        Some(Type::Volume(VolumeSource {
            volume_id: src.volume_id.clone(),
        })),
    )
    .await;
    let k = attach_and_mount(&rig, &c, &clone, fs, "pod-clone").await;
    assert!(
        std::fs::read(k.target.join("data.bin")).unwrap() == data,
        "{fs}: cloned bytes differ"
    );
    assert_eq!(
        std::fs::read(k.target.join("later.bin")).unwrap(),
        b"after the snapshot"
    );

    for p in [&k, &r, &a] {
        unmount_and_detach(&c, p).await;
    }
    c.controller()
        .delete_snapshot(c.req(pb::DeleteSnapshotRequest {
            snapshot_id: snap.snapshot_id.clone(),
            ..Default::default()
        }))
        .await
        .unwrap();
    for id in [&clone.volume_id, &restored.volume_id, &src.volume_id] {
        delete(&c, id).await;
    }
    assert!(rig.mounts().is_empty() && rig.loop_devices().is_empty());
    assert!(rig.data_files().is_empty(), "{:?}", rig.data_files());
    assert!(rig.stop());
}
