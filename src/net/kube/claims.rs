//! The adapter: `GET /api/v1/namespaces/NS/persistentvolumeclaims/NAME` through the adapters'
//! HTTP client, with the service account's bearer token (never logged: the header is marked
//! sensitive and no error carries it). RBAC needs `get` on persistentvolumeclaims only.

use std::collections::BTreeMap;
use std::time::Duration;

use async_trait::async_trait;
use http::header::{HeaderValue, ACCEPT, AUTHORIZATION};
use http::{Method, StatusCode};
use serde::Deserialize;

use super::access::{ApiAccess, Credentials};
use super::port::{ClaimReader, KubeError};
use crate::net::http_client::{Outgoing, Settings, Transport};

const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
const REQUEST_TIMEOUT: Duration = Duration::from_secs(15);
/// A PVC is small; its annotations may not exceed 256 KiB in all.
const MAX_BODY: usize = 1 << 20;

pub struct ApiClaims {
    client: Transport,
    access: ApiAccess,
}

#[derive(Deserialize)]
struct Claim {
    metadata: ObjectMeta,
}

#[derive(Deserialize)]
struct ObjectMeta {
    #[serde(default)]
    annotations: BTreeMap<String, String>,
}

/// The `message` of a Kubernetes `Status` answer, when the body is one.
#[derive(Deserialize)]
struct ApiStatus {
    message: String,
}

impl ApiClaims {
    /// Reads the TLS files (blocking: call it off the async workers); opens nothing yet.
    pub fn new(access: ApiAccess) -> Result<Self, String> {
        let client = Transport::new(Settings {
            tls: Some(&access.tls),
            // The API server is reached directly, as client-go does in a pod.
            proxies: None,
            per_endpoint: 2,
            idle_for: Duration::from_secs(30),
            connect_timeout: CONNECT_TIMEOUT,
            request_timeout: REQUEST_TIMEOUT,
            max_body: MAX_BODY,
            user_agent: concat!("cinder-csi/", env!("CARGO_PKG_VERSION")),
        })
        .map_err(|e| format!("Kubernetes API client for {}: {e}", access.server))?;
        Ok(Self { client, access })
    }

    async fn token(&self) -> Result<Option<String>, KubeError> {
        match &self.access.credentials {
            Credentials::ClientCertificate => Ok(None),
            Credentials::Token(t) => Ok(Some(t.clone())),
            Credentials::TokenFile(path) => tokio::fs::read_to_string(path)
                .await
                .map(|t| Some(t.trim().to_string()))
                .map_err(|e| {
                    KubeError::Unavailable(format!(
                        "reading the token file {}: {e}",
                        path.display()
                    ))
                }),
        }
    }
}

#[async_trait]
impl ClaimReader for ApiClaims {
    async fn annotations(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<BTreeMap<String, String>, KubeError> {
        let claim = format!("{namespace}/{name}");
        let mut url = self.access.server.clone();
        url.path_segments_mut()
            .map_err(|()| KubeError::Invalid {
                claim: claim.clone(),
                why: format!("server {} cannot take a path", self.access.server),
            })?
            .pop_if_empty()
            // Each pushed segment is percent-encoded: a name cannot change the path.
            .extend([
                "api",
                "v1",
                "namespaces",
                namespace,
                "persistentvolumeclaims",
                name,
            ]);
        let mut req = Outgoing::new(Method::GET, url)
            .header(ACCEPT, HeaderValue::from_static("application/json"));
        if let Some(token) = self.token().await? {
            let mut value = HeaderValue::from_str(&format!("Bearer {token}")).map_err(|_| {
                KubeError::Invalid {
                    claim: claim.clone(),
                    why: "the bearer token holds characters a header cannot carry".into(),
                }
            })?;
            value.set_sensitive(true);
            req = req.header(AUTHORIZATION, value);
        }
        let reply = self
            .client
            .send(req)
            .await
            .map_err(|e| KubeError::Unavailable(chain(&e)))?;
        let status = reply.status;
        if status == StatusCode::OK {
            let c: Claim = serde_json::from_slice(&reply.body).map_err(|e| KubeError::Invalid {
                claim: claim.clone(),
                why: e.to_string(),
            })?;
            return Ok(c.metadata.annotations);
        }
        let message = serde_json::from_slice::<ApiStatus>(&reply.body)
            .map(|s| s.message)
            .unwrap_or_else(|_| {
                String::from_utf8_lossy(&reply.body)
                    .chars()
                    .take(300)
                    .collect()
            });
        let why = format!("HTTP {status}: {message}");
        match status {
            StatusCode::TOO_MANY_REQUESTS => Err(KubeError::Unavailable(why)),
            s if s.is_server_error() => Err(KubeError::Unavailable(why)),
            StatusCode::FORBIDDEN => Err(KubeError::Refused {
                claim,
                why: format!(
                    "{why} (the controller's service account needs `get` on \
                     persistentvolumeclaims: the chart grants it with pvcAnnotations: true)"
                ),
            }),
            _ => Err(KubeError::Refused { claim, why }),
        }
    }
}

/// The error and its causes (refused, reset, the TLS failure): a URL never holds the token.
fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut message = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    message
}
