//! The controller core's entry: its options and the one struct every use case hangs off.

use super::*;

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex};

use crate::cloud::{Cloud, CloudError, Clouds, Resource, Volume, Volumes};
use crate::config::BlockStorageConfig;
use crate::driver::types::{topology_value, Topology, ZONE_TOPOLOGY_KEY};
use crate::driver::{Error, InFlight, InFlightGuard, Invalid, Result};
use crate::net::kube::ClaimReader;

use source_tag::recorded_source;
use zone_cache::ZoneCache;

/// How this controller behaves; built by `app` from the flags and cloud.conf.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControllerOptions {
    /// `--cluster`: written to volume metadata `cinder.csi.openstack.org/cluster`.
    pub cluster: String,
    /// `--with-topology`: report and honour the AZ topology.
    pub with_topology: bool,
    /// `[BlockStorage]` as parsed; the core reads `ignore-volume-az`, `cascade-delete`,
    /// `list-cluster-volumes-only` and `retype-migration-policy`.
    pub block_storage: BlockStorageConfig,
}

impl Default for ControllerOptions {
    fn default() -> Self {
        Self {
            cluster: String::new(),
            with_topology: true,
            block_storage: BlockStorageConfig::default(),
        }
    }
}

pub struct Controller {
    pub(super) clouds: Clouds,
    pub(super) opts: ControllerOptions,
    pub(super) inflight: InFlight,
    /// Backups whose temporary snapshot is known to be gone, so listings do not look again.
    pub(super) cleaned_backups: Mutex<HashSet<String>>,
    /// Each cloud's availability zones, to map topology values back to Cinder names.
    pub(super) zones: ZoneCache,
    /// `--pvc-annotations`: where the PVCs' scheduler hint annotations are read.
    pub(super) claims: Option<Arc<dyn ClaimReader>>,
}

impl Controller {
    pub fn new(clouds: Clouds, opts: ControllerOptions) -> Self {
        Self {
            zones: ZoneCache::new(&clouds),
            clouds,
            opts,
            inflight: InFlight::new(),
            cleaned_backups: Mutex::new(HashSet::new()),
            claims: None,
        }
    }

    /// Reads PVC annotations through `claims` (`--pvc-annotations`).
    pub fn with_claims(mut self, claims: Arc<dyn ClaimReader>) -> Self {
        self.claims = Some(claims);
        self
    }

    pub fn options(&self) -> &ControllerOptions {
        &self.opts
    }

    pub fn clouds(&self) -> &Clouds {
        &self.clouds
    }

    // ---- in-flight guards (taken by the handlers after validation) -----------------------

    pub fn lock_volume(&self, id: &str) -> Result<InFlightGuard> {
        self.inflight.try_lock(id)
    }

    pub fn lock_volume_name(&self, name: &str) -> Result<InFlightGuard> {
        self.inflight.try_lock(format!("name:{name}"))
    }

    pub fn lock_snapshot(&self, id: &str) -> Result<InFlightGuard> {
        self.inflight.try_lock(format!("snapshot:{id}"))
    }

    pub fn lock_snapshot_name(&self, name: &str) -> Result<InFlightGuard> {
        self.inflight.try_lock(format!("snapshot-name:{name}"))
    }

    // ---- shared helpers -------------------------------------------------------------------

    /// The cloud named by the request's `cloud` secret (`""` = default).
    pub(super) fn cloud(&self, name: &str) -> Result<&Cloud> {
        self.clouds.get(name).ok_or_else(|| {
            let known: Vec<String> = self.clouds.names().map(str::to_string).collect();
            if name.is_empty() {
                Invalid::NoDefaultCloud { known }.into()
            } else {
                Invalid::UnknownCloud {
                    name: name.to_string(),
                    known,
                }
                .into()
            }
        })
    }

    /// Accessible topology of a volume in `az` (empty without `--with-topology`): the zone's
    /// label form, as the nodes in that zone report it. A zone without one (no character a
    /// label may hold) is no zone, as on the nodes.
    pub(super) fn zone_topology(&self, az: &str) -> Vec<Topology> {
        let value = topology_value(az);
        if !self.opts.with_topology || value.is_empty() {
            return Vec::new();
        }
        vec![BTreeMap::from([(ZONE_TOPOLOGY_KEY.to_string(), value)])]
    }

    /// What CreateVolume, ListVolumes and ControllerGetVolume report for a volume. The volume
    /// context depends only on the volume, so every RPC reports the same one (spec: "SHALL
    /// always report the same volume_context").
    pub(super) fn volume_info(&self, v: &Volume) -> VolumeInfo {
        let source = v
            .snapshot_id
            .clone()
            .map(ContentSource::Snapshot)
            .or_else(|| v.backup_id.clone().map(ContentSource::Snapshot))
            .or_else(|| v.source_volume_id.clone().map(ContentSource::Volume))
            .or_else(|| recorded_source(v));
        let mut context = BTreeMap::new();
        if source.is_some() {
            context.insert(params::RESIZE_REQUIRED_KEY.to_string(), "true".to_string());
        }
        let topology = if self.opts.block_storage.ignore_volume_az {
            Vec::new()
        } else {
            self.zone_topology(&v.availability_zone)
        };
        VolumeInfo {
            id: v.id.clone(),
            capacity_bytes: v.size_bytes(),
            context,
            source,
            topology,
        }
    }
}

/// The volume the request names, read from the cloud, or its precise NotFound.
pub(super) async fn named_volume(volumes: &Arc<dyn Volumes>, id: &str) -> Result<Volume> {
    volumes
        .get_volume(id)
        .await
        .map_err(|e| volume_error(id, e))
}

/// NotFound of the volume the request names becomes the precise driver error.
pub(super) fn volume_error(id: &str, e: CloudError) -> Error {
    match e {
        CloudError::NotFound {
            resource: Resource::Volume,
            ..
        } => Error::VolumeNotFound { id: id.to_string() },
        other => Error::Cloud(other),
    }
}
