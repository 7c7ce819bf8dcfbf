//! `Servers` on the fake: Nova servers and volume attachments.

use async_trait::async_trait;

use super::state::{conflict, VolumeAction};
use super::FakeCloud;
use crate::cloud::{
    CloudError, CloudResult, Op, Resource, Server, ServerAttachment, Servers, VolumeStatus,
};

#[async_trait]
impl Servers for FakeCloud {
    async fn get_server(&self, id: &str) -> CloudResult<Server> {
        let mut s = self.lock();
        s.enter(Op::ServerGet)?;
        s.servers
            .get(id)
            .cloned()
            .ok_or_else(|| CloudError::not_found(Resource::Server, id))
    }

    async fn attach_volume(
        &self,
        server_id: &str,
        volume_id: &str,
        multiattach: bool,
    ) -> CloudResult<ServerAttachment> {
        let mut s = self.lock();
        s.enter(Op::ServerAttach)?;
        if !s.servers.contains_key(server_id) {
            return Err(CloudError::not_found(Resource::Server, server_id));
        }
        let v = s
            .observe_volume(volume_id)
            .ok_or_else(|| CloudError::not_found(Resource::Volume, volume_id))?;
        if v.attached_to(server_id).is_some() {
            return Err(conflict(format!(
                "volume {volume_id} is already attached to the instance {server_id}"
            )));
        }
        let shared = v.status == VolumeStatus::InUse && v.multiattach && multiattach;
        if v.status != VolumeStatus::Available && !shared {
            return Err(conflict(format!(
                "Invalid volume: volume {volume_id} status must be available to reserve, but \
                 the status is {}",
                v.status
            )));
        }
        // Next free virtio letter on this server: /dev/vdb, /dev/vdc, ...
        let used = s
            .volumes
            .values()
            .filter(|f| f.volume.attached_to(server_id).is_some())
            .count();
        let device = format!("/dev/vd{}", (b'b' + used as u8) as char);
        let pending = s.pending(VolumeAction::Attached {
            server: server_id.to_string(),
            device: device.clone(),
        });
        if let Some(f) = s.volumes.get_mut(volume_id) {
            f.volume.status = VolumeStatus::Attaching;
            f.pending = pending;
        }
        Ok(ServerAttachment {
            volume_id: volume_id.to_string(),
            device: Some(device),
        })
    }

    async fn detach_volume(&self, server_id: &str, volume_id: &str) -> CloudResult<()> {
        let mut s = self.lock();
        s.enter(Op::ServerDetach)?;
        if !s.servers.contains_key(server_id) {
            return Err(CloudError::not_found(Resource::Server, server_id));
        }
        let v = s
            .observe_volume(volume_id)
            .ok_or_else(|| CloudError::not_found(Resource::Volume, volume_id))?;
        if v.attached_to(server_id).is_none() {
            return Err(CloudError::not_found(
                Resource::Attachment,
                format!("{volume_id} on {server_id}"),
            ));
        }
        if v.status != VolumeStatus::InUse {
            return Err(conflict(format!(
                "Invalid volume: Unable to detach volume. Volume status must be 'in-use', is {}",
                v.status
            )));
        }
        let pending = s.pending(VolumeAction::Detached {
            server: server_id.to_string(),
        });
        if let Some(f) = s.volumes.get_mut(volume_id) {
            f.volume.status = VolumeStatus::Detaching;
            f.pending = pending;
        }
        Ok(())
    }

    async fn list_attachments(&self, server_id: &str) -> CloudResult<Vec<ServerAttachment>> {
        let mut s = self.lock();
        s.enter(Op::ServerAttachmentList)?;
        if !s.servers.contains_key(server_id) {
            return Err(CloudError::not_found(Resource::Server, server_id));
        }
        Ok(s.volumes
            .values()
            .filter_map(|f| {
                f.volume.attached_to(server_id).map(|a| ServerAttachment {
                    volume_id: f.volume.id.clone(),
                    device: a.device.clone(),
                })
            })
            .collect())
    }
}
