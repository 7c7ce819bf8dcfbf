//! What the OpenStack adapter needs to reach one cloud: the `[Global]`/`[Global "name"]`
//! section and `[BlockStorage]` as `config` parsed them (taken whole, so a new cloud.conf key
//! needs no copying here), plus what is not in cloud.conf: proxies from the environment and
//! HTTP timeouts. Which auth method the credentials select is decided in `auth.rs`, with
//! errors naming the keys to fix.

use std::time::Duration;

use crate::config::{BlockStorageConfig, GlobalConfig};

/// Connect timeout when none is configured: a TCP/TLS handshake to an API that takes longer is
/// down for our purposes.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Bound on one HTTP request (sending, waiting, reading the answer). Nova serialises attaches per
/// server, so a POST attach during a storm may wait for the attaches queued before it.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// Catalog interface (`os-endpoint-type`).
pub use crate::config::EndpointType as Interface;
/// Keystone credentials (`config::AuthOptions`) and TLS settings (`config::TlsOptions`), one
/// field per cloud.conf key. Credentials are `config::Secret`s: `Debug`/`Display` print
/// `<redacted>`, and `expose` is called only where the value goes on the wire.
pub use crate::config::{AuthOptions, Secret, TlsOptions};

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
#[derive(Debug, Clone, PartialEq)]
pub struct OpenStackOptions {
    /// The cloud's section (clouds.yaml applied, validated): `auth-url`, the credentials,
    /// `region`, `os-endpoint-type` and TLS.
    pub global: GlobalConfig,
    /// `[BlockStorage]`: the adapter reads `api-concurrency` and `ignore-volume-microversion`.
    pub block_storage: BlockStorageConfig,
    pub proxy: ProxyOptions,
    pub connect_timeout: Duration,
    pub request_timeout: Duration,
}

impl OpenStackOptions {
    /// The adapter's options for one cloud: its sections as they are, no proxy, default
    /// timeouts.
    pub fn from_config(global: GlobalConfig, block_storage: BlockStorageConfig) -> Self {
        Self {
            global,
            block_storage,
            proxy: ProxyOptions::default(),
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
        }
    }

    /// `[BlockStorage] api-concurrency`, or the adapter's default when unset.
    pub fn api_concurrency(&self) -> usize {
        self.block_storage
            .api_concurrency
            .unwrap_or(super::http::DEFAULT_PER_ENDPOINT)
    }

    /// Defaults for everything but the Keystone URL and credentials (tests, tools).
    pub fn new(auth_url: impl Into<String>, auth: AuthOptions) -> Self {
        let mut global = GlobalConfig::default();
        global.auth_url = Some(auth_url.into());
        global.auth = auth;
        Self::from_config(global, BlockStorageConfig::default())
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
