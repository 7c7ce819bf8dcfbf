//! One tracing span per RPC (method, volume id), and the log level each RPC gets.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use tonic::codegen::http;
use tower::{Layer, Service};
use tracing::Instrument;

use super::tracker::{GuardedBody, RpcTracker};
use crate::server::metrics::Metrics;

/// Tower layer opening one span per RPC: `rpc{method=… volume_id=…}`. Handlers record the
/// volume id; the request body (which may hold secrets) is never logged.
/// It also feeds the RPC metrics.
#[derive(Clone)]
pub struct RpcSpanLayer {
    metrics: Arc<Metrics>,
    rpcs: Arc<RpcTracker>,
}

impl RpcSpanLayer {
    pub fn new(metrics: Arc<Metrics>, rpcs: Arc<RpcTracker>) -> Self {
        Self { metrics, rpcs }
    }
}

impl<S> Layer<S> for RpcSpanLayer {
    type Service = RpcSpan<S>;
    fn layer(&self, inner: S) -> Self::Service {
        RpcSpan {
            inner,
            metrics: self.metrics.clone(),
            rpcs: self.rpcs.clone(),
        }
    }
}

#[derive(Clone)]
pub struct RpcSpan<S> {
    inner: S,
    metrics: Arc<Metrics>,
    rpcs: Arc<RpcTracker>,
}

impl<S, B> Service<http::Request<B>> for RpcSpan<S>
where
    S: Service<http::Request<B>, Response = http::Response<tonic::body::Body>> + Send,
    S::Future: Send + 'static,
    S::Error: std::fmt::Display,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        let method = req
            .uri()
            .path()
            .rsplit('/')
            .next()
            .unwrap_or_default()
            .to_string();
        let span = tracing::info_span!(
            "rpc",
            method = %method,
            volume_id = tracing::field::Empty,
            duration_ms = tracing::field::Empty
        );
        let chatty = is_chatty(&method);
        let started = Instant::now();
        let metrics = self.metrics.clone();
        let guard = self.rpcs.enter();
        let fut = self.inner.call(req);
        Box::pin(
            async move {
                let res = fut.await;
                let secs = started.elapsed().as_secs_f64();
                let ms = secs * 1e3;
                match &res {
                    Ok(resp) => {
                        // Errors come trailers-only, so grpc-status is in the headers; a
                        // successful unary response carries it in the trailers.
                        let code = resp
                            .headers()
                            .get("grpc-status")
                            .and_then(|v| v.to_str().ok())
                            .and_then(|v| v.parse::<i32>().ok())
                            .map(tonic::Code::from_i32)
                            .unwrap_or(tonic::Code::Ok);
                        metrics.observe_rpc(&method, &format!("{code:?}"), secs);
                        tracing::Span::current().record("duration_ms", ms);
                        if chatty {
                            tracing::debug!(code = ?code, "rpc done");
                        } else {
                            tracing::info!(code = ?code, "rpc done");
                        }
                    }
                    Err(e) => {
                        metrics.observe_rpc(&method, "Transport", secs);
                        tracing::warn!(duration_ms = ms, error = %e, "rpc transport error")
                    }
                }
                // The RPC counts as in flight until its response body (message and trailers)
                // has been handed to the connection.
                res.map(|resp| {
                    resp.map(|body| {
                        tonic::body::Body::new(GuardedBody {
                            body,
                            _guard: guard,
                        })
                    })
                })
            }
            .instrument(span),
        )
    }
}

/// RPCs that kubelet, the sidecars and liveness probes call constantly: logged at debug.
fn is_chatty(method: &str) -> bool {
    matches!(
        method,
        "Probe"
            | "GetPluginInfo"
            | "GetPluginCapabilities"
            | "ControllerGetCapabilities"
            | "NodeGetCapabilities"
            | "NodeGetInfo"
            | "NodeGetVolumeStats"
            | "ListVolumes"
            | "ListSnapshots"
            | "GetCapacity"
            | "ControllerGetVolume"
    )
}
