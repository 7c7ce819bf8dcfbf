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

use super::{cap, us, Samples};

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
        let st = std::process::Command::new("blkdiscard")
            .args(["-f", &self.dev])
            .status()
            .unwrap();
        assert!(st.success(), "blkdiscard {}", self.dev);
        let t = Instant::now();
        self.node
            .node_stage_volume(self.stage.clone())
            .await
            .unwrap_or_else(|e| panic!("{}: first NodeStageVolume: {e}", self.label));
        self.rows[4].0.push(t.elapsed());
    }

    /// One round: `iters` of each pair (a fifth for stage), staged volume left in place.
    pub async fn round(&mut self, iters: usize) {
        for _ in 0..iters {
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
        for _ in 0..(iters / 5).max(10) {
            let t = Instant::now();
            self.node
                .node_unstage_volume(self.unstage.clone())
                .await
                .unwrap();
            self.node
                .node_stage_volume(self.stage.clone())
                .await
                .unwrap();
            self.rows[1].0.push(t.elapsed());
        }
        // Probe and NodeGetCapabilities take turns going first, so neither is always the
        // call that follows a different kind of work (like with like).
        for i in 0..iters {
            for row in if i % 2 == 0 { [2, 3] } else { [3, 2] } {
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
        }
        // Once more from a blank disk.
        self.node
            .node_unstage_volume(self.unstage.clone())
            .await
            .unwrap();
        self.first_stage().await;
    }

    pub async fn finish(&mut self) {
        let _ = self.node.node_unstage_volume(self.unstage.clone()).await;
    }
}

pub fn report(sides: &mut [Side]) {
    let [a, b] = sides else { return };
    println!("\nSide by side, one run, interleaved round by round, same client (p50 / p99):\n");
    println!(
        "| call | {} | {} | ratio p50 ({}/{}) |",
        a.label, b.label, a.label, b.label
    );
    println!("|---|---:|---:|---:|");
    for (i, name) in ROWS.iter().enumerate() {
        let (pa50, pa99) = (a.rows[i].p(0.5), a.rows[i].p(0.99));
        let (pb50, pb99) = (b.rows[i].p(0.5), b.rows[i].p(0.99));
        println!(
            "| {name} | {} / {} | {} / {} | {:.2} |",
            us(pa50),
            us(pa99),
            us(pb50),
            us(pb99),
            pa50.as_secs_f64() / pb50.as_secs_f64()
        );
    }
}
