//! Authenticated requests to Cinder and Nova: endpoint from the token's catalog, the token
//! header, the negotiated microversion, and exactly one re-authentication and retry when a
//! service answers 401 (the token was revoked or expired early).

use http::header::{HeaderName, HeaderValue};
use http::Method;
use serde_json::Value;
use tokio::sync::OnceCell;

use super::errors::ApiError;
use super::http::{Answer, Http};
use super::keystone::Keystone;
use super::microversion::{
    parse_versions, service_root, Microversion, Negotiated, CINDER_BASE, CINDER_WANTED, NOVA_BASE,
    NOVA_WANTED,
};
use crate::cloud::{CloudError, Op, Resource};
use crate::net::http_client::Outgoing;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Svc {
    Cinder,
    Nova,
}

/// A request relative to a service's catalog URL.
#[derive(Debug, Clone)]
pub struct Request {
    pub op: Op,
    pub method: Method,
    pub path: String,
    pub query: Vec<(String, String)>,
    pub body: Option<Value>,
    /// Overrides the client's request timeout; counts from when the request is sent.
    pub timeout: Option<std::time::Duration>,
}

impl Request {
    pub fn new(op: Op, method: Method, path: impl Into<String>) -> Self {
        Self {
            op,
            method,
            path: path.into(),
            query: Vec::new(),
            body: None,
            timeout: None,
        }
    }

    pub fn timeout(mut self, t: std::time::Duration) -> Self {
        self.timeout = Some(t);
        self
    }

    pub fn get(op: Op, path: impl Into<String>) -> Self {
        Self::new(op, Method::GET, path)
    }

    pub fn query(mut self, key: &str, value: impl Into<String>) -> Self {
        self.query.push((key.to_string(), value.into()));
        self
    }

    pub fn query_opt(self, key: &str, value: Option<impl Into<String>>) -> Self {
        match value {
            Some(v) => self.query(key, v),
            None => self,
        }
    }

    pub fn json(mut self, body: Value) -> Self {
        self.body = Some(body);
        self
    }
}

/// Why a call failed: before sending (no token, no endpoint) or the service's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallError {
    Cloud(CloudError),
    Api(ApiError),
}

impl CallError {
    pub fn into_cloud(self, resource: Resource, id: &str) -> CloudError {
        match self {
            Self::Cloud(e) => e,
            Self::Api(e) => e.into_cloud(resource, id),
        }
    }

    pub fn status(&self) -> Option<u16> {
        match self {
            Self::Api(e) => e.status.map(|s| s.as_u16()),
            Self::Cloud(_) => None,
        }
    }

    pub fn message(&self) -> String {
        match self {
            Self::Api(e) => e.message.clone(),
            Self::Cloud(e) => e.to_string(),
        }
    }
}

impl From<CloudError> for CallError {
    fn from(e: CloudError) -> Self {
        Self::Cloud(e)
    }
}

pub struct Api {
    pub http: Http,
    pub keystone: Keystone,
    /// `ignore-volume-microversion`: send Cinder no microversion.
    cinder_pinned: bool,
    cinder_version: OnceCell<Negotiated>,
    nova_version: OnceCell<Negotiated>,
}

impl Api {
    pub fn new(http: Http, keystone: Keystone, cinder_pinned: bool) -> Self {
        Self {
            http,
            keystone,
            cinder_pinned,
            cinder_version: OnceCell::new(),
            nova_version: OnceCell::new(),
        }
    }

    pub async fn cinder(&self, req: Request) -> Result<Answer, CallError> {
        let v = self.cinder_version().await?;
        self.send(Svc::Cinder, &req, v.version).await
    }

    pub async fn nova(&self, req: Request) -> Result<Answer, CallError> {
        let v = self.nova_version().await?;
        self.send(Svc::Nova, &req, v.version).await
    }

    pub async fn cinder_version(&self) -> Result<Negotiated, CloudError> {
        self.cinder_version
            .get_or_try_init(|| self.negotiate(Svc::Cinder))
            .await
            .copied()
    }

    pub async fn nova_version(&self) -> Result<Negotiated, CloudError> {
        self.nova_version
            .get_or_try_init(|| self.negotiate(Svc::Nova))
            .await
            .copied()
    }

    /// The project the token is scoped to (quota lookups need it in the path).
    pub async fn project_id(&self) -> Result<String, CloudError> {
        self.keystone
            .session()
            .await?
            .project_id
            .clone()
            .ok_or_else(|| CloudError::Internal("the Keystone token names no project".to_string()))
    }

    async fn send(
        &self,
        svc: Svc,
        req: &Request,
        version: Option<Microversion>,
    ) -> Result<Answer, CallError> {
        let mut retried = false;
        loop {
            let session = self.keystone.session().await?;
            let base = match svc {
                Svc::Cinder => session.cinder_url()?,
                Svc::Nova => session.nova_url()?,
            };
            let mut token = HeaderValue::from_str(session.token.expose()).map_err(|_| {
                CloudError::Internal("Keystone issued a token that is not a header value".into())
            })?;
            token.set_sensitive(true);
            let mut out = Outgoing::to(req.method.clone(), &join(base, &req.path))
                .map_err(CloudError::Internal)?
                .query(req.query.iter().map(|(k, v)| (k.as_str(), v.as_str())))
                .header(HeaderName::from_static("x-auth-token"), token);
            if let Some(v) = version {
                let value = |s: String| {
                    HeaderValue::from_str(&s).expect("a microversion is a header value")
                };
                let api_version = HeaderName::from_static("openstack-api-version");
                out = match svc {
                    Svc::Cinder => out.header(api_version, value(format!("volume {v}"))),
                    Svc::Nova => out
                        .header(api_version, value(format!("compute {v}")))
                        .header(
                            HeaderName::from_static("x-openstack-nova-api-version"),
                            value(v.to_string()),
                        ),
                };
            }
            if let Some(body) = &req.body {
                out = out.json(body);
            }
            if let Some(t) = req.timeout {
                out = out.timeout(t);
            }
            match self.http.execute(req.op, out, &[]).await {
                Err(e) if e.is_status(401) && !retried => {
                    tracing::info!(
                        op = req.op.name(),
                        "token refused with 401; re-authenticating once"
                    );
                    self.keystone.invalidate(&session).await;
                    retried = true;
                }
                other => return other.map_err(CallError::Api),
            }
        }
    }

