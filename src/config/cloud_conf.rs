//! Typed cloud.conf sections and how INI entries set them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::error::{quote, record, ConfigError, Location, Warning, WarningKind};
use super::ini::{section_label, IniEntry, IniSection};
use super::secret::Secret;
use super::values::{
    parse_bool, parse_duration, parse_int, parse_search_order, EndpointType, MetadataSource,
    RetypeMigrationPolicy,
};
use super::CloudConfig;

/// `[BlockStorage] node-volume-attach-limit` when unset or out of range.
pub const DEFAULT_NODE_VOLUME_ATTACH_LIMIT: u32 = 256;
/// Largest accepted `node-volume-attach-limit` (upstream's cap).
pub const MAX_NODE_VOLUME_ATTACH_LIMIT: u32 = 256;
/// `[Metadata] search-order` when unset.
pub const DEFAULT_SEARCH_ORDER: [MetadataSource; 2] =
    [MetadataSource::ConfigDrive, MetadataSource::MetadataService];
/// `[Metadata] metadata-url` when unset.
pub const DEFAULT_METADATA_URL: &str = "http://169.254.169.254/openstack/latest/meta_data.json";
/// `[Metadata] request-timeout` when unset (upstream: no timeout at all).
pub const DEFAULT_METADATA_REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// One `[Global]` (key `""`) or `[Global "name"]` section: how to reach and
/// authenticate to one OpenStack cloud. The key set is upstream's `AuthOpts`
/// (kubernetes/cloud-provider-openstack `pkg/client/client.go`) plus `token`.
/// `None` means "not set"; an empty value (`key =`) also unsets a key, so a
/// later `--cloud-config` file can clear what an earlier one set.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GlobalConfig {
    /// `auth-url`: Keystone URL. Required by the controller.
    pub auth_url: Option<String>,
    /// `username` (needs a user domain) or `user-id`.
    pub username: Option<String>,
    pub user_id: Option<String>,
    pub password: Option<Secret>,
    /// `token`: a pre-issued Keystone token.
    pub token: Option<Secret>,
    /// `tenant-id` / `tenant-name`: the project (clouds.yaml `project_*`).
    pub tenant_id: Option<String>,
    pub tenant_name: Option<String>,
    pub tenant_domain_id: Option<String>,
    pub tenant_domain_name: Option<String>,
    /// `domain-id` / `domain-name`: default for both user and project domain.
    pub domain_id: Option<String>,
    pub domain_name: Option<String>,
    pub user_domain_id: Option<String>,
    pub user_domain_name: Option<String>,
    pub application_credential_id: Option<String>,
    pub application_credential_name: Option<String>,
    pub application_credential_secret: Option<Secret>,
    /// `trust-id`, authenticated as `trustee-id`/`trustee-password`
    /// (falling back to `user-id`/`password`).
    pub trust_id: Option<String>,
    pub trustee_id: Option<String>,
    pub trustee_password: Option<Secret>,
    pub region: Option<String>,
    /// `os-endpoint-type`; see [`GlobalConfig::endpoint_type`].
    pub endpoint_type: Option<EndpointType>,
    pub ca_file: Option<PathBuf>,
    /// `cert-file` + `key-file`: TLS client certificate (both or neither).
    pub cert_file: Option<PathBuf>,
    pub key_file: Option<PathBuf>,
    /// `tls-insecure`: only `true`/`false` (upstream compares with "true").
    pub tls_insecure: Option<bool>,
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

impl GlobalConfig {
    /// The catalog interface to use: `os-endpoint-type`, default `public`.
    pub fn endpoint_type(&self) -> EndpointType {
        self.endpoint_type.unwrap_or_default()
    }

    /// Whether TLS verification is off (`tls-insecure`, default false).
    pub fn insecure(&self) -> bool {
        self.tls_insecure.unwrap_or(false)
    }

    /// Where `key` (cloud.conf spelling) got its value, if it is set.
    pub fn origin(&self, key: &str) -> Option<&Location> {
        self.origins.get(key)
    }
}

/// `[BlockStorage]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockStorageConfig {
    /// `node-volume-attach-limit`: NodeGetInfo `max_volumes_per_node`.
    /// Unset → 256. 1..=256 is used as is. 0, negative or above 256 → 256
    /// with a warning (upstream: 0 meant "no limit", the rest became 256).
    pub node_volume_attach_limit: u32,
    /// `rescan-on-resize`: node rescans the device before growing the fs.
    pub rescan_on_resize: bool,
    /// `ignore-volume-az`: report the requested topology, not the volume AZ.
    pub ignore_volume_az: bool,
    /// `ignore-volume-microversion`: skip Cinder microversions 3.34/3.51.
    pub ignore_volume_microversion: bool,
    /// `cascade-delete` (cinder-csi): delete a volume's snapshots with it.
    pub cascade_delete: bool,
    /// `list-cluster-volumes-only` (cinder-csi): ListVolumes returns only
    /// volumes tagged with this cluster's `--cluster` id.
    pub list_cluster_volumes_only: bool,
    /// `retype-migration-policy` (cinder-csi): `never` (default) or `on-demand`.
    pub retype_migration_policy: RetypeMigrationPolicy,
}

