//! Unit tests of the node core on the in-memory fake host (no root needed); the
//! recovery from failures (`recovery.rs`) and request validation (`validation.rs`) below.

mod crossings;
mod recovery;
mod validation;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use tokio::time::Instant;

use super::*;
use crate::driver::types::{AccessMode, AccessType, CapacityRange, VolumeCapability};
use crate::driver::{Error, Mismatch, NodeRefusal, Result};
use crate::host::fake::FakeHost;
use crate::host::metadata::{InstanceMetadata, Metadata, MetadataError};
use crate::host::{libc_errno, Content, FormatOptions, FsKind, HostError};

pub(super) const KUBELET: &str = "/var/lib/kubelet";
pub(super) const GIB: u64 = 1 << 30;

struct CountingMetadata {
    calls: AtomicUsize,
    zone: Option<String>,
}

#[async_trait]
impl Metadata for CountingMetadata {
    async fn instance(&self) -> Result<InstanceMetadata, MetadataError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Ok(InstanceMetadata {
            uuid: "node-uuid".into(),
            availability_zone: self.zone.clone(),
        })
    }
}

pub(super) fn core_with(fake: &FakeHost, md: Arc<dyn Metadata>) -> Arc<NodeCore> {
    NodeCore::new(
        fake.host(),
        md,
        NodeOptions {
            kubelet_dir: KUBELET.into(),
            kubelet_dir_resolved: None,
            block_storage: Default::default(),
            with_topology: true,
            additional_topology: vec![("topology.kubernetes.io/region".into(), "r1".into())],
        },
    )
}

pub(super) fn core(fake: &FakeHost) -> Arc<NodeCore> {
    core_with(
        fake,
        Arc::new(CountingMetadata {
            calls: AtomicUsize::new(0),
            zone: Some("nova".into()),
        }),
    )
}

pub(super) fn mount_cap(fs: Option<&str>, mode: AccessMode) -> VolumeCapability {
    VolumeCapability {
        access_type: AccessType::Mount {
            fs_type: fs.map(String::from),
            mount_flags: vec!["noatime".into()],
            volume_mount_group: None,
        },
        access_mode: mode,
    }
}

pub(super) fn block_cap() -> VolumeCapability {
    VolumeCapability {
        access_type: AccessType::Block,
        access_mode: AccessMode::SingleNodeWriter,
    }
}

pub(super) fn staging(id: &str) -> String {
    format!("{KUBELET}/plugins/kubernetes.io/csi/cinder/{id}/globalmount")
}

pub(super) fn target(id: &str) -> String {
    format!("{KUBELET}/pods/p1/volumes/kubernetes.io~csi/{id}/mount")
}

pub(super) fn stage_req(id: &str, cap: VolumeCapability) -> StageRequest {
    StageRequest {
        volume_id: id.into(),
        staging_path: staging(id),
        capability: cap,
        volume_context: HashMap::new(),
    }
}

pub(super) fn publish_req(id: &str, cap: VolumeCapability, ro: bool) -> PublishRequest {
    PublishRequest {
        volume_id: id.into(),
        staging_path: staging(id),
        target_path: target(id),
        capability: cap,
        read_only: ro,
    }
}

pub(super) fn soon() -> Instant {
    Instant::now() + Duration::from_secs(5)
}

pub(super) fn rw() -> VolumeCapability {
    mount_cap(None, AccessMode::SingleNodeWriter)
}

pub(super) fn formats(fake: &FakeHost) -> usize {
    fake.calls()
        .iter()
        .filter(|c| c.starts_with("format"))
        .count()
}

