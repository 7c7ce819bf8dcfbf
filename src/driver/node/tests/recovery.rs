//! Unit tests (fake host) of how the node core leaves a node it could not fully serve: failed
//! grows, broken mounts, unstage under pods, `ro` flags, expand of a volume that is not there,
//! the stats guard.

use std::path::{Path, PathBuf};

use super::super::node_core::stats_key;
use super::super::*;
use super::*;
use crate::driver::types::{AccessMode, AccessType, CapacityRange, VolumeCapability};
use crate::driver::{Error, NodeRefusal};
use crate::host::fake::FakeHost;
use crate::host::{libc_errno, Content, FsKind};

fn smaller_fs(kind: FsKind) -> Content {
    Content::Filesystem {
        kind,
        size_bytes: GIB,
    }
}

fn resize_req(id: &str, fs: &str) -> StageRequest {
    let mut r = stage_req(id, mount_cap(Some(fs), AccessMode::SingleNodeWriter));
    r.volume_context
        .insert(params::RESIZE_REQUIRED.into(), "true".into());
    r
}

fn unstage_req(id: &str) -> UnstageRequest {
    UnstageRequest {
        volume_id: id.into(),
        staging_path: staging(id),
    }
}

#[tokio::test]
async fn failed_grow_after_mount_leaves_nothing_mounted() {
    let fake = FakeHost::new();
    fake.attach("v1", 2 * GIB, smaller_fs(FsKind::Xfs));
    let c = core(&fake);
    fake.fail_next("grow_online", libc_errno::EIO);
    c.stage(resize_req("v1", "xfs"), soon()).await.unwrap_err();
    // kubelet treats the error as final and will not unstage: nothing may stay mounted.
    assert_eq!(fake.mount_depth(Path::new(&staging("v1"))), 0);
    // The retry starts clean and grows.
    c.stage(resize_req("v1", "xfs"), soon()).await.unwrap();
    assert_eq!(fake.mount_depth(Path::new(&staging("v1"))), 1);
    assert_eq!(
        fake.content("v1"),
        Content::Filesystem {
            kind: FsKind::Xfs,
            size_bytes: 2 * GIB
        }
    );
}

#[tokio::test]
async fn failed_grow_on_restage_keeps_the_mount_and_is_unavailable() {
    let fake = FakeHost::new();
    fake.attach("v1", 2 * GIB, smaller_fs(FsKind::Xfs));
    let c = core(&fake);
    let cap = mount_cap(Some("xfs"), AccessMode::SingleNodeWriter);
    c.stage(stage_req("v1", cap.clone()), soon()).await.unwrap();
    c.publish(publish_req("v1", cap, false)).await.unwrap();
    // A repeated stage (after a kubelet restart) asks for the grow: pods use the mount, so
    // it stays; the code is one kubelet retries and still unstages after.
    fake.fail_next("grow_online", libc_errno::EIO);
    let err = c.stage(resize_req("v1", "xfs"), soon()).await.unwrap_err();
    assert!(matches!(err, Error::GrowFailed { .. }), "{err}");
    assert_eq!(fake.mount_depth(Path::new(&staging("v1"))), 1);
}

#[tokio::test]
async fn ro_mount_flag_means_read_only() {
    let fake = FakeHost::new();
    fake.attach("v1", 2 * GIB, smaller_fs(FsKind::Xfs));
    let c = core(&fake);
    let cap = VolumeCapability {
        access_type: AccessType::Mount {
            fs_type: Some("xfs".into()),
            mount_flags: vec!["noatime,ro".into()],
            volume_mount_group: None,
        },
        access_mode: AccessMode::SingleNodeWriter,
    };
    let mut r = stage_req("v1", cap.clone());
    r.volume_context
        .insert(params::RESIZE_REQUIRED.into(), "true".into());
    c.stage(r, soon()).await.unwrap();
    let calls = fake.calls();
    assert!(!calls.iter().any(|c| c.starts_with("grow")), "{calls:?}");
    assert!(
        calls
            .iter()
            .any(|c| c.starts_with("mount") && c.contains("ro=true")),
        "{calls:?}"
    );
    // Publishing it (readonly=false) twice: a read-only bind, and no AlreadyExists.
    for _ in 0..2 {
        c.publish(publish_req("v1", cap.clone(), false))
            .await
            .unwrap();
    }
    assert!(fake.is_read_only(Path::new(&target("v1"))));
    // A later `rw` undoes `ro`, as in mount(8).
    let rw_again = AccessType::Mount {
        fs_type: None,
        mount_flags: vec!["ro".into(), "rw".into()],
        volume_mount_group: None,
    };
    assert!(!params::read_only_flag(
        &params::access(&VolumeCapability {
            access_type: rw_again,
            access_mode: AccessMode::SingleNodeWriter,
        })
        .unwrap()
    ));
}

