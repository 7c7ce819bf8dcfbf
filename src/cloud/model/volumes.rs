//! Cinder's and Nova's rules for volumes: the size and zone of a new one, delete, extend,
//! retype, attach and detach.

use crate::cloud::{Volume, VolumeStatus, VolumeType};

use super::profile::Profile;

/// What else uses a volume, as its adapter found it (facts a rule cannot see on the volume).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct VolumeUse {
    /// Snapshots taken of it (Cinder deletes none of them without `cascade`).
    pub snapshots: usize,
    /// A snapshot, backup or clone of it is being made: its data is being read.
    pub copying: bool,
}

/// A new volume has at least 1 GiB.
pub fn new_volume_size(size_gib: u64) -> Result<(), VolumeRefusal> {
    match size_gib {
        0 => Err(VolumeRefusal::BadSize),
        _ => Ok(()),
    }
}

/// A zone asked for is one of the cloud's.
pub fn zone(asked: &str, zones: &[String]) -> Result<(), VolumeRefusal> {
    match zones.iter().any(|z| z == asked) {
        true => Ok(()),
        false => Err(VolumeRefusal::UnknownZone {
            zone: asked.to_string(),
            zones: zones.to_vec(),
        }),
    }
}

/// A volume may be deleted when nothing is attached, its status is available or an error
/// (or `deleting`, to finish a delete, where operations are instant), it is in no group, and
/// it has no snapshots (unless `cascade`, which deletes them) and no copy under way.
pub fn delete_volume(
    p: &Profile,
    v: &Volume,
    uses: VolumeUse,
    cascade: bool,
) -> Result<(), VolumeRefusal> {
    let (id, status) = (v.id.clone(), v.status.clone());
    if !v.attachments.is_empty() {
        let servers = v.attachments.iter().map(|a| a.server_id.clone()).collect();
        return Err(VolumeRefusal::DeleteAttached {
            id,
            servers,
            status,
        });
    }
    let deletable = status == VolumeStatus::Available
        || status.is_error()
        || (p.instant && status == VolumeStatus::Deleting);
    if !deletable {
        return Err(VolumeRefusal::DeleteStatus { id, status });
    }
    if let Some(group) = &v.group_id {
        let group = group.clone();
        return Err(VolumeRefusal::DeleteInGroup { id, group, status });
    }
    if uses.snapshots > 0 && !cascade {
        let count = uses.snapshots;
        return Err(VolumeRefusal::HasSnapshots { id, count });
    }
    if uses.copying {
        return Err(VolumeRefusal::VolumeBeingCopied { id, status });
    }
    Ok(())
}

/// A volume grows, never shrinks; it is available, or in use with `online` extend.
pub fn extend(v: &Volume, new_size_gib: u64, online: bool) -> Result<(), VolumeRefusal> {
    let id = v.id.clone();
    if new_size_gib <= v.size_gib {
        let size_gib = v.size_gib;
        return Err(VolumeRefusal::ExtendNotLarger {
            id,
            size_gib,
            new_size_gib,
        });
    }
    match &v.status {
        VolumeStatus::Available => Ok(()),
        VolumeStatus::InUse if online => Ok(()),
        VolumeStatus::InUse => Err(VolumeRefusal::ExtendAttached { id }),
        status => Err(VolumeRefusal::ExtendStatus {
            id,
            status: status.clone(),
        }),
    }
}

/// A volume available or in use, in no group, may get another type; one attached to several
/// servers only a multiattach type.
pub fn retype(v: &Volume, to: &VolumeType) -> Result<(), VolumeRefusal> {
    let id = v.id.clone();
    if !matches!(v.status, VolumeStatus::Available | VolumeStatus::InUse) {
        let status = v.status.clone();
        return Err(VolumeRefusal::RetypeStatus { id, status });
    }
    let volume_type = to.name.clone();
    if v.volume_type.as_deref() == Some(to.name.as_str()) {
        return Err(VolumeRefusal::RetypeSameType { id, volume_type });
    }
    if let Some(group) = &v.group_id {
        let group = group.clone();
        return Err(VolumeRefusal::RetypeInGroup { id, group });
    }
    if !to.multiattach && v.attachments.len() > 1 {
        return Err(VolumeRefusal::RetypeMultiattached { id, volume_type });
    }
    Ok(())
}

/// A volume attaches to a server it is not attached to yet, when it is available; when in
/// use, only if it is multiattach and the request asked for multiattach. Servers of another
/// zone are refused unless the profile allows cross-zone attachments.
pub fn attach(
    p: &Profile,
    v: &Volume,
    server: &str,
    server_zone: &str,
    multiattach: bool,
) -> Result<(), VolumeRefusal> {
    let (id, status) = (v.id.clone(), v.status.clone());
    let server = server.to_string();
    if v.attached_to(&server).is_some() {
        return Err(VolumeRefusal::AlreadyAttached { id, server });
    }
    if !matches!(status, VolumeStatus::Available | VolumeStatus::InUse) {
        return Err(VolumeRefusal::AttachStatus { id, status });
    }
    if !p.cross_az_attach && server_zone != v.availability_zone {
        let zone = v.availability_zone.clone();
        let server_zone = server_zone.to_string();
        return Err(VolumeRefusal::AttachZone {
            id,
            zone,
            server,
            server_zone,
        });
    }
    if status == VolumeStatus::InUse {
        if !v.multiattach {
            let server = v.attachments.first().map(|a| a.server_id.clone());
            return Err(VolumeRefusal::AttachedElsewhere { id, server, status });
        }
        if !multiattach {
            return Err(VolumeRefusal::MultiattachNotAsked { id, status });
        }
    }
    Ok(())
}

