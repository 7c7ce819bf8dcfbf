//! `serve`'s flags (also the top level's: serving is the default command).

use std::path::PathBuf;

use clap::{ArgAction, Parser, ValueEnum};

use super::compat::UpstreamCompat;

/// The serve flags' heading for the advanced and test ones.
pub const ADVANCED_HEADING: &str = "Advanced and test options";

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Mode {
    /// Identity + Controller (the StatefulSet beside the sidecars).
    Controller,
    /// Identity + Node (the privileged DaemonSet).
    Node,
    /// Everything in one process (single machine, tests, quick start).
    All,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Backend {
    /// Keystone v3 + Cinder v3 + Nova.
    Openstack,
    /// Sparse files on loop devices on this machine.
    Local,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

/// `Parser` too, so the serve flags parse alone (the tools' subcommands are above `app`).
#[derive(Debug, Clone, Parser)]
pub struct ServeArgs {
    /// gRPC endpoint: unix:///abs/path.sock, or tcp://host:port for debugging.
    #[arg(long, env = "CSI_ENDPOINT", default_value = "unix:///csi/csi.sock")]
    pub endpoint: String,

    /// Which CSI services to serve.
    #[arg(long, env = "CINDER_CSI_MODE", value_enum, default_value_t = Mode::All)]
    pub mode: Mode,

    /// Upstream alias: --provide-controller-service=false serves the node only.
    #[arg(long, env = "CINDER_CSI_PROVIDE_CONTROLLER_SERVICE", num_args = 0..=1,
          default_missing_value = "true", action = ArgAction::Set, value_name = "BOOL")]
    pub provide_controller_service: Option<bool>,

    /// Upstream alias: --provide-node-service=false serves the controller only.
    #[arg(long, env = "CINDER_CSI_PROVIDE_NODE_SERVICE", num_args = 0..=1,
          default_missing_value = "true", action = ArgAction::Set, value_name = "BOOL")]
    pub provide_node_service: Option<bool>,

    /// Storage backend of the controller (and of the node's device lookup for `local`).
    #[arg(long, env = "CINDER_CSI_BACKEND", value_enum, default_value_t = Backend::Openstack)]
    pub backend: Backend,

    /// State directory of the local backend (volumes, snapshots, records, by-id links).
    #[arg(long, env = "CINDER_CSI_LOCAL_DIR", value_name = "DIR")]
    pub local_dir: Option<PathBuf>,

    /// Availability zones of the local backend; the first is the default, and the zone of a
    /// node without --node-az. A volume attaches only to nodes of its zone.
    #[arg(
        long,
        env = "CINDER_CSI_LOCAL_ZONES",
        value_name = "ZONE",
        value_delimiter = ',',
        default_value = "local"
    )]
    pub local_zones: Vec<String>,

    /// cloud.conf file; repeatable, merged in order (later files win).
    #[arg(long, env = "CLOUD_CONFIG", value_name = "PATH", value_delimiter = ',')]
    pub cloud_config: Vec<PathBuf>,

    /// `[Global "NAME"]` section to serve as a cloud; repeatable. The default is `[Global]`.
    #[arg(long, env = "CLOUD_NAME", value_name = "NAME", value_delimiter = ',')]
    pub cloud_name: Vec<String>,

    /// Cluster id, written to volume metadata `cinder.csi.openstack.org/cluster`.
    #[arg(long, env = "CLUSTER_NAME", default_value = "")]
    pub cluster: String,

    /// Report and honour availability-zone topology.
    #[arg(long, env = "CINDER_CSI_WITH_TOPOLOGY", default_value_t = true, num_args = 0..=1,
          default_missing_value = "true", action = ArgAction::Set, value_name = "BOOL")]
    pub with_topology: bool,

    /// Extra node topology segment KEY=VALUE; repeatable.
    #[arg(long, env = "CINDER_CSI_ADDITIONAL_TOPOLOGY", value_name = "KEY=VALUE",
          value_delimiter = ',', value_parser = parse_key_value)]
    pub additional_topology: Vec<(String, String)>,

    /// Node id (Nova instance UUID); replaces the instance id of the metadata lookup (the zone
    /// is still looked up). Not read from `NODE_ID`: upstream manifests set that to the
    /// Kubernetes node name for their ignored `--nodeid`.
    #[arg(long, env = "CINDER_CSI_NODE_ID", value_name = "ID")]
    pub node_id: Option<String>,

    /// Node availability zone, for nodes whose config drive / metadata service gives none (or
    /// that have neither, with --node-id); the metadata's zone wins when there is one.
    #[arg(long, env = "CINDER_CSI_NODE_AZ", value_name = "AZ")]
    pub node_az: Option<String>,

    /// CSI driver name.
    #[arg(
        long,
        env = "CINDER_CSI_DRIVER_NAME",
        default_value = "cinder.csi.openstack.org"
    )]
    pub driver_name: String,

    /// Kubelet root; staging and target paths must lie inside it.
    #[arg(long, env = "KUBELET_DIR", default_value = "/var/lib/kubelet")]
    pub kubelet_dir: PathBuf,

    /// Serve /metrics and /healthz on ADDR (host:port or :port); off when unset.
    #[arg(long, env = "CINDER_CSI_HTTP_ENDPOINT", value_name = "ADDR")]
    pub http_endpoint: Option<String>,

    /// Log output format.
    #[arg(long, env = "CINDER_CSI_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,

    /// Log filter, e.g. `info`, `debug`, `cinder_csi=debug,info` [default: info, or from --v].
    #[arg(long, env = "CINDER_CSI_LOG_LEVEL")]
    pub log_level: Option<String>,

    /// Advanced/test: directory searched for attached disks by serial.
    #[arg(
        long,
        env = "CINDER_CSI_BY_ID_DIR",
        default_value = "/dev/disk/by-id",
        value_name = "DIR",
        help_heading = ADVANCED_HEADING
    )]
    pub by_id_dir: PathBuf,

    /// Advanced/test: metadata service URL (overrides [Metadata] metadata-url).
    #[arg(
        long,
        env = "CINDER_CSI_METADATA_URL",
        value_name = "URL",
        help_heading = ADVANCED_HEADING
    )]
    pub metadata_url: Option<String>,

    /// Seconds in-flight RPCs get to finish after SIGTERM/SIGINT.
    #[arg(
        long,
        env = "CINDER_CSI_SHUTDOWN_GRACE",
        default_value_t = 30,
        value_name = "SECONDS",
        help_heading = ADVANCED_HEADING
    )]
    pub shutdown_grace: u64,

    #[command(flatten)]
    pub upstream: UpstreamCompat,
}

