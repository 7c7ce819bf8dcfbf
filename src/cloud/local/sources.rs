//! What a new volume is copied from: a snapshot, a backup or another volume, checked as
//! Cinder checks it (available, or in-use for a clone; not larger than the new volume; a
//! snapshot's or a source volume's zone, as with Cinder's default `cloned_volume_same_az`).

use std::path::PathBuf;

use super::backend::{bad_request, conflict, Inner};
use super::records::VolumeRecord;
use super::store::Kind;
use super::volumes::copyable;
use crate::cloud::{CloudError, CloudResult, NewVolume, Resource, VolumeSource};

impl Inner {
    /// Check the content source and note it in `rec`; returns the file to copy and, for an
    /// attached source volume, its loop device. Call with `ops` held.
    pub(super) fn resolve_source(
        &self,
        req: &NewVolume,
        rec: &mut VolumeRecord,
    ) -> CloudResult<Option<(PathBuf, Option<PathBuf>)>> {
        let st = self.read();
        let too_small = |kind: &str, id: &str, gib: u64| {
            bad_request(format!(
                "requested size {} GiB is smaller than the {kind} {id} ({gib} GiB)",
                req.size_gib
            ))
        };
        // The new volume is in its source volume's zone: asked for another, it is refused.
        let same_zone = |rec: &mut VolumeRecord, kind: &str, id: &str, zone: Option<&String>| {
            let Some(zone) = zone else { return Ok(()) };
            match req.availability_zone.as_deref() {
                Some(az) if az != zone => Err(bad_request(format!(
                    "volume must be in the same availability zone as the {kind} {id} \
                     ({zone:?}), not {az:?}"
                ))),
                _ => {
                    rec.availability_zone = zone.clone();
                    Ok(())
                }
            }
        };
        let Some(source) = &req.source else {
            return Ok(None);
        };
        match source {
            VolumeSource::Snapshot(id) => {
                let s = st
                    .snapshots
                    .get(id)
                    .ok_or_else(|| CloudError::not_found(Resource::Snapshot, id))?;
                if !s.is_available() {
                    return Err(conflict(format!(
                        "snapshot {id} must be available to restore from, it is {}",
                        s.status
                    )));
                }
                if req.size_gib < s.size_gib {
                    return Err(too_small("snapshot", id, s.size_gib));
                }
                let zone = st.volumes.get(&s.volume_id).map(|v| &v.availability_zone);
                same_zone(rec, "snapshot", id, zone)?;
                rec.snapshot_id = Some(id.clone());
                Ok(Some((self.layout.data(Kind::Snapshot, id), None)))
            }
            VolumeSource::Volume(id) => {
                let v = st
                    .volumes
                    .get(id)
                    .ok_or_else(|| CloudError::not_found(Resource::Volume, id))?;
                if !copyable(&v.status()) {
                    return Err(conflict(format!(
                        "volume {id} must be available or in-use to clone, it is {}",
                        v.status
                    )));
                }
                if req.size_gib < v.size_gib {
                    return Err(too_small("source volume", id, v.size_gib));
                }
                same_zone(rec, "source volume", id, Some(&v.availability_zone))?;
                rec.source_volume_id = Some(id.clone());
                let dev = v.attachments.first().map(|a| PathBuf::from(&a.device));
                Ok(Some((self.layout.data(Kind::Volume, id), dev)))
            }
            VolumeSource::Backup(id) => {
                let b = st
                    .backups
                    .get(id)
                    .ok_or_else(|| CloudError::not_found(Resource::Backup, id))?;
                if !b.is_available() {
                    return Err(conflict(format!(
                        "backup {id} must be available to restore from, it is {}",
                        b.status
                    )));
                }
                if req.size_gib < b.size_gib {
                    return Err(too_small("backup", id, b.size_gib));
                }
                rec.backup_id = Some(id.clone());
                Ok(Some((self.layout.data(Kind::Backup, id), None)))
            }
        }
    }
}
