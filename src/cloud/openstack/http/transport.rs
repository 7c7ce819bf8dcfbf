//! Sends one request and reads its whole answer over the pooled connections: hyper's HTTP/1.1
//! client with keep-alive, at most N idle connections per endpoint, idle ones closed after
//! `POOL_IDLE_TIMEOUT`, and new ones opened by `connect.rs` (at most N open per endpoint).
//! Requests are built with reqwest's builder by the adapter; only sending happens here.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::header::{HeaderValue, ACCEPT, PROXY_AUTHORIZATION, USER_AGENT};
use http::{HeaderMap, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::proxy::matcher::Matcher;
use hyper_util::rt::{TokioExecutor, TokioTimer};

use super::connect::{BoxError, Connector};

/// A complete answer.
pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

/// No complete answer. URLs name ids and filters, never credentials.
#[derive(Debug)]
pub enum SendError {
    /// Nothing within the request's timeout.
    Timeout { url: String, after: Duration },
    /// No connection: refused, name lookup, proxy, TLS, or every connection busy.
    Connect { url: String, source: BoxError },
    /// The connection broke before an answer came (e.g. the server closed it as we wrote).
    Send { url: String, source: BoxError },
    /// The answer broke off while its body was read.
    Body { url: String, source: BoxError },
    /// reqwest built something that is not an HTTP request.
    Request { url: String, detail: String },
}

impl SendError {
    /// The connection broke without an answer, so a request safe to repeat may be resent.
    pub fn is_broken(&self) -> bool {
        matches!(self, SendError::Connect { .. } | SendError::Send { .. })
    }

    pub fn is_timeout(&self) -> bool {
        matches!(self, SendError::Timeout { .. })
    }

    pub fn is_connect(&self) -> bool {
        matches!(self, SendError::Connect { .. })
    }
}

impl std::fmt::Display for SendError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SendError::Timeout { url, after } => write!(f, "no answer from {url} within {after:?}"),
            SendError::Connect { url, .. } => write!(f, "connecting for {url}"),
            SendError::Send { url, .. } => write!(f, "sending the request to {url}"),
            SendError::Body { url, .. } => write!(f, "reading the answer of {url}"),
            SendError::Request { url, detail } => write!(f, "the request to {url}: {detail}"),
        }
    }
}

impl std::error::Error for SendError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SendError::Connect { source, .. }
            | SendError::Send { source, .. }
            | SendError::Body { source, .. } => Some(source.as_ref()),
            _ => None,
        }
    }
}

pub struct Transport {
    client: Client<Connector, Full<Bytes>>,
    proxies: Option<Arc<Matcher>>,
    user_agent: HeaderValue,
    timeout: Duration,
}

impl Transport {
    /// `idle_per_endpoint` idle connections kept at most, each for `idle_for`; requests time
    /// out after `timeout` unless they carry their own (reqwest's `RequestBuilder::timeout`).
    pub fn new(
        connector: Connector,
        idle_per_endpoint: usize,
        idle_for: Duration,
        user_agent: &str,
        timeout: Duration,
    ) -> Self {
        let proxies = connector.proxies.clone();
        let client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(idle_for)
            .pool_max_idle_per_host(idle_per_endpoint)
            // Without a timer the pool never closes idle connections.
            .pool_timer(TokioTimer::new())
            .build(connector);
        Self {
            client,
            proxies,
            user_agent: HeaderValue::from_str(user_agent)
                .unwrap_or_else(|_| HeaderValue::from_static("cinder-csi")),
            timeout,
        }
    }

    /// Send `req` and read the whole answer, within its timeout.
    pub async fn send(&self, req: reqwest::Request) -> Result<Reply, SendError> {
        let url = req.url().to_string();
        let timeout = req.timeout().copied().unwrap_or(self.timeout);
        let req = self.to_http(req).map_err(|detail| SendError::Request {
            url: url.clone(),
            detail,
        })?;
        let exchange = async {
            let resp = self.client.request(req).await.map_err(|e| {
                let source: BoxError = Box::new(e);
                let connect = source
                    .downcast_ref::<hyper_util::client::legacy::Error>()
                    .is_some_and(|e| e.is_connect());
                if connect {
                    SendError::Connect {
                        url: url.clone(),
                        source,
                    }
                } else {
                    SendError::Send {
                        url: url.clone(),
                        source,
                    }
                }
            })?;
            let (parts, body) = resp.into_parts();
            let body = body
                .collect()
                .await
                .map_err(|e| SendError::Body {
                    url: url.clone(),
                    source: Box::new(e),
                })?
                .to_bytes();
            Ok(Reply {
                status: parts.status,
                headers: parts.headers,
                body,
            })
        };
        match tokio::time::timeout(timeout, exchange).await {
            Ok(result) => result,
            Err(_) => Err(SendError::Timeout {
                url,
                after: timeout,
            }),
        }
    }

    /// reqwest's request as hyper's, with the headers reqwest's own client would add.
    fn to_http(&self, req: reqwest::Request) -> Result<http::Request<Full<Bytes>>, String> {
        let body = match req.body() {
            None => Bytes::new(),
            Some(b) => Bytes::copy_from_slice(
                b.as_bytes()
                    .ok_or("a streamed body (the adapter sends whole bodies only)")?,
            ),
        };
        let mut headers = req.headers().clone();
        headers
            .entry(USER_AGENT)
            .or_insert_with(|| self.user_agent.clone());
        headers
            .entry(ACCEPT)
            .or_insert_with(|| HeaderValue::from_static("*/*"));
        let uri: http::Uri = req.url().as_str().parse().map_err(|e| format!("{e}"))?;
        // A plain-http request through a proxy carries the proxy's credentials itself (an
        // https one gives them to the CONNECT, in `connect.rs`).
        if uri.scheme_str() == Some("http") {
            if let Some(auth) = self
                .proxies
                .as_ref()
                .and_then(|m| m.intercept(&uri))
                .and_then(|p| p.basic_auth().cloned())
            {
                headers.insert(PROXY_AUTHORIZATION, auth);
            }
        }
        let mut out = http::Request::builder()
            .method(req.method().clone())
            .uri(uri)
            .body(Full::new(body))
            .map_err(|e| e.to_string())?;
        *out.headers_mut() = headers;
        Ok(out)
    }
}
