//! CreateVolume: idempotent by name, waits until the volume is `available`, deletes a volume
//! that went into `error` and reports why.

use std::collections::BTreeMap;

use tokio::time::Instant;

use super::capabilities::{unsupported_capability, wants_multi_node};
use super::params::{CLUSTER_KEY, CONTENT_SOURCE_KEY};
use super::source_tag::source_tag;
use super::validate;
use super::waits::wait_deadline;
use super::zones::Lookup;
use super::{ContentSource, Controller, CreateVolume, VolumeInfo};
use crate::cloud::{
    Cloud, CloudError, CopyKind, CopyStatus, CopyWait, NewVolume, Resource, Volume, VolumeSource,
    VolumeStatus, VolumeType, VolumeWait, GIB,
};
use crate::driver::types::{round_up_gib, CapacityRange, Topology, ZONE_TOPOLOGY_KEY};
use crate::driver::{Cleanup, Error, Failure, Invalid, ParamClass, Range, Refusal, Result};

/// Description Cinder shows for volumes we create (upstream's text: operators grep for it).
pub const VOLUME_DESCRIPTION: &str = "Created by OpenStack Cinder CSI driver";

/// Size when the request has no capacity_range (and no larger source).
pub const DEFAULT_SIZE_GIB: u64 = 1;

/// Statuses of a volume that is still being created; CreateVolume waits them out.
fn is_creating(s: &VolumeStatus) -> bool {
    matches!(
        s,
        VolumeStatus::Creating | VolumeStatus::Downloading | VolumeStatus::RestoringBackup
    )
}

/// Whole GiB satisfying `range` and at least `min_gib` (the source's size).
pub fn size_for(range: CapacityRange, min_gib: u64) -> Result<u64> {
    let wanted = if range.required_bytes == 0 {
        DEFAULT_SIZE_GIB
    } else {
        round_up_gib(range.required_bytes)
    };
    let size = wanted.max(min_gib);
    super::validate::size_gib(size)?;
    if range.limit_bytes != 0 && size * GIB > range.limit_bytes {
        let limit_bytes = range.limit_bytes;
        return Err(if size > wanted {
            Range::SourceOverLimit {
                gib: size,
                limit_bytes,
            }
        } else {
            Range::OverLimit {
                gib: size,
                limit_bytes,
            }
        }
        .into());
    }
    Ok(size)
}

fn zone_of(t: &Topology) -> Option<&str> {
    t.get(ZONE_TOPOLOGY_KEY).map(String::as_str)
}

impl Controller {
    pub async fn create_volume(&self, req: CreateVolume) -> Result<VolumeInfo> {
        validate::name(Resource::Volume, &req.name)?;
        validate::fs_types(&req.capabilities)?;
        validate::mkfs_options(&req.params, &req.capabilities)?;
        validate::size_gib(round_up_gib(req.capacity.required_bytes))?;
        let cloud = self.cloud(&req.cloud)?;
        let deadline = wait_deadline(req.deadline);
        // CSI: mutable_parameters take precedence over parameters.
        let volume_type = req
            .mutable
            .volume_type
            .clone()
            .or_else(|| req.params.volume_type.clone());

        // Upstream's `affinity` / `anti-affinity` keys, for a volume created now with hints.
        let mut context = BTreeMap::new();
        let volume = match self.find_by_name(cloud, &req.name).await? {
            Some(existing) => {
                self.check_compatible(cloud, &existing, &req, volume_type.as_deref())
                    .await?;
                existing
            }
            None => {
                let (created, hint_context) = self.create_new(cloud, &req, volume_type).await?;
                context = hint_context;
                created
            }
        };
        let volume = self
            .until_created(cloud, volume, &req.name, deadline)
            .await?;

        let mut info = self.volume_info(&volume);
        info.context.extend(context);
        // Format options travel to the node's mkfs in the volume context (kept in the PV).
        info.context.extend(req.params.format.clone());
        if info.source.is_none() {
            // Cinder does not report every source (e.g. a backup); the request knows it.
            if let Some(src) = &req.source {
                info.source = Some(src.clone());
                info.context.insert(
                    super::params::RESIZE_REQUIRED_KEY.to_string(),
                    "true".to_string(),
                );
            }
        }
        if self.opts.with_topology && self.opts.block_storage.ignore_volume_az {
            // Upstream's ignore-volume-az: report what was asked for, not Cinder's AZ.
            info.topology = if req.topology.preferred.is_empty() {
                req.topology.requisite.clone()
            } else {
                req.topology.preferred.clone()
            };
        }
        Ok(info)
    }

