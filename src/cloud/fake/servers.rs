//! `Servers` on the fake: Nova servers and volume attachments.

use async_trait::async_trait;

use super::rules::{refused, PROFILE};
use super::state::VolumeAction;
use super::FakeCloud;
use crate::cloud::model;
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
        let Some(server) = s.servers.get(server_id) else {
            return Err(CloudError::not_found(Resource::Server, server_id));
        };
        let zone = server.availability_zone.clone().unwrap_or_default();
        let v = s.volume(volume_id)?;
        model::attach(&PROFILE, &v, server_id, &zone, multiattach).map_err(refused)?;
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
        let v = s.volume(volume_id)?;
        model::detach(&v, server_id).map_err(refused)?;
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
