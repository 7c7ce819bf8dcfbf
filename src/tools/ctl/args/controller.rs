//! Arguments of the Controller service's RPCs.

use std::collections::BTreeMap;

use clap::Args;

use super::common::{Capability, Listing, Secrets};
use super::values::{parse_kv, parse_segments, parse_size};

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
