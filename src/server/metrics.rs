//! Prometheus metrics: CSI RPCs (count by method and code, latency by method), cloud API
//! requests (upstream's `openstack_api_*` names, so existing dashboards keep working), each
//! cloud's reachability (the controller's background check), the build, and the process
//! (`process_*`, crate::server::process_metrics).
//!
//! `/metrics` speaks both exposition formats: the Prometheus text format 0.0.4 (what
//! `promtool check metrics`, older scrapers and curl read) unless the client asks for
//! OpenMetrics in its `Accept` header, as Prometheus itself does.

use std::sync::{Arc, Mutex};

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
struct BuildLabels {
    version: String,
    revision: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabel {
    request: String,
}

type HistogramFamily<L> = Family<L, Histogram, fn() -> Histogram>;

/// Upper bounds of the RPC latency buckets, in seconds. Node RPCs take 0.1–10 ms; controller
/// RPCs wait on Cinder and Nova for seconds to minutes, where the attach alert draws its line
/// at three quarters of the sidecar timeout: 45 s, 135 s and 450 s for 1 m, 3 m and 10 m are
/// bounds here, so `histogram_quantile` puts a call on the right side of the line, and 60 s
/// and 180 s fall in different buckets (the ×4 buckets this replaces put 52–210 s in one).
/// Other timeouts' thresholds fall between bounds and are interpolated.
pub const RPC_BUCKETS: [f64; 30] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    5.0, 10.0, 15.0, 30.0, 45.0, 60.0, 90.0, 120.0, 135.0, 180.0, 240.0, 300.0, 450.0, 600.0,
    900.0, 1800.0,
];

fn rpc_histogram() -> Histogram {
    Histogram::new(RPC_BUCKETS)
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
        // 1, with the build in its labels (as client_golang's `go_build_info`): joins any
        // series to the version that produced it.
        let build_info = Family::<BuildLabels, Gauge>::default();
        build_info
            .get_or_create(&BuildLabels {
                version: crate::config::version::VERSION.to_string(),
                revision: crate::config::version::GIT_REVISION.to_string(),
            })
            .set(1);
        registry.register(
            "cinder_csi_build_info",
            "1, labelled with the version and git revision of the running build",
            build_info,
        );
        registry.register_collector(Box::new(
            crate::server::process_metrics::ProcessCollector::new(),
        ));
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

    /// Every metric in `format`.
    pub fn encode(&self, format: Format) -> String {
        let mut out = String::new();
        let registry = self.registry.lock().unwrap_or_else(|e| e.into_inner());
        // Writing into a String cannot fail.
        let _ = match format {
            Format::PrometheusText => {
                prometheus_client::encoding::prometheus_text::encode(&mut out, &registry)
            }
            Format::OpenMetrics => prometheus_client::encoding::text::encode(&mut out, &registry),
        };
        out
    }
}

/// An exposition format of `/metrics`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Prometheus text format 0.0.4: counters with `_total` in HELP/TYPE, no `# EOF`.
    PrometheusText,
    /// OpenMetrics 1.0.0 text.
    OpenMetrics,
}

const OPENMETRICS: &str = "application/openmetrics-text";