/// A volume detaches from a server it is attached to, while in use.
pub fn detach(v: &Volume, server: &str) -> Result<(), VolumeRefusal> {
    let id = v.id.clone();
    if v.attached_to(server).is_none() {
        let server = server.to_string();
        return Err(VolumeRefusal::NotAttached { id, server });
    }
    if v.status != VolumeStatus::InUse {
        let status = v.status.clone();
        return Err(VolumeRefusal::DetachStatus { id, status });
    }
    Ok(())
}

/// What the volume rules refuse: the data (ids, statuses) and, on each variant, its words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VolumeRefusal {
    /// A new volume of 0 GiB.
    #[error("volume size must be at least 1 GiB")]
    BadSize,
    /// A zone the cloud does not have.
    #[error("availability zone {zone:?} is invalid: the local backend's zones are {zones:?}")]
    UnknownZone { zone: String, zones: Vec<String> },
    #[error("volume {id} is attached to {}; detach it first", .servers.join(", "))]
    DeleteAttached {
        id: String,
        servers: Vec<String>,
        status: VolumeStatus,
    },
    #[error("volume {id} must be available or in error to be deleted, it is {status}")]
    DeleteStatus { id: String, status: VolumeStatus },
    #[error("volume {id} is in group {group}; remove it from the group first")]
    DeleteInGroup {
        id: String,
        group: String,
        status: VolumeStatus,
    },
    #[error("volume {id} has {count} dependent snapshot(s); delete them first or cascade")]
    HasSnapshots { id: String, count: usize },
    #[error("volume {id} is being copied (snapshot, backup or clone in progress)")]
    VolumeBeingCopied { id: String, status: VolumeStatus },
    #[error("new size {new_size_gib} GiB must be greater than the current size {size_gib} GiB")]
    ExtendNotLarger {
        id: String,
        size_gib: u64,
        new_size_gib: u64,
    },
    #[error("volume {id} is in-use; extending an attached volume needs online extend")]
    ExtendAttached { id: String },
    #[error("volume {id} must be available or in-use to be extended, it is {status}")]
    ExtendStatus { id: String, status: VolumeStatus },
    #[error("volume {id} must be available or in-use to be retyped, it is {status}")]
    RetypeStatus { id: String, status: VolumeStatus },
    #[error("volume {id} already has type {volume_type}")]
    RetypeSameType { id: String, volume_type: String },
    #[error("Invalid input received: volume {id} is in group {group}; remove it from the group before retyping it")]
    RetypeInGroup { id: String, group: String },
    #[error("volume {id} is attached to several servers; type {volume_type} does not allow that")]
    RetypeMultiattached { id: String, volume_type: String },
    #[error("volume {id} must be available to be attached, it is {status}")]
    AttachStatus { id: String, status: VolumeStatus },
    #[error("volume {id} is in availability zone {zone:?} and server {server} in {server_zone:?}: a volume attaches only to servers of its own zone")]
    AttachZone {
        id: String,
        zone: String,
        server: String,
        server_zone: String,
    },
    #[error("volume {id} is already attached to server {server}")]
    AlreadyAttached { id: String, server: String },
    /// In use elsewhere and not multiattach.
    #[error("volume {id} is attached to server {} and is not multiattach", .server.as_deref().unwrap_or("another"))]
    AttachedElsewhere {
        id: String,
        server: Option<String>,
        status: VolumeStatus,
    },
    /// Multiattach and in use, but the request did not ask for multiattach.
    #[error("volume {id} is multiattach and already attached: attaching it again needs the multiattach microversion")]
    MultiattachNotAsked { id: String, status: VolumeStatus },
    #[error("{id} on {server}")]
    NotAttached { id: String, server: String },
    #[error("volume {id} must be in-use to be detached, it is {status}")]
    DetachStatus { id: String, status: VolumeStatus },
}

impl VolumeRefusal {
    /// The request itself is wrong (else the volume's state forbids it).
    pub(super) fn is_bad_request(&self, p: &Profile) -> bool {
        match self {
            Self::BadSize
            | Self::UnknownZone { .. }
            | Self::ExtendNotLarger { .. }
            | Self::RetypeSameType { .. }
            | Self::RetypeInGroup { .. }
            | Self::AttachZone { .. } => true,
            Self::MultiattachNotAsked { .. } => !p.multiattach_not_asked_is_conflict,
            _ => false,
        }
    }
}