#[tokio::test]
async fn stage_formats_a_blank_device_once_and_restages_idempotently() {
    let fake = FakeHost::new();
    let dev = fake.attach("v1", GIB, Content::Blank);
    let c = core(&fake);
    c.stage(stage_req("v1", rw()), soon()).await.unwrap();
    c.stage(stage_req("v1", rw()), soon()).await.unwrap();
    assert_eq!(formats(&fake), 1, "{:?}", fake.calls());
    assert!(matches!(
        fake.content("v1"),
        Content::Filesystem {
            kind: FsKind::Ext4,
            ..
        }
    ));
    assert_eq!(fake.mount_depth(Path::new(&staging("v1"))), 1);
    let mount = fake
        .calls()
        .into_iter()
        .find(|c| c.starts_with("mount"))
        .unwrap();
    assert!(
        mount.contains(&dev.display().to_string()) && mount.contains("[noatime]"),
        "{mount}"
    );
}

#[tokio::test]
async fn never_formats_a_device_with_data() {
    let fake = FakeHost::new();
    fake.attach(
        "xfsvol",
        GIB,
        Content::Filesystem {
            kind: FsKind::Xfs,
            size_bytes: GIB,
        },
    );
    fake.attach("parted", GIB, Content::PartitionTable("gpt"));
    fake.attach("swap", GIB, Content::Other("swap"));
    fake.attach("junk", GIB, Content::Unrecognised);
    let c = core(&fake);
    // A different fs than requested: mounted as it is.
    c.stage(
        stage_req(
            "xfsvol",
            mount_cap(Some("ext4"), AccessMode::SingleNodeWriter),
        ),
        soon(),
    )
    .await
    .unwrap();
    assert!(fake.calls().iter().any(|c| c.contains(" xfs ")));
    for id in ["parted", "swap", "junk"] {
        let err = c.stage(stage_req(id, rw()), soon()).await.unwrap_err();
        assert!(
            matches!(err, Error::NodeRefused(NodeRefusal::DeviceHoldsData { .. })),
            "{id}: {err}"
        );
        assert!(err.to_string().contains("refusing to format"), "{err}");
        assert_eq!(fake.mount_depth(Path::new(&staging(id))), 0);
    }
    assert_eq!(formats(&fake), 0);
}

#[tokio::test]
async fn bad_requests_are_invalid_argument_and_change_nothing() {
    let fake = FakeHost::new();
    fake.attach("v1", GIB, Content::Blank);
    let c = core(&fake);
    let mut cases = Vec::new();
    cases.push(stage_req(
        "v1",
        mount_cap(Some("zfs"), AccessMode::SingleNodeWriter),
    ));
    let mut r = stage_req("v1", rw());
    r.staging_path = "/etc/x".into();
    cases.push(r);
    let mut r = stage_req("v1", rw());
    r.staging_path = format!("{KUBELET}/a/../../../etc");
    cases.push(r);
    let mut r = stage_req("v1", rw());
    r.staging_path = "relative/path".into();
    cases.push(r);
    let mut r = stage_req("v1", rw());
    r.volume_context.insert("blockSize".into(), "3000".into());
    cases.push(r);
    let mut r = stage_req("v1", mount_cap(Some("xfs"), AccessMode::SingleNodeWriter));
    r.volume_context
        .insert("bytesPerInode".into(), "4096".into());
    cases.push(r);
    let mut r = stage_req("v1", rw());
    r.volume_context
        .insert(params::RESIZE_REQUIRED.into(), "maybe".into());
    cases.push(r);
    cases.push(stage_req(
        "v1",
        mount_cap(None, AccessMode::MultiNodeMultiWriter),
    ));
    cases.push(stage_req("a/b", rw()));
    for req in cases {
        let err = c.stage(req, soon()).await.unwrap_err();
        assert!(matches!(err, Error::Invalid(_)), "{err}");
    }
    assert!(fake.calls().is_empty(), "{:?}", fake.calls());
}