impl Format {
    pub fn content_type(self) -> &'static str {
        match self {
            Self::PrometheusText => prometheus_client::encoding::prometheus_text::CONTENT_TYPE,
            Self::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
        }
    }

    /// The format a request's `Accept` header prefers (RFC 9110 quality values).
    /// OpenMetrics only when the client names it with a quality at least that of anything
    /// text (`text/plain`, `text/*`, `*/*`); no header, or one naming neither, gets the text
    /// format, which every Prometheus-compatible reader parses.
    pub fn negotiate(accept: Option<&str>) -> Self {
        let Some(accept) = accept else {
            return Self::PrometheusText;
        };
        let (mut openmetrics, mut text) = (0.0_f32, 0.0_f32);
        for range in accept.split(',') {
            let Ok(m) = range.trim().parse::<mime::Mime>() else {
                continue;
            };
            let q = m
                .get_param("q")
                .map_or(Some(1.0), |q| q.as_str().parse::<f32>().ok())
                .unwrap_or(0.0);
            let slot = match (m.type_().as_str(), m.subtype().as_str()) {
                _ if m.essence_str() == OPENMETRICS => &mut openmetrics,
                ("text", "plain" | "*") | ("*", "*") => &mut text,
                _ => continue,
            };
            *slot = slot.max(q);
        }
        if openmetrics > 0.0 && openmetrics >= text {
            Self::OpenMetrics
        } else {
            Self::PrometheusText
        }
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
        let text = m.encode(Format::PrometheusText);
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

    /// Prometheus text 0.0.4, as `promtool check metrics` reads it: HELP and TYPE name the
    /// counter with its `_total`, no OpenMetrics-only lines (`# EOF`, `# UNIT`, `_created`).
    #[test]
    fn prometheus_text_names_counters_with_total() {
        let m = Metrics::new();
        m.observe_rpc("CreateVolume", "OK", 0.5);
        m.observe_api_request("volume_create", 0.3, true);
        m.set_cloud_up("", true);
        let text = m.encode(Format::PrometheusText);
        for line in [
            "# HELP cinder_csi_rpc_requests_total CSI RPCs served, by method and gRPC code.",
            "# TYPE cinder_csi_rpc_requests_total counter",
            "# TYPE openstack_api_request_errors_total counter",
            "# TYPE cinder_csi_rpc_duration_seconds histogram",
            "# TYPE cinder_csi_cloud_up gauge",
        ] {
            assert!(
                text.lines().any(|l| l == line),
                "{line:?} missing in\n{text}"
            );
        }
        for forbidden in ["# EOF", "# UNIT", "_created"] {
            assert!(!text.contains(forbidden), "{forbidden:?} in\n{text}");
        }
        // Every sample's family has HELP and TYPE.
        for sample in text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
        {
            let name = sample.split(['{', ' ']).next().unwrap();
            let family = ["_bucket", "_sum", "_count"]
                .iter()
                .find_map(|s| name.strip_suffix(s))
                .filter(|f| text.contains(&format!("# TYPE {f} histogram")))
                .unwrap_or(name);
            assert!(text.contains(&format!("# HELP {family} ")), "{sample}");
        }
    }

    /// What every scrape has besides the RPC and API families: the build and the process,
    /// named as Prometheus' process collector names them.
    #[test]
    fn build_and_process_metrics() {
        let text = Metrics::new().encode(Format::PrometheusText);
        let want = format!(
            r#"cinder_csi_build_info{{version="{}",revision="{}"}} 1"#,
            crate::config::version::VERSION,
            crate::config::version::GIT_REVISION
        );
        assert!(text.lines().any(|l| l == want), "{want} missing in\n{text}");
        for (name, kind) in [
            ("process_cpu_seconds_total", "counter"),
            ("process_resident_memory_bytes", "gauge"),
            ("process_virtual_memory_bytes", "gauge"),
            ("process_open_fds", "gauge"),
            ("process_max_fds", "gauge"),
            ("process_start_time_seconds", "gauge"),
            ("process_threads", "gauge"),
        ] {
            assert!(
                text.contains(&format!("# TYPE {name} {kind}\n")),
                "{name} {kind} missing in\n{text}"
            );
            assert!(
                text.lines().any(|l| l.starts_with(&format!("{name} "))),
                "no {name} sample in\n{text}"
            );
        }
        let om = Metrics::new().encode(Format::OpenMetrics);
        assert!(om.contains("# TYPE process_cpu_seconds counter\n"), "{om}");
        assert!(
            om.lines()
                .any(|l| l.starts_with("process_cpu_seconds_total ")),
            "{om}"
        );
    }

    /// 60 s and 180 s attaches land in different buckets, and the attach alert's thresholds
    /// for the 1 m, 3 m and 10 m timeouts (three quarters of each) are bucket bounds.
    #[test]
    fn buckets_resolve_attach_times() {
        let bucket = |s: f64| RPC_BUCKETS.iter().position(|b| s <= *b);
        assert_ne!(bucket(60.0), bucket(180.0));
        assert_ne!(bucket(50.0), bucket(70.0));
        for threshold in [45.0, 135.0, 450.0] {
            assert!(RPC_BUCKETS.contains(&threshold), "{threshold}");
        }
        assert!(RPC_BUCKETS.windows(2).all(|w| w[0] < w[1]));
        let m = Metrics::new();
        m.observe_rpc("ControllerPublishVolume", "OK", 60.0);
        let text = m.encode(Format::PrometheusText);
        let le = |b: &str| {
            format!(
                r#"cinder_csi_rpc_duration_seconds_bucket{{method="ControllerPublishVolume",le="{b}"}}"#
            )
        };
        for (b, n) in [("45", 0), ("60", 1), ("180", 1), ("+Inf", 1)] {
            let line = format!("{} {n}", le(b));
            assert!(text.lines().any(|l| l == line), "{line} missing in\n{text}");
        }
    }

    #[test]
    fn openmetrics_on_request() {
        let m = Metrics::new();
        m.observe_rpc("CreateVolume", "OK", 0.5);
        let text = m.encode(Format::OpenMetrics);
        assert!(text.ends_with("# EOF\n"), "{text}");
        assert!(
            text.contains("# TYPE cinder_csi_rpc_requests counter"),
            "{text}"
        );
        assert!(
            text.contains(r#"cinder_csi_rpc_requests_total{method="CreateVolume",code="OK"} 1"#)
        );
    }

    #[test]
    fn negotiation() {
        use Format::*;
        let cases = [
            (None, PrometheusText),
            (Some(""), PrometheusText),
            (Some("text/plain"), PrometheusText),
            (Some("text/plain; version=0.0.4"), PrometheusText),
            (Some("*/*"), PrometheusText),
            (Some("application/json"), PrometheusText),
            (Some("application/openmetrics-text"), OpenMetrics),
            (
                Some("application/openmetrics-text; version=1.0.0"),
                OpenMetrics,
            ),
            (Some("application/openmetrics-text;q=0"), PrometheusText),
            (
                Some("application/openmetrics-text;q=0.2, text/plain;q=0.9"),
                PrometheusText,
            ),
            (
                Some("text/plain;q=0.5, application/openmetrics-text"),
                OpenMetrics,
            ),
            // What Prometheus 3 sends by default.
            (
                Some(
                    "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.6,\
                     application/openmetrics-text;version=0.0.1;q=0.5,text/plain;version=1.0.0;\
                     escaping=allow-utf-8;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2",
                ),
                OpenMetrics,
            ),
            // Prometheus with scrape_protocols: [PrometheusText0.0.4].
            (
                Some("text/plain;version=0.0.4;q=1,*/*;q=0.1"),
                PrometheusText,
            ),
        ];
        for (accept, want) in cases {
            assert_eq!(Format::negotiate(accept), want, "{accept:?}");
        }
    }

    #[test]
    fn cloud_gauge_follows_the_last_check() {
        let m = Metrics::new();
        m.set_cloud_up("east", true);
        m.set_cloud_up("", true);
        m.set_cloud_up("east", false);
        let text = m.encode(Format::PrometheusText);
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
