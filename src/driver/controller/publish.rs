//! ControllerPublishVolume / ControllerUnpublishVolume: Nova attach/detach, with Cinder's
//! transitional states waited out within the deadline instead of surfacing Nova's 400
//! ("volume status must be available to reserve", upstream #1403, #2553).

use std::collections::BTreeMap;

use tokio::time::Instant;

use super::capabilities::volume_serves;
use super::params::DEVICE_PATH_KEY;
use super::waits::{wait_deadline, Refusals, MAX_STATE_RETRIES};
use super::{named_volume, volume_error, Controller, Publish, Unpublish};
use crate::cloud::{Cloud, CloudError, Resource, Volume, VolumeStatus, VolumeWait};
use crate::driver::{Change, Error, Invalid, Refusal, Result};

/// The publish context of an attachment; the same on every call for the same attachment.
fn publish_context(v: &Volume, server: &str, fallback: Option<String>) -> BTreeMap<String, String> {
    let device = v
        .attached_to(server)
        .and_then(|a| a.device.clone())
        .or(fallback);
    device
        .map(|d| BTreeMap::from([(DEVICE_PATH_KEY.to_string(), d)]))
        .unwrap_or_default()
}

fn as_precondition(id: &str, e: CloudError) -> Error {
    match e {
        CloudError::ErrorState { status, reason, .. } => Refusal::CannotAttach {
            id: id.to_string(),
            status: VolumeStatus::parse(&status),
            reason,
        }
        .into(),
        other => volume_error(id, other),
    }
}

impl Controller {
    pub async fn publish_volume(&self, req: Publish) -> Result<BTreeMap<String, String>> {
        if req.readonly {
            return Err(Invalid::ReadOnlyPublish.into());
        }
        let cloud = self.cloud(&req.cloud)?;
        let deadline = wait_deadline(req.deadline);
        let (id, node) = (req.volume_id.as_str(), req.node_id.as_str());
        let volumes = &cloud.volumes;
        let mut v = named_volume(volumes, id).await?;
        volume_serves(id, &req.capability, v.multiattach)?;
        let mut refusals = Refusals::default();
        for _ in 0..MAX_STATE_RETRIES {
            if v.attached_to(node).is_some() && v.status != VolumeStatus::Detaching {
                // Already published here (CSI: "MUST reply 0 OK"), or on its way.
                if matches!(v.status, VolumeStatus::Attaching | VolumeStatus::Reserved) {
                    v = volumes
                        .wait_volume(id, &VolumeWait::AttachedTo(node.to_string()), deadline)
                        .await
                        .map_err(|e| as_precondition(id, e))?;
                }
                return Ok(publish_context(&v, node, None));
            }
            if v.status.is_error() {
                return Err(Refusal::CannotAttach {
                    id: id.to_string(),
                    status: v.status,
                    reason: None,
                }
                .into());
            }
            if v.status.is_transitional() {
                v = volumes
                    .wait_volume(id, &VolumeWait::Stable, deadline)
                    .await
                    .map_err(|e| as_precondition(id, e))?;
                continue;
            }
            let elsewhere: Vec<String> =
                v.attachments.iter().map(|a| a.server_id.clone()).collect();
            if !elsewhere.is_empty() {
                // CSI: "already been published at another node and does not have MULTI_NODE
                // volume capability" → FAILED_PRECONDITION. Both must allow sharing: the
                // volume type and the access mode asked for.
                if !v.multiattach {
                    return Err(Refusal::PublishedNoMultiattach {
                        id: id.to_string(),
                        nodes: elsewhere,
                    }
                    .into());
                }
                if !req.capability.access_mode.is_multi_node() {
                    return Err(Refusal::PublishedSingleNode {
                        id: id.to_string(),
                        nodes: elsewhere,
                        mode: req.capability.access_mode,
                    }
                    .into());
                }
            }
            match cloud.servers.attach_volume(node, id, v.multiattach).await {
                Ok(att) => {
                    v = volumes
                        .wait_volume(id, &VolumeWait::AttachedTo(node.to_string()), deadline)
                        .await
                        .map_err(|e| as_precondition(id, e))?;
                    return Ok(publish_context(&v, node, att.device));
                }
                Err(CloudError::NotFound {
                    resource: Resource::Server,
                    ..
                }) => {
                    return Err(Error::NodeNotFound {
                        id: node.to_string(),
                    })
                }
                Err(CloudError::Conflict { message, .. }) => {
                    // Someone moved the volume meanwhile; look again.
                    let change = Change::Attach {
                        node: node.to_string(),
                    };
                    v = refusals.reread(volumes, id, &v, change, message).await?;
                }
                Err(e) => return Err(volume_error(id, e)),
            }
        }
        Err(Error::KeptChanging {
            id: id.to_string(),
            status: v.status,
        })
    }

