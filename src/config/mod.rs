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
//! | `api-concurrency` | 4 (the adapter's) | 1–64, else an error; cinder-csi addition |
//! | `bs-version` | — | accepted, ignored, warning |
//! | `search-order` | `configDrive,metadataService` | unknown/duplicate element → error |
//! | `request-timeout` | 10s | upstream: no timeout; `0` → 10s + warning |
//! | `metadata-url` | `http://169.254.169.254/openstack/latest/meta_data.json` | cinder-csi addition |
//!
//! Stricter than gcfg: a key repeated in one section of one file is an error.
//!
//! # Where a key lives
//!
//! Each section has one file declaring its keys: the field with its default and the `set`
//! arm that reads and checks the value. `global.rs` is `[Global]` (its credential keys are
//! in `credentials.rs`), with the checks across keys ([`GlobalConfig::validate`]);
//! `block_storage.rs` is `[BlockStorage]`, `metadata.rs` `[Metadata]`; `clouds_yaml.rs` maps
//! clouds.yaml onto `[Global]`. Adapters and the core take these section structs as they
//! are (no copy into options of their own), so this module uses nothing else of the crate
//! (`tests/layering/main.rs`).

mod block_storage;
mod client_env;
mod cloud_conf;
mod clouds_yaml;
#[cfg(feature = "fuzzing")]
pub(crate) use clouds_yaml::parse as parse_clouds_yaml;
mod credentials;
mod error;
mod global;
mod ini;
mod key;
mod load;
mod metadata;
mod quoted;
mod secret;
mod text_file;
mod values;
pub mod version;

#[cfg(test)]
mod tests;

pub use block_storage::{
    BlockStorageConfig, RetypeMigrationPolicy, DEFAULT_NODE_VOLUME_ATTACH_LIMIT,
    MAX_API_CONCURRENCY, MAX_NODE_VOLUME_ATTACH_LIMIT,
};
pub use client_env::{search_paths, ClientEnv, FixedEnv, ProcessEnv};
pub use cloud_conf::CloudConfig;
pub use credentials::{AuthMethod, AuthOptions};
pub use error::{global_label, ConfigError, Location, Warning, WarningKind};
pub use global::{GlobalConfig, TlsOptions};
pub use load::{load, load_optional, parse_str};
pub use metadata::{
    MetadataConfig, MetadataSource, DEFAULT_METADATA_REQUEST_TIMEOUT, DEFAULT_METADATA_URL,
    DEFAULT_SEARCH_ORDER,
};
pub use secret::Secret;
pub use values::EndpointType;
