//! Command line: clap derive, every flag documented and settable from the environment.
//! Upstream cinder-csi-plugin flag names are kept so operators can migrate unchanged.

use std::path::PathBuf;

use clap::{ArgAction, Args, Parser, Subcommand, ValueEnum};

use crate::version::LONG_VERSION;

#[derive(Debug, Parser)]
#[command(
    name = "cinder-csi",
    version = crate::version::VERSION,
    long_version = LONG_VERSION,
    about = "CSI driver for OpenStack Cinder block storage (driver name cinder.csi.openstack.org)",
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    #[command(flatten)]
    pub serve: ServeArgs,

    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the CSI services (the default when no subcommand is given).
    Serve(Box<ServeArgs>),
    /// Call one CSI RPC on a running driver and print the answer (an operator's debug tool).
    Ctl(Box<crate::ctl::CtlArgs>),
    /// Run the driver's whole job end to end on the local backend (the quick start; root).
    Demo(crate::demo::DemoArgs),
    /// Check what breaks deployments (tools, mounts, metadata, cloud.conf, Keystone, catalog,
    /// microversions, quota, zones): one line each, exit status 1 on any FAIL.
    Doctor(Box<crate::doctor::DoctorArgs>),
}

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

#[derive(Debug, Clone, Args)]
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

    /// Node id (Nova instance UUID); overrides the metadata lookup. Not read from `NODE_ID`:
    /// upstream manifests set that to the Kubernetes node name for their ignored `--nodeid`.
    #[arg(long, env = "CINDER_CSI_NODE_ID", value_name = "ID")]
    pub node_id: Option<String>,

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
        help_heading = "Advanced and test options"
    )]
    pub by_id_dir: PathBuf,

    /// Advanced/test: metadata service URL (overrides [Metadata] metadata-url).
    #[arg(
        long,
        env = "CINDER_CSI_METADATA_URL",
        value_name = "URL",
        help_heading = "Advanced and test options"
    )]
    pub metadata_url: Option<String>,

    /// Seconds in-flight RPCs get to finish after SIGTERM/SIGINT.
    #[arg(
        long,
        env = "CINDER_CSI_SHUTDOWN_GRACE",
        default_value_t = 30,
        value_name = "SECONDS",
        help_heading = "Advanced and test options"
    )]
    pub shutdown_grace: u64,

    #[command(flatten)]
    pub upstream: UpstreamCompat,
}

/// Flags of upstream cinder-csi-plugin that this driver has no use for. They are accepted so
/// an upstream manifest keeps working unchanged, and reported once at startup.
#[derive(Debug, Clone, Default, Args)]
pub struct UpstreamCompat {
    /// klog verbosity; mapped to --log-level when that is not given (≥4 debug, ≥6 trace).
    /// Upstream's chart spells it `-v=2`, its manifests `--v=1`.
    #[arg(long = "v", short = 'v', hide = true, value_name = "N")]
    pub verbosity: Option<u8>,
    /// Deprecated upstream; the node id comes from --node-id or the metadata.
    #[arg(long = "nodeid", hide = true)]
    pub nodeid: Option<String>,
    /// Deprecated upstream no-op.
    #[arg(long = "node-service-no-os-client", hide = true, num_args = 0..=1,
          default_missing_value = "true", action = ArgAction::Set)]
    pub node_service_no_os_client: Option<bool>,
    /// PVC affinity annotations need a Kubernetes API client, which this driver does not run:
    /// `--pvc-annotations` is accepted and warned about (see [`UpstreamCompat::warnings`]).
    #[arg(long = "pvc-annotations", hide = true, num_args = 0..=1,
          default_missing_value = "true", action = ArgAction::Set)]
    pub pvc_annotations: Option<bool>,
    #[arg(long = "kubeconfig", hide = true)]
    pub kubeconfig: Option<String>,
    #[arg(long = "master", hide = true)]
    pub master: Option<String>,
    #[arg(long = "kube-api-qps", hide = true)]
    pub kube_api_qps: Option<String>,
    #[arg(long = "kube-api-burst", hide = true)]
    pub kube_api_burst: Option<String>,
    #[arg(long = "min-resync-period", hide = true)]
    pub min_resync_period: Option<String>,
    #[arg(long = "user-agent", hide = true)]
    pub user_agent: Vec<String>,
}