    /// Read the version document (unauthenticated service root first, then the versioned
    /// endpoint with a token). Unreachable → error, retried on the next call; a document we
    /// cannot find or read → the base version, with a warning, so features needing more fail
    /// with a clear message.
    async fn negotiate(&self, svc: Svc) -> Result<Negotiated, CloudError> {
        let (op, prefix, base, wanted, pinned) = match svc {
            Svc::Cinder => (
                Op::CinderVersions,
                "v3",
                CINDER_BASE,
                CINDER_WANTED,
                self.cinder_pinned,
            ),
            Svc::Nova => (Op::NovaVersions, "v2.1", NOVA_BASE, NOVA_WANTED, false),
        };
        let session = self.keystone.session().await?;
        let endpoint = match svc {
            Svc::Cinder => session.cinder_url()?,
            Svc::Nova => session.nova_url()?,
        }
        .to_string();
        let root = service_root(&endpoint);
        let first = match self
            .http
            .execute(
                op,
                Outgoing::to(Method::GET, &root).map_err(CloudError::Internal)?,
                &[300],
            )
            .await
        {
            Ok(ans) => parse_versions(&ans.body, prefix, base),
            Err(e) if e.status.is_none_or(|s| s.is_server_error()) => {
                return Err(e.into_cloud(Resource::Volume, &root));
            }
            Err(e) => Err(e.to_string()),
        };
        let range = match first {
            Ok(r) => Ok(r),
            Err(why) => {
                tracing::debug!(root = %root, error = %why, "no version document at the service root");
                match self.send(svc, &Request::get(op, ""), None).await {
                    Ok(ans) => parse_versions(&ans.body, prefix, base),
                    Err(CallError::Api(e)) if e.status.is_none_or(|s| s.is_server_error()) => {
                        return Err(e.into_cloud(Resource::Volume, &endpoint));
                    }
                    Err(CallError::Cloud(e)) => return Err(e),
                    Err(e) => Err(e.message()),
                }
            }
        };
        let range = range.unwrap_or_else(|why| {
            tracing::warn!(
                endpoint = %endpoint,
                error = %why,
                "cannot read the API version document; using the base version {base} only"
            );
            super::microversion::VersionRange {
                min: base,
                max: base,
            }
        });
        let n = Negotiated::choose(range, base, wanted, pinned);
        tracing::info!(
            service = ?svc,
            cloud_max = %n.cloud_max,
            using = %n.effective(),
            "negotiated microversion"
        );
        Ok(n)
    }
}

/// One page of a Cinder listing, or all of them when `page.limit` is `None`. `split` takes a
/// page's items and whether Cinder linked a next page; `id` gives the marker of an item.
pub async fn list_cinder<L, T>(
    api: &Api,
    req: Request,
    page: &crate::cloud::PageRequest,
    resource: Resource,
    split: impl Fn(L) -> (Vec<T>, bool),
    id: impl Fn(&T) -> String,
) -> Result<crate::cloud::Page<T>, CloudError>
where
    L: serde::de::DeserializeOwned,
{
    let op = req.op;
    let mut items = Vec::new();
    let mut marker = page.marker.clone();
    loop {
        let r = req
            .clone()
            .query_opt("limit", page.limit.map(|l| l.to_string()))
            .query_opt("marker", marker.take());
        let ans = api
            .cinder(r)
            .await
            .map_err(|e| e.into_cloud(resource, "(list)"))?;
        let (got, more) = split(ans.json(op).map_err(|e| e.into_cloud(resource, "(list)"))?);
        let more = more && !got.is_empty();
        let last = got.last().map(&id);
        items.extend(got);
        match (page.limit, more) {
            (Some(_), more) => {
                return Ok(crate::cloud::Page {
                    items,
                    next_marker: if more { last } else { None },
                })
            }
            (None, true) => marker = last,
            (None, false) => {
                return Ok(crate::cloud::Page {
                    items,
                    next_marker: None,
                })
            }
        }
    }
}

fn join(base: &str, path: &str) -> String {
    format!(
        "{}/{}",
        base.trim_end_matches('/'),
        path.trim_start_matches('/')
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joins_paths_onto_catalog_urls() {
        assert_eq!(
            join("http://h:8776/v3", "volumes/detail"),
            "http://h:8776/v3/volumes/detail"
        );
        assert_eq!(
            join("http://h:8776/v3/p/", "/volumes"),
            "http://h:8776/v3/p/volumes"
        );
        assert_eq!(join("http://h:8776/v3", ""), "http://h:8776/v3/");
    }
}
