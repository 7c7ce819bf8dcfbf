//! One cloud's HTTP client (`Http`), its answers and its proxies: the single place a request
//! is sent.

use super::*;

use std::sync::Arc;
use std::time::{Duration, Instant};

use http::HeaderMap;
use hyper_util::client::proxy::matcher::Matcher;
use serde::de::DeserializeOwned;

use super::super::errors::{request_id, ApiError};
use super::super::metrics::ApiMetrics;
use super::super::options::{redact_userinfo, OpenStackOptions, ProxyOptions};
use crate::cloud::Op;
use crate::net::http_client::{Outgoing, Settings, Transport};

/// Pooled connections idle longer than this are closed: below common server keep-alive
/// timeouts (gunicorn 2 s, uWSGI 4 s, Apache 5 s), so an idle connection of ours neither holds
/// a server thread for long nor is written into while the server closes it.
pub const POOL_IDLE_TIMEOUT: Duration = Duration::from_millis(1500);

/// Longest answer read: a page of 1,000 volumes with details is about 2 MB, a big catalog 1 MB.
pub const MAX_ANSWER_BYTES: usize = 64 << 20;

pub fn user_agent() -> String {
    format!("cinder-csi/{}", crate::config::version::VERSION)
}

/// Loopback never goes through a proxy (as in Go's `ProxyFromEnvironment`).
pub(super) const ALWAYS_DIRECT: &str = "localhost,127.0.0.1,::1";

/// Which destinations go through which proxy; `None` when no proxy is set. A proxy URL that
/// does not parse is an error naming its variable, with any password redacted.
pub(super) fn proxies(p: &ProxyOptions) -> Result<Option<Matcher>, String> {
    if p.http.is_none() && p.https.is_none() {
        return Ok(None);
    }
    let mut m = Matcher::builder();
    for (key, url, https) in [
        ("HTTPS_PROXY", &p.https, true),
        ("HTTP_PROXY", &p.http, false),
    ] {
        let Some(url) = url else { continue };
        // As Go and curl read it: a proxy without a scheme is an http one.
        let full = if url.contains("://") {
            url.clone()
        } else {
            format!("http://{url}")
        };
        let parsed =
            url::Url::parse(&full).map_err(|e| format!("{key} {:?}: {e}", redact_userinfo(url)))?;
        if parsed.host_str().is_none_or(str::is_empty) {
            return Err(format!("{key} {:?}: no host in it", redact_userinfo(url)));
        }
        m = if https { m.https(full) } else { m.http(full) };
    }
    let no_proxy = match &p.no_proxy {
        Some(list) => format!("{list},{ALWAYS_DIRECT}"),
        None => ALWAYS_DIRECT.to_string(),
    };
    Ok(Some(m.no(no_proxy).build()))
}

/// A successful answer, body read.
#[derive(Debug)]
pub struct Answer {
    pub headers: HeaderMap,
    pub body: Vec<u8>,
}

impl Answer {
    pub fn json<T: DeserializeOwned>(&self, op: Op) -> Result<T, ApiError> {
        serde_json::from_slice(&self.body).map_err(|e| ApiError::bad_answer(op.name(), e))
    }
}

/// Sends requests and records them.
#[derive(Clone)]
pub struct Http {
    pub(super) transport: Arc<Transport>,
    pub metrics: Arc<ApiMetrics>,
    /// Slots per endpoint: a request is sent (and its timeout starts) once it holds one.
    pub limits: Arc<EndpointLimits>,
}

impl Http {
    /// The client of one cloud: reads the TLS files (off the async workers), checks the
    /// proxies, and opens nothing yet.
    pub async fn build(opts: &OpenStackOptions, metrics: Arc<ApiMetrics>) -> Result<Self, String> {
        let proxies = proxies(&opts.proxy)?;
        let per_endpoint = opts.api_concurrency().max(1);
        let (tls, connect_timeout, request_timeout) = (
            opts.global.tls.clone(),
            opts.connect_timeout,
            opts.request_timeout,
        );
        let transport = tokio::task::spawn_blocking(move || {
            Transport::new(Settings {
                tls: Some(&tls),
                proxies,
                // No more connections than requests may be in flight: a burst reuses them.
                per_endpoint,
                idle_for: POOL_IDLE_TIMEOUT,
                connect_timeout,
                request_timeout,
                max_body: MAX_ANSWER_BYTES,
                user_agent: &user_agent(),
            })
        })
        .await
        .map_err(|e| format!("reading TLS files: {e}"))??;
        if opts.global.tls.is_insecure() {
            tracing::warn!(
                auth_url = opts.global.auth_url.as_deref().unwrap_or_default(),
                "tls-insecure is set: TLS certificates of Keystone, Cinder and Nova are NOT verified; \
                 anyone on the network path can impersonate them and capture the credentials. \
                 Use ca-file instead."
            );
        }
        Ok(Self {
            transport: Arc::new(transport),
            metrics,
            limits: Arc::new(EndpointLimits::new(per_endpoint)),
        })
    }

    /// Send `req` as operation `op`. 2xx is success; `also_ok` admits other statuses (the
    /// version documents answer 300 Multiple Choices). Waits for a slot on the endpoint
    /// first; the request's timeout counts from when it is sent, not from the wait.
    pub async fn execute(
        &self,
        op: Op,
        req: Outgoing,
        also_ok: &[u16],
    ) -> Result<Answer, ApiError> {
        // Held until the answer is read, and across the one resend below: a retry takes no
        // second slot, so retries never pile up on an endpoint that is already busy.
        let _slot = self.limits.acquire(&req.url, Turn::of(&req.method)).await;
        // A server may close an idle keep-alive connection just as we reuse it ("connection
        // closed before message completed"). Like Go's transport (upstream's), resend once
        // when that happens to a request that is safe to repeat (GET, HEAD).
        let replay = req.is_safe().then(|| req.clone());
        match self.attempt(op, req, also_ok).await {
            Err((e, true)) if replay.is_some() => {
                tracing::debug!(op = op.name(), error = %e, "resending a safe request once");
                let again = replay.expect("checked");
                self.attempt(op, again, also_ok).await.map_err(|(e, _)| e)
            }
            other => other.map_err(|(e, _)| e),
        }
    }

    /// One send; on failure, whether the connection broke without an answer (worth a resend
    /// of a safe request), as opposed to an HTTP error or a timeout.
    pub(super) async fn attempt(
        &self,
        op: Op,
        req: Outgoing,
        also_ok: &[u16],
    ) -> Result<Answer, (ApiError, bool)> {
        let started = Instant::now();
        let result = self.transport.send(req).await;
        let latency = started.elapsed();
        match result {
            Ok(reply) => {
                let (status, headers) = (reply.status, reply.headers);
                let ok = status.is_success() || also_ok.contains(&status.as_u16());
                self.metrics.record(op, latency, !ok);
                tracing::debug!(
                    op = op.name(),
                    status = status.as_u16(),
                    latency_ms = latency.as_millis() as u64,
                    request_id = request_id(&headers).as_deref().unwrap_or(""),
                    "openstack request"
                );
                if ok {
                    Ok(Answer {
                        headers,
                        body: reply.body.to_vec(),
                    })
                } else {
                    Err((
                        ApiError::from_response(status, &headers, &reply.body),
                        false,
                    ))
                }
            }
            Err(e) => {
                self.metrics.record(op, latency, true);
                tracing::debug!(op = op.name(), latency_ms = latency.as_millis() as u64, error = %e, "openstack request failed");
                let broken = e.is_broken();
                Err((ApiError::transport(op.name(), &e), broken))
            }
        }
    }
}