#[tokio::test]
async fn format_options_reach_mkfs() {
    let fake = FakeHost::new();
    fake.attach("v1", GIB, Content::Blank);
    let c = core(&fake);
    let mut r = stage_req("v1", rw());
    for (k, v) in [
        ("blockSize", "4096"),
        ("inodeSize", "512"),
        ("bytesPerInode", "16384"),
        ("numberOfInodes", "1000"),
        ("storage.kubernetes.io/csiProvisionerIdentity", "x"),
    ] {
        r.volume_context.insert(k.into(), v.into());
    }
    c.stage(r, soon()).await.unwrap();
    let fmt = fake
        .calls()
        .into_iter()
        .find(|c| c.starts_with("format"))
        .unwrap();
    assert!(
        fmt.contains("block_size: Some(4096)")
            && fmt.contains("inode_size: Some(512)")
            && fmt.contains("bytes_per_inode: Some(16384)")
            && fmt.contains("number_of_inodes: Some(1000)"),
        "{fmt}"
    );
}

#[tokio::test]
async fn staging_path_with_another_device_is_failed_precondition() {
    let fake = FakeHost::new();
    fake.attach("v1", GIB, Content::Blank);
    fake.attach("v2", GIB, Content::Blank);
    let c = core(&fake);
    c.stage(stage_req("v1", rw()), soon()).await.unwrap();
    let mut r = stage_req("v2", rw());
    r.staging_path = staging("v1");
    let err = c.stage(r, soon()).await.unwrap_err();
    assert!(
        matches!(
            err,
            Error::NodeRefused(NodeRefusal::StagingHoldsOther { .. })
        ),
        "{err}"
    );
    assert!(err.to_string().contains("another device"), "{err}");
}

#[tokio::test]
async fn read_only_access_never_formats() {
    let fake = FakeHost::new();
    fake.attach("v1", GIB, Content::Blank);
    let c = core(&fake);
    let err = c
        .stage(
            stage_req("v1", mount_cap(None, AccessMode::SingleNodeReaderOnly)),
            soon(),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::NodeRefused(NodeRefusal::BlankReadOnly { .. })),
        "{err}"
    );
    assert_eq!(formats(&fake), 0);
}

#[tokio::test]
async fn missing_device_is_device_not_found() {
    let fake = FakeHost::new();
    let c = core(&fake);
    let err = c.stage(stage_req("gone", rw()), soon()).await.unwrap_err();
    assert!(
        matches!(err, Error::Host(HostError::DeviceNotFound { .. })),
        "{err}"
    );
}

#[tokio::test]
async fn publish_unpublish_cycle_is_idempotent() {
    let fake = FakeHost::new();
    fake.attach("v1", GIB, Content::Blank);
    let c = core(&fake);
    let err = c.publish(publish_req("v1", rw(), false)).await.unwrap_err();
    assert!(
        matches!(
            err,
            Error::NodeRefused(NodeRefusal::NotStaged { block: false, .. })
        ),
        "not staged: {err}"
    );
    c.stage(stage_req("v1", rw()), soon()).await.unwrap();
    c.publish(publish_req("v1", rw(), false)).await.unwrap();
    c.publish(publish_req("v1", rw(), false)).await.unwrap();
    let t = PathBuf::from(target("v1"));
    assert_eq!(fake.mount_depth(&t), 1);
    // Same target, now asked read-only: incompatible (CSI: ALREADY_EXISTS).
    let err = c.publish(publish_req("v1", rw(), true)).await.unwrap_err();
    assert!(
        matches!(
            err,
            Error::Mismatch(Mismatch::PublishedOtherwise {
                read_only: true,
                ..
            })
        ),
        "{err}"
    );
    let unpub = || UnpublishRequest {
        volume_id: "v1".into(),
        target_path: target("v1"),
    };
    c.unpublish(unpub()).await.unwrap();
    c.unpublish(unpub()).await.unwrap();
    assert!(!fake.exists(&t));
    let unstage = || UnstageRequest {
        volume_id: "v1".into(),
        staging_path: staging("v1"),
    };
    c.unstage(unstage()).await.unwrap();
    c.unstage(unstage()).await.unwrap();
    // The staging directory belongs to the CO: unmounted, still there.
    assert!(fake.exists(Path::new(&staging("v1"))));
    assert_eq!(fake.mount_depth(Path::new(&staging("v1"))), 0);
    let calls = fake.calls();
    let umount = calls
        .iter()
        .position(|c| c.starts_with(&format!("unmount {}", staging("v1"))))
        .unwrap();
    let flush = calls.iter().position(|c| c.starts_with("flush")).unwrap();
    assert!(flush > umount, "flush after unmount: {calls:?}");
}

