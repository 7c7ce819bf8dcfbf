//! A driver in `all` mode on the local backend, in its own directory, for gRPC-level tests.
//! On drop, also after a panic: the driver is killed, then every mount under the directory is
//! detached, every loop device over a file in it unbound, and the directory removed. Nothing
//! outside the directory is touched.
#![allow(dead_code)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use cinder_csi::cloud::local::loopdev;

use super::leaks;
use cinder_csi::server::csi::pb;
use cinder_csi::tools::ctl::Client;

use super::launch::{Launch, Running};

pub const NODE: &str = "rig-node";
pub const GIB: i64 = 1 << 30;

pub struct Rig {
    pub dir: PathBuf,
    child: Option<Running>,
    _tmp: tempfile::TempDir,
}

impl Rig {
    pub fn new() -> Self {
        assert!(
            nix::unistd::geteuid().is_root(),
            "local backend gRPC tests need root (loop devices, mkfs, mount)"
        );
        let tmp = super::scratch::dir("cinder-csi-rig-");
        let dir = tmp.path().canonicalize().unwrap();
        std::fs::create_dir_all(dir.join("kubelet")).unwrap();
        Self {
            dir,
            child: None,
            _tmp: tmp,
        }
    }

    pub fn endpoint(&self) -> String {
        format!("unix://{}", self.dir.join("csi.sock").display())
    }

    /// Start the driver and wait until it answers Probe.
    pub async fn start(&mut self) -> Client {
        assert!(self.child.is_none(), "already running");
        // `CINDER_CSI_RIG_WRAPPER` (e.g. `heaptrack -o /var/tmp/soak`): a command the driver
        // runs under, for profiling a soak; `pid()` then names the driver, not the wrapper.
        let wrapper = std::env::var("CINDER_CSI_RIG_WRAPPER").unwrap_or_default();
        let mut child = Launch::new()
            .wrapper(&wrapper)
            .args([
                "serve",
                "--mode",
                "all",
                "--backend",
                "local",
                "--node-id",
                NODE,
            ])
            .arg("--local-dir")
            .arg(self.dir.join("state"))
            .arg("--kubelet-dir")
            .arg(self.dir.join("kubelet"))
            .endpoint(&self.dir.join("csi.sock"))
            .log_appending(&self.dir.join("driver.log"))
            .spawn();
        let client = child.wait_for_probe(Duration::from_secs(20)).await;
        self.child = Some(child);
        client
    }

    /// The driver's pid, while it runs (under a wrapper: the descendant running the driver).
    pub fn pid(&self) -> Option<u32> {
        Some(self.child.as_ref()?.pid())
    }

    /// kill -9: no shutdown code runs.
    pub fn kill9(&mut self) {
        self.child.take().expect("running").kill9();
    }

    /// SIGTERM; returns whether it exited 0.
    pub fn stop(&mut self) -> bool {
        self.child.take().expect("running").stop().success()
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("driver.log")).unwrap_or_default()
    }

    /// Mount points under the rig's directory.
    pub fn mounts(&self) -> Vec<PathBuf> {
        leaks::mounts_below(&self.dir)
    }

    /// Loop devices bound to files under the rig's directory.
    pub fn loop_devices(&self) -> Vec<PathBuf> {
        leaks::loops_below(&self.dir)
            .iter()
            .map(loopdev::LoopDevice::path)
            .collect()
    }

    /// Volume and snapshot data files still in the state directory.
    pub fn data_files(&self) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for sub in ["volumes", "snapshots", "backups"] {
            if let Ok(rd) = std::fs::read_dir(self.dir.join("state").join(sub)) {
                out.extend(rd.flatten().map(|e| e.path()));
            }
        }
        out.retain(|p| p.extension().is_some_and(|x| x == "img"));
        out
    }

    pub fn staging(&self, vol: &str) -> PathBuf {
        let p = self.dir.join(format!(
            "kubelet/plugins/kubernetes.io/csi/cinder.csi.openstack.org/{vol}/globalmount"
        ));
        std::fs::create_dir_all(&p).unwrap();
        p
    }

    pub fn target(&self, pod: &str, vol: &str) -> PathBuf {
        let parent = self.dir.join(format!(
            "kubelet/pods/{pod}/volumes/kubernetes.io~csi/pvc-{}",
            &vol[..8]
        ));
        std::fs::create_dir_all(&parent).unwrap();
        parent.join("mount")
    }
}

impl Drop for Rig {
    fn drop(&mut self) {
        drop(self.child.take());
        leaks::clean_below(&self.dir);
    }
}

pub use crate::support::caps::mount_cap;
pub use crate::support::payload::{pattern, write_durable};

/// A volume as kubelet holds it once published into a pod.
pub struct InPod {
    pub id: String,
    pub context: HashMap<String, String>,
    pub publish_context: HashMap<String, String>,
    pub staging: PathBuf,
    pub target: PathBuf,
}

/// At least `bytes`, no limit.
pub fn capacity(bytes: i64) -> Option<pb::CapacityRange> {
    Some(pb::CapacityRange {
        required_bytes: bytes,
        limit_bytes: 0,
    })
}

