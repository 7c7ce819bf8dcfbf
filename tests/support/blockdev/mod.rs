//! RAII helpers for node tests on real block devices: loop devices over sparse files in a temp
//! dir, and a node environment (driver process, kubelet dir, by-id links) that on drop stops
//! the driver, unmounts whatever is still mounted below its temp dir and detaches only the loop
//! devices it attached — also when the test panics.
#![allow(dead_code)]

use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::common::Driver;
use cinder_csi::server::csi::pb::node_client::NodeClient;
use cinder_csi::server::csi::pb::volume_capability::access_mode::Mode;
use cinder_csi::server::csi::pb::volume_capability::{
    AccessMode, AccessType, BlockVolume, MountVolume,
};
use cinder_csi::server::csi::pb::{
    NodePublishVolumeRequest, NodeStageVolumeRequest, NodeUnpublishVolumeRequest,
    NodeUnstageVolumeRequest, VolumeCapability,
};

use tonic::transport::Channel;

pub use crate::support::caps::{block_cap, mount_cap, mount_cap_as, mount_cap_flags};

/// The per-mount options (`rw`/`ro`, …) of the topmost mount at `path`.
pub fn mount_options(path: &Path) -> Option<String> {
    let path = std::fs::canonicalize(path).unwrap();
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .rev()
        .map(|l| l.split(' ').collect::<Vec<_>>())
        .find(|f| f.len() > 5 && Path::new(f[4]) == path)
        .map(|f| f[5].to_string())
}

/// Tests that need root fail loudly without it.
pub fn require_root() {
    assert!(
        nix::unistd::geteuid().is_root(),
        "this test needs root (loop devices and mount(2)); run the suite as root"
    );
}

