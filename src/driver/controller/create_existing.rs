//! CreateVolume's idempotency: the volume already created under the request's name (CSI: the
//! name is the idempotency key), whether it is ours, and whether it matches the request.
//!
//! "Ours" means created by this driver (or upstream's) for this `--cluster`: both always write
//! `cinder.csi.openstack.org/cluster` (empty without `--cluster`). A same-named volume without
//! that tag, or with another cluster's, is not adopted: AlreadyExists. Migrated in-tree volumes
//! are never created by name, so they are not affected.

use super::capabilities::unsupported_capability;
use super::params::CLUSTER_KEY;
use super::source_tag::recorded_source;
use super::{ContentSource, Controller, CreateVolume};
use crate::cloud::{Cloud, PageRequest, Volume, VolumeFilter, VolumeStatus};
use crate::driver::types::{topology_value, CapacityRange};
use crate::driver::{Error, Mismatch, Named, Refusal, Result, VolumeDiff};

/// Whether an existing volume satisfies the requested capacity range.
fn fits(range: CapacityRange, v: &Volume) -> bool {
    let size = v.size_bytes();
    size >= range.required_bytes && (range.limit_bytes == 0 || size <= range.limit_bytes)
}

/// Whether `v` has exactly the content source `want` (`None`: created empty). Cinder keeps
/// `snapshot_id` and `source_volid`; a backup source only our metadata records reliably.
fn same_source(v: &Volume, want: Option<&ContentSource>) -> bool {
    let recorded = recorded_source(v);
    match want {
        None => {
            v.snapshot_id.is_none()
                && v.source_volume_id.is_none()
                && v.backup_id.is_none()
                && recorded.is_none()
        }
        Some(ContentSource::Volume(id)) => {
            v.source_volume_id.as_deref() == Some(id)
                && recorded.as_ref().is_none_or(|r| r == want.unwrap())
        }
        Some(ContentSource::Snapshot(id)) => {
            let known = [v.snapshot_id.as_deref(), v.backup_id.as_deref()]
                .into_iter()
                .flatten()
                .chain(match &recorded {
                    Some(ContentSource::Snapshot(r)) => Some(r.as_str()),
                    _ => None,
                })
                .collect::<Vec<_>>();
            // At least one record of the source, and none of another one.
            v.source_volume_id.is_none()
                && !matches!(recorded, Some(ContentSource::Volume(_)))
                && !known.is_empty()
                && known.iter().all(|k| k == id)
        }
    }
}

impl Controller {
    /// Whether this driver created `v` for this cluster.
    pub(super) fn is_ours(&self, v: &Volume) -> bool {
        v.metadata.get(CLUSTER_KEY) == Some(&self.opts.cluster)
    }

    /// The volume already created under `name` by this driver for this cluster.
    pub(super) async fn find_by_name(&self, cloud: &Cloud, name: &str) -> Result<Option<Volume>> {
        let filter = VolumeFilter {
            name: Some(name.to_string()),
            ..Default::default()
        };
        let page = cloud
            .volumes
            .list_volumes(&filter, &PageRequest::default())
            .await?;
        let (mut ours, foreign): (Vec<Volume>, Vec<Volume>) = page
            .items
            .into_iter()
            .filter(|v| v.name == name && v.status != VolumeStatus::Deleting)
            .partition(|v| self.is_ours(v));
        match ours.len() {
            0 => match foreign.first() {
                None => Ok(None),
                Some(v) => Err(Mismatch::ForeignVolume {
                    name: name.to_string(),
                    id: v.id.clone(),
                    cluster: self.opts.cluster.clone(),
                    tag: v.metadata.get(CLUSTER_KEY).cloned(),
                }
                .into()),
            },
            1 => Ok(ours.pop()),
            _ => Err(Refusal::SameName {
                what: Named::Volume,
                name: name.to_string(),
                ids: ours.into_iter().map(|v| v.id).collect(),
            }
            .into()),
        }
    }

    /// CSI: an existing volume with this name must match the request, else AlreadyExists.
    pub(super) async fn check_compatible(
        &self,
        cloud: &Cloud,
        v: &Volume,
        req: &CreateVolume,
        volume_type: Option<&str>,
    ) -> Result<()> {
        let exists = |diff: VolumeDiff| -> Error {
            Mismatch::Volume {
                name: req.name.clone(),
                id: v.id.clone(),
                diff,
            }
            .into()
        };
        if !fits(req.capacity, v) {
            return Err(exists(VolumeDiff::Size {
                size_gib: v.size_gib,
                capacity: req.capacity,
            }));
        }
        if !same_source(v, req.source.as_ref()) {
            return Err(exists(VolumeDiff::Source));
        }
        for cap in &req.capabilities {
            if let Some(why) = unsupported_capability(cap, v.multiattach) {
                return Err(exists(VolumeDiff::Capability(why)));
            }
        }
        if let Some(want) = volume_type {
            let have = v.volume_type.as_deref().unwrap_or("");
            if want != have {
                // The request may name the type by id; Cinder reports the name.
                let t = self.resolve_type(cloud, want).await?;
                if t.name != have && t.id != have {
                    return Err(exists(VolumeDiff::Type {
                        have: have.to_string(),
                        want: want.to_string(),
                    }));
                }
            }
        }
        if self.opts.with_topology && req.params.availability.is_none() {
            // Requisite zones are label forms (as the nodes report them); compare like with like.
            // A requisite that leaves the zone free (a term without our key) is met anywhere.
            let zones = req.topology.requisite_zones().unwrap_or_default();
            let have = topology_value(&v.availability_zone);
            if !zones.is_empty() && !zones.contains(&have.as_str()) {
                return Err(exists(VolumeDiff::Zone {
                    zone: v.availability_zone.clone(),
                    topology: have,
                    requisite: zones.into_iter().map(str::to_string).collect(),
                }));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cloud::VolumeSource;
    use crate::driver::controller::params::CONTENT_SOURCE_KEY;
    use crate::driver::controller::source_tag::source_tag;

    fn vol() -> Volume {
        Volume {
            name: "n".into(),
            ..Volume::sample("v")
        }
    }

    #[test]
    fn sources_must_be_recorded_and_equal() {
        let snap = |id: &str| ContentSource::Snapshot(id.into());
        let plain = vol();
        assert!(same_source(&plain, None));
        assert!(
            !same_source(&plain, Some(&snap("s1"))),
            "no record of any source"
        );

        let mut from_snap = vol();
        from_snap.snapshot_id = Some("s1".into());
        assert!(same_source(&from_snap, Some(&snap("s1"))));
        assert!(!same_source(&from_snap, Some(&snap("s2"))));
        assert!(!same_source(&from_snap, None));

        let mut from_backup = vol();
        from_backup.metadata.insert(
            CONTENT_SOURCE_KEY.into(),
            source_tag(&VolumeSource::Backup("b1".into())),
        );
        assert!(same_source(&from_backup, Some(&snap("b1"))));
        assert!(!same_source(&from_backup, Some(&snap("b2"))));
        assert!(!same_source(&from_backup, None));

        let mut clone = vol();
        clone.source_volume_id = Some("v1".into());
        assert!(same_source(
            &clone,
            Some(&ContentSource::Volume("v1".into()))
        ));
        assert!(!same_source(&clone, Some(&snap("v1"))));
    }
}
