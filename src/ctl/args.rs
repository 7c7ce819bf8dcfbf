//! `cinder-csi ctl` command line: one subcommand per CSI RPC, flags named after the request
//! fields. Secrets are parsed without ever echoing their values.

use std::collections::BTreeMap;
use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};

#[derive(Debug, Clone, Args)]
pub struct CtlArgs {
    /// Driver endpoint: unix:///abs/path.sock or tcp://host:port.
    #[arg(long, env = "CSI_ENDPOINT", default_value = "unix:///csi/csi.sock")]
    pub endpoint: String,

    /// Output format.
    #[arg(long, short = 'o', value_enum, default_value_t = Output::Text)]
    pub output: Output,

    /// Deadline of the RPC in seconds (sent as grpc-timeout, like the sidecars do).
    #[arg(long, default_value_t = 60, value_name = "SECONDS")]
    pub timeout: u64,

    #[command(subcommand)]
    pub rpc: Rpc,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Output {
    Text,
    Json,
}

#[derive(Debug, Clone, Subcommand)]
pub enum Rpc {
    /// GetPluginInfo.
    Info,
    /// Probe.
    Probe,
    /// Plugin, controller and node capabilities (services that are not served are skipped).
    Capabilities,
    /// CreateVolume.
    CreateVolume(CreateVolume),
    /// DeleteVolume.
    DeleteVolume(VolumeWithSecrets),
    /// ControllerGetVolume.
    GetVolume(VolumeId),
    /// ListVolumes.
    ListVolumes(Listing),
    /// ValidateVolumeCapabilities.
    Validate(Validate),
    /// ControllerPublishVolume.
    Publish(Publish),
    /// ControllerUnpublishVolume.
    Unpublish(Unpublish),
    /// ControllerExpandVolume.
    Expand(Expand),
    /// ControllerModifyVolume.
    ModifyVolume(ModifyVolume),
    /// GetCapacity.
    GetCapacity(GetCapacity),
    /// CreateSnapshot.
    CreateSnapshot(CreateSnapshot),
    /// DeleteSnapshot.
    DeleteSnapshot(SnapshotWithSecrets),
    /// GetSnapshot.
    GetSnapshot(SnapshotWithSecrets),
    /// ListSnapshots.
    ListSnapshots(ListSnapshots),
    /// NodeStageVolume.
    Stage(Stage),
    /// NodeUnstageVolume.
    Unstage(Unstage),
    /// NodePublishVolume.
    NodePublish(NodePublish),
    /// NodeUnpublishVolume.
    NodeUnpublish(NodeUnpublish),
    /// NodeExpandVolume.
    NodeExpand(NodeExpand),
    /// NodeGetVolumeStats.
    Stats(Stats),
    /// NodeGetInfo.
    NodeInfo,
}

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
pub struct CreateVolume {
    pub name: String,
    /// Required capacity, e.g. 1Gi, 512Mi, 10G, 1073741824.
    #[arg(long, value_parser = parse_size)]
    pub size: Option<u64>,
    /// Capacity limit.
    #[arg(long, value_parser = parse_size)]
    pub limit: Option<u64>,
    /// StorageClass parameter KEY=VALUE; repeatable.
    #[arg(long = "param", value_name = "KEY=VALUE", value_parser = parse_kv)]
    pub params: Vec<(String, String)>,
    /// Mutable parameter KEY=VALUE; repeatable.
    #[arg(long = "mutable", value_name = "KEY=VALUE", value_parser = parse_kv)]
    pub mutable: Vec<(String, String)>,
    /// Restore from this snapshot.
    #[arg(long, conflicts_with = "clone")]
    pub snapshot: Option<String>,
    /// Clone this volume.
    #[arg(long)]
    pub clone: Option<String>,
    /// Requisite topology segment set, KEY=VALUE[,KEY=VALUE]; repeatable.
    #[arg(long, value_name = "SEGMENTS", value_parser = parse_segments)]
    pub requisite: Vec<BTreeMap<String, String>>,
    /// Preferred topology segment set, KEY=VALUE[,KEY=VALUE]; repeatable.
    #[arg(long, value_name = "SEGMENTS", value_parser = parse_segments)]
    pub preferred: Vec<BTreeMap<String, String>>,
    #[command(flatten)]
    pub capability: Capability,
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

#[derive(Debug, Clone, Args)]
pub struct Validate {
    pub volume_id: String,
    /// Volume context KEY=VALUE; repeatable.
    #[arg(long = "context", value_name = "KEY=VALUE", value_parser = parse_kv)]
    pub context: Vec<(String, String)>,
    #[arg(long = "param", value_name = "KEY=VALUE", value_parser = parse_kv)]
    pub params: Vec<(String, String)>,
    #[command(flatten)]
    pub capability: Capability,
    #[command(flatten)]
    pub secrets: Secrets,
}

#[derive(Debug, Clone, Args)]
pub struct Publish {
    pub volume_id: String,
    /// Node id (NodeGetInfo's node_id).
    #[arg(long)]
    pub node: String,
    #[arg(long)]
    pub readonly: bool,
    #[arg(long = "context", value_name = "KEY=VALUE", value_parser = parse_kv)]
    pub context: Vec<(String, String)>,
    #[command(flatten)]
    pub capability: Capability,
    #[command(flatten)]
    pub secrets: Secrets,
}

#[derive(Debug, Clone, Args)]
pub struct Unpublish {
    pub volume_id: String,
    #[arg(long)]
    pub node: String,
    #[command(flatten)]
    pub secrets: Secrets,
}

#[derive(Debug, Clone, Args)]
pub struct Expand {
    pub volume_id: String,
    #[arg(long, value_parser = parse_size)]
    pub size: u64,
    #[arg(long, value_parser = parse_size)]
    pub limit: Option<u64>,
    #[command(flatten)]
    pub capability: Capability,
    #[command(flatten)]
    pub secrets: Secrets,
}

#[derive(Debug, Clone, Args)]
pub struct ModifyVolume {
    pub volume_id: String,
    #[arg(long = "mutable", value_name = "KEY=VALUE", value_parser = parse_kv)]
    pub mutable: Vec<(String, String)>,
    #[command(flatten)]
    pub secrets: Secrets,
}

#[derive(Debug, Clone, Args)]
pub struct GetCapacity {
    #[arg(long = "param", value_name = "KEY=VALUE", value_parser = parse_kv)]
    pub params: Vec<(String, String)>,
    /// Topology segments KEY=VALUE[,KEY=VALUE].
    #[arg(long, value_name = "SEGMENTS", value_parser = parse_segments)]
    pub topology: Option<BTreeMap<String, String>>,
    #[command(flatten)]
    pub capability: Capability,
}

#[derive(Debug, Clone, Args)]
pub struct CreateSnapshot {
    pub name: String,
    /// Volume to snapshot.
    #[arg(long)]
    pub source: String,
    #[arg(long = "param", value_name = "KEY=VALUE", value_parser = parse_kv)]
    pub params: Vec<(String, String)>,
    #[command(flatten)]
    pub secrets: Secrets,
}

#[derive(Debug, Clone, Args)]
pub struct ListSnapshots {
    #[arg(long)]
    pub source: Option<String>,
    #[arg(long)]
    pub snapshot_id: Option<String>,
    #[command(flatten)]
    pub listing: Listing,
    #[command(flatten)]
    pub secrets: Secrets,
}

#[derive(Debug, Clone, Args)]
pub struct Stage {
    pub volume_id: String,
    #[arg(long)]
    pub staging_path: String,
    #[arg(long = "publish-context", value_name = "KEY=VALUE", value_parser = parse_kv)]
    pub publish_context: Vec<(String, String)>,
    #[arg(long = "context", value_name = "KEY=VALUE", value_parser = parse_kv)]
    pub context: Vec<(String, String)>,
    #[command(flatten)]
    pub capability: Capability,
    #[command(flatten)]
    pub secrets: Secrets,
}

#[derive(Debug, Clone, Args)]
pub struct Unstage {
    pub volume_id: String,
    #[arg(long)]
    pub staging_path: String,
}

#[derive(Debug, Clone, Args)]
pub struct NodePublish {
    pub volume_id: String,
    #[arg(long)]
    pub target_path: String,
    #[arg(long, default_value = "")]
    pub staging_path: String,
    #[arg(long)]
    pub readonly: bool,
    #[arg(long = "publish-context", value_name = "KEY=VALUE", value_parser = parse_kv)]
    pub publish_context: Vec<(String, String)>,
    #[arg(long = "context", value_name = "KEY=VALUE", value_parser = parse_kv)]
    pub context: Vec<(String, String)>,
    #[command(flatten)]
    pub capability: Capability,
    #[command(flatten)]
    pub secrets: Secrets,
}

#[derive(Debug, Clone, Args)]
pub struct NodeUnpublish {
    pub volume_id: String,
    #[arg(long)]
    pub target_path: String,
}

#[derive(Debug, Clone, Args)]
pub struct NodeExpand {
    pub volume_id: String,
    #[arg(long)]
    pub volume_path: String,
    #[arg(long, default_value = "")]
    pub staging_path: String,
    #[arg(long, value_parser = parse_size)]
    pub size: Option<u64>,
    #[command(flatten)]
    pub capability: Capability,
    #[command(flatten)]
    pub secrets: Secrets,
}

#[derive(Debug, Clone, Args)]
pub struct Stats {
    pub volume_id: String,
    #[arg(long)]
    pub volume_path: String,
    #[arg(long, default_value = "")]
    pub staging_path: String,
}

pub fn parse_kv(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.to_string())),
        _ => Err(format!("{s:?} is not KEY=VALUE")),
    }
}