/// A CreateVolume of `bytes` with an `fs` filesystem; the rest is the caller's to set.
pub fn create_req(name: &str, bytes: i64, fs: &str) -> pb::CreateVolumeRequest {
    pb::CreateVolumeRequest {
        name: name.into(),
        capacity_range: capacity(bytes),
        volume_capabilities: vec![mount_cap(fs)],
        ..Default::default()
    }
}

/// CreateVolume, which must succeed.
pub async fn create_volume(c: &Client, req: pb::CreateVolumeRequest) -> pb::Volume {
    c.controller()
        .create_volume(c.req(req))
        .await
        .unwrap()
        .into_inner()
        .volume
        .unwrap()
}

pub async fn create(
    c: &Client,
    name: &str,
    bytes: i64,
    fs: &str,
    source: Option<pb::volume_content_source::Type>,
) -> pb::Volume {
    let req = pb::CreateVolumeRequest {
        volume_content_source: source.map(|t| pb::VolumeContentSource { r#type: Some(t) }),
        ..create_req(name, bytes, fs)
    };
    create_volume(c, req).await
}

/// ControllerPublish + NodeStage + NodePublish, as kubelet does.
pub async fn attach_and_mount(rig: &Rig, c: &Client, v: &pb::Volume, fs: &str, pod: &str) -> InPod {
    let p = attach(rig, c, v, fs, pod).await;
    stage_and_publish(c, &p, fs).await;
    p
}

/// ControllerPublish only (the loop device exists, nothing staged yet).
pub async fn attach(rig: &Rig, c: &Client, v: &pb::Volume, fs: &str, pod: &str) -> InPod {
    let publish_context = c
        .controller()
        .controller_publish_volume(c.req(pb::ControllerPublishVolumeRequest {
            volume_id: v.volume_id.clone(),
            node_id: NODE.into(),
            volume_capability: Some(mount_cap(fs)),
            volume_context: v.volume_context.clone(),
            ..Default::default()
        }))
        .await
        .unwrap()
        .into_inner()
        .publish_context;
    InPod {
        id: v.volume_id.clone(),
        context: v.volume_context.clone(),
        publish_context,
        staging: rig.staging(&v.volume_id),
        target: rig.target(pod, &v.volume_id),
    }
}

pub async fn stage_and_publish(c: &Client, p: &InPod, fs: &str) {
    c.node()
        .node_stage_volume(c.req(pb::NodeStageVolumeRequest {
            volume_id: p.id.clone(),
            publish_context: p.publish_context.clone(),
            staging_target_path: p.staging.display().to_string(),
            volume_capability: Some(mount_cap(fs)),
            volume_context: p.context.clone(),
            ..Default::default()
        }))
        .await
        .unwrap();
    c.node()
        .node_publish_volume(c.req(pb::NodePublishVolumeRequest {
            volume_id: p.id.clone(),
            publish_context: p.publish_context.clone(),
            staging_target_path: p.staging.display().to_string(),
            target_path: p.target.display().to_string(),
            volume_capability: Some(mount_cap(fs)),
            volume_context: p.context.clone(),
            ..Default::default()
        }))
        .await
        .unwrap();
}

/// NodeUnpublish + NodeUnstage + ControllerUnpublish.
pub async fn unmount_and_detach(c: &Client, p: &InPod) {
    unmount(c, p).await;
    c.controller()
        .controller_unpublish_volume(c.req(pb::ControllerUnpublishVolumeRequest {
            volume_id: p.id.clone(),
            node_id: NODE.into(),
            ..Default::default()
        }))
        .await
        .unwrap();
}

/// NodeUnpublish + NodeUnstage: the volume stays attached.
pub async fn unmount(c: &Client, p: &InPod) {
    c.node()
        .node_unpublish_volume(c.req(pb::NodeUnpublishVolumeRequest {
            volume_id: p.id.clone(),
            target_path: p.target.display().to_string(),
        }))
        .await
        .unwrap();
    c.node()
        .node_unstage_volume(c.req(pb::NodeUnstageVolumeRequest {
            volume_id: p.id.clone(),
            staging_target_path: p.staging.display().to_string(),
        }))
        .await
        .unwrap();
}

pub async fn delete(c: &Client, id: &str) {
    c.controller()
        .delete_volume(c.req(pb::DeleteVolumeRequest {
            volume_id: id.into(),
            ..Default::default()
        }))
        .await
        .unwrap();
}

/// Filesystem size as NodeGetVolumeStats reports it.
pub async fn fs_bytes(c: &Client, p: &InPod) -> i64 {
    let stats = c
        .node()
        .node_get_volume_stats(c.req(pb::NodeGetVolumeStatsRequest {
            volume_id: p.id.clone(),
            volume_path: p.target.display().to_string(),
            staging_target_path: p.staging.display().to_string(),
        }))
        .await
        .unwrap()
        .into_inner();
    stats
        .usage
        .iter()
        .find(|u| u.unit == pb::volume_usage::Unit::Bytes as i32)
        .unwrap()
        .total
}
