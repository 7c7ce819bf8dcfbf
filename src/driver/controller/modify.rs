//! ControllerModifyVolume (VolumeAttributesClass): mutable `appendVolumeMetadata` → its pairs
//! set in the Cinder volume's metadata (one update, only when one differs); mutable `type` →
//! Cinder retype with the configured migration policy. Only keys that are present change anything (CSI: "SPs MUST
//! NOT modify volumes based on the absence of keys"), so empty `mutable_parameters` is OK
//! once the volume is known to exist.

use super::waits::{wait_deadline, Refusals, MAX_STATE_RETRIES};
use super::{named_volume, volume_error, Controller, ModifyVolume};
use crate::cloud::{CloudError, Resource, Volume, VolumeStatus, VolumeType, VolumeWait};
use crate::driver::{Change, Error, Invalid, Refusal, Result};

fn has_type(v: &Volume, want: &str, resolved: Option<&VolumeType>) -> bool {
    let Some(have) = v.volume_type.as_deref() else {
        return false;
    };
    have == want || resolved.is_some_and(|t| t.name == have || t.id == have)
}

impl Controller {
    pub async fn modify_volume(&self, req: ModifyVolume) -> Result<()> {
        let id = req.volume_id.as_str();
        let cloud = self.cloud(&req.cloud)?;
        let deadline = wait_deadline(req.deadline);
        let volumes = &cloud.volumes;
        // The volume first: NotFound whatever is asked of it.
        let mut v = named_volume(volumes, id).await?;
        let pairs = &req.mutable.append_metadata;
        if pairs.iter().any(|(k, val)| v.metadata.get(k) != Some(val)) {
            volumes
                .update_volume_metadata(id, pairs)
                .await
                .map_err(|e| volume_error(id, e))?;
        }
        // Nothing asked, nothing changed (CSI: only keys that are specified modify a volume).
        let Some(want) = req.mutable.volume_type.as_deref() else {
            return Ok(());
        };
        if has_type(&v, want, None) && !v.status.is_transitional() {
            return Ok(());
        }
        let t = self.resolve_type(cloud, want).await?;
        let mut refusals = Refusals::default();
        for _ in 0..MAX_STATE_RETRIES {
            if v.status.is_transitional() {
                v = volumes
                    .wait_volume(id, &VolumeWait::Stable, deadline)
                    .await?;
                continue;
            }
            if has_type(&v, want, Some(&t)) {
                return Ok(());
            }
            if !matches!(v.status, VolumeStatus::Available | VolumeStatus::InUse) {
                return Err(Refusal::CannotRetype {
                    id: id.to_string(),
                    status: v.status,
                }
                .into());
            }
            if v.group_id.is_some() {
                // Cinder retypes no volume in a group: it leaves the one a group snapshot
                // put it in (the next group snapshot of it puts it back).
                cloud.groups.release_volume(&v, deadline).await?;
                v.group_id = None;
            }
            match volumes
                .retype_volume(id, &t.name, self.opts.block_storage.retype_migration_policy)
                .await
            {
                Ok(()) => {
                    v = volumes
                        .wait_volume(id, &VolumeWait::Stable, deadline)
                        .await?;
                    if has_type(&v, want, Some(&t)) {
                        return Ok(());
                    }
                    // Cinder accepted the request but left the type: it needed a migration.
                    return Err(Refusal::NotRetyped {
                        id: id.to_string(),
                        to: t.name,
                        policy: self.opts.block_storage.retype_migration_policy,
                    }
                    .into());
                }
                Err(CloudError::Conflict { message, .. }) => {
                    let change = Change::Retype { to: t.name.clone() };
                    v = refusals.reread(volumes, id, &v, change, message).await?;
                }
                Err(CloudError::NotFound {
                    resource: Resource::VolumeType,
                    ..
                }) => {
                    return Err(Invalid::UnknownVolumeType {
                        name: want.to_string(),
                    }
                    .into())
                }
                Err(e) => return Err(volume_error(id, e)),
            }
        }
        Err(Error::KeptChanging {
            id: id.to_string(),
            status: v.status,
        })
    }
}
