//! cloud.conf and clouds.yaml: pure parsing into typed configuration.
//!
//! cinder-csi reads the same `--cloud-config` files as the Go
//! cinder-csi-plugin: gcfg-style INI with `[Global]` / `[Global "name"]`,
//! `[BlockStorage]` and `[Metadata]` sections (syntax: `ini.rs`).
//!
//! # API
//!
//! * [`parse_str`] parses one file's text (pure; the path only labels errors).
//! * [`load`] reads and merges `--cloud-config` files in order, later files
//!   winning per key (as upstream gcfg does). [`load_optional`] is the node
//!   variant: a missing file is a warning, not an error.
//! * [`CloudConfig::merge_str`] merges one more file's text.
//! * [`CloudConfig::resolve_clouds`] is the controller step: it picks the
//!   `--cloud-name` sections, fills them from clouds.yaml where
//!   `use-clouds = true`, and validates each ([`GlobalConfig::validate`]).
//!   The node does not need `[Global]` and should not call it.
//!
//! Errors ([`ConfigError`]) render as one line naming file, line, section
//! and key, e.g.
//! `/etc/config/cloud.conf:7: [Global] tls-insecure: "maybe" is not a boolean (use true or false)`.
//! Unknown sections and keys are [`Warning`]s: kept in
//! [`CloudConfig::warnings`] and logged with `tracing::warn!` when found (the
//! caller need not log them again). Secrets are [`Secret`]s and never print.
//!
//! # Defaults (cinder-csi choices where upstream differs)
//!
//! | key | default | note |
//! |---|---|---|
//! | `os-endpoint-type` | `public` | also accepts `publicURL`/`internalURL`/`adminURL` |
//! | `tls-insecure` | false | only `true`/`false` (upstream tests `== "true"`) |
//! | `node-volume-attach-limit` | 256 | 0, <0, >256 → 256 + warning (upstream: 0 = no limit) |
//! | `cascade-delete`, `list-cluster-volumes-only` | false | cinder-csi additions |
//! | `retype-migration-policy` | `never` | cinder-csi addition (`never`/`on-demand`) |
//! | `bs-version` | — | accepted, ignored, warning |
//! | `search-order` | `configDrive,metadataService` | unknown/duplicate element → error |
//! | `request-timeout` | 10s | upstream: no timeout; `0` → 10s + warning |
//! | `metadata-url` | `http://169.254.169.254/openstack/latest/meta_data.json` | cinder-csi addition |
//!
//! Stricter than gcfg: a key repeated in one section of one file is an error.

mod assign;
mod client_env;
mod cloud_conf;
mod clouds_yaml;
#[cfg(feature = "fuzzing")]
pub(crate) use clouds_yaml::parse as parse_clouds_yaml;
mod error;
mod ini;
mod secret;
mod text_file;
mod validate;
mod values;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use text_file::read_text;

pub use client_env::{search_paths, ClientEnv, FixedEnv, ProcessEnv};
pub use cloud_conf::{
    BlockStorageConfig, CloudConfig, GlobalConfig, MetadataConfig,
    DEFAULT_METADATA_REQUEST_TIMEOUT, DEFAULT_METADATA_URL, DEFAULT_NODE_VOLUME_ATTACH_LIMIT,
    MAX_NODE_VOLUME_ATTACH_LIMIT,
};
pub use error::{global_label, ConfigError, Location, Warning, WarningKind};
pub use secret::Secret;
pub use validate::AuthMethod;
pub use values::{EndpointType, MetadataSource, RetypeMigrationPolicy, DEFAULT_SEARCH_ORDER};

/// Parses one cloud.conf text; `file` only labels errors and warnings.
pub fn parse_str(file: &Path, text: &str) -> Result<CloudConfig, ConfigError> {
    let mut cfg = CloudConfig::default();
    cfg.merge_str(file, text)?;
    Ok(cfg)
}

/// Reads and merges the files in order; later files win per key. Every file
/// must exist (controller).
pub fn load(paths: &[PathBuf]) -> Result<CloudConfig, ConfigError> {
    load_files(paths, false)
}

/// Like [`load`], but a missing file is skipped with a
/// [`WarningKind::MissingFile`] warning (node; upstream tolerates it too).
pub fn load_optional(paths: &[PathBuf]) -> Result<CloudConfig, ConfigError> {
    load_files(paths, true)
}

fn load_files(paths: &[PathBuf], missing_ok: bool) -> Result<CloudConfig, ConfigError> {
    let mut cfg = CloudConfig::default();
    for path in paths {
        match read_text(path) {
            Ok(text) => cfg.merge_str(path, &text)?,
            Err(ConfigError::NotFound { .. }) if missing_ok => {
                let warning = Warning {
                    kind: WarningKind::MissingFile,
                    at: Location::file(path),
                    section: None,
                    key: None,
                    message: "file not found; skipped".to_string(),
                };
                error::record(&mut cfg.warnings, warning);
            }
            Err(e) => return Err(e),
        }
    }
    Ok(cfg)
}

impl CloudConfig {
    /// Merges one more file's text over this config (later wins per key).
    /// On error `self` is unchanged.
    pub fn merge_str(&mut self, file: &Path, text: &str) -> Result<(), ConfigError> {
        let sections = ini::parse(file, text)?;
        let mut merged = self.clone();
        assign::apply_file(&mut merged, file, &sections)?;
        merged.files.push(file.to_path_buf());
        *self = merged;
        Ok(())
    }

    /// The controller's clouds: for each of `names` (`--cloud-name`; empty
    /// means `[""]`, the plain `[Global]`), the section with clouds.yaml
    /// applied when `use-clouds = true`, validated. Keyed by cloud name.
    pub fn resolve_clouds(
        &self,
        names: &[String],
        env: &dyn ClientEnv,
    ) -> Result<BTreeMap<String, GlobalConfig>, ConfigError> {
        let default = [String::new()];
        let names = if names.is_empty() {
            &default[..]
        } else {
            names
        };
        let mut resolved = BTreeMap::new();
        for name in names {
            if resolved.contains_key(name) {
                continue;
            }
            let Some(global) = self.globals.get(name) else {
                return Err(ConfigError::UnknownCloud {
                    name: name.clone(),
                    files: self.files.clone(),
                    defined: self.globals.keys().map(|k| global_label(k)).collect(),
                });
            };
            let mut global = global.clone();
            if global.use_clouds {
                clouds_yaml::apply(&mut global, name, env)?;
            }
            global.validate(name)?;
            resolved.insert(name.clone(), global);
        }
        Ok(resolved)
    }
}