impl Default for BlockStorageConfig {
    fn default() -> Self {
        Self {
            node_volume_attach_limit: DEFAULT_NODE_VOLUME_ATTACH_LIMIT,
            rescan_on_resize: false,
            ignore_volume_az: false,
            ignore_volume_microversion: false,
            cascade_delete: false,
            list_cluster_volumes_only: false,
            retype_migration_policy: RetypeMigrationPolicy::Never,
        }
    }
}

/// `[Metadata]`: how the node finds its instance id and availability zone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetadataConfig {
    /// `search-order`: sources to try in order; default config drive first.
    pub search_order: Vec<MetadataSource>,
    /// `request-timeout`: bound on one metadata-service request or config
    /// drive read. Default 10 s; `0` (upstream: no timeout) → default + warning.
    pub request_timeout: Duration,
    /// `metadata-url` (cinder-csi): the metadata service document URL.
    pub metadata_url: String,
}

impl Default for MetadataConfig {
    fn default() -> Self {
        Self {
            search_order: DEFAULT_SEARCH_ORDER.to_vec(),
            request_timeout: DEFAULT_METADATA_REQUEST_TIMEOUT,
            metadata_url: DEFAULT_METADATA_URL.to_string(),
        }
    }
}

/// The key being set, for error messages.
struct Cx<'a> {
    file: &'a Path,
    line: usize,
    section: &'a str,
    key: &'a str,
}

impl Cx<'_> {
    fn at(&self) -> Location {
        Location::at(self.file, self.line)
    }

    fn err(&self, message: String) -> ConfigError {
        ConfigError::Key {
            at: self.at(),
            section: self.section.to_string(),
            key: self.key.to_string(),
            message,
        }
    }

    fn warn(&self, warnings: &mut Vec<Warning>, kind: WarningKind, message: String) {
        record(
            warnings,
            Warning {
                kind,
                at: self.at(),
                section: Some(self.section.to_string()),
                key: Some(self.key.to_string()),
                message,
            },
        );
    }

    /// The value of a non-boolean key; a bare key is an error.
    fn value<'v>(&self, v: Option<&'v str>) -> Result<&'v str, ConfigError> {
        v.ok_or_else(|| {
            self.err(format!(
                "has no value (write {} = value; only boolean keys may stand alone)",
                self.key
            ))
        })
    }

    fn text(&self, v: Option<&str>) -> Result<Option<String>, ConfigError> {
        let v = self.value(v)?;
        Ok((!v.is_empty()).then(|| v.to_string()))
    }

    fn secret(&self, v: Option<&str>) -> Result<Option<Secret>, ConfigError> {
        Ok(self.text(v)?.map(Secret::from))
    }

    fn path(&self, v: Option<&str>) -> Result<Option<PathBuf>, ConfigError> {
        Ok(self.text(v)?.map(PathBuf::from))
    }

    /// gcfg boolean; a bare key is `true`.
    fn boolean(&self, v: Option<&str>) -> Result<bool, ConfigError> {
        match v {
            None => Ok(true),
            Some(s) => parse_bool(s).ok_or_else(|| self.not_bool(s)),
        }
    }

    fn not_bool(&self, s: &str) -> ConfigError {
        self.err(format!("{} is not a boolean (use true or false)", quote(s)))
    }

    fn integer(&self, v: Option<&str>) -> Result<i64, ConfigError> {
        let s = self.value(v)?;
        parse_int(s).ok_or_else(|| self.err(format!("{} is not an integer", quote(s))))
    }
}

