//! Prometheus metrics: CSI RPCs (count by method and code, latency by method), cloud API
//! requests (upstream's `openstack_api_*` names, so existing dashboards keep working) and
//! each cloud's reachability (the controller's background check).

use std::sync::{Arc, Mutex};

use prometheus_client::encoding::text::encode;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RpcLabels {
    method: String,
    code: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct MethodLabel {
    method: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CloudLabel {
    cloud: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabel {
    request: String,
}

type HistogramFamily<L> = Family<L, Histogram, fn() -> Histogram>;

fn rpc_histogram() -> Histogram {
    // 50 µs … ~400 s: node RPCs are sub-millisecond, controller waits take seconds.
    Histogram::new(exponential_buckets(0.00005, 4.0, 12))
}

fn api_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.005, 2.0, 14))
}

pub struct Metrics {
    registry: Mutex<Registry>,
    rpc_requests: Family<RpcLabels, Counter>,
    rpc_duration: HistogramFamily<MethodLabel>,
    api_requests: Family<RequestLabel, Counter>,
    api_errors: Family<RequestLabel, Counter>,
    api_duration: HistogramFamily<RequestLabel>,
    cloud_up: Family<CloudLabel, Gauge>,
}

impl Metrics {
    pub fn new() -> Arc<Self> {
        let mut registry = Registry::default();
        let rpc_requests = Family::<RpcLabels, Counter>::default();
        let rpc_duration = HistogramFamily::<MethodLabel>::new_with_constructor(rpc_histogram);
        let api_requests = Family::<RequestLabel, Counter>::default();
        let api_errors = Family::<RequestLabel, Counter>::default();
        let api_duration = HistogramFamily::<RequestLabel>::new_with_constructor(api_histogram);
        registry.register(
            "cinder_csi_rpc_requests",
            "CSI RPCs served, by method and gRPC code",
            rpc_requests.clone(),
        );
        registry.register(
            "cinder_csi_rpc_duration_seconds",
            "CSI RPC latency, by method",
            rpc_duration.clone(),
        );
        registry.register(
            "openstack_api_requests",
            "Cloud API requests made, by operation",
            api_requests.clone(),
        );
        registry.register(
            "openstack_api_request_errors",
            "Cloud API requests that failed, by operation",
            api_errors.clone(),
        );
        registry.register(
            "openstack_api_request_duration_seconds",
            "Cloud API request latency, by operation",
            api_duration.clone(),
        );
        let cloud_up = Family::<CloudLabel, Gauge>::default();
        registry.register(
            "cinder_csi_cloud_up",
            "1 when the cloud (cloud=\"\" is [Global]) answered its last background check, else 0",
            cloud_up.clone(),
        );
        Arc::new(Self {
            registry: Mutex::new(registry),
            rpc_requests,
            rpc_duration,
            api_requests,
            api_errors,
            api_duration,
            cloud_up,
        })
    }

    pub fn observe_rpc(&self, method: &str, code: &str, seconds: f64) {
        self.rpc_requests
            .get_or_create(&RpcLabels {
                method: method.to_string(),
                code: code.to_string(),
            })
            .inc();
        self.rpc_duration
            .get_or_create(&MethodLabel {
                method: method.to_string(),
            })
            .observe(seconds);
    }

    /// One cloud API request, e.g. `volume_create`, `volume_attach`, `keystone_token`.
    pub fn observe_api_request(&self, request: &str, seconds: f64, failed: bool) {
        let label = RequestLabel {
            request: request.to_string(),
        };
        self.api_requests.get_or_create(&label).inc();
        if failed {
            self.api_errors.get_or_create(&label).inc();
        }
        self.api_duration.get_or_create(&label).observe(seconds);
    }

    /// The result of one background check of `cloud`.
    pub fn set_cloud_up(&self, cloud: &str, up: bool) {
        self.cloud_up
            .get_or_create(&CloudLabel {
                cloud: cloud.to_string(),
            })
            .set(i64::from(up));
    }

    /// The text exposition format.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        let registry = self.registry.lock().unwrap_or_else(|e| e.into_inner());
        // Writing into a String cannot fail.
        let _ = encode(&mut out, &registry);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_counts() {
        let m = Metrics::new();
        m.observe_rpc("NodePublishVolume", "OK", 0.0001);
        m.observe_rpc("NodePublishVolume", "OK", 0.0002);
        m.observe_api_request("volume_create", 0.3, false);
        m.observe_api_request("volume_create", 0.3, true);
        let text = m.encode();
        assert!(
            text.contains(
                r#"cinder_csi_rpc_requests_total{method="NodePublishVolume",code="OK"} 2"#
            ),
            "{text}"
        );
        assert!(text.contains(r#"openstack_api_requests_total{request="volume_create"} 2"#));
        assert!(text.contains(r#"openstack_api_request_errors_total{request="volume_create"} 1"#));
        assert!(text.contains("cinder_csi_rpc_duration_seconds_bucket"));
    }

    #[test]
    fn cloud_gauge_follows_the_last_check() {
        let m = Metrics::new();
        m.set_cloud_up("east", true);
        m.set_cloud_up("", true);
        m.set_cloud_up("east", false);
        let text = m.encode();
        assert!(
            text.contains(r#"cinder_csi_cloud_up{cloud="east"} 0"#),
            "{text}"
        );
        assert!(
            text.contains(r#"cinder_csi_cloud_up{cloud=""} 1"#),
            "{text}"
        );
    }
}
