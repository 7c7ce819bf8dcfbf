//! The cloud adapters of the plan: OpenStack clients per `[Global]` section or the local
//! backend, with their metrics and health observers.

use std::sync::Arc;
use std::time::Duration;

use super::error::AppError;
use super::local_node::local_node_id;
use super::plan::Plan;
use super::standby::LocalStandby;
use crate::app::cli::{Backend, ServeArgs};
use crate::cloud::local::{LocalCloud, LocalOptions};
use crate::cloud::openstack::{ApiMetrics, ApiObserver, OpenStack, OpenStackOptions, ProxyOptions};
use crate::cloud::{Cloud, Clouds, Op};
use crate::config::{BlockStorageConfig, GlobalConfig};
use crate::driver::probe::CloudHealthObserver;
use crate::server::metrics::Metrics;

/// Reports every OpenStack request to the Prometheus registry.
struct ApiToPrometheus(Arc<Metrics>);

impl ApiObserver for ApiToPrometheus {
    fn observe(&self, op: Op, latency: Duration, failed: bool) {
        self.0
            .observe_api_request(op.name(), latency.as_secs_f64(), failed);
    }
}

/// The OpenStack clouds the controller serves: one adapter per resolved `[Global]` section,
/// all counting into one [`ApiMetrics`]. No request is made here; a bad section is a
/// configuration error (exit 64).
#[cfg(test)]
pub(super) async fn openstack_clouds(
    plan: &Plan,
    metrics: &Arc<Metrics>,
) -> Result<(Clouds, Arc<ApiMetrics>), AppError> {
    let (adapters, api_metrics) = openstack_adapters(plan, metrics).await?;
    Ok((
        Clouds::new(adapters.iter().map(OpenStack::cloud)),
        api_metrics,
    ))
}

/// The adapters themselves, one per section (the credential reloader holds them too).
async fn openstack_adapters(
    plan: &Plan,
    metrics: &Arc<Metrics>,
) -> Result<(Vec<Arc<OpenStack>>, Arc<ApiMetrics>), AppError> {
    let api_metrics = Arc::new(ApiMetrics::with_observer(ApiToPrometheus(metrics.clone())));
    let mut adapters = Vec::new();
    for (name, global) in &plan.clouds {
        let os = openstack_cloud(name, global, &plan.config.block_storage, &api_metrics).await?;
        adapters.push(Arc::new(os));
    }
    Ok((adapters, api_metrics))
}

/// The adapter of one validated `[Global]` section, as the controller builds it (no request
/// is made).
pub async fn openstack_cloud(
    name: &str,
    global: &GlobalConfig,
    bs: &BlockStorageConfig,
    api_metrics: &Arc<ApiMetrics>,
) -> Result<OpenStack, AppError> {
    let mut opts = OpenStackOptions::from_config(global.clone(), bs.clone());
    // Upstream's Go transport honours HTTP(S)_PROXY / NO_PROXY; so do we.
    opts.proxy = ProxyOptions::from_env(|k| std::env::var(k).ok());
    OpenStack::new(name, &opts, api_metrics.clone())
        .await
        .map_err(AppError::Config)
}

/// The clouds the controller serves, from the chosen backend and the validated `[Global]`
/// sections in `plan.clouds`: `cloud::openstack` builds one `Cloud` per section (its requests
/// reported to `metrics`), `cloud::local` one from `--local-dir`.
pub async fn build_clouds(
    args: &ServeArgs,
    plan: &Plan,
    metrics: &Arc<Metrics>,
) -> Result<Clouds, AppError> {
    Ok(controller_clouds(args, plan, metrics).await?.0)
}

/// [`build_clouds`], with the OpenStack adapters (none for the local backend) for the
/// credential reloader, and on the local backend its [`LocalStandby`].
pub(super) async fn controller_clouds(
    args: &ServeArgs,
    plan: &Plan,
    metrics: &Arc<Metrics>,
) -> Result<(Clouds, Vec<Arc<OpenStack>>, Option<LocalStandby>), AppError> {
    match args.backend {
        Backend::Local => {
            let dir = args
                .local_dir
                .clone()
                .ok_or_else(|| AppError::Config("--backend local needs --local-dir DIR".into()))?;
            // Opening reconciles loop devices and links with the records (blocking pool). A
            // DIR another controller holds makes this one its standby (a second replica).
            let (local, takeover) = LocalCloud::open_or_stand_by(LocalOptions {
                dir,
                nodes: vec![local_node_id(args)],
                zones: args.local_zones.clone(),
                ..Default::default()
            })
            .await
            .map_err(|e| AppError::Runtime(format!("local backend: {e}")))?;
            let cloud = Arc::new(local);
            let clouds = Clouds::new([Cloud::new("", cloud.clone())]);
            Ok((clouds, Vec::new(), Some(LocalStandby { cloud, takeover })))
        }
        Backend::Openstack => {
            let (adapters, _) = openstack_adapters(plan, metrics).await?;
            let clouds = Clouds::new(adapters.iter().map(OpenStack::cloud));
            Ok((clouds, adapters, None))
        }
    }
}

/// Sets `cinder_csi_cloud_up` from the background cloud checks.
pub(super) struct CloudUpGauge(pub(super) Arc<Metrics>);

impl CloudHealthObserver for CloudUpGauge {
    fn observe(&self, cloud: &str, up: bool) {
        self.0.set_cloud_up(cloud, up);
    }
}
