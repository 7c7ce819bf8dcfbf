//! The port's traits on [`LocalCloud`]: mutations run on the blocking pool, reads and waits
//! read the in-memory state directly.

use async_trait::async_trait;
use tokio::time::Instant;

use super::backend::LocalCloud;
use super::{attach, records, waits};
use crate::cloud::{
    Backup, BackupFilter, BackupWait, BlockStorage, Capacity, CloudError, CloudResult, Compute,
    MigrationPolicy, NewBackup, NewSnapshot, NewVolume, Page, PageRequest, Server,
    ServerAttachment, Snapshot, SnapshotFilter, SnapshotWait, Volume, VolumeFilter, VolumeType,
    VolumeWait,
};

#[async_trait]
impl BlockStorage for LocalCloud {
    async fn check(&self) -> CloudResult<()> {
        self.blocking(|inner| {
            let root = inner.layout.root();
            std::fs::metadata(root.join("volumes"))
                .map(|_| ())
                .map_err(|e| {
                    super::backend::io_error(format_args!("state directory {}", root.display()), e)
                })
        })
        .await
    }

    async fn create_volume(&self, req: &NewVolume) -> CloudResult<Volume> {
        let req = req.clone();
        self.blocking(move |inner| inner.create_volume(&req)).await
    }

    async fn get_volume(&self, id: &str) -> CloudResult<Volume> {
        self.inner.get_volume(id)
    }

    async fn list_volumes(
        &self,
        filter: &VolumeFilter,
        page: &PageRequest,
    ) -> CloudResult<Page<Volume>> {
        self.inner.list_volumes(filter, page)
    }

    async fn delete_volume(&self, id: &str, cascade: bool) -> CloudResult<()> {
        let id = id.to_string();
        self.blocking(move |inner| inner.delete_volume(&id, cascade))
            .await
    }

    async fn extend_volume(&self, id: &str, new_size_gib: u64, online: bool) -> CloudResult<()> {
        let id = id.to_string();
        self.blocking(move |inner| inner.extend_volume(&id, new_size_gib, online))
            .await
    }

    async fn retype_volume(
        &self,
        id: &str,
        new_type: &str,
        policy: MigrationPolicy,
    ) -> CloudResult<()> {
        let (id, new_type) = (id.to_string(), new_type.to_string());
        self.blocking(move |inner| inner.retype_volume(&id, &new_type, policy))
            .await
    }

    async fn wait_volume(
        &self,
        id: &str,
        until: &VolumeWait,
        deadline: Instant,
    ) -> CloudResult<Volume> {
        waits::wait_volume(&self.inner, id, until, deadline).await
    }

    async fn get_volume_type(&self, name_or_id: &str) -> CloudResult<VolumeType> {
        records::find_volume_type(name_or_id)
            .ok_or_else(|| CloudError::not_found(crate::cloud::Resource::VolumeType, name_or_id))
    }

    async fn create_snapshot(&self, req: &NewSnapshot) -> CloudResult<Snapshot> {
        let req = req.clone();
        self.blocking(move |inner| inner.create_snapshot(&req))
            .await
    }

    async fn get_snapshot(&self, id: &str) -> CloudResult<Snapshot> {
        self.inner.get_snapshot(id)
    }

    async fn list_snapshots(
        &self,
        filter: &SnapshotFilter,
        page: &PageRequest,
    ) -> CloudResult<Page<Snapshot>> {
        self.inner.list_snapshots(filter, page)
    }

    async fn delete_snapshot(&self, id: &str) -> CloudResult<()> {
        let id = id.to_string();
        self.blocking(move |inner| inner.delete_snapshot(&id)).await
    }

    async fn wait_snapshot(
        &self,
        id: &str,
        until: &SnapshotWait,
        deadline: Instant,
    ) -> CloudResult<Snapshot> {
        waits::wait_snapshot(&self.inner, id, until, deadline).await
    }

    async fn backups_supported(&self) -> CloudResult<bool> {
        Ok(true)
    }

    async fn create_backup(&self, req: &NewBackup) -> CloudResult<Backup> {
        let req = req.clone();
        self.blocking(move |inner| inner.create_backup(&req)).await
    }

    async fn get_backup(&self, id: &str) -> CloudResult<Backup> {
        self.inner.get_backup(id)
    }

    async fn list_backups(
        &self,
        filter: &BackupFilter,
        page: &PageRequest,
    ) -> CloudResult<Page<Backup>> {
        self.inner.list_backups(filter, page)
    }

    async fn delete_backup(&self, id: &str) -> CloudResult<()> {
        let id = id.to_string();
        self.blocking(move |inner| inner.delete_backup(&id)).await
    }

    async fn wait_backup(
        &self,
        id: &str,
        until: &BackupWait,
        deadline: Instant,
    ) -> CloudResult<Backup> {
        waits::wait_backup(&self.inner, id, until, deadline).await
    }

    async fn availability_zones(&self) -> CloudResult<Vec<String>> {
        Ok(vec![records::ZONE.to_string()])
    }

    async fn capacity(
        &self,
        availability_zone: Option<&str>,
        volume_type: Option<&str>,
    ) -> CloudResult<Capacity> {
        let (az, vt) = (
            availability_zone.map(str::to_string),
            volume_type.map(str::to_string),
        );
        self.blocking(move |inner| inner.capacity(az.as_deref(), vt.as_deref()))
            .await
    }
}

#[async_trait]
impl Compute for LocalCloud {
    async fn get_server(&self, id: &str) -> CloudResult<Server> {
        if self.inner.nodes.contains(id) {
            return Ok(attach::server(id));
        }
        let id = id.to_string();
        self.blocking(move |inner| inner.get_server(&id)).await
    }

    async fn attach_volume(
        &self,
        server_id: &str,
        volume_id: &str,
        multiattach: bool,
    ) -> CloudResult<ServerAttachment> {
        let (s, v) = (server_id.to_string(), volume_id.to_string());
        self.blocking(move |inner| inner.attach_volume(&s, &v, multiattach))
            .await
    }

    async fn detach_volume(&self, server_id: &str, volume_id: &str) -> CloudResult<()> {
        let (s, v) = (server_id.to_string(), volume_id.to_string());
        self.blocking(move |inner| inner.detach_volume(&s, &v))
            .await
    }

    async fn list_attachments(&self, server_id: &str) -> CloudResult<Vec<ServerAttachment>> {
        let s = server_id.to_string();
        self.blocking(move |inner| inner.list_attachments(&s)).await
    }
}