#[tokio::test]
async fn read_only_publish_remounts_read_only() {
    let fake = FakeHost::new();
    fake.attach("v1", GIB, Content::Blank);
    let c = core(&fake);
    c.stage(stage_req("v1", rw()), soon()).await.unwrap();
    c.publish(publish_req("v1", rw(), true)).await.unwrap();
    assert!(fake.is_read_only(Path::new(&target("v1"))));
    c.publish(publish_req("v1", rw(), true)).await.unwrap();
}

#[tokio::test]
async fn target_holding_another_volume_is_failed_precondition() {
    let fake = FakeHost::new();
    fake.attach("v1", GIB, Content::Blank);
    fake.attach("v2", GIB, Content::Blank);
    let c = core(&fake);
    c.stage(stage_req("v1", rw()), soon()).await.unwrap();
    c.stage(stage_req("v2", rw()), soon()).await.unwrap();
    c.publish(publish_req("v1", rw(), false)).await.unwrap();
    let mut r = publish_req("v2", rw(), false);
    r.target_path = target("v1");
    let err = c.publish(r).await.unwrap_err();
    assert!(
        matches!(
            err,
            Error::NodeRefused(NodeRefusal::TargetHoldsOther { .. })
        ),
        "{err}"
    );
}

#[tokio::test]
async fn block_publish_binds_the_device_onto_a_file() {
    let fake = FakeHost::new();
    let dev = fake.attach("b1", GIB, Content::Blank);
    let c = core(&fake);
    c.stage(stage_req("b1", block_cap()), soon()).await.unwrap();
    c.stage(stage_req("b1", block_cap()), soon()).await.unwrap();
    let staged = PathBuf::from(staging("b1")).join(STAGED_DEVICE);
    assert_eq!(fake.mount_depth(&staged), 1, "{:?}", fake.calls());
    c.publish(publish_req("b1", block_cap(), false))
        .await
        .unwrap();
    c.publish(publish_req("b1", block_cap(), false))
        .await
        .unwrap();
    assert!(fake
        .calls()
        .contains(&format!("bind {} {} ro=false", dev.display(), target("b1"))));
    let st = c
        .stats(StatsRequest {
            volume_id: "b1".into(),
            volume_path: target("b1"),
        })
        .await
        .unwrap();
    assert_eq!(st.usage, VolumeUsage::Block { total_bytes: GIB });
    assert!(!st.condition.abnormal);
    c.unpublish(UnpublishRequest {
        volume_id: "b1".into(),
        target_path: target("b1"),
    })
    .await
    .unwrap();
    assert!(!fake.exists(Path::new(&target("b1"))));
    let unstage = || UnstageRequest {
        volume_id: "b1".into(),
        staging_path: staging("b1"),
    };
    c.unstage(unstage()).await.unwrap();
    c.unstage(unstage()).await.unwrap();
    assert!(!fake.exists(&staged), "{:?}", fake.calls());
    assert!(fake.exists(Path::new(&staging("b1"))));
    let calls = fake.calls();
    let flush = calls.iter().position(|c| c.starts_with("flush")).unwrap();
    let umount = calls
        .iter()
        .position(|c| c.starts_with(&format!("unmount {}", staged.display())))
        .unwrap();
    assert!(flush < umount, "flushed through the bind: {calls:?}");
    assert_eq!(formats(&fake), 0, "block volumes are never formatted");
}