pub fn run(cmd: &str, args: &[&str]) -> String {
    let out = Command::new(cmd)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{cmd}: {e}"));
    assert!(
        out.status.success(),
        "{cmd} {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A loop device over a sparse file; detached (by its own path) on drop.
pub struct Loop {
    pub file: PathBuf,
    pub dev: PathBuf,
}

impl Loop {
    pub fn new(file: PathBuf, size: u64) -> Loop {
        let f = OpenOptions::new()
            .create_new(true)
            .write(true)
            .open(&file)
            .unwrap();
        f.set_len(size).unwrap();
        drop(f);
        Self::attach(file)
    }

    /// A loop device over an existing file (the first free one).
    pub fn attach(file: PathBuf) -> Loop {
        let dev = run("losetup", &["--find", "--show", file.to_str().unwrap()]);
        Loop {
            file,
            dev: PathBuf::from(dev),
        }
    }

    /// Grow the backing file and tell the loop driver (`losetup -c`).
    pub fn grow(&self, size: u64) {
        OpenOptions::new()
            .write(true)
            .open(&self.file)
            .unwrap()
            .set_len(size)
            .unwrap();
        run("losetup", &["-c", self.dev.to_str().unwrap()]);
    }

    /// Bytes of the backing file (what reached the "disk").
    pub fn read_backing(&self, offset: u64, len: usize) -> Vec<u8> {
        let f = std::fs::File::open(&self.file).unwrap();
        let mut buf = vec![0; len];
        f.read_exact_at(&mut buf, offset).unwrap();
        buf
    }

    pub fn rdev(&self) -> u64 {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(&self.dev).unwrap().rdev()
    }
}

impl Loop {
    /// Whether our device still serves our file: a device detached behind our back may have
    /// been reused by someone else, whose device we must not detach.
    fn still_ours(&self) -> bool {
        let Some(name) = self.dev.file_name() else {
            return false;
        };
        let sys = Path::new("/sys/block").join(name).join("loop/backing_file");
        let Ok(backing) = std::fs::read_to_string(sys) else {
            return false; // not bound any more
        };
        let backing = backing.trim_end_matches('\n');
        let backing = backing.strip_suffix(" (deleted)").unwrap_or(backing);
        let file = std::fs::canonicalize(&self.file).unwrap_or_else(|_| self.file.clone());
        Path::new(backing) == file || Path::new(backing) == self.file
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        if self.still_ours() {
            let _ = Command::new("losetup").arg("-d").arg(&self.dev).status();
        }
    }
}

pub use super::leaks::mounts_below;

pub fn is_mounted(path: &Path) -> bool {
    let path = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    mounts_below(&path).iter().any(|p| p == &path)
}

/// One driver in node mode with its own kubelet dir, local dir and loop devices.
pub struct NodeEnv {
    pub driver: Option<Driver>,
    pub loops: Vec<Loop>,
    pub kubelet: PathBuf,
    pub by_id: PathBuf,
    pub root: Option<tempfile::TempDir>,
    /// The driver's arguments, kept so that it can be restarted the same way.
    args: Vec<String>,
    /// Extra environment of the driver (set before [`NodeEnv::start_driver`]).
    pub envs: Vec<(String, std::ffi::OsString)>,
}

/// A Node service client.
pub type Client = NodeClient<Channel>;

impl NodeEnv {
    pub fn start() -> NodeEnv {
        Self::start_with(false)
    }

    /// `kubelet_behind_symlink`: the kubelet dir is a symlink to a directory beside it, as
    /// when /var/lib/kubelet is linked to a data disk (the mount table shows resolved paths).
    pub fn start_with(kubelet_behind_symlink: bool) -> NodeEnv {
        let mut env = Self::stopped(kubelet_behind_symlink);
        env.start_driver();
        env
    }

    /// The environment with no driver running yet: set `envs`, then [`NodeEnv::start_driver`].
    pub fn stopped(kubelet_behind_symlink: bool) -> NodeEnv {
        require_root();
        let root = super::scratch::dir("cinder-node-test-");
        let kubelet = root.path().join("kubelet");
        let local = root.path().join("local");
        let by_id = local.join("by-id/n1");
        if kubelet_behind_symlink {
            let data = root.path().join("kubelet-data");
            std::fs::create_dir_all(&data).unwrap();
            std::os::unix::fs::symlink(&data, &kubelet).unwrap();
        } else {
            std::fs::create_dir_all(&kubelet).unwrap();
        }
        std::fs::create_dir_all(&by_id).unwrap();
        let args = [
            "--mode",
            "node",
            "--backend",
            "local",
            "--local-dir",
            local.to_str().unwrap(),
            "--node-id",
            "n1",
            "--kubelet-dir",
            kubelet.to_str().unwrap(),
        ];
        let args = args.iter().map(|a| a.to_string()).collect();
        NodeEnv {
            driver: None,
            loops: Vec::new(),
            kubelet,
            by_id,
            root: Some(root),
            args,
            envs: Vec::new(),
        }
    }

    /// Start the driver (again, after [`NodeEnv::kill9`]) with the same arguments.
    pub fn start_driver(&mut self) {
        assert!(self.driver.is_none(), "the driver is already running");
        let dir = tempfile::tempdir().expect("tempdir");
        let socket = dir.path().join("csi.sock");
        let args: Vec<&str> = self.args.iter().map(String::as_str).collect();
        let envs: Vec<(&str, &std::ffi::OsStr)> = self
            .envs
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_os_str()))
            .collect();
        self.driver = Some(Driver::start_with_env(dir, socket, &args, &envs));
    }

    /// kill -9 of the driver and of every process it started (a tool it was running), the
    /// way a container runtime kills a container's whole process tree. The tree is stopped
    /// first (SIGSTOP), so nothing forks behind the scan.
    pub fn kill9(&mut self) {
        let mut driver = self.driver.take().expect("the driver is not running");
        let mut child = driver.child.take().expect("running");
        let tree = stop_tree(child.pid() as i32);
        for pid in &tree {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(*pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        child.wait().expect("wait for the driver");
        // Reap nothing else: the tools are the driver's children, reaped by init.
    }

    pub fn root(&self) -> &Path {
        self.root.as_ref().unwrap().path()
    }

    /// A started environment with one volume `id` of `size` bytes, and a client to it.
    pub async fn with_volume(id: &str, size: u64) -> (NodeEnv, Client) {
        let mut env = Self::start();
        env.volume(id, size);
        let c = env.client().await;
        (env, c)
    }

    /// A Node client to the running driver.
    pub async fn client(&self) -> Client {
        NodeClient::new(self.driver().channel().await)
    }

    pub fn driver(&self) -> &Driver {
        self.driver.as_ref().unwrap()
    }

    /// A blank volume `id` of `size` bytes, linked as `virtio-<id[:20]>` like Nova does.
    pub fn volume(&mut self, id: &str, size: u64) -> &Loop {
        let l = Loop::new(self.root().join(format!("{id}.img")), size);
        let short: String = id.chars().take(20).collect();
        std::os::unix::fs::symlink(&l.dev, self.by_id.join(format!("virtio-{short}"))).unwrap();
        self.loops.push(l);
        self.loops.last().unwrap()
    }

    pub fn staging(&self, id: &str) -> PathBuf {
        self.kubelet
            .join("plugins/kubernetes.io/csi/cinder.csi.openstack.org")
            .join(id)
            .join("globalmount")
    }

    pub fn target(&self, id: &str) -> PathBuf {
        self.kubelet
            .join("pods/8d6c8a1e/volumes/kubernetes.io~csi")
            .join(id)
            .join("mount")
    }
}

impl Drop for NodeEnv {
    fn drop(&mut self) {
        drop(self.driver.take());
        if let Some(root) = &self.root {
            super::leaks::clean_below(root.path());
        }
        self.loops.clear();
        drop(self.root.take());
    }
}

/// SIGSTOP `pid` and, breadth first, every descendant; returns them all (pid first).
pub fn stop_tree(pid: i32) -> Vec<i32> {
    use nix::sys::signal::{kill, Signal};
    let mut tree = vec![pid];
    let mut i = 0;
    while i < tree.len() {
        let _ = kill(nix::unistd::Pid::from_raw(tree[i]), Signal::SIGSTOP);
        for c in children(tree[i]) {
            if !tree.contains(&c) {
                tree.push(c);
            }
        }
        i += 1;
    }
    tree
}

/// Processes whose parent is `pid` (from /proc/*/stat).
pub fn children(pid: i32) -> Vec<i32> {
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    rd.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|p| {
            let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).unwrap_or_default();
            // `pid (comm) state ppid …`; comm may hold spaces and parentheses.
            let after = stat.rsplit_once(')').map(|(_, a)| a).unwrap_or("");
            after.split_whitespace().nth(1).and_then(|x| x.parse().ok()) == Some(pid)
        })
        .collect()
}