/// Like [`parse_kv`], but the error never contains the value.
pub fn parse_secret(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.to_string())),
        _ => Err("a secret must be KEY=VALUE (the argument is not shown)".to_string()),
    }
}

pub fn parse_segments(s: &str) -> Result<BTreeMap<String, String>, String> {
    s.split(',').map(parse_kv).collect()
}

/// `1073741824`, `1Gi`, `512Mi`, `1G` (= 10^9), `1GiB`.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: u64 = num
        .parse()
        .map_err(|_| format!("{s:?} is not a size (e.g. 1Gi, 512Mi, 1073741824)"))?;
    let mult: u64 = match unit.trim().trim_end_matches('B') {
        "" => 1,
        "K" | "k" => 1000,
        "M" => 1000_u64.pow(2),
        "G" => 1000_u64.pow(3),
        "T" => 1000_u64.pow(4),
        "Ki" => 1 << 10,
        "Mi" => 1 << 20,
        "Gi" => 1 << 30,
        "Ti" => 1 << 40,
        _ => return Err(format!("{s:?}: unknown unit {unit:?} (use Ki, Mi, Gi, Ti)")),
    };
    n.checked_mul(mult)
        .ok_or_else(|| format!("{s:?} is too large"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("1Gi").unwrap(), 1 << 30);
        assert_eq!(parse_size("1GiB").unwrap(), 1 << 30);
        assert_eq!(parse_size("512Mi").unwrap(), 512 << 20);
        assert_eq!(parse_size("2G").unwrap(), 2_000_000_000);
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert!(parse_size("1Xi").is_err());
        assert!(parse_size("Gi").is_err());
    }

    #[test]
    fn secret_errors_do_not_echo_values() {
        let e = parse_secret("hunter2").unwrap_err();
        assert!(!e.contains("hunter2"));
        assert_eq!(
            parse_secret("password=a=b").unwrap(),
            ("password".into(), "a=b".into())
        );
    }

    #[test]
    fn segments() {
        let m = parse_segments("a=1,b=2").unwrap();
        assert_eq!(m.len(), 2);
        assert!(parse_segments("a=1,b").is_err());
    }
}