#[tokio::test]
async fn restage_with_the_other_access_type_is_already_exists() {
    let fake = FakeHost::new();
    fake.attach("b1", GIB, Content::Blank);
    fake.attach("m1", GIB, Content::Blank);
    fake.attach("other", GIB, Content::Blank);
    let c = core(&fake);
    c.stage(stage_req("b1", block_cap()), soon()).await.unwrap();
    c.stage(stage_req("m1", rw()), soon()).await.unwrap();
    let before = fake.calls();
    // Block-staged, asked to mount: never probed, never formatted.
    let err = c.stage(stage_req("b1", rw()), soon()).await.unwrap_err();
    assert!(
        matches!(err, Error::Mismatch(Mismatch::StagedForBlock { .. })),
        "{err}"
    );
    assert!(err.to_string().contains("for block access"), "{err}");
    // Mount-staged, asked for block.
    let err = c
        .stage(stage_req("m1", block_cap()), soon())
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::Mismatch(Mismatch::StagedWithMount { .. })),
        "{err}"
    );
    assert!(err.to_string().contains("mount access"), "{err}");
    // Another volume's staging path, either way: FailedPrecondition.
    for (from, cap) in [("b1", rw()), ("m1", block_cap()), ("b1", block_cap())] {
        let mut r = stage_req("other", cap);
        r.staging_path = staging(from);
        let err = c.stage(r, soon()).await.unwrap_err();
        assert!(
            matches!(
                err,
                Error::NodeRefused(
                    NodeRefusal::StagingHoldsDevice { .. }
                        | NodeRefusal::StagingHoldsOther { .. }
                        | NodeRefusal::StagingHoldsOtherAt { .. }
                )
            ),
            "{from}: {err}"
        );
    }
    assert_eq!(fake.calls(), before, "the refusals changed something");
    assert_eq!(formats(&fake), 1, "only m1 was formatted");
}

#[tokio::test]
async fn publish_without_staging_path_is_failed_precondition() {
    let fake = FakeHost::new();
    fake.attach("v1", GIB, Content::Blank);
    let c = core(&fake);
    for cap in [rw(), block_cap()] {
        c.stage(stage_req("v1", cap.clone()), soon()).await.unwrap();
        let mut r = publish_req("v1", cap, false);
        r.staging_path.clear();
        let err = c.publish(r).await.unwrap_err();
        assert!(
            matches!(err, Error::NodeRefused(NodeRefusal::NoStagingPath)),
            "{err}"
        );
        assert!(err.to_string().contains("staging_target_path"), "{err}");
        c.unstage(UnstageRequest {
            volume_id: "v1".into(),
            staging_path: staging("v1"),
        })
        .await
        .unwrap();
    }
}

#[tokio::test]
async fn block_publish_checks_staging_device_and_read_only_flag() {
    let fake = FakeHost::new();
    fake.attach("b1", GIB, Content::Blank);
    fake.attach("b2", GIB, Content::Blank);
    let c = core(&fake);
    // Unknown volume: NotFound at once (publish never waits for a disk).
    let err = c
        .publish(publish_req("nope", block_cap(), false))
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::Host(HostError::DeviceNotFound { .. })),
        "{err}"
    );
    // Not staged.
    let err = c
        .publish(publish_req("b1", block_cap(), false))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::NodeRefused(NodeRefusal::NotStaged { block: true, .. })
        ),
        "{err}"
    );
    assert!(err.to_string().contains("not staged"), "{err}");
    // Staged, but the staging path given holds another volume's device.
    c.stage(stage_req("b1", block_cap()), soon()).await.unwrap();
    c.stage(stage_req("b2", block_cap()), soon()).await.unwrap();
    let mut r = publish_req("b1", block_cap(), false);
    r.staging_path = staging("b2");
    let err = c.publish(r).await.unwrap_err();
    assert!(
        matches!(
            err,
            Error::NodeRefused(NodeRefusal::StagedOtherDevice { .. })
        ),
        "{err}"
    );
    // Published read-write; again read-only is incompatible.
    c.publish(publish_req("b1", block_cap(), false))
        .await
        .unwrap();
    let err = c
        .publish(publish_req("b1", block_cap(), true))
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::Mismatch(Mismatch::PublishedOtherwise { .. })),
        "{err}"
    );
    c.unpublish(UnpublishRequest {
        volume_id: "b1".into(),
        target_path: target("b1"),
    })
    .await
    .unwrap();
    c.publish(publish_req("b1", block_cap(), true))
        .await
        .unwrap();
    assert!(fake.is_read_only(Path::new(&target("b1"))));
    c.publish(publish_req("b1", block_cap(), true))
        .await
        .unwrap();
}

