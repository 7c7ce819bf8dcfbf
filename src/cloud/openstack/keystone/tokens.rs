//! Keystone's token cache (`Keystone`, `Session`) and the token documents it reads.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::Deserialize;
use tokio::sync::Mutex;
use tokio::time::Instant;

use super::super::auth::AuthMethod;
use super::super::catalog::{self, CatalogService};
use super::super::dto::parse_time;
use super::super::errors::ApiError;
use super::super::http::Http;
use super::super::options::{Interface, Secret};
use crate::cloud::{CloudError, Op, RequestId};
use crate::config::GlobalConfig;
use crate::net::http_client::Outgoing;

/// Renew a token when this much of its life is left (or a fifth of its lifetime, for short
/// lived tokens), so no request starts with a token that expires in flight.
pub const TOKEN_REFRESH_MARGIN: Duration = Duration::from_secs(120);
/// After a failed renewal, keep using the still-valid token and try again after this long,
/// instead of sending every request's renewal to a Keystone that is down. A token whose
/// catalog lacks Cinder or Nova is also renewed this soon: the endpoint may come back (a
/// Keystone being reconfigured), and keeping that token would fail every call for its hour.
pub const TOKEN_RETRY_AFTER: Duration = Duration::from_secs(5);

/// A token with what came with it.
pub struct Session {
    pub token: Secret,
    pub project_id: Option<String>,
    /// Cinder / Nova URLs from the catalog, or why there is none.
    pub cinder: Result<String, String>,
    pub nova: Result<String, String>,
    pub(super) refresh_at: Instant,
    pub(super) expires_at: Instant,
}

impl Session {
    pub fn cinder_url(&self) -> Result<&str, CloudError> {
        self.cinder
            .as_deref()
            .map_err(|e| CloudError::Unsupported(e.clone()))
    }

    pub fn nova_url(&self) -> Result<&str, CloudError> {
        self.nova
            .as_deref()
            .map_err(|e| CloudError::Unsupported(e.clone()))
    }
}

#[derive(Default)]
pub(super) struct State {
    pub(super) session: Option<Arc<Session>>,
    pub(super) failed_at: Option<Instant>,
    /// The credentials changed since `session` was issued: renew at the next call.
    pub(super) rotated: bool,
}

pub struct Keystone {
    pub(super) http: Http,
    pub(super) token_url: String,
    /// Replaced by [`Keystone::rotate`]; read once per token request.
    pub(super) method: std::sync::Mutex<Arc<AuthMethod>>,
    pub(super) interface: Interface,
    pub(super) region: Option<String>,
    pub(super) state: Mutex<State>,
}

impl Keystone {
    /// Reads what it needs of the cloud's `[Global]` section itself, so a new key used here
    /// is added in `config/global.rs` and here only. `method` is `global.auth` already checked.
    pub fn new(http: Http, global: &GlobalConfig, method: AuthMethod) -> Self {
        Self {
            http,
            token_url: token_url(global.auth_url.as_deref().unwrap_or_default()),
            method: std::sync::Mutex::new(Arc::new(method)),
            interface: global.endpoint_type(),
            region: global.region.clone(),
            state: Mutex::new(State::default()),
        }
    }

    /// A valid token, fetching one if needed.
    pub async fn session(&self) -> Result<Arc<Session>, CloudError> {
        // The lock is held across the fetch: that is the single flight.
        let mut st = self.state.lock().await;
        let now = Instant::now();
        if let Some(s) = &st.session {
            let retry_later = st
                .failed_at
                .is_some_and(|f| now < f + TOKEN_RETRY_AFTER && now < s.expires_at);
            if (now < s.refresh_at && !st.rotated) || retry_later {
                return Ok(s.clone());
            }
        }
        match self.fetch().await {
            Ok(s) => {
                let s = Arc::new(s);
                st.session = Some(s.clone());
                st.failed_at = None;
                st.rotated = false;
                Ok(s)
            }
            Err(e) => match st.session.clone() {
                Some(s) if Instant::now() < s.expires_at => {
                    tracing::warn!(error = %e, "renewing the Keystone token failed; the current one is still valid");
                    st.failed_at = Some(Instant::now());
                    Ok(s)
                }
                _ => Err(e),
            },
        }
    }

    /// The auth method, user and project (for messages; never a secret).
    pub fn description(&self) -> String {
        self.method().description.clone()
    }

