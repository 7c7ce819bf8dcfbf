//! `[Global]` and `[Global "name"]`: how to reach and authenticate to one OpenStack cloud.
//! Each key's field, default and value check are here (credentials in `credentials.rs`);
//! the OpenStack adapter takes the section itself (`cloud::openstack::OpenStackOptions`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::credentials::{AuthMethod, AuthOptions};
use super::error::{global_label, quote, ConfigError, Location};
use super::key::Cx;
use super::values::{is_http_url, EndpointType};

/// One `[Global]` (key `""`) or `[Global "name"]` section. The key set is upstream's
/// `AuthOpts` (kubernetes/cloud-provider-openstack `pkg/client/client.go`) plus `token`.
/// `None` means "not set"; an empty value (`key =`) also unsets a key, so a later
/// `--cloud-config` file can clear what an earlier one set.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GlobalConfig {
    /// `auth-url`: Keystone, with or without the `/v3` suffix. Required by the controller.
    pub auth_url: Option<String>,
    /// The credential keys (`username`, `password`, `tenant-id`, `trust-id`, …).
    pub auth: AuthOptions,
    /// `region`: the catalog region.
    pub region: Option<String>,
    /// `os-endpoint-type`; see [`GlobalConfig::endpoint_type`].
    pub endpoint_type: Option<EndpointType>,
    /// `ca-file`, `cert-file`, `key-file`, `tls-insecure`.
    pub tls: TlsOptions,
    /// `use-clouds`: fill unset keys from clouds.yaml.
    pub use_clouds: bool,
    /// `clouds-file`: the clouds.yaml to read (else the standard search path).
    pub clouds_file: Option<PathBuf>,
    /// `cloud`: the clouds.yaml entry (else `OS_CLOUD`, else the only one).
    pub cloud: Option<String>,
    /// The first header that defined this section.
    pub defined_at: Option<Location>,
    /// Where each key was last set (cloud.conf line or clouds.yaml file).
    pub(in crate::config) origins: BTreeMap<String, Location>,
}

/// TLS settings for every API of the cloud.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsOptions {
    /// `ca-file`: extra trusted CAs (PEM bundle), added to the system roots.
    pub ca_file: Option<PathBuf>,
    /// `cert-file` + `key-file`: client certificate (PEM), both or neither.
    pub cert_file: Option<PathBuf>,
    pub key_file: Option<PathBuf>,
    /// `tls-insecure`: only `true`/`false` (upstream compares with "true"). Unset stays
    /// `None` so clouds.yaml `verify` can still fill it; see [`TlsOptions::is_insecure`].
    pub insecure: Option<bool>,
}

impl TlsOptions {
    /// Whether certificate verification is off (`tls-insecure`, default false).
    pub fn is_insecure(&self) -> bool {
        self.insecure.unwrap_or(false)
    }
}

impl GlobalConfig {
    /// The catalog interface to use: `os-endpoint-type`, default `public`.
    pub fn endpoint_type(&self) -> EndpointType {
        self.endpoint_type.unwrap_or_default()
    }

    /// The keys (cloud.conf spelling) whose values differ from `was`'s, credentials aside: what
    /// the OpenStack adapter built in at its start (HTTP client, catalog choice), so a reread
    /// cloud.conf that changes one needs a restart. Beside the keys, so a new one is added here
    /// only.
    pub fn changed_settings(&self, was: &Self) -> Vec<&'static str> {
        let mut changed = Vec::new();
        if self.auth_url != was.auth_url {
            changed.push("auth-url");
        }
        if self.region != was.region {
            changed.push("region");
        }
        if self.endpoint_type() != was.endpoint_type() {
            changed.push("os-endpoint-type");
        }
        if self.tls != was.tls {
            changed.push("ca-file/cert-file/key-file/tls-insecure");
        }
        changed
    }

    /// Where `key` (cloud.conf spelling) got its value, if it is set.
    pub fn origin(&self, key: &str) -> Option<&Location> {
        self.origins.get(key)
    }

    /// Sets one key; `Ok(false)` when the key is unknown.
    pub(crate) fn set(&mut self, v: Option<&str>, cx: &Cx<'_>) -> Result<bool, ConfigError> {
        match cx.key {
            "auth-url" => self.auth_url = cx.text(v)?,
            "region" => self.region = cx.text(v)?,
            "os-endpoint-type" => self.endpoint_type = cx.parsed(v)?,
            "ca-file" => self.tls.ca_file = cx.path(v)?,
            "cert-file" => self.tls.cert_file = cx.path(v)?,
            "key-file" => self.tls.key_file = cx.path(v)?,
            "tls-insecure" => {
                // Upstream keeps this as a string and tests `== "true"`, so only
                // true/false are accepted here: "yes" must not silently differ.
                self.tls.insecure = match v {
                    None => Some(true),
                    Some("") => None,
                    Some(s) if s.eq_ignore_ascii_case("true") => Some(true),
                    Some(s) if s.eq_ignore_ascii_case("false") => Some(false),
                    Some(s) => return Err(cx.not_bool(s)),
                }
            }
            "use-clouds" => self.use_clouds = cx.boolean(v)?,
            "clouds-file" => self.clouds_file = cx.path(v)?,
            "cloud" => self.cloud = cx.text(v)?,
            _ => return self.auth.set(v, cx),
        }
        Ok(true)
    }

    /// Checks that this section (named `name`, `""` = `[Global]`) can reach
    /// and authenticate to Keystone, after clouds.yaml has been applied.
    /// Returns the authentication method the section selects.
    pub fn validate(&self, name: &str) -> Result<AuthMethod, ConfigError> {
        let label = global_label(name);
        let err = |key: &str, message: String| ConfigError::Key {
            at: self
                .origin(key)
                .or(self.defined_at.as_ref())
                .cloned()
                .unwrap_or_else(|| Location::file(Path::new("<cloud-config>"))),
            section: label.clone(),
            key: key.to_string(),
            message,
        };

        match &self.auth_url {
            None if self.use_clouds => {
                return Err(err(
                    "auth-url",
                    "not set here nor in clouds.yaml (auth.auth_url)".to_string(),
                ))
            }
            None => {
                return Err(err(
                    "auth-url",
                    "not set (the controller needs the Keystone URL; \
                     set it here or use-clouds = true with clouds.yaml)"
                        .to_string(),
                ))
            }
            Some(url) if !is_http_url(url) => {
                return Err(err(
                    "auth-url",
                    format!("{} is not an http:// or https:// URL", quote(url)),
                ))
            }
            Some(_) => {}
        }

        match (&self.tls.cert_file, &self.tls.key_file) {
            (Some(_), None) => {
                return Err(err(
                    "cert-file",
                    "set without key-file (TLS client authentication needs both)".to_string(),
                ))
            }
            (None, Some(_)) => {
                return Err(err(
                    "key-file",
                    "set without cert-file (TLS client authentication needs both)".to_string(),
                ))
            }
            _ => {}
        }

        self.auth.method(err)
    }
}