/// What `--pvc-annotations` would have done upstream and does not do here.
pub const PVC_ANNOTATIONS_WARNING: &str =
    "--pvc-annotations is set but PVC annotations are NOT honoured: \
    cinder.csi.openstack.org/affinity and cinder.csi.openstack.org/anti-affinity on a PVC are \
    ignored and volumes are created without Cinder scheduler hints (same_host/different_host)";

/// Upstream's ignored `--nodeid` was fed from `NODE_ID`; this driver reads neither.
pub const NODE_ID_ENV_WARNING: &str = "the NODE_ID environment variable is set but not used: \
    the node id is --node-id / CINDER_CSI_NODE_ID, else the Nova instance UUID from the metadata \
    (upstream manifests set NODE_ID to the Kubernetes node name, which is not a Nova id); \
    remove NODE_ID";

impl UpstreamCompat {
    /// Startup warnings about upstream flags whose meaning is lost here.
    pub fn warnings(&self) -> Vec<&'static str> {
        let mut out = Vec::new();
        if self.pvc_annotations == Some(true) {
            out.push(PVC_ANNOTATIONS_WARNING);
        }
        out
    }

    /// The upstream flags that were given, by name, for the startup warning.
    pub fn ignored(&self) -> Vec<&'static str> {
        let mut out = Vec::new();
        let given = [
            ("--nodeid", self.nodeid.is_some()),
            (
                "--node-service-no-os-client",
                self.node_service_no_os_client.is_some(),
            ),
            ("--pvc-annotations", self.pvc_annotations.is_some()),
            ("--kubeconfig", self.kubeconfig.is_some()),
            ("--master", self.master.is_some()),
            ("--kube-api-qps", self.kube_api_qps.is_some()),
            ("--kube-api-burst", self.kube_api_burst.is_some()),
            ("--min-resync-period", self.min_resync_period.is_some()),
            ("--user-agent", !self.user_agent.is_empty()),
        ];
        for (name, set) in given {
            if set {
                out.push(name);
            }
        }
        out
    }
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

/// The image ships `/bin/cinder-csi-plugin` (a link to this binary) and upstream manifests
/// pass it as the first argument (`args: [/bin/cinder-csi-plugin, --endpoint=…]`), which the
/// image's entrypoint then receives as a positional argument. A first argument that names
/// upstream's binary is therefore dropped.
pub fn normalize_argv<I, T>(argv: I) -> Vec<std::ffi::OsString>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString>,
{
    let mut args: Vec<std::ffi::OsString> = argv.into_iter().map(Into::into).collect();
    let names_upstream = |a: &std::ffi::OsString| {
        std::path::Path::new(a)
            .file_name()
            .is_some_and(|n| n == "cinder-csi-plugin")
    };
    if args.len() > 1 && names_upstream(&args[1]) {
        args.remove(1);
    }
    args
}

