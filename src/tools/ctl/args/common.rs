//! Flags shared by several RPCs: the volume capability, secrets, ids, paging.

use std::path::PathBuf;

use std::sync::LazyLock;

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::Args;

pub use crate::driver::types::AccessMode;

/// `--access-mode` spellings: the driver's modes in kebab case (`single-node-writer`), so ctl
/// lists no modes of its own. Leaked once: clap's possible values are `&'static str`.
static MODE_NAMES: LazyLock<Vec<&'static str>> = LazyLock::new(|| {
    AccessMode::ALL
        .iter()
        .map(|m| &*Box::leak(kebab(*m).into_boxed_str()))
        .collect()
});

fn kebab(mode: AccessMode) -> String {
    mode.as_str().to_ascii_lowercase().replace('_', "-")
}

fn access_mode_parser() -> impl TypedValueParser<Value = AccessMode> {
    PossibleValuesParser::new(MODE_NAMES.iter().copied()).map(|s| {
        *AccessMode::ALL
            .iter()
            .find(|m| kebab(**m) == s)
            .expect("a possible value names a mode")
    })
}

/// A volume capability: mount (the default) or `--block`.
#[derive(Debug, Clone, Args)]
pub struct Capability {
    /// Raw block access instead of a mounted filesystem.
    #[arg(long, conflicts_with_all = ["fs_type", "mount_flags"])]
    pub block: bool,
    /// Filesystem type of a mount capability (empty: the driver's default).
    #[arg(long, value_name = "FS")]
    pub fs_type: Option<String>,
    /// Mount flag; repeatable.
    #[arg(long = "mount-flag", value_name = "FLAG")]
    pub mount_flags: Vec<String>,
    /// Access mode.
    #[arg(long, value_parser = access_mode_parser(), default_value = "single-node-writer")]
    pub access_mode: AccessMode,
}

impl Capability {
    /// Whether any capability flag was given (for RPCs where the capability is optional).
    pub fn given(&self) -> bool {
        self.block || self.fs_type.is_some() || !self.mount_flags.is_empty()
    }
}

/// Secrets: repeatable `--secret KEY=VALUE`, or a file of KEY=VALUE lines (keeps them out of
/// the process list). Values are never printed.
#[derive(Debug, Clone, Default, Args)]
pub struct Secrets {
    /// Secret KEY=VALUE; repeatable. Prefer --secrets-file: arguments are visible in `ps`.
    /// Parsed after clap (whose errors would echo the value).
    #[arg(long = "secret", value_name = "KEY=VALUE")]
    pub secret: Vec<String>,
    /// File with one KEY=VALUE secret per line (# comments allowed).
    #[arg(long, value_name = "PATH")]
    pub secrets_file: Option<PathBuf>,
}

#[derive(Debug, Clone, Args)]
pub struct VolumeId {
    pub volume_id: String,
}

#[derive(Debug, Clone, Args)]
pub struct VolumeWithSecrets {
    pub volume_id: String,
    #[command(flatten)]
    pub secrets: Secrets,
}

#[derive(Debug, Clone, Args)]
pub struct SnapshotWithSecrets {
    pub snapshot_id: String,
    #[command(flatten)]
    pub secrets: Secrets,
}

#[derive(Debug, Clone, Args)]
pub struct Listing {
    #[arg(long, default_value_t = 0)]
    pub max_entries: i32,
    #[arg(long, default_value = "")]
    pub starting_token: String,
}
