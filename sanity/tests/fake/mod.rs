//! An in-memory CSI driver served over a Unix socket in the test process, with switchable
//! misbehaviours (`Fault`). Volumes live in memory; "mounts" are simulated with directories
//! and files (a published mount target is a directory holding the volume's files, a block
//! target is a file holding its bytes, a staged volume leaves a marker in the staging
//! directory), which is exactly what the runner's leftover checks look at.

#![allow(dead_code)]

mod controller;
mod identity;
mod node;
mod state;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use cinder_csi_sanity::pb::controller_server::ControllerServer;
use cinder_csi_sanity::pb::identity_server::IdentityServer;
use cinder_csi_sanity::pb::node_server::NodeServer;
use tokio::sync::oneshot;

pub use state::State;

/// One switchable misbehaviour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Fault {
    /// A missing volume_id gets NotFound instead of InvalidArgument, in every RPC.
    MissingVolumeIdNotFound,
    /// ControllerPublishVolume answers OK for a volume that does not exist.
    PublishUnknownVolumeOk,
    /// A second CreateVolume with the same name provisions another volume.
    CreateNotIdempotent,
    /// A second CreateVolume with the same name fails with AlreadyExists.
    CreateRetryAlreadyExists,
    /// ControllerPublishVolume returns a fresh publish_context on every call.
    PublishContextChanges,
    /// Republishing or restaging with other flags/capabilities succeeds.
    IncompatibleRepublishOk,
    /// NodeUnpublishVolume leaves the target directory (or block file) behind.
    UnpublishLeavesTarget,
    /// NodeUnstageVolume leaves its simulated mount in the staging directory.
    UnstageLeavesStaging,
    /// Snapshots never become ready_to_use.
    SnapshotNeverReady,
    /// ListVolumes/ListSnapshots ignore max_entries and never return next_token.
    PaginationIgnored,
    /// An invalid starting_token is taken as "from the start" instead of Aborted.
    InvalidTokenAccepted,
    /// Deleting an unknown (or already deleted) volume or snapshot gives NotFound.
    DeleteUnknownNotFound,
    /// DeleteVolume says OK but keeps the volume.
    DeleteIsNoOp,
    /// NodeStageVolume formats the volume, wiping what was written to it.
    StageFormats,
    /// GetPluginInfo has an empty vendor_version.
    EmptyVendorVersion,
    /// ControllerExpandVolume reports success but the volume keeps its size.
    ExpandDoesNotGrow,
    /// ValidateVolumeCapabilities never confirms.
    ValidateNeverConfirms,
}

/// What the driver advertises.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Profile {
    /// Every controller and node capability, topology and online expansion.
    Full,
    /// Controller CREATE_DELETE_VOLUME only; no staging, no snapshots, no topology.
    Minimal,
}

pub struct Inner {
    pub state: Mutex<State>,
    pub faults: HashSet<Fault>,
    pub profile: Profile,
}

impl Inner {
    pub fn has(&self, f: Fault) -> bool {
        self.faults.contains(&f)
    }
    pub fn full(&self) -> bool {
        self.profile == Profile::Full
    }
}

pub const NODE_ID: &str = "fake-node-1";
pub const TOPOLOGY_KEY: &str = "topology.fake.csi.example.org/zone";
pub const ZONE: &str = "zone-a";

/// A running fake driver and the temporary directory holding its socket and the runner's
/// node directories; both go away on drop.
pub struct Running {
    pub dir: tempfile::TempDir,
    pub endpoint: String,
    stop: Option<oneshot::Sender<()>>,
}

impl Running {
    pub fn staging_dir(&self) -> PathBuf {
        self.dir.path().join("staging")
    }
    pub fn mount_dir(&self) -> PathBuf {
        self.dir.path().join("mount")
    }
    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
    }
}

/// Serve the fake driver on `<tmp>/csi.sock`.
pub async fn start(profile: Profile, faults: &[Fault]) -> Running {
    let dir = tempfile::tempdir().expect("tempdir");
    let sock = dir.path().join("csi.sock");
    let listener = tokio::net::UnixListener::bind(&sock).expect("bind fake driver socket");
    let inner = Arc::new(Inner {
        state: Mutex::new(State::default()),
        faults: faults.iter().copied().collect(),
        profile,
    });
    let (tx, rx) = oneshot::channel::<()>();
    let router = tonic::transport::Server::builder()
        .add_service(IdentityServer::new(identity::Identity(inner.clone())))
        .add_service(ControllerServer::new(controller::Controller(inner.clone())))
        .add_service(NodeServer::new(node::Node(inner)));
    tokio::spawn(async move {
        let incoming = tokio_stream::wrappers::UnixListenerStream::new(listener);
        let _ = router
            .serve_with_incoming_shutdown(incoming, async {
                let _ = rx.await;
            })
            .await;
    });
    Running {
        endpoint: format!("unix://{}", sock.display()),
        dir,
        stop: Some(tx),
    }
}
