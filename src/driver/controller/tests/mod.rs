//! Fast tests of the controller core on the in-memory fake cloud (no root, no network). The
//! tokio clock is paused, so waits cost no real time. Each RPC: every code the issue and the
//! CSI spec name for it, and idempotency (each RPC repeated).

mod affinity;
mod capacity;
mod create;
mod delete;
mod expand;
mod groups;
mod list;
mod modify;
mod publish;
mod snapshots;
mod topology_terms;
mod validate;
mod zones;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::params::{MutableParams, SnapshotParams, VolumeParams};
use super::*;
use crate::cloud::fake::FakeCloud;
use crate::cloud::Clouds;
use crate::driver::types::{
    AccessMode, AccessType, CapacityRange, TopologyRequirement, VolumeCapability, GIB,
};
use crate::driver::Result;

/// A deadline generous enough for every transition of the fake to settle.
pub const LONG: Duration = Duration::from_secs(60);

/// `assert!(matches!(..))` that prints the value when it does not match.
macro_rules! assert_matches {
    ($value:expr, $pattern:pat $(if $guard:expr)?) => {
        match $value {
            $pattern $(if $guard)? => {}
            ref other => panic!(
                "expected {}, got {:?}",
                stringify!($pattern),
                other
            ),
        }
    };
}
pub(crate) use assert_matches;

pub struct Env {
    pub fake: Arc<FakeCloud>,
    pub ctl: Controller,
}

pub fn opts() -> ControllerOptions {
    ControllerOptions {
        cluster: "k8s-1".into(),
        ..Default::default()
    }
}

/// [`opts`] with `[BlockStorage]` changed by `set`.
pub fn with_block_storage(
    set: impl FnOnce(&mut crate::config::BlockStorageConfig),
) -> ControllerOptions {
    let mut o = opts();
    set(&mut o.block_storage);
    o
}

pub fn env() -> Env {
    env_with(opts())
}

pub fn env_with(opts: ControllerOptions) -> Env {
    let fake = FakeCloud::new();
    fake.set_zones(&["nova", "az1", "az2"]);
    fake.add_server("node-1", "nova");
    fake.add_server("node-2", "nova");
    let ctl = Controller::new(Clouds::new([fake.cloud("")]), opts);
    Env { fake, ctl }
}

pub fn deadline() -> Instant {
    Instant::now() + LONG
}

pub fn cap(mode: AccessMode, block: bool) -> VolumeCapability {
    VolumeCapability {
        access_type: if block {
            AccessType::Block
        } else {
            AccessType::Mount {
                fs_type: Some("ext4".into()),
                mount_flags: vec![],
                volume_mount_group: None,
            }
        },
        access_mode: mode,
    }
}

pub fn rwo() -> VolumeCapability {
    cap(AccessMode::SingleNodeWriter, false)
}

pub fn create_req(name: &str, required_bytes: u64) -> CreateVolume {
    CreateVolume {
        name: name.into(),
        capacity: CapacityRange {
            required_bytes,
            limit_bytes: 0,
        },
        capabilities: vec![rwo()],
        params: VolumeParams::default(),
        mutable: MutableParams::default(),
        cloud: String::new(),
        source: None,
        topology: TopologyRequirement::default(),
        deadline: deadline(),
    }
}

pub fn params(pairs: &[(&str, &str)]) -> HashMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

pub fn zone(z: &str) -> BTreeMap<String, String> {
    BTreeMap::from([(
        crate::driver::types::ZONE_TOPOLOGY_KEY.to_string(),
        z.to_string(),
    )])
}

impl Env {
    pub async fn create(&self, name: &str, gib: u64) -> VolumeInfo {
        self.ctl
            .create_volume(create_req(name, gib * GIB))
            .await
            .expect("create volume")
    }

    pub async fn publish(&self, id: &str, node: &str) -> Result<BTreeMap<String, String>> {
        self.ctl
            .publish_volume(Publish {
                volume_id: id.into(),
                node_id: node.into(),
                capability: rwo(),
                readonly: false,
                cloud: String::new(),
                deadline: deadline(),
            })
            .await
    }

    pub async fn unpublish(&self, id: &str, node: Option<&str>) -> Result<()> {
        self.ctl
            .unpublish_volume(Unpublish {
                volume_id: id.into(),
                node_id: node.map(str::to_string),
                cloud: String::new(),
                deadline: deadline(),
            })
            .await
    }

    pub async fn snapshot(
        &self,
        name: &str,
        volume: &str,
        kind: &[(&str, &str)],
    ) -> Result<SnapshotInfo> {
        self.ctl
            .create_snapshot(CreateSnapshot {
                name: name.into(),
                source_volume_id: volume.into(),
                params: SnapshotParams::parse(&params(kind)).unwrap(),
                cloud: String::new(),
                deadline: deadline(),
            })
            .await
    }

    /// CreateSnapshot repeated (as the snapshotter does) until ready.
    pub async fn snapshot_ready(
        &self,
        name: &str,
        volume: &str,
        kind: &[(&str, &str)],
    ) -> SnapshotInfo {
        for _ in 0..20 {
            let s = self
                .snapshot(name, volume, kind)
                .await
                .expect("create snapshot");
            if s.ready_to_use {
                return s;
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        panic!("snapshot {name} never became ready");
    }
}