// The Node RPC requests for volume `id` at this environment's staging and target paths.

pub fn stage_req(env: &NodeEnv, id: &str, cap: VolumeCapability) -> NodeStageVolumeRequest {
    NodeStageVolumeRequest {
        volume_id: id.into(),
        staging_target_path: env.staging(id).display().to_string(),
        volume_capability: Some(cap),
        ..Default::default()
    }
}

pub fn publish_req(
    env: &NodeEnv,
    id: &str,
    cap: VolumeCapability,
    ro: bool,
) -> NodePublishVolumeRequest {
    NodePublishVolumeRequest {
        volume_id: id.into(),
        staging_target_path: env.staging(id).display().to_string(),
        target_path: env.target(id).display().to_string(),
        volume_capability: Some(cap),
        readonly: ro,
        ..Default::default()
    }
}

pub fn unpublish_req(env: &NodeEnv, id: &str) -> NodeUnpublishVolumeRequest {
    NodeUnpublishVolumeRequest {
        volume_id: id.into(),
        target_path: env.target(id).display().to_string(),
    }
}

pub fn unstage_req(env: &NodeEnv, id: &str) -> NodeUnstageVolumeRequest {
    NodeUnstageVolumeRequest {
        volume_id: id.into(),
        staging_target_path: env.staging(id).display().to_string(),
    }
}

// The steps most node tests take on their way to what they check; each must succeed.

/// A failed step names itself and the volume (the caller's line is lost in an async fn).
fn succeeds<T>(r: Result<tonic::Response<T>, tonic::Status>, step: &str, id: &str) {
    if let Err(e) = r {
        panic!("{step} {id}: {e:?}");
    }
}

/// Stage volume `id` once.
pub async fn stage_volume(c: &mut Client, env: &NodeEnv, id: &str, cap: VolumeCapability) {
    succeeds(
        c.node_stage_volume(stage_req(env, id, cap)).await,
        "stage",
        id,
    );
}

/// Unstage volume `id` once.
pub async fn unstage_volume(c: &mut Client, env: &NodeEnv, id: &str) {
    succeeds(
        c.node_unstage_volume(unstage_req(env, id)).await,
        "unstage",
        id,
    );
}

/// Stage volume `id`, then publish it, each once.
pub async fn stage_and_publish(
    c: &mut Client,
    env: &NodeEnv,
    id: &str,
    cap: VolumeCapability,
    ro: bool,
) {
    stage_volume(c, env, id, cap.clone()).await;
    succeeds(
        c.node_publish_volume(publish_req(env, id, cap, ro)).await,
        "publish",
        id,
    );
}

/// Unpublish volume `id`, then unstage it, each once.
pub async fn unpublish_and_unstage(c: &mut Client, env: &NodeEnv, id: &str) {
    succeeds(
        c.node_unpublish_volume(unpublish_req(env, id)).await,
        "unpublish",
        id,
    );
    unstage_volume(c, env, id).await;
}
