//! The node bench's driver-to-driver comparison: the same client calls, interleaved round by
//! round, against each driver on its own blank loop device — first stage of the blank disk
//! (mkfs included), NodeStage + NodeUnstage, NodePublish + NodeUnpublish, Probe and
//! NodeGetCapabilities — printed side by side with ratios.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use cinder_csi::server::csi::pb::identity_client::IdentityClient;
use cinder_csi::server::csi::pb::node_client::NodeClient;
use cinder_csi::server::csi::pb::*;
use tonic::transport::Channel;

use super::{cap, ratio, us, Samples};

pub const ROWS: [&str; 5] = [
    "NodePublish + NodeUnpublish",
    "NodeStage + NodeUnstage (formatted ext4)",
    "Probe",
    "NodeGetCapabilities",
    "first NodeStage of a blank 1 GiB disk (mkfs.ext4)",
];

pub struct Side {
    pub label: String,
    node: NodeClient<Channel>,
    identity: IdentityClient<Channel>,
    stage: NodeStageVolumeRequest,
    unstage: NodeUnstageVolumeRequest,
    publish: NodePublishVolumeRequest,
    unpublish: NodeUnpublishVolumeRequest,
    dev: String,
    pub rows: Vec<Samples>,
}

impl Side {
    /// Connect to the driver on `sock`; its volume `vol` stages at `root`/staging.
    pub async fn new(label: &str, sock: &Path, root: &Path, vol: &str, dev: &str) -> Self {
        let until = Instant::now() + Duration::from_secs(10);
        while std::os::unix::net::UnixStream::connect(sock).is_err() {
            assert!(Instant::now() < until, "{label} did not start");
            std::thread::sleep(Duration::from_millis(5));
        }
        let ch: Channel = cinder_csi::server::csi::client::connect_unix(sock.to_path_buf())
            .await
            .unwrap();
        let staging = root.join("plugins/kubernetes.io/csi/cinder/globalmount");
        let target = root.join("pods/p/volumes/kubernetes.io~csi/pvc/mount");
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        let s = |p: &PathBuf| p.display().to_string();
        Self {
            label: label.to_string(),
            node: NodeClient::new(ch.clone()),
            identity: IdentityClient::new(ch),
            stage: NodeStageVolumeRequest {
                volume_id: vol.into(),
                staging_target_path: s(&staging),
                volume_capability: Some(cap()),
                ..Default::default()
            },
            unstage: NodeUnstageVolumeRequest {
                volume_id: vol.into(),
                staging_target_path: s(&staging),
            },
            publish: NodePublishVolumeRequest {
                volume_id: vol.into(),
                staging_target_path: s(&staging),
                target_path: s(&target),
                volume_capability: Some(cap()),
                ..Default::default()
            },
            unpublish: NodeUnpublishVolumeRequest {
                volume_id: vol.into(),
                target_path: s(&target),
            },
            dev: dev.to_string(),
            rows: ROWS.iter().map(|_| Samples::default()).collect(),
        }
    }

    /// The first stage formats the blank device (discarded first: the loop file's blocks are
    /// punched out and read back as zeros, a blank disk again).
    pub async fn first_stage(&mut self) {
        // Right after an unmount, udev's probe of the device may still hold it: try again
        // briefly (seen once in a CFS run under load).
        let mut out = None;
        for _ in 0..20 {
            let o = std::process::Command::new("blkdiscard")
                .args(["-f", &self.dev])
                .output()
                .unwrap();
            if o.status.success() {
                out = None;
                break;
            }
            out = Some(o);
            std::thread::sleep(Duration::from_millis(50));
        }
        if let Some(o) = out {
            panic!(
                "blkdiscard {}: {}",
                self.dev,
                String::from_utf8_lossy(&o.stderr)
            );
        }
        let t = Instant::now();
        self.node
            .node_stage_volume(self.stage.clone())
            .await
            .unwrap_or_else(|e| panic!("{}: first NodeStageVolume: {e}", self.label));
        self.rows[4].0.push(t.elapsed());
    }

