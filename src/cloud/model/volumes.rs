//! Cinder's and Nova's rules for volumes: the size and zone of a new one, delete, extend,
//! retype, attach and detach.

use crate::cloud::{Volume, VolumeStatus, VolumeType};

use super::profile::Profile;
use super::refusal::Refusal;

/// What else uses a volume, as its adapter found it (facts a rule cannot see on the volume).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct VolumeUse {
    /// Snapshots taken of it (Cinder deletes none of them without `cascade`).
    pub snapshots: usize,
    /// A snapshot, backup or clone of it is being made: its data is being read.
    pub copying: bool,
}

/// A new volume has at least 1 GiB.
pub fn new_volume_size(size_gib: u64) -> Result<(), Refusal> {
    match size_gib {
        0 => Err(Refusal::BadSize),
        _ => Ok(()),
    }
}

/// A zone asked for is one of the cloud's.
pub fn zone(asked: &str, zones: &[String]) -> Result<(), Refusal> {
    match zones.iter().any(|z| z == asked) {
        true => Ok(()),
        false => Err(Refusal::UnknownZone {
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
) -> Result<(), Refusal> {
    let (id, status) = (v.id.clone(), v.status.clone());
    if !v.attachments.is_empty() {
        let servers = v.attachments.iter().map(|a| a.server_id.clone()).collect();
        return Err(Refusal::DeleteAttached {
            id,
            servers,
            status,
        });
    }
    let deletable = status == VolumeStatus::Available
        || status.is_error()
        || (p.instant && status == VolumeStatus::Deleting);
    if !deletable {
        return Err(Refusal::DeleteStatus { id, status });
    }
    if let Some(group) = &v.group_id {
        let group = group.clone();
        return Err(Refusal::DeleteInGroup { id, group, status });
    }
    if uses.snapshots > 0 && !cascade {
        let count = uses.snapshots;
        return Err(Refusal::HasSnapshots { id, count });
    }
    if uses.copying {
        return Err(Refusal::VolumeBeingCopied { id, status });
    }
    Ok(())
}

/// A volume grows, never shrinks; it is available, or in use with `online` extend.
pub fn extend(v: &Volume, new_size_gib: u64, online: bool) -> Result<(), Refusal> {
    let id = v.id.clone();
    if new_size_gib <= v.size_gib {
        let size_gib = v.size_gib;
        return Err(Refusal::ExtendNotLarger {
            id,
            size_gib,
            new_size_gib,
        });
    }
    match &v.status {
        VolumeStatus::Available => Ok(()),
        VolumeStatus::InUse if online => Ok(()),
        VolumeStatus::InUse => Err(Refusal::ExtendAttached { id }),
        status => Err(Refusal::ExtendStatus {
            id,
            status: status.clone(),
        }),
    }
}

/// A volume available or in use, in no group, may get another type; one attached to several
/// servers only a multiattach type.
pub fn retype(v: &Volume, to: &VolumeType) -> Result<(), Refusal> {
    let id = v.id.clone();
    if !matches!(v.status, VolumeStatus::Available | VolumeStatus::InUse) {
        let status = v.status.clone();
        return Err(Refusal::RetypeStatus { id, status });
    }
    let volume_type = to.name.clone();
    if v.volume_type.as_deref() == Some(to.name.as_str()) {
        return Err(Refusal::RetypeSameType { id, volume_type });
    }
    if let Some(group) = &v.group_id {
        let group = group.clone();
        return Err(Refusal::RetypeInGroup { id, group });
    }
    if !to.multiattach && v.attachments.len() > 1 {
        return Err(Refusal::RetypeMultiattached { id, volume_type });
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
) -> Result<(), Refusal> {
    let (id, status) = (v.id.clone(), v.status.clone());
    let server = server.to_string();
    if v.attached_to(&server).is_some() {
        return Err(Refusal::AlreadyAttached { id, server });
    }
    if !matches!(status, VolumeStatus::Available | VolumeStatus::InUse) {
        return Err(Refusal::AttachStatus { id, status });
    }
    if !p.cross_az_attach && server_zone != v.availability_zone {
        let zone = v.availability_zone.clone();
        let server_zone = server_zone.to_string();
        return Err(Refusal::AttachZone {
            id,
            zone,
            server,
            server_zone,
        });
    }
    if status == VolumeStatus::InUse {
        if !v.multiattach {
            let server = v.attachments.first().map(|a| a.server_id.clone());
            return Err(Refusal::AttachedElsewhere { id, server, status });
        }
        if !multiattach {
            return Err(Refusal::MultiattachNotAsked { id, status });
        }
    }
    Ok(())
}

/// A volume detaches from a server it is attached to, while in use.
pub fn detach(v: &Volume, server: &str) -> Result<(), Refusal> {
    let id = v.id.clone();
    if v.attached_to(server).is_none() {
        let server = server.to_string();
        return Err(Refusal::NotAttached { id, server });
    }
    if v.status != VolumeStatus::InUse {
        let status = v.status.clone();
        return Err(Refusal::DetachStatus { id, status });
    }
    Ok(())
}
