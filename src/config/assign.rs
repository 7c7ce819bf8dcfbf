//! Setting typed fields from parsed INI entries: value checks, unknown
//! keys and sections as warnings, and where each key was set.

use std::path::{Path, PathBuf};

use super::cloud_conf::{
    BlockStorageConfig, CloudConfig, GlobalConfig, MetadataConfig,
    DEFAULT_METADATA_REQUEST_TIMEOUT, DEFAULT_METADATA_URL, DEFAULT_NODE_VOLUME_ATTACH_LIMIT,
    MAX_API_CONCURRENCY, MAX_NODE_VOLUME_ATTACH_LIMIT,
};
use super::error::{quote, record, ConfigError, Location, Warning, WarningKind};
use super::ini::{section_label, IniEntry, IniSection};
use super::secret::Secret;
use super::values::{
    is_http_url, parse_bool, parse_duration, parse_int, parse_search_order, RetypeMigrationPolicy,
};

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
                let global = cfg
                    .globals
                    .entry(sub.clone().unwrap_or_default())
                    .or_default();
                global.defined_at.get_or_insert(header);
                for entry in &section.entries {
                    let cx = cx(file, &label, entry);
                    if set_global(global, entry.value.as_deref(), &cx)? {
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
fn set_global(g: &mut GlobalConfig, v: Option<&str>, cx: &Cx<'_>) -> Result<bool, ConfigError> {
    match cx.key {
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
        "api-concurrency" => {
            let n = cx.integer(v)?;
            bs.api_concurrency = match usize::try_from(n) {
                Ok(n) if (1..=MAX_API_CONCURRENCY).contains(&n) => Some(n),
                _ => {
                    return Err(cx.err(format!(
                        "{n} is not between 1 and {MAX_API_CONCURRENCY} \
                         (requests in flight per API endpoint)"
                    )))
                }
            };
        }
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
                Some(url) => return Err(cx.err(format!("{} is not an http(s) URL", quote(&url)))),
            };
        }
        _ => return Ok(false),
    }
    Ok(true)
}