    async fn create_new(
        &self,
        cloud: &Cloud,
        req: &CreateVolume,
        volume_type: Option<String>,
    ) -> Result<(Volume, BTreeMap<String, String>)> {
        if wants_multi_node(&req.capabilities) {
            let multiattach = match &volume_type {
                Some(t) => self.resolve_type(cloud, t).await?.multiattach,
                None => false,
            };
            for cap in &req.capabilities {
                if let Some(why) = unsupported_capability(cap, multiattach) {
                    return Err(Invalid::Capability(why).into());
                }
            }
        }
        let (source, source_gib) = match &req.source {
            None => (None, 0),
            Some(src) => {
                let (s, gib) = self.resolve_source(cloud, src, req.deadline).await?;
                (Some(s), gib)
            }
        };
        let size_gib = size_for(req.capacity, source_gib)?;
        let availability_zone = self.pick_zone(cloud, req).await?;
        // Before anything is created: a bad annotation changes nothing.
        let (scheduler_hints, hint_context) = self.scheduler_hints(cloud, req).await?;
        // appendVolumeMetadata first: the driver's and sidecars' keys are refused there, so
        // nothing below overwrites a pair it set.
        let mut metadata: BTreeMap<String, String> = req.params.append_metadata.clone();
        // CSI: mutable_parameters win over parameters.
        metadata.extend(req.mutable.append_metadata.clone());
        metadata.extend(req.params.k8s_metadata.clone());
        metadata.insert(CLUSTER_KEY.to_string(), self.opts.cluster.clone());
        if let Some(src) = &source {
            metadata.insert(CONTENT_SOURCE_KEY.to_string(), source_tag(src));
        }
        let new = NewVolume {
            name: req.name.clone(),
            size_gib,
            description: Some(VOLUME_DESCRIPTION.to_string()),
            volume_type: volume_type.clone(),
            availability_zone,
            metadata,
            source,
            scheduler_hints,
        };
        // CSI: mutable_parameters win over parameters, so that is where the type came from.
        let class = if req.mutable.volume_type.is_some() {
            ParamClass::VolumeAttributesClass
        } else {
            ParamClass::StorageClass
        };
        let created = cloud
            .volumes
            .create_volume(&new)
            .await
            .map_err(|e| match e {
                CloudError::NotFound {
                    resource: Resource::VolumeType,
                    id,
                } => Invalid::TypeParamUnknown { class, name: id }.into(),
                CloudError::NotFound {
                    resource: Resource::Snapshot | Resource::Backup,
                    id,
                } => Error::SnapshotNotFound { id },
                CloudError::NotFound {
                    resource: Resource::Volume,
                    id,
                } => Error::VolumeNotFound { id },
                other => Error::Cloud(other),
            })?;
        Ok((created, hint_context))
    }

    /// AZ precedence (upstream's): `availability` (a Cinder name), then with topology the
    /// first preferred and then the first requisite zone (label forms, mapped back to the
    /// Cinder name; with a requisite that names a zone in every term, the first such zone
    /// Cinder has); otherwise Cinder's default. Terms are read as CSI says: one that does not
    /// name [`ZONE_TOPOLOGY_KEY`] is met in any zone, so it constrains nothing.
    async fn pick_zone(&self, cloud: &Cloud, req: &CreateVolume) -> Result<Option<String>> {
        if let Some(az) = &req.params.availability {
            return Ok(Some(az.clone()));
        }
        if !self.opts.with_topology {
            return Ok(None);
        }
        let t = &req.topology;
        // With ignore-volume-az the reported topology is the request's, whatever zone Cinder
        // picks (it may fall back from a Nova zone): no requisite zone must exist in Cinder.
        let ignore_az = self.opts.block_storage.ignore_volume_az;
        if !ignore_az && t.requisite_zones().is_some() {
            return self.requisite_zone(cloud, t).await.map(Some);
        }
        // No requisite, or one that leaves the zone free. CSI: preferred terms are tried in
        // order, and the first one that can be met decides.
        for term in &t.preferred {
            let Some(value) = zone_of(term) else {
                // Met in any zone: Cinder's default.
                return Ok(None);
            };
            if ignore_az || t.requisite.is_empty() {
                return Ok(Some(self.cinder_zone(cloud, value).await?));
            }
            match self.lookup_zone(cloud, value).await? {
                Lookup::Found(zone) => return Ok(Some(zone)),
                Lookup::Unlisted => return Ok(Some(value.to_string())),
                // The free requisite term still allows any zone.
                Lookup::Missing(_) => {}
            }
        }
        if t.requisite_zones().is_none() {
            return Ok(None);
        }
        // ignore-volume-az with a requisite that names a zone in every term.
        match t.requisite.iter().find_map(zone_of) {
            Some(v) => Ok(Some(self.cinder_zone(cloud, v).await?)),
            None => Ok(None),
        }
    }

