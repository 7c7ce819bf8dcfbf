//! Flags shared by several RPCs: the volume capability, secrets, ids, paging.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AccessMode {
    SingleNodeWriter,
    SingleNodeReaderOnly,
    MultiNodeReaderOnly,
    MultiNodeSingleWriter,
    MultiNodeMultiWriter,
    SingleNodeSingleWriter,
    SingleNodeMultiWriter,
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
    #[arg(long, value_enum, default_value_t = AccessMode::SingleNodeWriter)]
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