#[tokio::test]
async fn stage_cleans_a_broken_staging_mount_and_mounts_again() {
    let fake = FakeHost::new();
    fake.attach("v1", GIB, Content::Blank);
    let c = core(&fake);
    c.stage(stage_req("v1", rw()), soon()).await.unwrap();
    let st = PathBuf::from(staging("v1"));
    fake.break_mount(&st, libc_errno::EIO);
    c.stage(stage_req("v1", rw()), soon()).await.unwrap();
    assert_eq!(fake.mount_depth(&st), 1);
    let calls = fake.calls();
    let unmount = calls
        .iter()
        .position(|c| c == &format!("unmount {} lazy=false", st.display()));
    let mounts = calls.iter().filter(|c| c.starts_with("mount")).count();
    assert!(unmount.is_some() && mounts == 2, "{calls:?}");

    // Block: the broken bind inside the staging directory is replaced the same way.
    fake.attach("b1", GIB, Content::Blank);
    c.stage(stage_req("b1", block_cap()), soon()).await.unwrap();
    let file = PathBuf::from(staging("b1")).join(block::STAGED_DEVICE);
    fake.break_mount(&file, libc_errno::ENOTCONN);
    c.stage(stage_req("b1", block_cap()), soon()).await.unwrap();
    assert_eq!(fake.mount_depth(&file), 1);
}

#[tokio::test]
async fn unstage_under_a_published_pod_changes_nothing() {
    let fake = FakeHost::new();
    fake.attach("v1", GIB, Content::Blank);
    fake.attach("b1", GIB, Content::Blank);
    let c = core(&fake);
    for (id, cap) in [("v1", rw()), ("b1", block_cap())] {
        c.stage(stage_req(id, cap.clone()), soon()).await.unwrap();
        c.publish(publish_req(id, cap, false)).await.unwrap();
        let before = fake.calls().len();
        let err = c.unstage(unstage_req(id)).await.unwrap_err();
        assert!(
            matches!(
                &err,
                Error::NodeRefused(NodeRefusal::StillMounted { at, .. })
                    if at.contains(&PathBuf::from(target(id)))
            ),
            "{err}"
        );
        assert_eq!(fake.calls().len(), before, "unstage changed something");
        c.unpublish(UnpublishRequest {
            volume_id: id.into(),
            target_path: target(id),
        })
        .await
        .unwrap();
        c.unstage(unstage_req(id)).await.unwrap();
    }
    assert_eq!(fake.mount_depth(Path::new(&staging("v1"))), 0);
}

fn expand_req(id: &str, volume_path: String, staging_path: String) -> ExpandRequest {
    ExpandRequest {
        volume_id: id.into(),
        volume_path,
        staging_path,
        capacity: CapacityRange::default(),
        capability: None,
    }
}

#[tokio::test]
async fn expand_where_the_volume_is_not_is_not_found_and_grows_nothing() {
    let fake = FakeHost::new();
    fake.attach("v1", GIB, smaller_fs(FsKind::Xfs));
    fake.attach("v2", 2 * GIB, smaller_fs(FsKind::Xfs));
    let c = core(&fake);
    // Not staged: the directory is there, nothing is mounted on it.
    fake.host()
        .mounter
        .create_dir(Path::new(&staging("v1")))
        .unwrap();
    let err = c
        .expand(expand_req("v1", staging("v1"), String::new()), soon())
        .await
        .unwrap_err();
    assert!(matches!(err, Error::VolumeNotAtPath { .. }), "{err}");

    // v1 staged; an expand of v2 naming v1's path must not grow v1.
    c.stage(
        stage_req("v1", mount_cap(Some("xfs"), AccessMode::SingleNodeWriter)),
        soon(),
    )
    .await
    .unwrap();
    let err = c
        .expand(expand_req("v2", staging("v1"), String::new()), soon())
        .await
        .unwrap_err();
    assert!(matches!(err, Error::VolumeNotAtPath { .. }), "{err}");
    assert!(!fake.calls().iter().any(|c| c.starts_with("grow")));
}

#[tokio::test]
async fn expand_prefers_the_staging_path() {
    let fake = FakeHost::new();
    fake.attach("v1", GIB, Content::Blank);
    let c = core(&fake);
    let cap = mount_cap(Some("xfs"), AccessMode::SingleNodeWriter);
    c.stage(stage_req("v1", cap.clone()), soon()).await.unwrap();
    c.publish(publish_req("v1", cap, false)).await.unwrap();
    fake.state().devices.get_mut("v1").unwrap().pending_size = Some(2 * GIB);
    let size = c
        .expand(expand_req("v1", target("v1"), staging("v1")), soon())
        .await
        .unwrap();
    assert_eq!(size, 2 * GIB);
    let grow = format!("grow_online /dev/fake0 {} xfs", staging("v1"));
    assert!(fake.calls().contains(&grow), "{:?}", fake.calls());
}

