//! ListVolumes (paginated across clouds), ControllerGetVolume (with VolumeCondition) and
//! ValidateVolumeCapabilities.

use std::collections::BTreeMap;

use super::capabilities::unsupported_capability;
use super::params::CLUSTER_KEY;
use super::tokens::{Collection, ListToken};
use super::{
    volume_error, Condition, Controller, ListVolumes, ValidateCapabilities, Validation,
    VolumeEntry, VolumesPage,
};
use crate::cloud::{CloudError, PageRequest, Volume, VolumeFilter};
use crate::driver::{Error, Result};

/// VolumeCondition of a volume: abnormal in every Cinder error state.
pub fn condition(v: &Volume) -> Condition {
    if v.status.is_error() {
        Condition {
            abnormal: true,
            message: format!(
                "Cinder reports status {}; the volume needs an operator",
                v.status
            ),
        }
    } else {
        Condition {
            abnormal: false,
            message: format!("Cinder reports status {}", v.status),
        }
    }
}

/// Whether the cloud rejected the marker itself (its object was deleted since the token was
/// issued): Cinder answers 400 "marker not found".
pub(super) fn stale_marker(e: &CloudError, had_marker: bool) -> bool {
    had_marker
        && matches!(
            e,
            CloudError::BadRequest { .. } | CloudError::NotFound { .. }
        )
}

impl Controller {
    fn entry(&self, v: &Volume) -> VolumeEntry {
        VolumeEntry {
            volume: self.volume_info(v),
            published_node_ids: v.attachments.iter().map(|a| a.server_id.clone()).collect(),
            condition: condition(v),
        }
    }

    /// CSI ListVolumes. Walks the clouds in name order (a token whose marker volume was
    /// deleted restarts that cloud's listing: duplicates are allowed, failures are not); with `list-cluster-volumes-only` asks
    /// Cinder for this cluster's volumes only (a server-side metadata filter) instead of the
    /// whole project (upstream #2764).
    pub async fn list_volumes(&self, req: ListVolumes) -> Result<VolumesPage> {
        let names: Vec<&str> = self.clouds.names().collect();
        let (mut idx, mut marker) = match req.starting_token.as_deref() {
            None | Some("") => (0, None),
            Some(t) => {
                let t = ListToken::decode(t, &[Collection::Volumes], &names)?;
                let idx = names.iter().position(|n| *n == t.cloud).unwrap_or(0);
                (idx, t.marker)
            }
        };
        let filter = VolumeFilter {
            name: None,
            metadata: if self.opts.block_storage.list_cluster_volumes_only {
                BTreeMap::from([(CLUSTER_KEY.to_string(), self.opts.cluster.clone())])
            } else {
                BTreeMap::new()
            },
        };
        let limit = req.max_entries as usize;
        let mut entries = Vec::new();
        while let Some(cloud) = names.get(idx).and_then(|n| self.clouds.get(n)) {
            let page = PageRequest {
                limit: (limit > 0).then(|| (limit - entries.len()) as u32),
                marker: marker.clone(),
            };
            let got = match cloud.volumes.list_volumes(&filter, &page).await {
                Ok(got) => got,
                // The volume the token points after was deleted. CSI lets a listing that
                // races changes show duplicates, so start this cloud over instead of failing.
                Err(e) if stale_marker(&e, marker.is_some()) => {
                    tracing::debug!(error = %e, "stale ListVolumes marker; restarting the cloud's listing");
                    marker = None;
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
            entries.extend(got.items.iter().map(|v| self.entry(v)));
            let full = limit > 0 && entries.len() >= limit;
            match got.next_marker {
                Some(m) => marker = Some(m),
                None => {
                    idx += 1;
                    marker = None;
                }
            }
            if full {
                entries.truncate(limit);
                let next_token = names.get(idx).map(|n| {
                    ListToken {
                        collection: Collection::Volumes,
                        cloud: n.to_string(),
                        marker: marker.clone(),
                    }
                    .encode()
                });
                return Ok(VolumesPage {
                    entries,
                    next_token,
                });
            }
        }
        Ok(VolumesPage {
            entries,
            next_token: None,
        })
    }

    /// CSI ControllerGetVolume. The request carries no secrets, so every cloud is asked (a
    /// bare Cinder UUID is unique across them); NotFound only when no cloud has it.
    pub async fn get_volume(&self, id: &str) -> Result<VolumeEntry> {
        let mut failure = None;
        for cloud in self.clouds.iter() {
            match cloud.volumes.get_volume(id).await {
                Ok(v) => return Ok(self.entry(&v)),
                Err(CloudError::NotFound { .. }) => {}
                Err(e) => failure = Some(e),
            }
        }
        match failure {
            // Not found where we could look, but one cloud did not answer: not a NotFound.
            Some(e) => Err(e.into()),
            None => Err(Error::VolumeNotFound { id: id.to_string() }),
        }
    }

    /// CSI ValidateVolumeCapabilities: confirmed only when every capability is supported.
    pub async fn validate_capabilities(&self, req: ValidateCapabilities) -> Result<Validation> {
        let cloud = self.cloud(&req.cloud)?;
        let v = cloud
            .volumes
            .get_volume(&req.volume_id)
            .await
            .map_err(|e| volume_error(&req.volume_id, e))?;
        for cap in &req.capabilities {
            let why = super::validate::unsupported_fs_type(cap)
                .or_else(|| unsupported_capability(cap, v.multiattach));
            if let Some(why) = why {
                return Ok(Err(why));
            }
        }
        Ok(Ok(()))
    }
}
