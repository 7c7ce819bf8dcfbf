//! Upstream cinder-csi-plugin's flags that this driver accepts and ignores.

use clap::{ArgAction, Args};

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
    /// Read each new volume's PVC (one GET per CreateVolume) and turn its annotations
    /// cinder.csi.openstack.org/affinity and /anti-affinity into Cinder scheduler hints
    /// (same_host / different_host). Needs the provisioner's --extra-create-metadata and
    /// `get` on persistentvolumeclaims (the chart's pvcAnnotations: true sets both).
    #[arg(long = "pvc-annotations", env = "CINDER_CSI_PVC_ANNOTATIONS", num_args = 0..=1,
          default_missing_value = "true", action = ArgAction::Set, value_name = "BOOL")]
    pub pvc_annotations: Option<bool>,
    /// With --pvc-annotations: the Kubernetes API from this kubeconfig (its current context)
    /// instead of the pod's service account.
    #[arg(long = "kubeconfig", value_name = "FILE")]
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
    /// klog's per-file verbosity (component-base adds it to every upstream binary).
    #[arg(long = "vmodule", hide = true)]
    pub vmodule: Option<String>,
    /// klog's flush interval (component-base adds it to every upstream binary).
    #[arg(long = "log-flush-frequency", hide = true)]
    pub log_flush_frequency: Option<String>,
}

/// Upstream's ignored `--nodeid` was fed from `NODE_ID`; this driver reads neither.
pub const NODE_ID_ENV_WARNING: &str = "the NODE_ID environment variable is set but not used: \
    the node id is --node-id / CINDER_CSI_NODE_ID, else the Nova instance UUID from the metadata \
    (upstream manifests set NODE_ID to the Kubernetes node name, which is not a Nova id); \
    remove NODE_ID";

impl UpstreamCompat {
    /// Whether `--pvc-annotations` is on.
    pub fn pvc_annotations(&self) -> bool {
        self.pvc_annotations == Some(true)
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
            // Only --pvc-annotations reads the Kubernetes API.
            (
                "--kubeconfig",
                self.kubeconfig.is_some() && !self.pvc_annotations(),
            ),
            ("--master", self.master.is_some()),
            ("--kube-api-qps", self.kube_api_qps.is_some()),
            ("--kube-api-burst", self.kube_api_burst.is_some()),
            ("--min-resync-period", self.min_resync_period.is_some()),
            ("--user-agent", !self.user_agent.is_empty()),
            ("--vmodule", self.vmodule.is_some()),
            ("--log-flush-frequency", self.log_flush_frequency.is_some()),
        ];
        for (name, set) in given {
            if set {
                out.push(name);
            }
        }
        out
    }
}
