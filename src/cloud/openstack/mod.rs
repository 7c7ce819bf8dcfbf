//! The OpenStack adapter of the cloud port: Keystone v3 auth, Cinder v3 and Nova, with
//! microversions negotiated from the version documents, one shared status watcher per cloud
//! and request metrics. Build one [`OpenStack`] per configured cloud with [`OpenStack::new`].
//!
//! Files by resource: `keystone`/`auth`/`catalog` (tokens), `http`/`api`/`errors` (requests),
//! `microversion`, `dto` (wire formats), `volumes`, `snapshots`, `backups`, `volume_types`,
//! `quota`, `zones` (availability zones), `servers` (Nova), `watcher`, `metrics`, `diagnose`
//! (what `cinder-csi doctor` asks).

mod api;
mod auth;
mod backups;
mod catalog;
pub mod diagnose;
pub(crate) mod dto;
pub(crate) mod errors;
mod http;
mod ids;
pub(crate) mod keystone;
pub mod metrics;
pub(crate) mod microversion;
pub mod options;
mod quota;
mod servers;
mod snapshots;
mod type_cache;
mod volume_types;
mod volumes;
mod watcher;
mod zones;

#[cfg(test)]
mod testserver;

use std::sync::Arc;

use async_trait::async_trait;
use tokio::time::Instant;

pub use metrics::{ApiMetrics, ApiObserver, MetricsSnapshot};
pub use options::{AuthOptions, Interface, OpenStackOptions, ProxyOptions, Secret, TlsOptions};

use super::{
    Backup, BackupFilter, BackupWait, BlockStorage, Capacity, Cloud, CloudResult, Compute,
    MigrationPolicy, NewBackup, NewSnapshot, NewVolume, Page, PageRequest, Server,
    ServerAttachment, Snapshot, SnapshotFilter, SnapshotWait, Volume, VolumeFilter, VolumeType,
    VolumeWait,
};
use api::Api;
use auth::AuthMethod;
use keystone::Keystone;
use type_cache::TypeCache;
use watcher::Watcher;

/// One OpenStack cloud: implements both [`BlockStorage`] and [`Compute`].
pub struct OpenStack {
    name: String,
    api: Arc<Api>,
    watcher: Watcher,
    types: TypeCache,
    metrics: Arc<ApiMetrics>,
}

impl OpenStack {
    /// Validate the options and build the HTTP client. No request is made: the first call
    /// authenticates, so a controller can start (and report not-ready) while Keystone is down.
    /// Errors are configuration errors naming the cloud.conf keys.
    pub async fn new(
        name: &str,
        opts: &OpenStackOptions,
        metrics: Arc<ApiMetrics>,
    ) -> Result<Self, String> {
        let label = if name.is_empty() {
            "[Global]".to_string()
        } else {
            format!("[Global \"{name}\"]")
        };
        if opts.auth_url.trim().is_empty() {
            return Err(format!("{label}: auth-url is required"));
        }
        let method = AuthMethod::from_options(&opts.auth).map_err(|e| format!("{label}: {e}"))?;
        let client = http::build_client(opts)
            .await
            .map_err(|e| format!("{label}: {e}"))?;
        let http = http::Http::new(client, metrics.clone(), opts.api_concurrency);
        let keystone = Keystone::new(
            http.clone(),
            &opts.auth_url,
            method,
            opts.interface,
            opts.region.clone(),
        );
        let api = Arc::new(Api::new(http, keystone, opts.ignore_volume_microversion));
        Ok(Self {
            name: name.to_string(),
            watcher: Watcher::new(api.clone()),
            types: TypeCache::default(),
            api,
            metrics,
        })
    }

    /// Both ports of this cloud, for `Clouds`.
    pub fn into_cloud(self) -> Cloud {
        let name = self.name.clone();
        let me = Arc::new(self);
        Cloud {
            name,
            storage: me.clone(),
            compute: me,
        }
    }

    pub fn metrics(&self) -> &Arc<ApiMetrics> {
        &self.metrics
    }

    /// The microversions negotiated with Cinder and Nova (negotiating first if needed).
    pub async fn microversions(&self) -> CloudResult<Microversions> {
        let c = self.api.cinder_version().await?;
        let n = self.api.nova_version().await?;
        Ok(Microversions {
            cinder: c.effective().to_string(),
            cinder_max: c.cloud_max.to_string(),
            nova: n.effective().to_string(),
            nova_max: n.cloud_max.to_string(),
        })
    }
}