    async fn publish_pair(&mut self) {
        let t = Instant::now();
        self.node
            .node_publish_volume(self.publish.clone())
            .await
            .unwrap();
        self.node
            .node_unpublish_volume(self.unpublish.clone())
            .await
            .unwrap();
        self.rows[0].0.push(t.elapsed());
    }

    /// Stage then unstage: starts and ends unstaged.
    async fn stage_pair(&mut self) {
        let t = Instant::now();
        self.node
            .node_stage_volume(self.stage.clone())
            .await
            .unwrap_or_else(|e| panic!("{}: NodeStageVolume: {e}", self.label));
        self.node
            .node_unstage_volume(self.unstage.clone())
            .await
            .unwrap();
        self.rows[1].0.push(t.elapsed());
    }

    async fn empty_call(&mut self, row: usize) {
        let t = Instant::now();
        if row == 2 {
            self.identity.probe(ProbeRequest {}).await.unwrap();
        } else {
            self.node
                .node_get_capabilities(NodeGetCapabilitiesRequest {})
                .await
                .unwrap();
        }
        self.rows[row].0.push(t.elapsed());
    }

    async fn unstage(&mut self) {
        self.node
            .node_unstage_volume(self.unstage.clone())
            .await
            .unwrap();
    }
}

/// `rounds` rounds of `iters` publish pairs, a fifth of that stage pairs and `iters` of each
/// empty call per driver, the drivers taking turns call by call (who goes first alternates),
/// so both see the same machine; each round ends with a first stage of a blank disk.
pub async fn run(sides: &mut [Side; 2], rounds: usize, iters: usize) {
    for s in sides.iter_mut() {
        s.first_stage().await;
    }
    for _ in 0..rounds {
        for i in 0..iters {
            for j in order(i) {
                sides[j].publish_pair().await;
            }
        }
        for s in sides.iter_mut() {
            s.unstage().await;
        }
        for i in 0..(iters / 5).max(10) {
            for j in order(i) {
                sides[j].stage_pair().await;
            }
        }
        // Probe and NodeGetCapabilities take turns going first as well (like with like).
        for i in 0..iters {
            for j in order(i) {
                for row in if i % 4 < 2 { [2, 3] } else { [3, 2] } {
                    sides[j].empty_call(row).await;
                }
            }
        }
        for j in order(0) {
            sides[j].first_stage().await;
        }
        for s in sides.iter_mut() {
            for r in s.rows.iter_mut() {
                r.end_round();
            }
        }
    }
    for s in sides.iter_mut() {
        let _ = s.node.node_unstage_volume(s.unstage.clone()).await;
    }
}

fn order(i: usize) -> [usize; 2] {
    if i.is_multiple_of(2) {
        [0, 1]
    } else {
        [1, 0]
    }
}

pub fn report(sides: &mut [Side; 2]) {
    let [a, b] = sides;
    println!("\nSide by side, one run, interleaved call by call, same client (p50 / p99):\n");
    println!(
        "| call | {} | {} | ratio of p50s ({}/{}) | per-round ratio: median [min–max] |",
        a.label, b.label, a.label, b.label
    );
    println!("|---|---:|---:|---:|---:|");
    for (i, name) in ROWS.iter().enumerate() {
        let (pa50, pa99) = (a.rows[i].p(0.5), a.rows[i].p(0.99));
        let (pb50, pb99) = (b.rows[i].p(0.5), b.rows[i].p(0.99));
        let (mid, lo, hi, whole) = ratio(&a.rows[i], &[&b.rows[i]]);
        println!(
            "| {name} | {} / {} | {} / {} | {whole:.2} | {mid:.2} [{lo:.2}–{hi:.2}] |",
            us(pa50),
            us(pa99),
            us(pb50),
            us(pb99),
        );
    }
}
