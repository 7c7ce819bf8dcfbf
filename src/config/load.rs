//! Reading and merging `--cloud-config` files, and resolving the controller's clouds.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::client_env::ClientEnv;
use super::cloud_conf::{apply_file, CloudConfig};
use super::clouds_yaml;
use super::error::{global_label, record, ConfigError, Location, Warning, WarningKind};
use super::global::GlobalConfig;
use super::ini;
use super::text_file::read_text;

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
                record(&mut cfg.warnings, warning);
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
        apply_file(&mut merged, file, &sections)?;
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
