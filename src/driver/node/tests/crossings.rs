//! How many times each RPC crosses the host port (calls from the core into a host trait):
//! the node path goes down once per step, so the counts are small and bounded. Counted by a
//! wrapper around the fake that counts what the core calls, not what the fake's steps do.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use super::*;
use crate::host::{
    DevId, Devices, Filesystems, Host, HostResult, MountSpec, Mounter, NodePath, PathInfo,
    PathState, PublishBlockLook, PublishLook, StageLook, StagePaths, StageWork, Unmounted,
    UnstageLook, Usage,
};

struct Counted {
    inner: FakeHost,
    n: AtomicUsize,
}

impl Counted {
    fn cross(&self) -> &FakeHost {
        self.n.fetch_add(1, Ordering::SeqCst);
        &self.inner
    }
    fn take(&self) -> usize {
        self.n.swap(0, Ordering::SeqCst)
    }
}

impl Mounter for Counted {
    fn inspect(&self, path: &Path) -> HostResult<PathState> {
        self.cross().inspect(path)
    }
    fn mount(&self, device: &Path, target: &Path, opts: &MountSpec) -> HostResult<()> {
        self.cross().mount(device, target, opts)
    }
    fn bind(&self, source: &Path, target: &Path, read_only: bool) -> HostResult<()> {
        self.cross().bind(source, target, read_only)
    }
    fn unmount(&self, target: &Path, lazy: bool) -> HostResult<()> {
        self.cross().unmount(target, lazy)
    }
    fn mounted_device(&self, path: &Path) -> HostResult<Option<PathBuf>> {
        self.cross().mounted_device(path)
    }
    fn mounts_sharing(&self, path: &Path) -> HostResult<Vec<PathBuf>> {
        self.cross().mounts_sharing(path)
    }
    fn read_only_after_errors(&self, path: &Path) -> HostResult<bool> {
        self.cross().read_only_after_errors(path)
    }
    fn create_dir(&self, path: &Path) -> HostResult<()> {
        self.cross().create_dir(path)
    }
    fn create_file(&self, path: &Path) -> HostResult<()> {
        self.cross().create_file(path)
    }
    fn remove(&self, path: &Path) -> HostResult<()> {
        self.cross().remove(path)
    }
}

impl Devices for Counted {
    fn find(&self, volume_id: &str, deadline: std::time::Instant) -> HostResult<PathBuf> {
        self.cross().find(volume_id, deadline)
    }
    fn lookup(&self, volume_id: &str) -> Option<PathBuf> {
        self.cross().lookup(volume_id)
    }
    fn size(&self, device: &Path) -> HostResult<u64> {
        self.cross().size(device)
    }
    fn rescan(&self, device: &Path, deadline: std::time::Instant) -> HostResult<()> {
        self.cross().rescan(device, deadline)
    }
    fn flush(&self, device: &Path) -> HostResult<()> {
        self.cross().flush(device)
    }
    fn exists(&self, id: DevId) -> bool {
        Devices::exists(self.cross(), id)
    }
    fn by_id_dir(&self) -> &Path {
        self.cross().by_id_dir()
    }
}

impl Filesystems for Counted {
    fn probe(&self, device: &Path) -> HostResult<Content> {
        self.cross().probe(device)
    }
    fn format(&self, device: &Path, fs: FsKind, opts: &FormatOptions) -> HostResult<()> {
        self.cross().format(device, fs, opts)
    }
    fn grow_offline(&self, device: &Path, fs: FsKind) -> HostResult<()> {
        self.cross().grow_offline(device, fs)
    }
    fn grow_online(&self, device: &Path, mount_point: &Path, fs: FsKind) -> HostResult<()> {
        self.cross().grow_online(device, mount_point, fs)
    }
    fn usage(&self, path: &Path) -> HostResult<Usage> {
        self.cross().usage(path)
    }
    fn missing_tools(&self, fs: FsKind) -> Vec<String> {
        self.cross().missing_tools(fs)
    }
    fn is_consistent(&self, device: &Path, fs: FsKind) -> HostResult<bool> {
        self.cross().is_consistent(device, fs)
    }
}

