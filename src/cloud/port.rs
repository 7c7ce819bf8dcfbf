//! The cloud port: one small trait per role the controller core needs of a cloud (volumes,
//! snapshots and backups, servers, placement, health), and the operations a cloud is asked,
//! named once: the OpenStack adapter's request metrics are labelled with them and the fake
//! counts and fails calls by them. An adapter implements each trait in the file that holds
//! that role's code.
//!
//! Waits end at `deadline` with `WaitTimeout` carrying the last status, and at once with
//! `ErrorState` when the object enters an error state. A `Deleted` wait ends with `NotFound`
//! once the object is gone: there is nothing left to return, and the controller treats `Ok`
//! and `NotFound` alike there. A wait on an object that disappears (any other condition) is
//! `NotFound` as well. Listing: a `marker` the cloud does not know (its object was deleted)
//! is `BadRequest` (Cinder's 400) or `NotFound`; the controller then restarts that listing.

use std::collections::BTreeMap;

use async_trait::async_trait;
use tokio::time::Instant;

use super::{
    Capacity, CloudResult, CopyFilter, CopyKind, CopyWait, GroupSnapshot, MigrationPolicy,
    NewBackup, NewGroupSnapshot, NewSnapshot, NewVolume, Page, PageRequest, Server,
    ServerAttachment, Volume, VolumeCopy, VolumeFilter, VolumeType, VolumeWait,
};

/// Cinder volumes.
#[async_trait]
pub trait Volumes: Send + Sync {
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
    /// Set `pairs` in the volume's metadata (Cinder's `POST volumes/{id}/metadata`: a merge;
    /// the keys not named keep their values). A missing volume is NotFound.
    async fn update_volume_metadata(
        &self,
        id: &str,
        pairs: &BTreeMap<String, String>,
    ) -> CloudResult<()>;
    async fn wait_volume(
        &self,
        id: &str,
        until: &VolumeWait,
        deadline: Instant,
    ) -> CloudResult<Volume>;
}

/// Cinder snapshots and backups. Reading, listing, deleting and waiting are the same for
/// both (`kind` says which); making one is not.
#[async_trait]
pub trait Copies: Send + Sync {
    async fn create_snapshot(&self, req: &NewSnapshot) -> CloudResult<VolumeCopy>;
    /// Whether this cloud offers backups at all.
    async fn backups_supported(&self) -> CloudResult<bool>;
    async fn create_backup(&self, req: &NewBackup) -> CloudResult<VolumeCopy>;
    async fn get_copy(&self, kind: CopyKind, id: &str) -> CloudResult<VolumeCopy>;
    async fn list_copies(
        &self,
        kind: CopyKind,
        filter: &CopyFilter,
        page: &PageRequest,
    ) -> CloudResult<Page<VolumeCopy>>;
    async fn delete_copy(&self, kind: CopyKind, id: &str) -> CloudResult<()>;
    async fn wait_copy(
        &self,
        kind: CopyKind,
        id: &str,
        until: &CopyWait,
        deadline: Instant,
    ) -> CloudResult<VolumeCopy>;
}

/// Group snapshots: one snapshot of each of several volumes, cut at one point in time
/// relative to the writes to all of them. A cloud that cannot give that guarantee for the
/// volumes asked refuses (`GroupRefused`); it never takes snapshots one after the other and
/// calls them a group. What the cloud needs to get there (Cinder: a group of a consistent
/// group type holding the volumes) the adapter makes, reuses and removes itself.
#[async_trait]
pub trait GroupSnapshots: Send + Sync {
    /// Take it. Returns once the cloud has the group snapshot and its members (they may still
    /// be `creating`); waits, until `deadline`, only for what must exist before (Cinder's
    /// group). A missing volume is `NotFound { resource: Volume }`.
    async fn create_group_snapshot(
        &self,
        req: &NewGroupSnapshot,
        deadline: Instant,
    ) -> CloudResult<GroupSnapshot>;
    async fn get_group_snapshot(&self, id: &str) -> CloudResult<GroupSnapshot>;
    /// Those named `name`.
    async fn group_snapshots_named(&self, name: &str) -> CloudResult<Vec<GroupSnapshot>>;
    /// Delete it with its members (the cloud refuses while it is `creating`: `Conflict`),
    /// then wait until it is gone and remove what the adapter made for it, until `deadline`.
    async fn delete_group_snapshot(&self, id: &str, deadline: Instant) -> CloudResult<()>;
    async fn wait_group_snapshot(
        &self,
        id: &str,
        until: &CopyWait,
        deadline: Instant,
    ) -> CloudResult<GroupSnapshot>;
    /// Take `volume` out of the group the adapter put it in (Cinder refuses to delete or
    /// retype a volume in a group). A volume in no group, or in a group the adapter did not
    /// make, is left as it is.
    async fn release_volume(&self, volume: &Volume, deadline: Instant) -> CloudResult<()>;
    /// Remove what the adapter made for group snapshots and a failure left behind (a Cinder
    /// group whose group snapshot's delete was interrupted). Called when a delete finds its
    /// group snapshot gone already, which is what the retry of such a delete sees.
    async fn sweep(&self, deadline: Instant) -> CloudResult<()>;
}