#[tokio::test]
async fn stats_verify_the_volume_is_at_the_path() {
    let fake = FakeHost::new();
    fake.attach("v1", GIB, Content::Blank);
    fake.attach("v2", GIB, Content::Blank);
    fake.attach("b1", 2 * GIB, Content::Blank);
    let c = core(&fake);
    c.stage(stage_req("v1", rw()), soon()).await.unwrap();
    c.stage(stage_req("b1", block_cap()), soon()).await.unwrap();
    c.publish(publish_req("b1", block_cap(), false))
        .await
        .unwrap();
    let stats = |id: &str, path: String| {
        c.stats(StatsRequest {
            volume_id: id.into(),
            volume_path: path,
        })
    };
    // Another volume's staging mount, a block target and a block staging dir.
    for path in [staging("v1"), target("b1"), staging("b1")] {
        let err = stats("v2", path.clone()).await.unwrap_err();
        assert!(
            matches!(err, Error::VolumeNotAtPath { .. }),
            "{path}: {err}"
        );
    }
    // A volume with no disk here.
    let err = stats("gone", staging("v1")).await.unwrap_err();
    assert!(
        matches!(err, Error::Host(HostError::DeviceNotFound { .. })),
        "{err}"
    );
    // A directory with nothing mounted.
    fake.host()
        .mounter
        .create_dir(Path::new(&format!("{KUBELET}/pods/p1/empty")))
        .unwrap();
    let err = stats("v1", format!("{KUBELET}/pods/p1/empty"))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::VolumeNotAtPath { .. }), "{err}");
    // The block volume's staging path reports the device size.
    let st = stats("b1", staging("b1")).await.unwrap();
    assert_eq!(
        st.usage,
        VolumeUsage::Block {
            total_bytes: 2 * GIB
        }
    );
    assert!(!st.condition.abnormal, "{st:?}");
}

#[tokio::test]
async fn broken_mount_is_cleaned_up_lazily_as_last_resort() {
    let fake = FakeHost::new();
    fake.attach("v1", GIB, Content::Blank);
    let c = core(&fake);
    c.stage(stage_req("v1", rw()), soon()).await.unwrap();
    c.publish(publish_req("v1", rw(), false)).await.unwrap();
    let t = PathBuf::from(target("v1"));
    fake.break_mount(&t, libc_errno::EIO);
    let st = c
        .stats(StatsRequest {
            volume_id: "v1".into(),
            volume_path: target("v1"),
        })
        .await
        .unwrap();
    assert!(st.condition.abnormal, "{st:?}");
    fake.fail_next("unmount", libc_errno::EIO);
    c.unpublish(UnpublishRequest {
        volume_id: "v1".into(),
        target_path: target("v1"),
    })
    .await
    .unwrap();
    assert!(fake
        .calls()
        .contains(&format!("unmount {} lazy=true", t.display())));
    assert!(!fake.exists(&t));
}

#[tokio::test]
async fn busy_unmount_is_not_forced() {
    let fake = FakeHost::new();
    fake.attach("v1", GIB, Content::Blank);
    let c = core(&fake);
    c.stage(stage_req("v1", rw()), soon()).await.unwrap();
    fake.fail_next("unmount", libc_errno::EBUSY);
    let err = c
        .unstage(UnstageRequest {
            volume_id: "v1".into(),
            staging_path: staging("v1"),
        })
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Host(HostError::Busy { .. })), "{err}");
    assert_eq!(fake.mount_depth(Path::new(&staging("v1"))), 1);
    assert!(!fake.calls().iter().any(|c| c.contains("lazy=true")));
}

