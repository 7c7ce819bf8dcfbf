//! Everything read from the `--cloud-config` files, and how one parsed file is applied to
//! it: each entry goes to its section's `set` (`global.rs`, `block_storage.rs`,
//! `metadata.rs`), and what no section knows becomes a warning.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::block_storage::BlockStorageConfig;
use super::error::{record, ConfigError, Location, Warning, WarningKind};
use super::global::GlobalConfig;
use super::ini::{section_label, IniEntry, IniSection};
use super::key::Cx;
use super::metadata::MetadataConfig;

/// Everything read from the `--cloud-config` files.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CloudConfig {
    /// `[Global]` under `""`, `[Global "name"]` under `"name"`.
    pub globals: BTreeMap<String, GlobalConfig>,
    pub block_storage: BlockStorageConfig,
    pub metadata: MetadataConfig,
    /// Unknown sections/keys and adjusted values, in file order.
    pub warnings: Vec<Warning>,
    /// The files merged, in order.
    pub files: Vec<PathBuf>,
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
                    if global.set(entry.value.as_deref(), &cx)? {
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
                    if !bs.set(entry.value.as_deref(), &cx, warnings)? {
                        unknown_key(warnings, &cx);
                    }
                }
            }
            ("metadata", None) => {
                for entry in &section.entries {
                    let cx = cx(file, &label, entry);
                    let (md, warnings) = (&mut cfg.metadata, &mut cfg.warnings);
                    if !md.set(entry.value.as_deref(), &cx, warnings)? {
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
