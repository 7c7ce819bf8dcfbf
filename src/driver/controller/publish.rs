//! ControllerPublishVolume / ControllerUnpublishVolume: Nova attach/detach, with Cinder's
//! transitional states waited out within the deadline instead of surfacing Nova's 400
//! ("volume status must be available to reserve", upstream #1403, #2553).

use std::collections::BTreeMap;

use tokio::time::Instant;

use super::capabilities::unsupported_capability;
use super::params::DEVICE_PATH_KEY;
use super::waits::{wait_deadline, MAX_STATE_RETRIES};
use super::{volume_error, Controller, Publish, Unpublish};
use crate::cloud::{Cloud, CloudError, Resource, Volume, VolumeStatus, VolumeWait};
use crate::driver::{Error, Result};

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
        CloudError::ErrorState { status, reason, .. } => Error::precondition(format!(
            "volume {id} is in status {status}{}; it cannot be attached",
            reason.map(|r| format!(": {r}")).unwrap_or_default()
        )),
        other => volume_error(id, other),
    }
}

impl Controller {
    pub async fn publish_volume(&self, req: Publish) -> Result<BTreeMap<String, String>> {
        if req.readonly {
            return Err(Error::invalid(
                "readonly publish is not supported (no PUBLISH_READONLY capability): Nova \
                 attachments are read-write; the node mounts read-only from NodePublishVolume's \
                 readonly flag",
            ));
        }
        let cloud = self.cloud(&req.cloud)?;
        let deadline = wait_deadline(req.deadline);
        let (id, node) = (req.volume_id.as_str(), req.node_id.as_str());
        let storage = &cloud.storage;
        let mut v = storage
            .get_volume(id)
            .await
            .map_err(|e| volume_error(id, e))?;
        if let Some(why) = unsupported_capability(&req.capability, v.multiattach) {
            return Err(Error::invalid(format!("volume {id}: {why}")));
        }
        for _ in 0..MAX_STATE_RETRIES {
            if v.attached_to(node).is_some() && v.status != VolumeStatus::Detaching {
                // Already published here (CSI: "MUST reply 0 OK"), or on its way.
                if matches!(v.status, VolumeStatus::Attaching | VolumeStatus::Reserved) {
                    v = storage
                        .wait_volume(id, &VolumeWait::AttachedTo(node.to_string()), deadline)
                        .await
                        .map_err(|e| as_precondition(id, e))?;
                }
                return Ok(publish_context(&v, node, None));
            }
            if v.status.is_error() {
                return Err(as_precondition(
                    id,
                    CloudError::ErrorState {
                        resource: Resource::Volume,
                        id: id.to_string(),
                        status: v.status.to_string(),
                        reason: None,
                    },
                ));
            }
            if v.status.is_transitional() {
                v = storage
                    .wait_volume(id, &VolumeWait::Stable, deadline)
                    .await
                    .map_err(|e| as_precondition(id, e))?;
                continue;
            }
            let elsewhere: Vec<&str> = v.attachments.iter().map(|a| a.server_id.as_str()).collect();
            if !elsewhere.is_empty() && !v.multiattach {
                return Err(Error::precondition(format!(
                    "volume {id} is published to node(s) {} and its volume type has no \
                     multiattach; unpublish it there first",
                    elsewhere.join(", ")
                )));
            }
            match cloud.compute.attach_volume(node, id, v.multiattach).await {
                Ok(att) => {
                    v = storage
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
                Err(CloudError::Conflict { .. }) => {
                    // Someone moved the volume meanwhile; look again.
                    v = storage
                        .get_volume(id)
                        .await
                        .map_err(|e| volume_error(id, e))?;
                }
                Err(e) => return Err(volume_error(id, e)),
            }
        }
        Err(Error::Aborted(format!(
            "volume {id} kept changing state (now {}); retry later",
            v.status
        )))
    }

    pub async fn unpublish_volume(&self, req: Unpublish) -> Result<()> {
        let cloud = self.cloud(&req.cloud)?;
        let deadline = wait_deadline(req.deadline);
        let id = req.volume_id.as_str();
        let v = match cloud.storage.get_volume(id).await {
            Ok(v) => v,
            // CSI: a volume that cannot be found is regarded as unpublished.
            Err(CloudError::NotFound { .. }) => return Ok(()),
            Err(e) => return Err(e.into()),
        };
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

/// Detach `v` from `server` and wait until Cinder shows no attachment to it and the volume is
/// out of `detaching` (upstream returned earlier, and the DeleteVolume that followed got a 400).
async fn detach(cloud: &Cloud, mut v: Volume, server: &str, deadline: Instant) -> Result<()> {
    let id = v.id.clone();
    let storage = &cloud.storage;
    let detached = |r: Result<Volume, CloudError>| match r {
        Ok(_) | Err(CloudError::NotFound { .. }) => Ok(()),
        Err(e) => Err(Error::from(e)),
    };
    for _ in 0..MAX_STATE_RETRIES {
        if v.attached_to(server).is_none() {
            if v.status != VolumeStatus::Detaching {
                return Ok(());
            }
            let until = VolumeWait::DetachedFrom(server.to_string());
            return detached(storage.wait_volume(&id, &until, deadline).await);
        }
        if v.status.is_transitional() {
            v = match storage
                .wait_volume(&id, &VolumeWait::Stable, deadline)
                .await
            {
                Ok(v) => v,
                Err(CloudError::NotFound { .. }) => return Ok(()),
                Err(e) => return Err(e.into()),
            };
            continue;
        }
        match cloud.compute.detach_volume(server, &id).await {
            Ok(()) => {}
            // CSI: a node that no longer exists has nothing attached.
            Err(CloudError::NotFound {
                resource: Resource::Server | Resource::Volume,
                ..
            }) => return Ok(()),
            // Nova has no such attachment; Cinder may still be catching up.
            Err(CloudError::NotFound { .. }) => {}
            Err(CloudError::Conflict { .. }) => {
                v = match storage.get_volume(&id).await {
                    Ok(v) => v,
                    Err(CloudError::NotFound { .. }) => return Ok(()),
                    Err(e) => return Err(e.into()),
                };
                continue;
            }
            Err(e) => return Err(e.into()),
        }
        let until = VolumeWait::DetachedFrom(server.to_string());
        return detached(storage.wait_volume(&id, &until, deadline).await);
    }
    Err(Error::Aborted(format!(
        "volume {id} kept changing state (now {}); retry later",
        v.status
    )))
}
