//! `[Metadata]`: how the node finds its instance id and availability zone. Each key's
//! field, default and value check are here; the metadata adapters take the section itself
//! (`metadata::MetadataOptions`).

use std::fmt;
use std::time::Duration;

use super::error::{quote, ConfigError, Warning, WarningKind};
use super::key::Cx;
use super::values::{is_http_url, parse_duration};

/// `metadata-url` when unset (upstream's URL).
pub const DEFAULT_METADATA_URL: &str = "http://169.254.169.254/openstack/latest/meta_data.json";
/// `request-timeout` when unset: one request, body included, or one config drive read
/// (upstream: no timeout at all).
pub const DEFAULT_METADATA_REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// `search-order` when unset: the config drive needs no network, so it goes first.
pub const DEFAULT_SEARCH_ORDER: [MetadataSource; 2] =
    [MetadataSource::ConfigDrive, MetadataSource::MetadataService];

/// `[Metadata]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetadataConfig {
    /// `search-order`: sources to try in order; default config drive first.
    pub search_order: Vec<MetadataSource>,
    /// `request-timeout`: bound on one metadata-service request or config
    /// drive read. Default 10 s; `0` (upstream: no timeout) → default + warning.
    pub request_timeout: Duration,
    /// `metadata-url` (cinder-csi; also `--metadata-url`): the metadata service document URL.
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

impl MetadataConfig {
    /// Sets one key; `Ok(false)` when the key is unknown.
    pub(crate) fn set(
        &mut self,
        v: Option<&str>,
        cx: &Cx<'_>,
        warnings: &mut Vec<Warning>,
    ) -> Result<bool, ConfigError> {
        match cx.key {
            "search-order" => {
                self.search_order = parse_search_order(cx.value(v)?).map_err(|m| cx.err(m))?;
            }
            "request-timeout" => {
                let s = cx.value(v)?;
                let timeout = parse_duration(s).ok_or_else(|| {
                    cx.err(format!(
                        "{} is not a duration (use e.g. 10s, 1m30s, or plain seconds)",
                        quote(s)
                    ))
                })?;
                self.request_timeout = if timeout.is_zero() {
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
                self.metadata_url = match cx.text(v)? {
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
}

/// Where the node reads its instance metadata (a `search-order` element).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetadataSource {
    /// The config drive (filesystem labelled `config-2`), read without mounting.
    ConfigDrive,
    /// The metadata service (`metadata-url`).
    MetadataService,
}

impl MetadataSource {
    /// The upstream spelling, used in messages.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ConfigDrive => "configDrive",
            Self::MetadataService => "metadataService",
        }
    }
}

impl fmt::Display for MetadataSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Parses `search-order`: a comma list of `configDrive` and `metadataService`
/// (case-insensitive), each at most once. An empty value means the default.
fn parse_search_order(s: &str) -> Result<Vec<MetadataSource>, String> {
    if s.trim().is_empty() {
        return Ok(DEFAULT_SEARCH_ORDER.to_vec());
    }
    let mut order = Vec::new();
    for element in s.split(',') {
        let element = element.trim();
        let source = match element.to_ascii_lowercase().as_str() {
            "configdrive" => MetadataSource::ConfigDrive,
            "metadataservice" => MetadataSource::MetadataService,
            "" => return Err(format!("{} has an empty element", quote(s))),
            _ => {
                return Err(format!(
                    "unknown source {} (use configDrive and/or metadataService, comma-separated)",
                    quote(element)
                ))
            }
        };
        if order.contains(&source) {
            return Err(format!("{} is listed twice", source.as_str()));
        }
        order.push(source);
    }
    Ok(order)
}
