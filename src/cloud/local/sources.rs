//! What a new volume is copied from: a snapshot, a backup or another volume, checked as
//! Cinder checks it (available, or in-use for a clone; not larger than the new volume; a
//! snapshot's or a source volume's zone, as with Cinder's default `cloned_volume_same_az`).

use std::path::PathBuf;

use super::backend::{bad_request, Inner};
use super::records::VolumeRecord;
use super::rules::refused;
use super::store::Kind;
use crate::cloud::model;
use crate::cloud::{CloudResult, CopyKind, NewVolume, VolumeSource};

impl Inner {
    /// Check the content source and note it in `rec`; returns the file to copy and, for an
    /// attached source volume, its loop device. Call with `ops` held.
    pub(super) fn resolve_source(
        &self,
        req: &NewVolume,
        rec: &mut VolumeRecord,
    ) -> CloudResult<Option<(PathBuf, Option<PathBuf>)>> {
        let st = self.read();
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
                let s = st.copy(CopyKind::Snapshot, id)?;
                model::restore_from(&s.to_copy(CopyKind::Snapshot), req.size_gib)
                    .map_err(refused)?;
                let zone = st.volumes.get(&s.volume_id).map(|v| &v.availability_zone);
                same_zone(rec, "snapshot", id, zone)?;
                rec.snapshot_id = Some(id.clone());
                Ok(Some((self.layout.data(Kind::Snapshot, id), None)))
            }
            VolumeSource::Volume(id) => {
                let v = st.volume(id)?;
                model::clone_from(&v.to_volume(), req.size_gib).map_err(refused)?;
                same_zone(rec, "source volume", id, Some(&v.availability_zone))?;
                rec.source_volume_id = Some(id.clone());
                let dev = v.attachments.first().map(|a| PathBuf::from(&a.device));
                Ok(Some((self.layout.data(Kind::Volume, id), dev)))
            }
            VolumeSource::Backup(id) => {
                let b = st.copy(CopyKind::Backup, id)?;
                model::restore_from(&b.to_copy(CopyKind::Backup), req.size_gib).map_err(refused)?;
                rec.backup_id = Some(id.clone());
                Ok(Some((self.layout.data(Kind::Backup, id), None)))
            }
        }
    }
}