/// Nova: servers and their volume attachments.
#[async_trait]
pub trait Servers: Send + Sync {
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

/// Where volumes can go: their types, the availability zones and the space left.
#[async_trait]
pub trait Placement: Send + Sync {
    /// Look a type up by name or id.
    async fn get_volume_type(&self, name_or_id: &str) -> CloudResult<VolumeType>;
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

/// Whether the cloud answers, for the background cloud monitor (`/readyz`, never Probe).
#[async_trait]
pub trait Health: Send + Sync {
    /// Cheap reachability check: credentials valid and the API answers.
    async fn check(&self) -> CloudResult<()>;
}

/// The OpenStack service an operation talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Service {
    Keystone,
    Cinder,
    Nova,
}

impl Service {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Keystone => "keystone",
            Self::Cinder => "cinder",
            Self::Nova => "nova",
        }
    }
}

macro_rules! ops {
    ($($(#[$doc:meta])* $variant:ident => ($name:literal, $service:ident)),+ $(,)?) => {
        /// One kind of request to the cloud.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Op { $($(#[$doc])* $variant),+ }

        impl Op {
            pub const ALL: &'static [Op] = &[$(Op::$variant),+];

            /// Metric label, e.g. `volume_create`.
            pub fn name(self) -> &'static str {
                match self { $(Op::$variant => $name),+ }
            }

            pub fn service(self) -> Service {
                match self { $(Op::$variant => Service::$service),+ }
            }
        }
    };
}

ops! {
    KeystoneToken => ("keystone_token", Keystone),
    CinderVersions => ("cinder_versions", Cinder),
    VolumeCreate => ("volume_create", Cinder),
    VolumeGet => ("volume_get", Cinder),
    VolumeList => ("volume_list", Cinder),
    /// The status watcher's batched refresh.
    VolumeWatch => ("volume_watch_list", Cinder),
    VolumeDelete => ("volume_delete", Cinder),
    /// Upstream's label (dashboards rely on it), though Cinder calls it extend.
    VolumeExtend => ("volume_expand", Cinder),
    VolumeRetype => ("volume_retype", Cinder),
    VolumeMetadataUpdate => ("volume_metadata_update", Cinder),
    VolumeTypeGet => ("volume_type_get", Cinder),
    VolumeTypeList => ("volume_type_list", Cinder),
    MessageList => ("message_list", Cinder),
    SnapshotCreate => ("snapshot_create", Cinder),
    SnapshotGet => ("snapshot_get", Cinder),
    SnapshotList => ("snapshot_list", Cinder),
    SnapshotDelete => ("snapshot_delete", Cinder),
    BackupCreate => ("backup_create", Cinder),
    BackupGet => ("backup_get", Cinder),
    BackupList => ("backup_list", Cinder),
    BackupDelete => ("backup_delete", Cinder),
    QuotaGet => ("quota_get", Cinder),
    AvailabilityZoneList => ("availability_zone_list", Cinder),
    GroupTypeGet => ("group_type_get", Cinder),
    GroupCreate => ("group_create", Cinder),
    GroupGet => ("group_get", Cinder),
    GroupList => ("group_list", Cinder),
    /// `add_volumes` / `remove_volumes`.
    GroupUpdate => ("group_update", Cinder),
    GroupDelete => ("group_delete", Cinder),
    GroupSnapshotCreate => ("group_snapshot_create", Cinder),
    GroupSnapshotGet => ("group_snapshot_get", Cinder),
    GroupSnapshotList => ("group_snapshot_list", Cinder),
    GroupSnapshotDelete => ("group_snapshot_delete", Cinder),
    NovaVersions => ("nova_versions", Nova),
    ServerGet => ("server_get", Nova),
    /// `volume_attach`/`volume_detach`: upstream's labels for the Nova calls.
    ServerAttach => ("volume_attach", Nova),
    ServerDetach => ("volume_detach", Nova),
    ServerAttachmentList => ("server_attachment_list", Nova),
}

/// The requests that read, list and delete snapshots or backups: Cinder keeps them in two
/// APIs, and the labels say which.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CopyOps {
    pub get: Op,
    pub list: Op,
    pub delete: Op,
}

impl CopyOps {
    pub fn of(kind: CopyKind) -> Self {
        match kind {
            CopyKind::Snapshot => Self {
                get: Op::SnapshotGet,
                list: Op::SnapshotList,
                delete: Op::SnapshotDelete,
            },
            CopyKind::Backup => Self {
                get: Op::BackupGet,
                list: Op::BackupList,
                delete: Op::BackupDelete,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_of_upstream_requests_are_upstreams() {
        // Dashboards built for cinder-csi-plugin select on these `request` values.
        for (op, label) in [
            (Op::VolumeCreate, "volume_create"),
            (Op::VolumeGet, "volume_get"),
            (Op::VolumeList, "volume_list"),
            (Op::VolumeDelete, "volume_delete"),
            (Op::VolumeExtend, "volume_expand"),
            (Op::ServerAttach, "volume_attach"),
            (Op::ServerDetach, "volume_detach"),
            (Op::SnapshotCreate, "snapshot_create"),
            (Op::SnapshotDelete, "snapshot_delete"),
            (Op::BackupCreate, "backup_create"),
            (Op::BackupDelete, "backup_delete"),
            (Op::ServerGet, "server_get"),
        ] {
            assert_eq!(op.name(), label);
        }
    }

    #[test]
    fn names_are_unique() {
        let mut names: Vec<_> = Op::ALL.iter().map(|o| o.name()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), Op::ALL.len());
    }
}