/// Each step is one crossing; the fake's own steps then use its roles uncounted.
impl NodePath for Counted {
    fn look_stage(&self, device: &Path, paths: &StagePaths) -> HostResult<StageLook> {
        self.cross().look_stage(device, paths)
    }
    fn mounts_device(
        &self,
        path: &Path,
        info: &PathInfo,
        device: &Path,
        dev: &PathInfo,
    ) -> HostResult<bool> {
        self.cross().mounts_device(path, info, device, dev)
    }
    fn stage(&self, device: &Path, paths: &StagePaths, work: &StageWork) -> HostResult<PathState> {
        self.cross().stage(device, paths, work)
    }
    fn look_unstage(&self, paths: &StagePaths) -> HostResult<UnstageLook> {
        self.cross().look_unstage(paths)
    }
    fn unmount_staged(&self, paths: &StagePaths) -> HostResult<Unmounted> {
        self.cross().unmount_staged(paths)
    }
    fn look_publish(&self, staging: &Path, target: &Path) -> HostResult<PublishLook> {
        self.cross().look_publish(staging, target)
    }
    fn look_stage_block(&self, device: &Path, paths: &StagePaths) -> HostResult<StageLook> {
        self.cross().look_stage_block(device, paths)
    }
    fn stage_block(
        &self,
        device: &Path,
        paths: &StagePaths,
        create_dir: bool,
        create_file: bool,
        read_only: bool,
    ) -> HostResult<()> {
        self.cross()
            .stage_block(device, paths, create_dir, create_file, read_only)
    }
    fn look_publish_block(
        &self,
        device: &Path,
        staged_file: &Path,
        target: &Path,
        sharing: bool,
    ) -> HostResult<PublishBlockLook> {
        self.cross()
            .look_publish_block(device, staged_file, target, sharing)
    }
    fn publish_block(
        &self,
        device: &Path,
        target: &Path,
        create_file: bool,
        read_only: bool,
    ) -> HostResult<()> {
        self.cross()
            .publish_block(device, target, create_file, read_only)
    }
    fn publish(
        &self,
        staging: &Path,
        target: &Path,
        create_dir: bool,
        read_only: bool,
    ) -> HostResult<()> {
        self.cross().publish(staging, target, create_dir, read_only)
    }
}

fn counted(fake: &FakeHost) -> (Arc<Counted>, Arc<NodeCore>) {
    let c = Arc::new(Counted {
        inner: fake.clone(),
        n: AtomicUsize::new(0),
    });
    let core = NodeCore::new(
        Host::of(c.clone()),
        Arc::new(super::CountingMetadata {
            calls: AtomicUsize::new(0),
            zone: None,
        }),
        NodeOptions {
            kubelet_dir: KUBELET.into(),
            kubelet_dir_resolved: None,
            block_storage: Default::default(),
            with_topology: false,
            additional_topology: vec![],
        },
    );
    (c, core)
}

/// The counts docs/ARCHITECTURE.md ("The host port") and docs/NODE.md give; on main before
/// the steps they were 12 (blank), 9, 9, 4 and 4.
#[tokio::test]
async fn each_rpc_crosses_the_host_port_a_few_times() {
    let fake = FakeHost::new();
    fake.attach("v1", GIB, Content::Blank);
    let (n, c) = counted(&fake);
    let unstage = || UnstageRequest {
        volume_id: "v1".into(),
        staging_path: staging("v1"),
    };
    let unpublish = || UnpublishRequest {
        volume_id: "v1".into(),
        target_path: target("v1"),
    };
    // Blank: find, look, missing tools, stage (format + mount).
    c.stage(stage_req("v1", rw()), soon()).await.unwrap();
    assert_eq!(n.take(), 4, "first stage of a blank disk");
    assert_eq!(formats(&fake), 1);
    c.publish(publish_req("v1", rw(), false)).await.unwrap();
    assert_eq!(n.take(), 2, "publish: look, bind");
    c.unpublish(unpublish()).await.unwrap();
    assert_eq!(n.take(), 4, "unpublish: inspect, unmount, inspect, remove");
    c.unstage(unstage()).await.unwrap();
    assert_eq!(n.take(), 3, "unstage: look, unmount, the block file");
    // Formatted: find, look, stage.
    c.stage(stage_req("v1", rw()), soon()).await.unwrap();
    assert_eq!(n.take(), 3, "stage of a formatted disk");
    c.stage(stage_req("v1", rw()), soon()).await.unwrap();
    assert_eq!(n.take(), 2, "stage again: find, look");
    assert_eq!(formats(&fake), 1);
}

/// Raw block. Before the block steps (counted in the code of 264c487): stage 7, again 4;
/// publish 6, again 5, SINGLE_NODE_SINGLE_WRITER 7.
#[tokio::test]
async fn block_rpcs_cross_the_host_port_a_few_times() {
    let fake = FakeHost::new();
    fake.attach("v1", GIB, Content::Blank);
    let (n, c) = counted(&fake);
    let block_single = VolumeCapability {
        access_mode: AccessMode::SingleNodeSingleWriter,
        ..block_cap()
    };
    c.stage(stage_req("v1", block_cap()), soon()).await.unwrap();
    assert_eq!(n.take(), 3, "block stage: find, look, bind");
    c.stage(stage_req("v1", block_cap()), soon()).await.unwrap();
    assert_eq!(n.take(), 2, "block stage again: find, look");
    c.publish(publish_req("v1", block_cap(), false))
        .await
        .unwrap();
    assert_eq!(n.take(), 3, "block publish: the by-id link, look, bind");
    c.publish(publish_req("v1", block_cap(), false))
        .await
        .unwrap();
    assert_eq!(
        n.take(),
        3,
        "block publish again: the by-id link, look, read-only flag"
    );
    c.unpublish(UnpublishRequest {
        volume_id: "v1".into(),
        target_path: target("v1"),
    })
    .await
    .unwrap();
    n.take();
    c.publish(publish_req("v1", block_single, false))
        .await
        .unwrap();
    assert_eq!(
        n.take(),
        3,
        "SINGLE_NODE_SINGLE_WRITER block publish: the mount table is in the look"
    );
    assert_eq!(formats(&fake), 0, "a raw block volume is never formatted");
}
