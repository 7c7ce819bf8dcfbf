//! Sends one request and reads its whole answer over a pooled HTTP/1.1 connection (`pool.rs`:
//! at most N open per endpoint, idle ones closed after `idle_for`; `connect.rs` opens them).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::header::{HeaderValue, ACCEPT, HOST, PROXY_AUTHORIZATION, USER_AGENT};
use http::{HeaderMap, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::proxy::matcher::Matcher;

use super::connect::{BoxError, Connector};
use super::pool::Pool;
use super::request::Outgoing;
use super::tls_config;
use crate::config::TlsOptions;

const TCP_KEEPALIVE: Duration = Duration::from_secs(30);

/// How one client behaves.
pub struct Settings<'a> {
    /// `None`: plain http only, and no trusted roots loaded.
    pub tls: Option<&'a TlsOptions>,
    /// Which destinations go through which proxy; `None`: all direct.
    pub proxies: Option<Matcher>,
    /// Connections open (and so idle) per endpoint, at most.
    pub per_endpoint: usize,
    /// Idle connections are closed after this.
    pub idle_for: Duration,
    /// TCP + proxy tunnel + TLS handshake, and separately the wait for a free connection.
    pub connect_timeout: Duration,
    /// Sending and reading the answer, unless the request carries its own.
    pub request_timeout: Duration,
    /// Answers longer than this are refused.
    pub max_body: usize,
    pub user_agent: &'a str,
}

/// A complete answer.
pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

/// No complete answer. URLs name ids and filters, never credentials.
#[derive(Debug)]
pub enum SendError {
    /// No complete answer within the request's timeout; `in_body`: its head had come.
    Timeout {
        url: String,
        after: Duration,
        in_body: bool,
    },
    /// No connection: refused, name lookup, proxy, TLS, or every connection busy.
    Connect { url: String, source: BoxError },
    /// The connection broke before an answer came (e.g. the server closed it as we wrote).
    Send { url: String, source: BoxError },
    /// The answer broke off while its body was read.
    Body { url: String, source: BoxError },
    /// The answer is (or says it is) longer than the client reads.
    TooLarge { url: String, limit: usize },
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
            SendError::Timeout {
                url,
                after,
                in_body: false,
            } => write!(f, "no answer from {url} within {after:?}"),
            SendError::Timeout { url, after, .. } => {
                write!(f, "the answer of {url} did not end within {after:?}")
            }
            SendError::Connect { url, .. } => write!(f, "connecting for {url}"),
            SendError::Send { url, .. } => write!(f, "sending the request to {url}"),
            SendError::Body { url, .. } => write!(f, "reading the answer of {url}"),
            SendError::TooLarge { url, limit } => {
                write!(f, "the answer of {url} is longer than {limit} bytes")
            }
        }
    }
}

impl std::error::Error for SendError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SendError::Connect { source, .. }
            | SendError::Send { source, .. }
            | SendError::Body { source, .. } => Some(source.as_ref()),
            SendError::Timeout { .. } | SendError::TooLarge { .. } => None,
        }
    }
}

pub struct Transport {
    pool: Pool,
    proxies: Option<Arc<Matcher>>,
    user_agent: HeaderValue,
    timeout: Duration,
    max_body: usize,
}

impl Transport {
    /// Reads the TLS files named in `settings.tls` (blocking: call it off the async workers)
    /// and opens nothing yet. Errors name the cloud.conf key and file.
    pub fn new(settings: Settings<'_>) -> Result<Self, String> {
        let tls = match settings.tls {
            Some(t) => Some(tokio_rustls::TlsConnector::from(Arc::new(
                tls_config::client_config(t)?,
            ))),
            None => None,
        };
        let mut tcp = HttpConnector::new();
        tcp.enforce_http(false);
        tcp.set_nodelay(true);
        tcp.set_keepalive(Some(TCP_KEEPALIVE));
        tcp.set_connect_timeout(Some(settings.connect_timeout));
        let proxies = settings.proxies.map(Arc::new);
        let per_endpoint = settings.per_endpoint.max(1);
        let connector = Connector {
            tcp,
            tls,
            proxies: proxies.clone(),
            connect_timeout: settings.connect_timeout,
        };
        Ok(Self {
            pool: Pool::new(connector, per_endpoint, settings.idle_for),
            proxies,
            user_agent: HeaderValue::from_str(settings.user_agent)
                .unwrap_or_else(|_| HeaderValue::from_static("cinder-csi")),
            timeout: settings.request_timeout,
            max_body: settings.max_body,
        })
    }