    pub(super) async fn resolve_type(&self, cloud: &Cloud, name_or_id: &str) -> Result<VolumeType> {
        cloud
            .placement
            .get_volume_type(name_or_id)
            .await
            .map_err(|e| match e {
                CloudError::NotFound { .. } => Invalid::UnknownVolumeType {
                    name: name_or_id.to_string(),
                }
                .into(),
                other => Error::Cloud(other),
            })
    }

    /// The cloud source of a CSI content source, and its size. A CSI snapshot id is a Cinder
    /// snapshot or, for `type: backup` classes, a Cinder backup.
    async fn resolve_source(
        &self,
        cloud: &Cloud,
        src: &ContentSource,
        rpc_deadline: Instant,
    ) -> Result<(VolumeSource, u64)> {
        let deadline = wait_deadline(rpc_deadline);
        match src {
            ContentSource::Volume(id) => {
                let mut v = super::named_volume(&cloud.volumes, id).await?;
                if v.status.is_error() {
                    return Err(Refusal::SourceVolumeFailed {
                        id: id.clone(),
                        status: v.status,
                    }
                    .into());
                }
                if v.status.is_transitional() {
                    v = cloud
                        .volumes
                        .wait_volume(id, &VolumeWait::Stable, deadline)
                        .await?;
                }
                Ok((VolumeSource::Volume(id.clone()), v.size_gib))
            }
            ContentSource::Snapshot(id) => {
                let copies = &cloud.copies;
                let (kind, c) = match copies.get_copy(CopyKind::Snapshot, id).await {
                    Ok(s) => (CopyKind::Snapshot, s),
                    Err(CloudError::NotFound { .. }) => {
                        match copies.get_copy(CopyKind::Backup, id).await {
                            Ok(b) => (CopyKind::Backup, b),
                            Err(CloudError::NotFound { .. } | CloudError::Unsupported(_)) => {
                                return Err(Error::SnapshotNotFound { id: id.clone() })
                            }
                            Err(e) => return Err(e.into()),
                        }
                    }
                    Err(e) => return Err(e.into()),
                };
                let c = match c.status {
                    CopyStatus::Available => c,
                    st if st.is_error() => {
                        return Err(Refusal::SourceCopyFailed {
                            kind,
                            id: id.clone(),
                            status: st,
                        }
                        .into())
                    }
                    _ => {
                        copies
                            .wait_copy(kind, id, &CopyWait::Available, deadline)
                            .await?
                    }
                };
                let source = match kind {
                    CopyKind::Snapshot => VolumeSource::Snapshot(id.clone()),
                    CopyKind::Backup => VolumeSource::Backup(id.clone()),
                };
                Ok((source, c.size_gib))
            }
        }
    }

    /// Wait out creation. A volume that ends in an error state is deleted, so the retry
    /// starts afresh, and the RPC fails with Cinder's reason.
    async fn until_created(
        &self,
        cloud: &Cloud,
        v: Volume,
        name: &str,
        deadline: Instant,
    ) -> Result<Volume> {
        let failed = if v.status.is_error() {
            Some((v.status.clone(), None))
        } else if is_creating(&v.status) {
            match cloud
                .volumes
                .wait_volume(&v.id, &VolumeWait::Available, deadline)
                .await
            {
                Ok(v) => return Ok(v),
                Err(CloudError::ErrorState { status, reason, .. }) => {
                    Some((VolumeStatus::parse(&status), reason))
                }
                Err(e) => return Err(e.into()),
            }
        } else {
            None
        };
        let Some((status, reason)) = failed else {
            return Ok(v);
        };
        // Only a failed creation is ours to delete: plain `error`, tagged for this cluster,
        // never attached. Other error states (error_extending, error_restoring,
        // error_backing-up, …) belong to a volume that may hold data.
        let failed_creation =
            status == VolumeStatus::Error && self.is_ours(&v) && v.attachments.is_empty();
        if !failed_creation {
            return Err(Refusal::MayHoldData {
                id: v.id,
                name: name.to_string(),
                status,
                reason,
            }
            .into());
        }
        let cleanup = match cloud.volumes.delete_volume(&v.id, false).await {
            Ok(()) | Err(CloudError::NotFound { .. }) => Cleanup::Deleted,
            Err(e) => Cleanup::DeleteFailed(Box::new(e)),
        };
        Err(Failure::Creation {
            id: v.id,
            name: name.to_string(),
            status,
            reason,
            cleanup,
        }
        .into())
    }
}
