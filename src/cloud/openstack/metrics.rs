//! Request counters per OpenStack operation: count, errors and a latency histogram, in atomics
//! so the hot path takes no lock. The observability work exports a [`MetricsSnapshot`]; the
//! storm benchmark reads the per-service totals.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::cloud::{Op, Service};

/// Upper bounds (seconds) of the latency histogram buckets; the last bucket is +Inf.
pub const LATENCY_BUCKETS: [f64; 11] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

#[derive(Default)]
struct OpCounters {
    requests: AtomicU64,
    errors: AtomicU64,
    latency_micros: AtomicU64,
    /// Cumulative-free counts per bucket; index `LATENCY_BUCKETS.len()` is +Inf.
    buckets: [AtomicU64; LATENCY_BUCKETS.len() + 1],
}

/// Where else each request is reported (the Prometheus registry, wired in `app`).
pub trait ApiObserver: Send + Sync {
    fn observe(&self, op: Op, latency: Duration, failed: bool);
}

/// Shared counters of one cloud's adapter (or of several, when `app` passes the same `Arc`).
pub struct ApiMetrics {
    ops: Vec<OpCounters>,
    observer: Option<Box<dyn ApiObserver>>,
}

impl Default for ApiMetrics {
    fn default() -> Self {
        Self {
            ops: Op::ALL.iter().map(|_| OpCounters::default()).collect(),
            observer: None,
        }
    }
}

impl ApiMetrics {
    pub fn new() -> Self {
        Self::default()
    }

    /// Counters that also report every request to `observer`.
    pub fn with_observer(observer: impl ApiObserver + 'static) -> Self {
        Self {
            observer: Some(Box::new(observer)),
            ..Self::default()
        }
    }

    /// Record one finished request. `failed` = transport error or an HTTP error status.
    pub fn record(&self, op: Op, latency: Duration, failed: bool) {
        let c = &self.ops[op as usize];
        c.requests.fetch_add(1, Ordering::Relaxed);
        if failed {
            c.errors.fetch_add(1, Ordering::Relaxed);
        }
        let micros = u64::try_from(latency.as_micros()).unwrap_or(u64::MAX);
        c.latency_micros.fetch_add(micros, Ordering::Relaxed);
        let secs = latency.as_secs_f64();
        let idx = LATENCY_BUCKETS
            .iter()
            .position(|b| secs <= *b)
            .unwrap_or(LATENCY_BUCKETS.len());
        c.buckets[idx].fetch_add(1, Ordering::Relaxed);
        if let Some(o) = &self.observer {
            o.observe(op, latency, failed);
        }
    }

    pub fn snapshot(&self) -> MetricsSnapshot {
        let ops = Op::ALL
            .iter()
            .map(|&op| {
                let c = &self.ops[op as usize];
                OpSnapshot {
                    op,
                    requests: c.requests.load(Ordering::Relaxed),
                    errors: c.errors.load(Ordering::Relaxed),
                    latency_total: Duration::from_micros(c.latency_micros.load(Ordering::Relaxed)),
                    buckets: std::array::from_fn(|i| c.buckets[i].load(Ordering::Relaxed)),
                }
            })
            .collect();
        MetricsSnapshot { ops }
    }
}

/// Counters of one operation at one moment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpSnapshot {
    pub op: Op,
    pub requests: u64,
    pub errors: u64,
    pub latency_total: Duration,
    /// Non-cumulative counts per [`LATENCY_BUCKETS`] bucket, then +Inf.
    pub buckets: [u64; LATENCY_BUCKETS.len() + 1],
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetricsSnapshot {
    pub ops: Vec<OpSnapshot>,
}

impl MetricsSnapshot {
    pub fn get(&self, op: Op) -> &OpSnapshot {
        &self.ops[op as usize]
    }

    /// Requests sent to one service.
    pub fn requests(&self, service: Service) -> u64 {
        self.ops
            .iter()
            .filter(|o| o.op.service() == service)
            .map(|o| o.requests)
            .sum()
    }

    pub fn errors(&self, service: Service) -> u64 {
        self.ops
            .iter()
            .filter(|o| o.op.service() == service)
            .map(|o| o.errors)
            .sum()
    }

    /// What happened between `earlier` and `self` (for benchmarks that measure a phase).
    pub fn since(&self, earlier: &MetricsSnapshot) -> MetricsSnapshot {
        let ops = self
            .ops
            .iter()
            .zip(&earlier.ops)
            .map(|(now, then)| OpSnapshot {
                op: now.op,
                requests: now.requests - then.requests,
                errors: now.errors - then.errors,
                latency_total: now.latency_total.saturating_sub(then.latency_total),
                buckets: std::array::from_fn(|i| now.buckets[i] - then.buckets[i]),
            })
            .collect();
        MetricsSnapshot { ops }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_per_op_and_service() {
        let m = ApiMetrics::new();
        m.record(Op::VolumeCreate, Duration::from_millis(30), false);
        m.record(Op::VolumeCreate, Duration::from_secs(20), true);
        m.record(Op::ServerAttach, Duration::from_millis(400), false);
        m.record(Op::KeystoneToken, Duration::from_millis(300), false);
        let s = m.snapshot();
        let c = s.get(Op::VolumeCreate);
        assert_eq!((c.requests, c.errors), (2, 1));
        assert_eq!(c.buckets[3], 1, "30 ms falls in the 50 ms bucket");
        assert_eq!(c.buckets[LATENCY_BUCKETS.len()], 1, "20 s is +Inf");
        assert_eq!(s.requests(Service::Cinder), 2);
        assert_eq!(s.requests(Service::Nova), 1);
        assert_eq!(s.requests(Service::Keystone), 1);
        assert_eq!(s.errors(Service::Cinder), 1);

        m.record(Op::VolumeGet, Duration::from_millis(1), false);
        let d = m.snapshot().since(&s);
        assert_eq!(d.requests(Service::Cinder), 1);
        assert_eq!(d.get(Op::VolumeGet).requests, 1);
        assert_eq!(d.get(Op::VolumeCreate).requests, 0);
    }

    #[test]
    fn observer_sees_every_request() {
        use std::sync::{Arc, Mutex};
        struct Log(Arc<Mutex<Vec<(&'static str, bool)>>>);
        impl ApiObserver for Log {
            fn observe(&self, op: Op, _latency: Duration, failed: bool) {
                self.0.lock().unwrap().push((op.name(), failed));
            }
        }
        let seen = Arc::new(Mutex::new(Vec::new()));
        let m = ApiMetrics::with_observer(Log(seen.clone()));
        m.record(Op::ServerAttach, Duration::from_millis(1), false);
        m.record(Op::KeystoneToken, Duration::from_millis(1), true);
        assert_eq!(
            *seen.lock().unwrap(),
            vec![("volume_attach", false), ("keystone_token", true)]
        );
        assert_eq!(m.snapshot().get(Op::ServerAttach).requests, 1);
    }
}
