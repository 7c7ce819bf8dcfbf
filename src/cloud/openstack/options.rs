//! What the OpenStack adapter needs to reach one cloud, filled by `app` from a
//! `[Global]`/`[Global "name"]` section of cloud.conf. Field names follow the cloud.conf keys
//! so the conversion is a plain copy; which auth method they select is decided in
//! `keystone.rs`, with errors naming the keys to fix.

use std::path::PathBuf;
use std::time::Duration;

/// Connect timeout when none is configured: a TCP/TLS handshake to an API that takes longer is
/// down for our purposes.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Bound on one HTTP request (sending, waiting, reading the answer). Nova serialises attaches per
/// server, so a POST attach during a storm may wait for the attaches queued before it.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// Catalog interface (`os-endpoint-type`).
pub use crate::config::EndpointType as Interface;
/// Credentials are `config::Secret`s: `Debug`/`Display` print `<redacted>`, and `expose` is
/// called only where the value goes on the wire.
pub use crate::config::Secret;

/// Keystone credentials, one field per cloud.conf key (`None` = unset).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuthOptions {
    pub user_id: Option<String>,
    pub username: Option<String>,
    pub password: Option<Secret>,
    /// `token`: a pre-issued token, exchanged for a scoped one with a catalog.
    pub token: Option<Secret>,
    /// `tenant-id` / `tenant-name` (+ `tenant-domain-*`): the project to scope to.
    pub project_id: Option<String>,
    pub project_name: Option<String>,
    pub project_domain_id: Option<String>,
    pub project_domain_name: Option<String>,
    /// `domain-id` / `domain-name`: default for both the user's and the project's domain.
    pub domain_id: Option<String>,
    pub domain_name: Option<String>,
    pub user_domain_id: Option<String>,
    pub user_domain_name: Option<String>,
    pub application_credential_id: Option<String>,
    pub application_credential_name: Option<String>,
    pub application_credential_secret: Option<Secret>,
    /// `trust-id`: authenticate as the trustee (`trustee-id`/`trustee-password`, else
    /// `user-id`/`password`) scoped to the trust.
    pub trust_id: Option<String>,
    pub trustee_id: Option<String>,
    pub trustee_password: Option<Secret>,
}

/// TLS settings for every API of the cloud.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsOptions {
    /// `ca-file`: extra trusted CAs (PEM bundle), added to the system roots.
    pub ca_file: Option<PathBuf>,
    /// `cert-file` + `key-file`: client certificate (PEM), both or neither.
    pub cert_file: Option<PathBuf>,
    pub key_file: Option<PathBuf>,
    /// `tls-insecure`: skip certificate verification. Off by default; logged as a warning.
    pub insecure: bool,
}

/// HTTP(S) proxies, as Go's `ProxyFromEnvironment` (upstream's transport) reads them:
/// `HTTPS_PROXY` for https URLs, `HTTP_PROXY` for http ones, hosts in `NO_PROXY` direct.
/// Loopback is never proxied. Debug redacts a proxy URL's `user:password@`.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct ProxyOptions {
    pub https: Option<String>,
    pub http: Option<String>,
    pub no_proxy: Option<String>,
}

impl std::fmt::Debug for ProxyOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let shown = |u: &Option<String>| u.as_deref().map(redact_userinfo);
        f.debug_struct("ProxyOptions")
            .field("https", &shown(&self.https))
            .field("http", &shown(&self.http))
            .field("no_proxy", &self.no_proxy)
            .finish()
    }
}

impl ProxyOptions {
    /// From the environment (upper- or lower-case names, upper-case first); empty = unset.
    pub fn from_env(var: impl Fn(&str) -> Option<String>) -> Self {
        let get = |name: &str| {
            var(name)
                .or_else(|| var(&name.to_lowercase()))
                .filter(|v| !v.trim().is_empty())
        };
        Self {
            https: get("HTTPS_PROXY"),
            http: get("HTTP_PROXY"),
            no_proxy: get("NO_PROXY"),
        }
    }
}

/// Everything needed to build the adapter for one cloud.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenStackOptions {
    /// `auth-url`: Keystone, with or without the `/v3` suffix.
    pub auth_url: String,
    pub auth: AuthOptions,
    pub region: Option<String>,
    pub interface: Interface,
    pub tls: TlsOptions,
    pub proxy: ProxyOptions,
    pub connect_timeout: Duration,
    pub request_timeout: Duration,
    /// `[BlockStorage] api-concurrency`: requests in flight per API endpoint (Keystone,
    /// Cinder, Nova each); idle connections kept per endpoint are bounded by it too.
    pub api_concurrency: usize,
    /// `[BlockStorage] ignore-volume-microversion`: talk Cinder 3.0 only (for clouds whose
    /// microversion handling is broken). Online extend and restore from backup then fail with
    /// Unsupported instead of being tried.
    pub ignore_volume_microversion: bool,
}

impl OpenStackOptions {
    /// Options with defaults for everything but the Keystone URL and credentials.
    pub fn new(auth_url: impl Into<String>, auth: AuthOptions) -> Self {
        Self {
            auth_url: auth_url.into(),
            auth,
            region: None,
            interface: Interface::Public,
            tls: TlsOptions::default(),
            proxy: ProxyOptions::default(),
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            api_concurrency: super::http::DEFAULT_PER_ENDPOINT,
            ignore_volume_microversion: false,
        }
    }
}

/// A proxy URL as it may be shown: `user:password@` becomes `<redacted>@`.
pub(super) fn redact_userinfo(url: &str) -> String {
    let start = url.find("://").map_or(0, |i| i + 3);
    let end = url[start..].find('/').map_or(url.len(), |i| start + i);
    match url[start..end].rfind('@') {
        Some(at) => format!("{}<redacted>{}", &url[..start], &url[start + at..]),
        None => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_prints_a_proxy_password() {
        let p = ProxyOptions {
            https: Some("http://user:s3cret@proxy:3128".into()),
            http: Some("http://proxy:3128".into()),
            no_proxy: None,
        };
        let shown = format!("{p:?}");
        assert!(!shown.contains("s3cret"), "{shown}");
        assert!(shown.contains("<redacted>@proxy:3128"), "{shown}");
    }

    #[test]
    fn proxies_from_the_environment() {
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                vars.iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            }
        };
        let p = ProxyOptions::from_env(env(&[
            ("https_proxy", "http://proxy:3128"),
            ("HTTP_PROXY", "http://plain:3128"),
            ("http_proxy", "http://ignored:1"),
            ("NO_PROXY", ""),
            ("no_proxy", "internal.example"),
        ]));
        assert_eq!(p.https.as_deref(), Some("http://proxy:3128"));
        assert_eq!(p.http.as_deref(), Some("http://plain:3128"));
        assert_eq!(
            p.no_proxy.as_deref(),
            None,
            "an empty upper-case name wins and unsets"
        );
        assert_eq!(ProxyOptions::from_env(env(&[])), ProxyOptions::default());
    }

    #[test]
    fn secrets_never_print() {
        let auth = AuthOptions {
            password: Some(Secret::new("hunter2")),
            application_credential_secret: Some(Secret::new("appsecret")),
            ..Default::default()
        };
        let text = format!("{auth:?}");
        assert!(!text.contains("hunter2"), "{text}");
        assert!(!text.contains("appsecret"), "{text}");
        assert!(text.contains("<redacted>"));
    }
}