    pub async fn unpublish_volume(&self, req: Unpublish) -> Result<()> {
        let cloud = self.cloud(&req.cloud)?;
        let deadline = wait_deadline(req.deadline);
        let id = req.volume_id.as_str();
        let mut v = match cloud.volumes.get_volume(id).await {
            Ok(v) => v,
            // CSI: a volume that cannot be found is regarded as unpublished.
            Err(CloudError::NotFound { .. }) => return Ok(()),
            Err(e) => return Err(e.into()),
        };
        if req.node_id.is_none() && attach_pending(&v) {
            // Every node is asked for: include the one an attach in flight is reaching.
            v = match settle(cloud, id, deadline).await? {
                Some(v) => v,
                None => return Ok(()),
            };
        }
        let servers: Vec<String> = match req.node_id {
            Some(n) => vec![n],
            None => v.attachments.iter().map(|a| a.server_id.clone()).collect(),
        };
        for server in servers {
            detach(cloud, v.clone(), &server, deadline).await?;
        }
        Ok(())
    }
}

/// Cinder lists only completed attachments: while a volume is `reserved` or `attaching`
/// (an attach Nova is still carrying out, e.g. of a publish that ran out of time) or
/// `detaching`, "no attachment to this server" is not yet an answer.
fn attach_pending(v: &Volume) -> bool {
    matches!(
        v.status,
        VolumeStatus::Reserved | VolumeStatus::Attaching | VolumeStatus::Detaching
    )
}

/// Wait (within the deadline) until the volume leaves its transitional state; `None` when it
/// is gone. A deadline is WaitTimeout (Aborted): the sidecar retries.
async fn settle(cloud: &Cloud, id: &str, deadline: Instant) -> Result<Option<Volume>> {
    match cloud
        .volumes
        .wait_volume(id, &VolumeWait::Stable, deadline)
        .await
    {
        Ok(v) => Ok(Some(v)),
        Err(CloudError::NotFound { .. }) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Detach `v` from `server` and wait until Cinder shows no attachment to it and the volume is
/// out of `detaching` (upstream returned earlier, and the DeleteVolume that followed got a 400).
/// An attach still in flight is waited out first and then undone if it reached `server`.
async fn detach(cloud: &Cloud, mut v: Volume, server: &str, deadline: Instant) -> Result<()> {
    let id = v.id.clone();
    let volumes = &cloud.volumes;
    let detached = |r: Result<Volume, CloudError>| match r {
        Ok(_) | Err(CloudError::NotFound { .. }) => Ok(()),
        Err(e) => Err(Error::from(e)),
    };
    let mut refusals = Refusals::default();
    for _ in 0..MAX_STATE_RETRIES {
        if v.attached_to(server).is_none() && !attach_pending(&v) {
            return Ok(());
        }
        if v.status.is_transitional() {
            v = match settle(cloud, &id, deadline).await? {
                Some(v) => v,
                None => return Ok(()),
            };
            continue;
        }
        match cloud.servers.detach_volume(server, &id).await {
            Ok(()) => {}
            // CSI: a node that no longer exists has nothing attached.
            Err(CloudError::NotFound {
                resource: Resource::Server | Resource::Volume,
                ..
            }) => return Ok(()),
            // Nova has no such attachment: Cinder's record is stale or catching up.
            Err(CloudError::NotFound { .. }) => {
                return ghost_detached(cloud, &id, server, deadline).await
            }
            Err(CloudError::Conflict { message, .. }) => {
                let now = match volumes.get_volume(&id).await {
                    Ok(v) => v,
                    Err(CloudError::NotFound { .. }) => return Ok(()),
                    Err(e) => return Err(e.into()),
                };
                let change = Change::Detach {
                    node: server.to_string(),
                };
                v = refusals.judge(&v, now, change, message)?;
                continue;
            }
            Err(e) => return Err(e.into()),
        }
        let until = VolumeWait::DetachedFrom(server.to_string());
        return detached(volumes.wait_volume(&id, &until, deadline).await);
    }
    Err(Error::KeptChanging {
        id,
        status: v.status,
    })
}

/// How long Cinder gets to drop an attachment Nova says does not exist.
const GHOST_GRACE: std::time::Duration = std::time::Duration::from_secs(10);

/// Nova answered 404 for the attachment while Cinder still lists it. Nova owns the server's
/// disks, so the volume is not attached to that node: give Cinder a short, bounded time to
/// agree, then answer detached either way (waiting for a record Nova will never clear would
/// fail every retry), and say which Cinder record an operator should clean up.
async fn ghost_detached(cloud: &Cloud, id: &str, server: &str, deadline: Instant) -> Result<()> {
    let until = VolumeWait::DetachedFrom(server.to_string());
    let grace = deadline.min(Instant::now() + GHOST_GRACE);
    match cloud.volumes.wait_volume(id, &until, grace).await {
        Ok(_) | Err(CloudError::NotFound { .. }) => Ok(()),
        Err(CloudError::WaitTimeout { last_status, .. }) => {
            tracing::warn!(
                volume = id,
                node = server,
                status = %last_status,
                "Nova has no attachment of this volume to the node but Cinder still lists one; \
                 treating it as detached (an operator should delete the stale Cinder attachment)"
            );
            Ok(())
        }
        Err(e) => Err(e.into()),
    }
}