    /// Send `req` and read the whole answer, within its timeout.
    pub async fn send(&self, req: Outgoing) -> Result<Reply, SendError> {
        let url = req.url.to_string();
        let timeout = req.timeout.unwrap_or(self.timeout);
        let (uri, req) = self.to_http(req).map_err(|source| SendError::Send {
            url: url.clone(),
            source,
        })?;
        let deadline = tokio::time::Instant::now() + timeout;
        let timed_out = |in_body| SendError::Timeout {
            url: url.clone(),
            after: timeout,
            in_body,
        };
        let exchange = async {
            let mut lease =
                self.pool
                    .checkout(&uri)
                    .await
                    .map_err(|source| SendError::Connect {
                        url: url.clone(),
                        source,
                    })?;
            let mut req = req;
            // Origin form to the API, absolute form to a proxy.
            if !lease.proxied {
                let origin = uri.path_and_query().map_or("/", |p| p.as_str());
                *req.uri_mut() = origin.parse().expect("a path and query is a URI");
            }
            let resp = lease
                .sender()
                .send_request(req)
                .await
                .map_err(|e| SendError::Send {
                    url: url.clone(),
                    source: Box::new(e),
                })?;
            Ok::<_, SendError>((lease, resp))
        };
        let (lease, resp) = tokio::time::timeout_at(deadline, exchange)
            .await
            .map_err(|_| timed_out(false))??;
        let (parts, body) = resp.into_parts();
        let too_large = || SendError::TooLarge {
            url: url.clone(),
            limit: self.max_body,
        };
        let claimed = parts
            .headers
            .get(http::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
        if claimed.is_some_and(|n| n > self.max_body as u64) {
            return Err(too_large());
        }
        // Limited stops reading past the limit whatever the length said (or if it said none).
        let body = tokio::time::timeout_at(deadline, Limited::new(body, self.max_body).collect())
            .await
            .map_err(|_| timed_out(true))?
            .map_err(|source| {
                if source.is::<http_body_util::LengthLimitError>() {
                    too_large()
                } else {
                    SendError::Body {
                        url: url.clone(),
                        source,
                    }
                }
            })?
            .to_bytes();
        // Only a whole answer frees the connection for the next request; on any error above
        // the lease is dropped and the connection closed.
        lease.give_back().await;
        Ok(Reply {
            status: parts.status,
            headers: parts.headers,
            body,
        })
    }

    /// The request as hyper takes it, with User-Agent and Accept unless set, and the proxy's
    /// credentials for a plain-http request through one (an https one gives them to the
    /// CONNECT, in `connect.rs`).
    fn to_http(&self, req: Outgoing) -> Result<(http::Uri, http::Request<Full<Bytes>>), BoxError> {
        let mut headers = req.headers;
        headers
            .entry(USER_AGENT)
            .or_insert_with(|| self.user_agent.clone());
        headers
            .entry(ACCEPT)
            .or_insert_with(|| HeaderValue::from_static("*/*"));
        let uri: http::Uri = req.url.as_str().parse()?;
        // The pool's connections are bare HTTP/1.1: Host is ours to send.
        let host = match req.url.port() {
            Some(p) => format!("{}:{p}", req.url.host_str().unwrap_or_default()),
            None => req.url.host_str().unwrap_or_default().to_string(),
        };
        headers.insert(HOST, HeaderValue::from_str(&host)?);
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
        let mut out = http::Request::new(Full::new(req.body));
        *out.method_mut() = req.method;
        *out.uri_mut() = uri.clone();
        *out.headers_mut() = headers;
        Ok((uri, out))
    }
}
