//! Metadata service adapter: `GET http://169.254.169.254/openstack/latest/meta_data.json`.
//! Bounded: a connect timeout, a per-request timeout, and a few retries with doubling backoff
//! for what may pass (connection errors, timeouts, 5xx, 429). Never through a proxy: the
//! link-local address only answers on the instance's own network.

use std::time::Duration;

use async_trait::async_trait;
use reqwest::{header, StatusCode, Url};

use super::document::{MetaData, MAX_DOCUMENT_BYTES};
use super::options::Timeouts;
use super::port::{InstanceMetadata, Metadata, MetadataError};
use crate::config::DEFAULT_METADATA_URL;

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
    client: reqwest::Client,
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
        crate::tls::install_provider();
        let client = reqwest::Client::builder()
            .no_proxy()
            .connect_timeout(timeouts.connect)
            .timeout(timeouts.request)
            .user_agent(concat!("cinder-csi/", env!("CARGO_PKG_VERSION")))
            .build()
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
        let mut response = self
            .client
            .get(self.url.clone())
            .header(header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(|e| Failure::Transient(self.describe(&e)))?;
        let status = response.status();
        if status.is_server_error() || status == StatusCode::TOO_MANY_REQUESTS {
            return Err(Failure::Transient(format!("HTTP {status}")));
        }
        if !status.is_success() {
            // 404 is what a cloud without OpenStack metadata (or a wrong URL) answers.
            return Err(Failure::Final(MetadataError::Unavailable(format!(
                "HTTP {status}"
            ))));
        }
        let too_large = |n: u64| {
            Failure::Final(MetadataError::Invalid(format!(
                "document is {n} bytes or more, more than the {MAX_DOCUMENT_BYTES} a \
                 meta_data.json may have"
            )))
        };
        if let Some(n) = response
            .content_length()
            .filter(|n| *n > MAX_DOCUMENT_BYTES)
        {
            return Err(too_large(n));
        }
        // Read by chunks so a missing or lying Content-Length cannot make us buffer more.
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| Failure::Transient(format!("reading the body: {}", self.describe(&e))))?
        {
            if (body.len() + chunk.len()) as u64 > MAX_DOCUMENT_BYTES {
                return Err(too_large((body.len() + chunk.len()) as u64));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    }

    fn describe(&self, e: &reqwest::Error) -> String {
        if e.is_timeout() {
            format!(
                "no answer within {}s (connect timeout {}s)",
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
