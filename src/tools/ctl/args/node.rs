//! Arguments of the Node service's RPCs.

use clap::Args;

use super::common::{Capability, Secrets};
use super::values::{parse_kv, parse_size};

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