#[tokio::test]
async fn second_operation_on_a_busy_volume_is_aborted() {
    let fake = FakeHost::new();
    fake.attach("v1", GIB, Content::Blank);
    let c = core(&fake);
    let guard = c.inflight.try_lock("v1").unwrap();
    let err = c.stage(stage_req("v1", rw()), soon()).await.unwrap_err();
    assert!(matches!(err, Error::Busy { .. }), "{err}");
    drop(guard);
    c.stage(stage_req("v1", rw()), soon()).await.unwrap();
}

#[tokio::test]
async fn stats_report_usage_and_conditions() {
    let fake = FakeHost::new();
    fake.attach("v1", GIB, Content::Blank);
    let c = core(&fake);
    let req = || StatsRequest {
        volume_id: "v1".into(),
        volume_path: staging("v1"),
    };
    let err = c.stats(req()).await.unwrap_err();
    assert!(matches!(err, Error::PathNotFound { .. }), "{err}");
    c.stage(stage_req("v1", rw()), soon()).await.unwrap();
    let st = c.stats(req()).await.unwrap();
    assert!(!st.condition.abnormal);
    assert!(matches!(st.usage, VolumeUsage::Filesystem(u) if u.total_bytes == GIB));
    fake.state()
        .read_only_after_errors
        .insert(PathBuf::from(staging("v1")));
    let st = c.stats(req()).await.unwrap();
    assert!(
        st.condition.abnormal && st.condition.message.contains("read-only"),
        "{st:?}"
    );
    fake.state().read_only_after_errors.clear();
    fake.detach("v1");
    let st = c.stats(req()).await.unwrap();
    assert!(
        st.condition.abnormal && st.condition.message.contains("vanished"),
        "{st:?}"
    );
}

#[tokio::test]
async fn expand_grows_online_and_reports_the_device_size() {
    let fake = FakeHost::new();
    fake.attach("v1", GIB, Content::Blank);
    let c = core(&fake);
    c.stage(
        stage_req("v1", mount_cap(Some("xfs"), AccessMode::SingleNodeWriter)),
        soon(),
    )
    .await
    .unwrap();
    fake.state().devices.get_mut("v1").unwrap().pending_size = Some(2 * GIB);
    let req = |required| ExpandRequest {
        volume_id: "v1".into(),
        volume_path: staging("v1"),
        staging_path: String::new(),
        capacity: CapacityRange {
            required_bytes: required,
            limit_bytes: 0,
        },
        capability: None,
    };
    let size = c.expand(req(2 * GIB), soon()).await.unwrap();
    assert_eq!(size, 2 * GIB);
    // Upstream's `rescan-on-resize` (rescan, then check the size, before growing) is always
    // on: this core has `rescan-on-resize = false`, its default (`core()`).
    let calls = fake.calls();
    let rescan = calls
        .iter()
        .position(|c| c.starts_with("rescan /dev/fake0"));
    let grow = calls
        .iter()
        .position(|c| c.starts_with("grow_online /dev/fake0"));
    assert!(rescan.unwrap() < grow.unwrap(), "{calls:?}");
    assert_eq!(
        fake.content("v1"),
        Content::Filesystem {
            kind: FsKind::Xfs,
            size_bytes: 2 * GIB
        }
    );
    let err = c.expand(req(3 * GIB), soon()).await.unwrap_err();
    assert!(matches!(err, Error::ResizePending { .. }), "{err}");
    let err = c
        .expand(
            ExpandRequest {
                volume_path: format!("{KUBELET}/nope"),
                ..req(0)
            },
            soon(),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, Error::PathNotFound { .. }), "{err}");
}

