//! Metadata service adapter: `GET http://169.254.169.254/openstack/latest/meta_data.json`.
//! Bounded: a connect timeout, a per-request timeout, and a few retries with doubling backoff
//! for what may pass (connection errors, timeouts, 5xx, 429). Never through a proxy: the
//! link-local address only answers on the instance's own network.

use std::time::Duration;

use async_trait::async_trait;
use http::header::{HeaderValue, ACCEPT};
use http::{Method, StatusCode};
use url::Url;

use super::document::{MetaData, MAX_DOCUMENT_BYTES};
use super::options::Timeouts;
use super::port::{InstanceMetadata, Metadata, MetadataError};
use crate::config::{TlsOptions, DEFAULT_METADATA_URL};
use crate::net::http_client::{Outgoing, SendError, Settings, Transport};

/// Tries per lookup, the first included.
pub const ATTEMPTS: u32 = 3;
/// Pause before the second try; doubles before each further one.
pub const FIRST_BACKOFF: Duration = Duration::from_millis(500);

/// How often and how patiently to retry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retry {
    pub attempts: u32,
    pub first_backoff: Duration,
}

impl Default for Retry {
    fn default() -> Self {
        Self {
            attempts: ATTEMPTS,
            first_backoff: FIRST_BACKOFF,
        }
    }
}

pub struct MetadataService {
    client: Transport,
    url: Url,
    timeouts: Timeouts,
    retry: Retry,
}

/// One try's failure: worth another try, or final.
enum Failure {
    Transient(String),
    Final(MetadataError),
}

impl MetadataService {
    /// Checks the URL and builds the client; no request is made.
    pub fn new(url: &str, timeouts: Timeouts, retry: Retry) -> Result<Self, MetadataError> {
        let parsed = Url::parse(url)
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https") && u.has_host())
            .ok_or_else(|| {
                MetadataError::Invalid(format!(
                    "metadata URL {url:?} is not an http(s) URL (default {DEFAULT_METADATA_URL})"
                ))
            })?;
        // TLS (and the system's trusted roots) only for an https URL; never a proxy.
        let tls = TlsOptions::default();
        let client = Transport::new(Settings {
            tls: (parsed.scheme() == "https").then_some(&tls),
            proxies: None,
            per_endpoint: 1,
            idle_for: Duration::from_secs(1),
            connect_timeout: timeouts.connect,
            request_timeout: timeouts.request,
            max_body: MAX_DOCUMENT_BYTES as usize,
            user_agent: concat!("cinder-csi/", env!("CARGO_PKG_VERSION")),
        })
        .map_err(|e| MetadataError::Invalid(format!("cannot build an HTTP client: {e}")))?;
        Ok(Self {
            client,
            url: parsed,
            timeouts,
            retry: Retry {
                attempts: retry.attempts.max(1),
                ..retry
            },
        })
    }

    /// Fetches and parses the document, retrying what may pass.
    pub async fn read(&self) -> Result<MetaData, MetadataError> {
        let origin = format!("metadata service {}", self.url);
        let mut backoff = self.retry.first_backoff;
        let mut attempt = 1;
        loop {
            let error = match self.fetch_once().await {
                Ok(bytes) => return MetaData::parse(&bytes, &origin),
                Err(Failure::Final(e)) => {
                    return Err(match e {
                        MetadataError::Unavailable(m) => {
                            MetadataError::Unavailable(format!("{origin}: {m}"))
                        }
                        MetadataError::Invalid(m) => {
                            MetadataError::Invalid(format!("{origin}: {m}"))
                        }
                    })
                }
                Err(Failure::Transient(m)) => m,
            };
            if attempt >= self.retry.attempts {
                return Err(MetadataError::Unavailable(format!(
                    "{origin}: {error} (gave up after {attempt} attempts)"
                )));
            }
            tracing::debug!(attempt, %error, url = %self.url, "metadata service try failed; retrying");
            tokio::time::sleep(backoff).await;
            backoff = backoff.saturating_mul(2);
            attempt += 1;
        }
    }

    async fn fetch_once(&self) -> Result<Vec<u8>, Failure> {
        let req = Outgoing::new(Method::GET, self.url.clone())
            .header(ACCEPT, HeaderValue::from_static("application/json"));
        let reply = match self.client.send(req).await {
            Ok(r) => r,
            // The transport reads no more than MAX_DOCUMENT_BYTES, whatever Content-Length says.
            Err(SendError::TooLarge { .. }) => {
                return Err(Failure::Final(MetadataError::Invalid(format!(
                    "document is more than the {MAX_DOCUMENT_BYTES} bytes a meta_data.json may have"
                ))))
            }
            Err(e) => return Err(Failure::Transient(self.describe(&e))),
        };
        let status = reply.status;
        if status.is_server_error() || status == StatusCode::TOO_MANY_REQUESTS {
            return Err(Failure::Transient(format!("HTTP {status}")));
        }
        if !status.is_success() {
            // 404 is what a cloud without OpenStack metadata (or a wrong URL) answers.
            return Err(Failure::Final(MetadataError::Unavailable(format!(
                "HTTP {status}"
            ))));
        }
        Ok(reply.body.to_vec())
    }

    fn describe(&self, e: &SendError) -> String {
        if let SendError::Timeout { in_body, .. } = e {
            format!(
                "{}no answer within {}s (connect timeout {}s)",
                if *in_body { "reading the body: " } else { "" },
                self.timeouts.request.as_secs_f64(),
                self.timeouts.connect.as_secs_f64()
            )
        } else {
            // The chain holds the cause (refused, unreachable, reset).
            let mut message = e.to_string();
            let mut source = std::error::Error::source(e);
            while let Some(cause) = source {
                message.push_str(": ");
                message.push_str(&cause.to_string());
                source = cause.source();
            }
            message
        }
    }
}

#[async_trait]
impl Metadata for MetadataService {
    async fn instance(&self) -> Result<InstanceMetadata, MetadataError> {
        Ok(self.read().await?.instance())
    }
}
