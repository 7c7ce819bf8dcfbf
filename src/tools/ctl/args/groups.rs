//! Flags of the GroupController RPCs.

use clap::Args;

use super::common::Secrets;
use super::values::parse_kv;

#[derive(Debug, Clone, Args)]
pub struct CreateGroupSnapshot {
    pub name: String,
    /// A volume to snapshot with the others; repeatable.
    #[arg(long = "source", value_name = "VOLUME_ID", required = true)]
    pub sources: Vec<String>,
    /// VolumeGroupSnapshotClass parameter KEY=VALUE (e.g. group-type=NAME); repeatable.
    #[arg(long = "param", value_name = "KEY=VALUE", value_parser = parse_kv)]
    pub params: Vec<(String, String)>,
    #[command(flatten)]
    pub secrets: Secrets,
}

/// A group snapshot and, optionally, the member snapshot ids the caller knows (the driver
/// checks them against the members).
#[derive(Debug, Clone, Args)]
pub struct GroupSnapshotId {
    pub group_snapshot_id: String,
    /// A member snapshot id; repeatable.
    #[arg(long = "snapshot", value_name = "SNAPSHOT_ID")]
    pub snapshot_ids: Vec<String>,
    #[command(flatten)]
    pub secrets: Secrets,
}