#[tokio::test]
async fn one_stats_call_per_volume_and_path_at_a_time() {
    let fake = FakeHost::new();
    fake.attach("v1", GIB, Content::Blank);
    let c = core(&fake);
    c.stage(stage_req("v1", rw()), soon()).await.unwrap();
    let req = || StatsRequest {
        volume_id: "v1".into(),
        volume_path: staging("v1"),
    };
    // A call still running (a statvfs hung on a dead disk) holds the volume's stats guard.
    let hung = c
        .stats_inflight
        .try_lock(stats_key("v1", Path::new(&staging("v1"))))
        .unwrap();
    let err = c.stats(req()).await.unwrap_err();
    assert!(matches!(err, Error::Busy { .. }), "{err}");
    // The same volume at another path (another pod's target) is polled meanwhile.
    c.publish(publish_req("v1", rw(), false)).await.unwrap();
    c.stats(StatsRequest {
        volume_id: "v1".into(),
        volume_path: target("v1"),
    })
    .await
    .unwrap();
    // Other operations on the volume are not blocked by it.
    c.stage(stage_req("v1", rw()), soon()).await.unwrap();
    drop(hung);
    c.stats(req()).await.unwrap();
}

/// The marker a stage leaves beside the staging directory while mkfs runs, as a kill -9 of
/// the plugin during mkfs leaves it.
fn interrupted_format(fake: &FakeHost, id: &str) -> PathBuf {
    let marker = super::super::mkfs_marker::path(Path::new(&staging(id)));
    fake.host().mounter.create_file(&marker).unwrap();
    marker
}

#[tokio::test]
async fn a_format_interrupted_by_a_kill_is_formatted_again() {
    // No signature, but not blank (ext4 writes its superblock last).
    let fake = FakeHost::new();
    fake.attach("v1", GIB, Content::Unrecognised);
    let c = core(&fake);
    let err = c.stage(stage_req("v1", rw()), soon()).await.unwrap_err();
    assert!(err.to_string().contains("refusing"), "{err}");
    let marker = interrupted_format(&fake, "v1");
    c.stage(stage_req("v1", rw()), soon()).await.unwrap();
    assert_eq!(formats(&fake), 1);
    assert!(!fake.exists(&marker), "the marker outlived the stage");
    assert_eq!(fake.mount_depth(Path::new(&staging("v1"))), 1);
}

#[tokio::test]
async fn an_interrupted_xfs_that_does_not_mount_is_formatted_again() {
    // mkfs.xfs wrote its superblock, then was killed: the kernel refuses the filesystem, and
    // a read-only check finds it incomplete.
    let fake = FakeHost::new();
    let device = fake.attach("v1", GIB, smaller_fs(FsKind::Xfs));
    fake.state().inconsistent.insert(device);
    let c = core(&fake);
    interrupted_format(&fake, "v1");
    c.stage(
        stage_req("v1", mount_cap(Some("xfs"), AccessMode::SingleNodeWriter)),
        soon(),
    )
    .await
    .unwrap();
    assert_eq!(formats(&fake), 1);
    assert!(
        fake.calls()
            .iter()
            .any(|c| c.contains("overwrite_interrupted: true")),
        "{:?}",
        fake.calls()
    );
}

#[tokio::test]
async fn after_an_interrupted_format_a_whole_filesystem_or_other_data_is_not_formatted() {
    // mkfs had finished when the plugin died: its filesystem checks whole, and is kept.
    let fake = FakeHost::new();
    fake.attach("v1", GIB, smaller_fs(FsKind::Ext4));
    fake.attach("v2", GIB, Content::PartitionTable("gpt"));
    fake.attach("v3", GIB, smaller_fs(FsKind::Xfs));
    let c = core(&fake);
    for id in ["v1", "v2", "v3"] {
        interrupted_format(&fake, id);
    }
    c.stage(stage_req("v1", rw()), soon()).await.unwrap();
    // Not mkfs output: refused as ever.
    c.stage(stage_req("v2", rw()), soon()).await.unwrap_err();
    // Another filesystem than the one asked for is not ours either: mounted as it is.
    c.stage(stage_req("v3", rw()), soon()).await.unwrap();
    assert_eq!(formats(&fake), 0);
    assert_eq!(fake.content("v3"), smaller_fs(FsKind::Xfs));
}

#[tokio::test]
async fn the_mkfs_marker_never_outlives_a_staged_volume() {
    let fake = FakeHost::new();
    fake.attach("v1", GIB, smaller_fs(FsKind::Ext4));
    let c = core(&fake);
    c.stage(stage_req("v1", rw()), soon()).await.unwrap();
    // Killed between the mount and the marker's removal: the restage removes it.
    let marker = interrupted_format(&fake, "v1");
    c.stage(stage_req("v1", rw()), soon()).await.unwrap();
    assert!(!fake.exists(&marker));
    // And an unstage of the mounted volume.
    let marker = interrupted_format(&fake, "v1");
    c.unstage(unstage_req("v1")).await.unwrap();
    assert!(!fake.exists(&marker));
    assert_eq!(formats(&fake), 0);
}
