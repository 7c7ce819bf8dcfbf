//! The adapter itself: one cloud's Keystone session, Cinder and Nova API, status watcher,
//! type cache and metrics.

use std::sync::Arc;

use super::api::Api;
use super::auth::AuthMethod;
use super::http;
use super::keystone::Keystone;
use super::metrics::ApiMetrics;
use super::options::OpenStackOptions;
use super::type_cache::TypeCache;
use super::watcher::Watcher;
use crate::cloud::{Cloud, CloudResult};

/// One OpenStack cloud: implements every role of the port.
pub struct OpenStack {
    pub(super) name: String,
    /// The section it was built from (credentials replaced by `reload_credentials`).
    pub(super) config: crate::config::GlobalConfig,
    pub(super) api: Arc<Api>,
    pub(super) watcher: Watcher,
    pub(super) types: TypeCache,
    pub(super) metrics: Arc<ApiMetrics>,
    /// `[BlockStorage] group-type`: the group type the operator vouches is consistent (its
    /// specs may be hidden from the driver's user).
    pub(super) group_type: Option<String>,
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
        let (global, block_storage) = (&opts.global, &opts.block_storage);
        let auth_url = global.auth_url.as_deref().unwrap_or_default();
        if auth_url.trim().is_empty() {
            return Err(format!("{label}: auth-url is required"));
        }
        let method = AuthMethod::from_options(&global.auth).map_err(|e| format!("{label}: {e}"))?;
        let http = http::Http::build(opts, metrics.clone())
            .await
            .map_err(|e| format!("{label}: {e}"))?;
        let keystone = Keystone::new(http.clone(), global, method);
        let api = Arc::new(Api::new(
            http,
            keystone,
            block_storage.ignore_volume_microversion,
        ));
        Ok(Self {
            name: name.to_string(),
            config: global.clone(),
            watcher: Watcher::new(api.clone()),
            types: TypeCache::default(),
            api,
            metrics,
            group_type: block_storage.group_type.clone(),
        })
    }

    /// This cloud in every role, for `Clouds`.
    pub fn into_cloud(self) -> Cloud {
        Arc::new(self).cloud()
    }

    /// This cloud in every role, sharing the adapter (the credential reloader keeps one too).
    pub fn cloud(self: &Arc<Self>) -> Cloud {
        Cloud::new(self.name.clone(), self.clone())
    }

    /// The `[Global "name"]` it serves (`""`: `[Global]`).
    pub fn name(&self) -> &str {
        &self.name
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
