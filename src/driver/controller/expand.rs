//! ControllerExpandVolume: extend (online with Cinder 3.42 when in-use) and wait until
//! Cinder reports the new size. Node expansion is required only for mount access.

use super::capabilities::volume_serves;
use super::waits::{wait_deadline, Refusals, MAX_STATE_RETRIES};
use super::{named_volume, volume_error, Controller, ExpandVolume, Expanded};
use crate::cloud::{CloudError, VolumeStatus, VolumeWait, GIB};
use crate::driver::types::round_up_gib;
use crate::driver::{Change, Error, Invalid, Range, Refusal, Result};

impl Controller {
    pub async fn expand_volume(&self, req: ExpandVolume) -> Result<Expanded> {
        let id = req.volume_id.as_str();
        if req.capacity.required_bytes == 0 {
            return Err(Invalid::NoExpandSize.into());
        }
        let new_gib = round_up_gib(req.capacity.required_bytes);
        super::validate::size_gib(new_gib)?;
        if req.capacity.limit_bytes != 0 && new_gib * GIB > req.capacity.limit_bytes {
            return Err(Range::OverLimit {
                gib: new_gib,
                limit_bytes: req.capacity.limit_bytes,
            }
            .into());
        }
        // CSI: "if volume is being used as a block device - the SP MAY set
        // node_expansion_required to false"; unknown usage is treated as a filesystem.
        let node_expansion_required = req
            .capability
            .as_ref()
            .is_none_or(|c| !c.access_type.is_block());
        let done = |size_gib: u64| Expanded {
            capacity_bytes: size_gib * GIB,
            node_expansion_required,
        };
        let cloud = self.cloud(&req.cloud)?;
        let deadline = wait_deadline(req.deadline);
        let volumes = &cloud.volumes;
        let mut v = named_volume(volumes, id).await?;
        if let Some(cap) = &req.capability {
            volume_serves(id, cap, v.multiattach)?;
        }
        let mut refusals = Refusals::default();
        for _ in 0..MAX_STATE_RETRIES {
            // CSI: already at least that large → OK.
            if v.size_gib >= new_gib && v.status != VolumeStatus::Extending {
                return Ok(done(v.size_gib));
            }
            let online = match &v.status {
                VolumeStatus::Available => false,
                VolumeStatus::InUse => true,
                VolumeStatus::Extending => {
                    v = volumes
                        .wait_volume(id, &VolumeWait::Extended(new_gib), deadline)
                        .await?;
                    continue;
                }
                s if s.is_transitional() => {
                    v = volumes
                        .wait_volume(id, &VolumeWait::Stable, deadline)
                        .await?;
                    continue;
                }
                s => {
                    return Err(Refusal::CannotExtend {
                        id: id.to_string(),
                        status: s.clone(),
                    }
                    .into())
                }
            };
            match volumes.extend_volume(id, new_gib, online).await {
                Ok(()) => {
                    v = volumes
                        .wait_volume(id, &VolumeWait::Extended(new_gib), deadline)
                        .await?;
                }
                Err(CloudError::Conflict { message, .. }) => {
                    let change = Change::Extend { gib: new_gib };
                    v = refusals.reread(volumes, id, &v, change, message).await?;
                }
                Err(CloudError::Unsupported(why)) if online => {
                    return Err(Refusal::OnlineExtendUnsupported {
                        id: id.to_string(),
                        why,
                    }
                    .into())
                }
                Err(e) => return Err(volume_error(id, e)),
            }
        }
        if v.size_gib >= new_gib && v.status != VolumeStatus::Extending {
            return Ok(done(v.size_gib));
        }
        Err(Error::KeptChanging {
            id: id.to_string(),
            status: v.status,
        })
    }
}