    pub(super) fn method(&self) -> Arc<AuthMethod> {
        self.method
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Take new credentials: the next call fetches a token with them (the current token
    /// serves until then, and after, while Keystone refuses them and it is still valid).
    /// False when they are the ones in use.
    pub async fn rotate(&self, method: AuthMethod) -> bool {
        {
            let mut current = self.method.lock().unwrap_or_else(|e| e.into_inner());
            if **current == method {
                return false;
            }
            *current = Arc::new(method);
        }
        let mut st = self.state.lock().await;
        st.rotated = true;
        st.failed_at = None;
        true
    }

    /// Whether a token with the credentials of the last [`Keystone::rotate`] is still to be
    /// had (Keystone refused them, or no call has asked yet).
    pub async fn rotation_pending(&self) -> bool {
        self.state.lock().await.rotated
    }

    /// A service refused `stale` with 401: forget it (unless someone already replaced it).
    pub async fn invalidate(&self, stale: &Arc<Session>) {
        let mut st = self.state.lock().await;
        if st.session.as_ref().is_some_and(|s| Arc::ptr_eq(s, stale)) {
            st.session = None;
            st.failed_at = None;
        }
    }

    pub(super) async fn fetch(&self) -> Result<Session, CloudError> {
        let started = Instant::now();
        let method = self.method();
        let req = Outgoing::to(http::Method::POST, &self.token_url)
            .map_err(CloudError::Internal)?
            .json(&method.request_body());
        let ans = self
            .http
            .execute(Op::KeystoneToken, req, &[])
            .await
            .map_err(|e| self.error(&method, e))?;
        let token = ans
            .headers
            .get("x-subject-token")
            .and_then(|v| v.to_str().ok())
            .ok_or_else(|| {
                CloudError::Internal(format!(
                    "Keystone {} answered without X-Subject-Token",
                    self.token_url
                ))
            })?
            .to_string();
        let body: TokenEnvelope = ans
            .json(Op::KeystoneToken)
            .map_err(|e| CloudError::Internal(e.to_string()))?;
        let lifetime = body.token.lifetime().ok_or_else(|| {
            CloudError::Internal(format!(
                "Keystone token has an unreadable expires_at {:?}",
                body.token.expires_at
            ))
        })?;
        let margin = TOKEN_REFRESH_MARGIN.min(lifetime / 5);
        let pick = |types| {
            catalog::select(
                &body.token.catalog,
                types,
                self.interface,
                self.region.as_deref(),
            )
        };
        let session = Session {
            token: Secret::new(token),
            project_id: body.token.project.map(|p| p.id),
            cinder: pick(catalog::BLOCK_STORAGE_TYPES),
            nova: pick(catalog::COMPUTE_TYPES),
            refresh_at: started + lifetime.saturating_sub(margin),
            expires_at: started + lifetime,
        };
        let session = if session.cinder.is_err() || session.nova.is_err() {
            Session {
                refresh_at: session.refresh_at.min(started + TOKEN_RETRY_AFTER),
                ..session
            }
        } else {
            session
        };
        tracing::info!(
            auth = %method.description,
            lifetime_s = lifetime.as_secs(),
            project_id = session.project_id.as_deref().unwrap_or(""),
            "got a Keystone token"
        );
        Ok(session)
    }

    pub(super) fn error(&self, method: &AuthMethod, e: ApiError) -> CloudError {
        let request_id = RequestId(e.request_id.clone());
        let context = format!(
            "Keystone {} refused the {}",
            self.token_url, method.description
        );
        match e.status.map(|s| s.as_u16()) {
            Some(401) => CloudError::Unauthorized {
                message: format!("{context}: {}", e.message),
                request_id,
            },
            Some(403) => CloudError::Forbidden {
                message: format!("{context}: {}", e.message),
                request_id,
            },
            Some(s) if (400..500).contains(&s) => CloudError::BadRequest {
                message: format!(
                    "{context} (HTTP {s}; is auth-url the Keystone URL?): {}",
                    e.message
                ),
                request_id,
            },
            _ => CloudError::Unavailable {
                message: format!("Keystone {}: {e}", self.token_url),
                request_id,
            },
        }
    }
}

/// `http://k:5000`, `http://k:5000/v3` and `http://k/identity/v3/` all mean the same Keystone.
pub(super) fn token_url(auth_url: &str) -> String {
    let base = auth_url.trim_end_matches('/');
    let base = base.strip_suffix("/v2.0").unwrap_or(base);
    if base.ends_with("/v3") {
        format!("{base}/auth/tokens")
    } else {
        format!("{base}/v3/auth/tokens")
    }
}

/// The fuzz target of Keystone's token answer: decode, lifetime, catalog selection.
#[cfg(feature = "fuzzing")]
pub(crate) fn fuzz_token(body: &[u8]) {
    if let Ok(env) = serde_json::from_slice::<TokenEnvelope>(body) {
        let _ = env.token.lifetime();
        for types in [catalog::BLOCK_STORAGE_TYPES, catalog::COMPUTE_TYPES] {
            let _ = catalog::select(&env.token.catalog, types, Interface::Public, None);
            let _ = catalog::select(
                &env.token.catalog,
                types,
                Interface::Internal,
                Some("RegionOne"),
            );
        }
    }
}

#[derive(Debug, Deserialize)]
pub(super) struct TokenEnvelope {
    pub(super) token: TokenBody,
}

#[derive(Debug, Deserialize)]
pub(super) struct TokenBody {
    pub(super) expires_at: String,
    #[serde(default)]
    pub(super) issued_at: Option<String>,
    #[serde(default)]
    pub(super) project: Option<ProjectRef>,
    #[serde(default)]
    pub(super) catalog: Vec<CatalogService>,
}

#[derive(Debug, Deserialize)]
pub(super) struct ProjectRef {
    pub(super) id: String,
}

impl TokenBody {
    /// How long the token lives, measured on Keystone's clock when it says when it issued the
    /// token (so a skewed local clock does not matter), else against ours.
    pub(super) fn lifetime(&self) -> Option<Duration> {
        let expires: DateTime<Utc> = parse_time(&self.expires_at)?;
        let issued = self
            .issued_at
            .as_deref()
            .and_then(parse_time)
            .unwrap_or_else(Utc::now);
        Some((expires - issued).to_std().unwrap_or(Duration::ZERO))
    }
}
