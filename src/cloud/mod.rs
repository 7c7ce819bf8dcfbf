//! The cloud port: what the controller core needs from a block-storage cloud (Cinder) and a
//! compute cloud (Nova). Adapters: `openstack` (Keystone + Cinder + Nova) and `local`
//! (sparse files + loop devices on this machine).

mod error;
pub mod openstack;
mod poll;
mod types;

#[cfg(any(test, feature = "test-support"))]
pub mod fake;
pub mod local;

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use tokio::time::Instant;

pub use error::{CloudError, CloudResult, RequestId, Resource};
pub use types::*;

/// Cinder: volumes, snapshots, backups, types and capacity.
///
/// Waits end at `deadline` with [`CloudError::WaitTimeout`] carrying the last status, and at
/// once with [`CloudError::ErrorState`] when the object enters an error state. A `Deleted`
/// wait (volume, snapshot, backup) ends with `NotFound` once the object is gone: there is
/// nothing left to return, and the controller treats `Ok` and `NotFound` alike there. A wait
/// on a volume that disappears (any other condition) is `NotFound` as well.
///
/// Listing: a `marker` the cloud does not know (its object was deleted) is `BadRequest`
/// (Cinder's 400) or `NotFound`; the controller then restarts that listing.
#[async_trait]
pub trait BlockStorage: Send + Sync {
    /// Cheap reachability check for the background cloud monitor (`/readyz`, never Probe):
    /// credentials valid and the API answers.
    async fn check(&self) -> CloudResult<()>;

    /// `NotFound` names what is missing: `VolumeType`, or the source `Snapshot`, `Volume`
    /// or `Backup` (the controller maps each to a different CSI code).
    async fn create_volume(&self, req: &NewVolume) -> CloudResult<Volume>;
    async fn get_volume(&self, id: &str) -> CloudResult<Volume>;
    async fn list_volumes(
        &self,
        filter: &VolumeFilter,
        page: &PageRequest,
    ) -> CloudResult<Page<Volume>>;
    /// Delete; `cascade` also deletes the volume's snapshots. A missing volume is NotFound.
    async fn delete_volume(&self, id: &str, cascade: bool) -> CloudResult<()>;
    /// Grow to `new_size_gib`; `online` when the volume is attached (Cinder 3.42).
    async fn extend_volume(&self, id: &str, new_size_gib: u64, online: bool) -> CloudResult<()>;
    async fn retype_volume(
        &self,
        id: &str,
        new_type: &str,
        policy: MigrationPolicy,
    ) -> CloudResult<()>;
    async fn wait_volume(
        &self,
        id: &str,
        until: &VolumeWait,
        deadline: Instant,
    ) -> CloudResult<Volume>;

    /// Look a type up by name or id.
    async fn get_volume_type(&self, name_or_id: &str) -> CloudResult<VolumeType>;

    async fn create_snapshot(&self, req: &NewSnapshot) -> CloudResult<Snapshot>;
    async fn get_snapshot(&self, id: &str) -> CloudResult<Snapshot>;
    async fn list_snapshots(
        &self,
        filter: &SnapshotFilter,
        page: &PageRequest,
    ) -> CloudResult<Page<Snapshot>>;
    async fn delete_snapshot(&self, id: &str) -> CloudResult<()>;
    async fn wait_snapshot(
        &self,
        id: &str,
        until: &SnapshotWait,
        deadline: Instant,
    ) -> CloudResult<Snapshot>;

    /// Whether this cloud offers backups at all.
    async fn backups_supported(&self) -> CloudResult<bool>;
    async fn create_backup(&self, req: &NewBackup) -> CloudResult<Backup>;
    async fn get_backup(&self, id: &str) -> CloudResult<Backup>;
    async fn list_backups(
        &self,
        filter: &BackupFilter,
        page: &PageRequest,
    ) -> CloudResult<Page<Backup>>;
    async fn delete_backup(&self, id: &str) -> CloudResult<()>;
    async fn wait_backup(
        &self,
        id: &str,
        until: &BackupWait,
        deadline: Instant,
    ) -> CloudResult<Backup>;

    /// The names of the availability zones volumes can be created in, as Cinder spells them
    /// (the controller maps topology values back to these).
    async fn availability_zones(&self) -> CloudResult<Vec<String>>;

    /// Provisionable space, optionally for one AZ and volume type.
    async fn capacity(
        &self,
        availability_zone: Option<&str>,
        volume_type: Option<&str>,
    ) -> CloudResult<Capacity>;
}

/// Nova: servers and their volume attachments.
#[async_trait]
pub trait Compute: Send + Sync {
    async fn get_server(&self, id: &str) -> CloudResult<Server>;
    /// Attach; `multiattach` selects the microversion that allows shared volumes (2.60).
    /// Returns the attachment with Nova's device hint. An unknown server is
    /// `NotFound { resource: Server }`; a server with no free attachment slot is `OverLimit`
    /// (CSI ResourceExhausted); a volume in the wrong state is `Conflict`.
    async fn attach_volume(
        &self,
        server_id: &str,
        volume_id: &str,
        multiattach: bool,
    ) -> CloudResult<ServerAttachment>;
    /// Detach; `NotFound { resource: Server }` when the server is gone (the volume counts as
    /// detached), `NotFound` of another resource when the volume is not attached to it.
    async fn detach_volume(&self, server_id: &str, volume_id: &str) -> CloudResult<()>;
    async fn list_attachments(&self, server_id: &str) -> CloudResult<Vec<ServerAttachment>>;
}

/// One configured cloud (a `[Global "name"]` section, or the local backend).
#[derive(Clone)]
pub struct Cloud {
    pub name: String,
    pub storage: Arc<dyn BlockStorage>,
    pub compute: Arc<dyn Compute>,
}

/// Every cloud the controller serves, by name. The default cloud is `""` (`[Global]`), used
/// when a request carries no `cloud` secret — migrated in-tree volumes never do.
#[derive(Clone, Default)]
pub struct Clouds {
    by_name: BTreeMap<String, Cloud>,
}

impl Clouds {
    pub fn new(clouds: impl IntoIterator<Item = Cloud>) -> Self {
        Self {
            by_name: clouds.into_iter().map(|c| (c.name.clone(), c)).collect(),
        }
    }

    pub fn get(&self, name: &str) -> Option<&Cloud> {
        self.by_name.get(name)
    }

    /// In sorted name order (ListVolumes walks clouds in this order).
    pub fn iter(&self) -> impl Iterator<Item = &Cloud> {
        self.by_name.values()
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.by_name.keys().map(String::as_str)
    }

    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }

    pub fn len(&self) -> usize {
        self.by_name.len()
    }
}