fn parse_key_value(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.trim().to_string())),
        _ => Err(format!("{s:?} is not KEY=VALUE")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> ServeArgs {
        let mut v = vec!["cinder-csi"];
        v.extend_from_slice(args);
        Cli::try_parse_from(v).unwrap().serve
    }

    #[test]
    fn defaults() {
        let a = parse(&[]);
        assert_eq!(a.endpoint, "unix:///csi/csi.sock");
        assert_eq!(a.mode, Mode::All);
        assert_eq!(a.backend, Backend::Openstack);
        assert!(a.with_topology);
        assert_eq!(a.driver_name, "cinder.csi.openstack.org");
    }

    #[test]
    fn upstream_aliases_select_mode() {
        let a = parse(&["--provide-controller-service=false"]);
        assert_eq!(a.effective_mode().unwrap(), Mode::Node);
        let a = parse(&["--provide-node-service=false"]);
        assert_eq!(a.effective_mode().unwrap(), Mode::Controller);
        let a = parse(&[
            "--provide-node-service=false",
            "--provide-controller-service=false",
        ]);
        assert!(a.effective_mode().is_err());
        let a = parse(&["--mode", "node", "--provide-node-service=false"]);
        assert!(a.effective_mode().is_err());
    }

    #[test]
    fn topology_flags() {
        let a = parse(&[
            "--with-topology=false",
            "--additional-topology",
            "topology.kubernetes.io/region=R1",
            "--additional-topology=a=b",
        ]);
        assert!(!a.with_topology);
        assert_eq!(
            a.additional_topology,
            vec![
                ("topology.kubernetes.io/region".into(), "R1".into()),
                ("a".into(), "b".into())
            ]
        );
        let mut v = vec!["cinder-csi", "--additional-topology", "novalue"];
        assert!(Cli::try_parse_from(v.drain(..)).is_err());
    }

    #[test]
    fn upstream_manifest_flags_are_accepted() {
        let a = parse(&[
            "--v=5",
            "--pvc-annotations",
            "--nodeid=x",
            "--node-service-no-os-client=true",
            "--user-agent=a",
        ]);
        assert_eq!(a.effective_log_level(), "debug");
        assert_eq!(
            a.upstream.ignored(),
            vec![
                "--nodeid",
                "--node-service-no-os-client",
                "--pvc-annotations",
                "--user-agent"
            ]
        );
        let a = parse(&["--v=5", "--log-level=warn"]);
        assert_eq!(a.effective_log_level(), "warn");
        assert_eq!(parse(&[]).effective_log_level(), "info");
    }

    #[test]
    fn upstream_binary_path_as_first_argument_is_dropped() {
        let argv = normalize_argv([
            "/usr/local/bin/cinder-csi",
            "/bin/cinder-csi-plugin",
            "--endpoint=unix://csi/csi.sock",
            "-v=2",
        ]);
        let a = Cli::try_parse_from(argv).unwrap().serve;
        assert_eq!(a.endpoint, "unix://csi/csi.sock");
        assert_eq!(a.upstream.verbosity, Some(2));
        // Invoked as the upstream name (the image's symlink): nothing to drop.
        let argv = normalize_argv(["/bin/cinder-csi-plugin", "--v=5"]);
        assert_eq!(argv.len(), 2);
        assert_eq!(
            Cli::try_parse_from(argv)
                .unwrap()
                .serve
                .effective_log_level(),
            "debug"
        );
        let argv = normalize_argv(["cinder-csi", "cinder-csi-plugin", "--mode=node"]);
        assert_eq!(argv, vec!["cinder-csi", "--mode=node"]);
        // Only the first argument, and only that exact name.
        let argv = normalize_argv(["cinder-csi", "--mode=node", "/bin/cinder-csi-plugin"]);
        assert_eq!(argv.len(), 3);
        let argv = normalize_argv(["cinder-csi", "/bin/cinder-csi-plugin-x"]);
        assert_eq!(argv.len(), 2);
        assert!(Cli::try_parse_from(argv).is_err());
    }

    #[test]
    fn pvc_annotations_warns_that_annotations_are_ignored() {
        let a = parse(&["--pvc-annotations"]);
        let w = a.upstream.warnings();
        assert_eq!(w.len(), 1);
        assert!(
            w[0].contains("cinder.csi.openstack.org/affinity")
                && w[0].contains("anti-affinity")
                && w[0].contains("NOT honoured"),
            "{w:?}"
        );
        assert!(parse(&["--pvc-annotations=false"])
            .upstream
            .warnings()
            .is_empty());
        assert!(parse(&[]).upstream.warnings().is_empty());
    }

    #[test]
    fn repeatable_cloud_flags() {
        let a = parse(&[
            "--cloud-config",
            "/a",
            "--cloud-config=/b",
            "--cloud-name",
            "r1",
        ]);
        assert_eq!(
            a.cloud_config,
            vec![PathBuf::from("/a"), PathBuf::from("/b")]
        );
        assert_eq!(a.cloud_name, vec!["r1".to_string()]);
    }
}