/// Applies one parsed file to `cfg`; later calls win per key.
pub(crate) fn apply_file(
    cfg: &mut CloudConfig,
    file: &Path,
    sections: &[IniSection],
) -> Result<(), ConfigError> {
    for section in sections {
        let label = section.label();
        let header = Location::at(file, section.line);
        match (section.name.as_str(), &section.subsection) {
            ("global", sub) => {
                let global = cfg.globals.entry(sub.clone().unwrap_or_default()).or_default();
                global.defined_at.get_or_insert(header);
                for entry in &section.entries {
                    let cx = cx(file, &label, entry);
                    if set_global(global, &entry.key, entry.value.as_deref(), &cx)? {
                        global.origins.insert(entry.key.clone(), cx.at());
                    } else {
                        unknown_key(&mut cfg.warnings, &cx);
                    }
                }
            }
            ("blockstorage", None) => {
                for entry in &section.entries {
                    let cx = cx(file, &label, entry);
                    let (bs, warnings) = (&mut cfg.block_storage, &mut cfg.warnings);
                    if !set_block_storage(bs, entry.value.as_deref(), &cx, warnings)? {
                        unknown_key(warnings, &cx);
                    }
                }
            }
            ("metadata", None) => {
                for entry in &section.entries {
                    let cx = cx(file, &label, entry);
                    let (md, warnings) = (&mut cfg.metadata, &mut cfg.warnings);
                    if !set_metadata(md, entry.value.as_deref(), &cx, warnings)? {
                        unknown_key(warnings, &cx);
                    }
                }
            }
            (name @ ("blockstorage" | "metadata"), Some(_)) => {
                let message = format!(
                    "subsections are only supported for [Global]; use {}; section ignored",
                    section_label(name, None)
                );
                unknown_section(&mut cfg.warnings, header, label, message);
            }
            _ => {
                let message = "section is not used by cinder-csi; ignored".to_string();
                unknown_section(&mut cfg.warnings, header, label, message);
            }
        }
    }
    Ok(())
}

fn cx<'a>(file: &'a Path, label: &'a str, entry: &'a IniEntry) -> Cx<'a> {
    Cx {
        file,
        line: entry.line,
        section: label,
        key: &entry.key,
    }
}

fn unknown_section(warnings: &mut Vec<Warning>, at: Location, label: String, message: String) {
    let warning = Warning {
        kind: WarningKind::UnknownSection,
        at,
        section: Some(label),
        key: None,
        message,
    };
    record(warnings, warning);
}

fn unknown_key(warnings: &mut Vec<Warning>, cx: &Cx<'_>) {
    let hint = match cx.key {
        "project-id" => Some("tenant-id"),
        "project-name" => Some("tenant-name"),
        "project-domain-id" => Some("tenant-domain-id"),
        "project-domain-name" => Some("tenant-domain-name"),
        "user-name" => Some("username"),
        "auth-uri" => Some("auth-url"),
        "endpoint-type" | "interface" => Some("os-endpoint-type"),
        "region-name" => Some("region"),
        "insecure" => Some("tls-insecure"),
        "cacert" | "ca-cert" => Some("ca-file"),
        _ => None,
    }
    .filter(|_| cx.section.starts_with("[Global"))
    .map(|h| format!(" (did you mean {h}?)"))
    .unwrap_or_default();
    let message = format!("unknown key; ignored{hint}");
    cx.warn(warnings, WarningKind::UnknownKey, message);
}

/// Sets one `[Global]` key; `Ok(false)` when the key is unknown.
fn set_global(
    g: &mut GlobalConfig,
    key: &str,
    v: Option<&str>,
    cx: &Cx<'_>,
) -> Result<bool, ConfigError> {
    match key {
        "auth-url" => g.auth_url = cx.text(v)?,
        "username" => g.username = cx.text(v)?,
        "user-id" => g.user_id = cx.text(v)?,
        "password" => g.password = cx.secret(v)?,
        "token" => g.token = cx.secret(v)?,
        "tenant-id" => g.tenant_id = cx.text(v)?,
        "tenant-name" => g.tenant_name = cx.text(v)?,
        "tenant-domain-id" => g.tenant_domain_id = cx.text(v)?,
        "tenant-domain-name" => g.tenant_domain_name = cx.text(v)?,
        "domain-id" => g.domain_id = cx.text(v)?,
        "domain-name" => g.domain_name = cx.text(v)?,
        "user-domain-id" => g.user_domain_id = cx.text(v)?,
        "user-domain-name" => g.user_domain_name = cx.text(v)?,
        "application-credential-id" => g.application_credential_id = cx.text(v)?,
        "application-credential-name" => g.application_credential_name = cx.text(v)?,
        "application-credential-secret" => g.application_credential_secret = cx.secret(v)?,
        "trust-id" => g.trust_id = cx.text(v)?,
        "trustee-id" => g.trustee_id = cx.text(v)?,
        "trustee-password" => g.trustee_password = cx.secret(v)?,
        "region" => g.region = cx.text(v)?,
        "os-endpoint-type" => {
            g.endpoint_type = match cx.text(v)? {
                None => None,
                Some(s) => Some(s.parse().map_err(|m| cx.err(m))?),
            }
        }
        "ca-file" => g.ca_file = cx.path(v)?,
        "cert-file" => g.cert_file = cx.path(v)?,
        "key-file" => g.key_file = cx.path(v)?,
        "tls-insecure" => {
            // Upstream keeps this as a string and tests `== "true"`, so only
            // true/false are accepted here: "yes" must not silently differ.
            g.tls_insecure = match v {
                None => Some(true),
                Some("") => None,
                Some(s) if s.eq_ignore_ascii_case("true") => Some(true),
                Some(s) if s.eq_ignore_ascii_case("false") => Some(false),
                Some(s) => return Err(cx.not_bool(s)),
            }
        }
        "use-clouds" => g.use_clouds = cx.boolean(v)?,
        "clouds-file" => g.clouds_file = cx.path(v)?,
        "cloud" => g.cloud = cx.text(v)?,
        _ => return Ok(false),
    }
    Ok(true)
}