/// What [`OpenStack::microversions`] reports: what requests carry, and the cloud's maximum.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Microversions {
    pub cinder: String,
    pub cinder_max: String,
    pub nova: String,
    pub nova_max: String,
}

#[async_trait]
impl BlockStorage for OpenStack {
    async fn check(&self) -> CloudResult<()> {
        self.check_volumes().await
    }

    async fn create_volume(&self, req: &NewVolume) -> CloudResult<Volume> {
        self.create_volume_impl(req).await
    }

    async fn get_volume(&self, id: &str) -> CloudResult<Volume> {
        self.get_volume_impl(id).await
    }

    async fn list_volumes(
        &self,
        filter: &VolumeFilter,
        page: &PageRequest,
    ) -> CloudResult<Page<Volume>> {
        self.list_volumes_impl(filter, page).await
    }

    async fn delete_volume(&self, id: &str, cascade: bool) -> CloudResult<()> {
        self.delete_volume_impl(id, cascade).await
    }

    async fn extend_volume(&self, id: &str, new_size_gib: u64, online: bool) -> CloudResult<()> {
        self.extend_volume_impl(id, new_size_gib, online).await
    }

    async fn retype_volume(
        &self,
        id: &str,
        new_type: &str,
        policy: MigrationPolicy,
    ) -> CloudResult<()> {
        self.retype_volume_impl(id, new_type, policy).await
    }

    async fn wait_volume(
        &self,
        id: &str,
        until: &VolumeWait,
        deadline: Instant,
    ) -> CloudResult<Volume> {
        self.wait_volume_impl(id, until, deadline).await
    }

    async fn get_volume_type(&self, name_or_id: &str) -> CloudResult<VolumeType> {
        self.get_volume_type_impl(name_or_id).await
    }

    async fn create_snapshot(&self, req: &NewSnapshot) -> CloudResult<Snapshot> {
        self.create_snapshot_impl(req).await
    }

    async fn get_snapshot(&self, id: &str) -> CloudResult<Snapshot> {
        self.get_snapshot_impl(id).await
    }

    async fn list_snapshots(
        &self,
        filter: &SnapshotFilter,
        page: &PageRequest,
    ) -> CloudResult<Page<Snapshot>> {
        self.list_snapshots_impl(filter, page).await
    }

    async fn delete_snapshot(&self, id: &str) -> CloudResult<()> {
        self.delete_snapshot_impl(id).await
    }

    async fn wait_snapshot(
        &self,
        id: &str,
        until: &SnapshotWait,
        deadline: Instant,
    ) -> CloudResult<Snapshot> {
        self.wait_snapshot_impl(id, until, deadline).await
    }

    async fn backups_supported(&self) -> CloudResult<bool> {
        self.backups_supported_impl().await
    }

    async fn create_backup(&self, req: &NewBackup) -> CloudResult<Backup> {
        self.create_backup_impl(req).await
    }

    async fn get_backup(&self, id: &str) -> CloudResult<Backup> {
        self.get_backup_impl(id).await
    }

    async fn list_backups(
        &self,
        filter: &BackupFilter,
        page: &PageRequest,
    ) -> CloudResult<Page<Backup>> {
        self.list_backups_impl(filter, page).await
    }

    async fn delete_backup(&self, id: &str) -> CloudResult<()> {
        self.delete_backup_impl(id).await
    }

    async fn wait_backup(
        &self,
        id: &str,
        until: &BackupWait,
        deadline: Instant,
    ) -> CloudResult<Backup> {
        self.wait_backup_impl(id, until, deadline).await
    }

    async fn availability_zones(&self) -> CloudResult<Vec<String>> {
        self.availability_zones_impl().await
    }

    async fn capacity(
        &self,
        availability_zone: Option<&str>,
        volume_type: Option<&str>,
    ) -> CloudResult<Capacity> {
        self.capacity_impl(availability_zone, volume_type).await
    }
}

#[async_trait]
impl Compute for OpenStack {
    async fn get_server(&self, id: &str) -> CloudResult<Server> {
        self.get_server_impl(id).await
    }

    async fn attach_volume(
        &self,
        server_id: &str,
        volume_id: &str,
        multiattach: bool,
    ) -> CloudResult<ServerAttachment> {
        self.attach_volume_impl(server_id, volume_id, multiattach)
            .await
    }

    async fn detach_volume(&self, server_id: &str, volume_id: &str) -> CloudResult<()> {
        self.detach_volume_impl(server_id, volume_id).await
    }

    async fn list_attachments(&self, server_id: &str) -> CloudResult<Vec<ServerAttachment>> {
        self.list_attachments_impl(server_id).await
    }
}