#[tokio::test]
async fn ext4_online_grow_refusal_is_reported() {
    let fake = FakeHost::new();
    fake.attach("v1", GIB, Content::Blank);
    fake.state().deny_online_ext_grow = true;
    let c = core(&fake);
    c.stage(stage_req("v1", rw()), soon()).await.unwrap();
    fake.state().devices.get_mut("v1").unwrap().pending_size = Some(2 * GIB);
    let err = c
        .expand(
            ExpandRequest {
                volume_id: "v1".into(),
                volume_path: staging("v1"),
                staging_path: String::new(),
                capacity: CapacityRange::default(),
                capability: None,
            },
            soon(),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::Host(HostError::NotPermitted { .. })),
        "{err}"
    );
}

#[tokio::test]
async fn resize_required_grows_ext_offline_and_xfs_online() {
    let fake = FakeHost::new();
    let fs = |kind| Content::Filesystem {
        kind,
        size_bytes: GIB,
    };
    fake.attach("e", 2 * GIB, fs(FsKind::Ext4));
    fake.attach("x", 2 * GIB, fs(FsKind::Xfs));
    let c = core(&fake);
    for (id, f) in [("e", "ext4"), ("x", "xfs")] {
        let mut r = stage_req(id, mount_cap(Some(f), AccessMode::SingleNodeWriter));
        r.volume_context
            .insert(params::RESIZE_REQUIRED.into(), "true".into());
        c.stage(r, soon()).await.unwrap();
    }
    let calls = fake.calls();
    let grow_e = calls
        .iter()
        .position(|c| c.starts_with("grow_offline /dev/fake0"));
    let mount_e = calls.iter().position(|c| c.starts_with("mount /dev/fake0"));
    assert!(grow_e.unwrap() < mount_e.unwrap(), "{calls:?}");
    let grow_x = calls
        .iter()
        .position(|c| c.starts_with("grow_online /dev/fake1"));
    let mount_x = calls.iter().position(|c| c.starts_with("mount /dev/fake1"));
    assert!(grow_x.unwrap() > mount_x.unwrap(), "{calls:?}");
}

#[tokio::test]
async fn info_is_cached_and_topology_sanitised() {
    let fake = FakeHost::new();
    let md = Arc::new(CountingMetadata {
        calls: AtomicUsize::new(0),
        zone: Some("zone one/α".into()),
    });
    let c = core_with(&fake, md.clone());
    let a = c.info().await.unwrap();
    let b = c.info().await.unwrap();
    assert_eq!(a, b);
    assert_eq!(md.calls.load(Ordering::SeqCst), 1);
    assert_eq!(a.node_id, "node-uuid");
    assert_eq!(a.max_volumes_per_node, 256);
    let topo = a.topology.unwrap();
    assert_eq!(
        topo.get(crate::driver::types::ZONE_TOPOLOGY_KEY).unwrap(),
        "zone-one"
    );
    assert_eq!(topo.get("topology.kubernetes.io/region").unwrap(), "r1");
}

#[tokio::test]
async fn readiness_needs_the_default_fs_tools() {
    use crate::driver::probe::Readiness;
    let fake = FakeHost::new();
    let c = core(&fake);
    let r = NodeReadiness { core: c };
    r.check().await.unwrap();
    fake.state().missing_tools = vec!["mkfs.ext4".into()];
    let not = r.check().await.unwrap_err();
    assert!(
        !not.transient && not.reason.contains("mkfs.ext4"),
        "{not:?}"
    );
}

#[test]
fn a_format_option_refused_names_the_filesystems_that_take_it() {
    let refused =
        |o: FormatOptions, fs: FsKind| params::check_format(&o, fs).unwrap_err().to_string();
    let inode = refused(
        FormatOptions {
            inode_size: Some(512),
            ..Default::default()
        },
        FsKind::Btrfs,
    );
    assert!(
        inode.contains("applies to ext2/ext3/ext4/xfs only"),
        "{inode}"
    );
    let bpi = refused(
        FormatOptions {
            bytes_per_inode: Some(4096),
            ..Default::default()
        },
        FsKind::Xfs,
    );
    assert!(bpi.contains("applies to ext2/ext3/ext4 only"), "{bpi}");
}