/// Sets one `[BlockStorage]` key; `Ok(false)` when the key is unknown.
fn set_block_storage(
    bs: &mut BlockStorageConfig,
    v: Option<&str>,
    cx: &Cx<'_>,
    warnings: &mut Vec<Warning>,
) -> Result<bool, ConfigError> {
    match cx.key {
        "node-volume-attach-limit" => {
            let n = cx.integer(v)?;
            bs.node_volume_attach_limit = match u32::try_from(n) {
                Ok(n) if (1..=MAX_NODE_VOLUME_ATTACH_LIMIT).contains(&n) => n,
                _ => {
                    let message = format!(
                        "{n} is not between 1 and {MAX_NODE_VOLUME_ATTACH_LIMIT}; \
                         using {DEFAULT_NODE_VOLUME_ATTACH_LIMIT}"
                    );
                    cx.warn(warnings, WarningKind::ValueAdjusted, message);
                    DEFAULT_NODE_VOLUME_ATTACH_LIMIT
                }
            };
        }
        "rescan-on-resize" => bs.rescan_on_resize = cx.boolean(v)?,
        "ignore-volume-az" => bs.ignore_volume_az = cx.boolean(v)?,
        "ignore-volume-microversion" => bs.ignore_volume_microversion = cx.boolean(v)?,
        "cascade-delete" => bs.cascade_delete = cx.boolean(v)?,
        "list-cluster-volumes-only" => bs.list_cluster_volumes_only = cx.boolean(v)?,
        "retype-migration-policy" => {
            bs.retype_migration_policy = match cx.text(v)? {
                None => RetypeMigrationPolicy::default(),
                Some(s) => s.parse().map_err(|m| cx.err(m))?,
            }
        }
        "bs-version" => {
            let message = "accepted for compatibility and ignored \
                           (cinder-csi always uses the Block Storage v3 API)"
                .to_string();
            cx.warn(warnings, WarningKind::IgnoredKey, message);
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// Sets one `[Metadata]` key; `Ok(false)` when the key is unknown.
fn set_metadata(
    md: &mut MetadataConfig,
    v: Option<&str>,
    cx: &Cx<'_>,
    warnings: &mut Vec<Warning>,
) -> Result<bool, ConfigError> {
    match cx.key {
        "search-order" => {
            md.search_order = parse_search_order(cx.value(v)?).map_err(|m| cx.err(m))?;
        }
        "request-timeout" => {
            let s = cx.value(v)?;
            let timeout = parse_duration(s).ok_or_else(|| {
                cx.err(format!(
                    "{} is not a duration (use e.g. 10s, 1m30s, or plain seconds)",
                    quote(s)
                ))
            })?;
            md.request_timeout = if timeout.is_zero() {
                let message = format!(
                    "0 (no timeout) is not supported; using {}s",
                    DEFAULT_METADATA_REQUEST_TIMEOUT.as_secs()
                );
                cx.warn(warnings, WarningKind::ValueAdjusted, message);
                DEFAULT_METADATA_REQUEST_TIMEOUT
            } else {
                timeout
            };
        }
        "metadata-url" => {
            md.metadata_url = match cx.text(v)? {
                None => DEFAULT_METADATA_URL.to_string(),
                Some(url) if is_http_url(&url) => url,
                Some(url) => {
                    return Err(cx.err(format!("{} is not an http(s) URL", quote(&url))))
                }
            };
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// `http://…` or `https://…` with something after the scheme.
pub(crate) fn is_http_url(s: &str) -> bool {
    let lower = s.to_ascii_lowercase();
    ["http://", "https://"]
        .iter()
        .any(|scheme| lower.starts_with(scheme) && lower.len() > scheme.len())
}