impl ServeArgs {
    /// `--log-level`, else upstream's `--v` verbosity, else `info`.
    pub fn effective_log_level(&self) -> String {
        if let Some(level) = &self.log_level {
            return level.clone();
        }
        match self.upstream.verbosity {
            Some(v) if v >= 6 => "trace".into(),
            Some(v) if v >= 4 => "debug".into(),
            _ => "info".into(),
        }
    }

    /// The mode after applying the upstream `--provide-*-service` aliases.
    pub fn effective_mode(&self) -> Result<Mode, String> {
        let controller = self.provide_controller_service.unwrap_or(true);
        let node = self.provide_node_service.unwrap_or(true);
        if self.provide_controller_service.is_none() && self.provide_node_service.is_none() {
            return Ok(self.mode);
        }
        let from_alias = match (controller, node) {
            (true, true) => Mode::All,
            (true, false) => Mode::Controller,
            (false, true) => Mode::Node,
            (false, false) => {
                return Err(
                    "--provide-controller-service=false and --provide-node-service=false \
                     leave nothing to serve"
                        .into(),
                )
            }
        };
        if self.mode != Mode::All && self.mode != from_alias {
            return Err(format!(
                "--mode {:?} contradicts the --provide-*-service flags (which select {:?})",
                self.mode, from_alias
            )
            .to_lowercase());
        }
        Ok(from_alias)
    }

    pub fn serves_controller(&self) -> bool {
        matches!(self.effective_mode(), Ok(Mode::Controller | Mode::All))
    }

    pub fn serves_node(&self) -> bool {
        matches!(self.effective_mode(), Ok(Mode::Node | Mode::All))
    }
}

fn parse_key_value(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.trim().to_string())),
        _ => Err(format!("{s:?} is not KEY=VALUE")),
    }
}
