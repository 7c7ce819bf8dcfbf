//! What one run needs to know: where the driver is, which node paths to hand it, which sizes,
//! parameters and secrets to use, and which cases to run. Built by the CLI or by tests.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use regex::Regex;
use serde::Deserialize;

/// Default size of the volumes the cases create: 1 GiB, the smallest size every block-storage
/// backend can honour exactly.
pub const DEFAULT_VOLUME_SIZE: i64 = 1 << 30;
/// Every idempotent RPC is repeated this many times in the idempotency cases.
pub const DEFAULT_IDEMPOTENT_COUNT: usize = 10;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AccessType {
    Mount,
    Block,
}

impl AccessType {
    pub fn as_str(self) -> &'static str {
        match self {
            AccessType::Mount => "mount",
            AccessType::Block => "block",
        }
    }
}

/// Secrets per RPC, in csi-sanity's `--csi.secrets` YAML layout so existing files keep working.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
pub struct Secrets {
    #[serde(default)]
    pub create_volume_secret: HashMap<String, String>,
    #[serde(default)]
    pub delete_volume_secret: HashMap<String, String>,
    #[serde(default)]
    pub controller_publish_volume_secret: HashMap<String, String>,
    #[serde(default)]
    pub controller_unpublish_volume_secret: HashMap<String, String>,
    #[serde(default)]
    pub controller_validate_volume_capabilities_secret: HashMap<String, String>,
    #[serde(default)]
    pub node_stage_volume_secret: HashMap<String, String>,
    #[serde(default)]
    pub node_publish_volume_secret: HashMap<String, String>,
    #[serde(default)]
    pub create_snapshot_secret: HashMap<String, String>,
    #[serde(default)]
    pub delete_snapshot_secret: HashMap<String, String>,
    #[serde(default)]
    pub list_snapshots_secret: HashMap<String, String>,
    #[serde(default)]
    pub controller_expand_volume_secret: HashMap<String, String>,
    #[serde(default)]
    pub node_expand_volume_secret: HashMap<String, String>,
    #[serde(default)]
    pub controller_modify_volume_secret: HashMap<String, String>,
    #[serde(default)]
    pub get_snapshot_secret: HashMap<String, String>,
}

/// One run's settings. `Config::new` gives the defaults of the CLI.
#[derive(Debug, Clone)]
pub struct Config {
    /// Node (and, unless `controller_endpoint` is set, controller) endpoint: `unix:///path` or
    /// `tcp://host:port`.
    pub endpoint: String,
    pub controller_endpoint: Option<String>,
    /// Created with a plain mkdir before each case and removed after it.
    pub staging_dir: PathBuf,
    /// Created before each case and removed after it; the publish target is `<mount_dir>/target`.
    pub mount_dir: PathBuf,
    pub volume_size: i64,
    /// Size to expand to; `volume_size + 1 GiB` when unset.
    pub expand_size: Option<i64>,
    pub access_type: AccessType,
    /// fs_type of mount capabilities; empty = the driver's default.
    pub fs_type: String,
    pub parameters: HashMap<String, String>,
    pub snapshot_parameters: HashMap<String, String>,
    /// Mutable parameters for CreateVolume/ControllerModifyVolume; the cases that need them are
    /// skipped when this is `None`.
    pub mutable_parameters: Option<HashMap<String, String>>,
    pub secrets: Secrets,
    pub filter: Option<Regex>,
    pub skip: Option<Regex>,
    /// Deadline of each RPC.
    pub timeout: Duration,
    /// How long to keep re-issuing CreateSnapshot until `ready_to_use` turns true.
    pub snapshot_ready_timeout: Duration,
    /// Prefix of every volume and snapshot name, so leaks are easy to find.
    pub volume_prefix: String,
    pub idempotent_count: usize,
}

impl Config {
    pub fn new(endpoint: impl Into<String>, staging_dir: PathBuf, mount_dir: PathBuf) -> Self {
        Self {
            endpoint: endpoint.into(),
            controller_endpoint: None,
            staging_dir,
            mount_dir,
            volume_size: DEFAULT_VOLUME_SIZE,
            expand_size: None,
            access_type: AccessType::Mount,
            fs_type: String::new(),
            parameters: HashMap::new(),
            snapshot_parameters: HashMap::new(),
            mutable_parameters: None,
            secrets: Secrets::default(),
            filter: None,
            skip: None,
            timeout: Duration::from_secs(60),
            snapshot_ready_timeout: Duration::from_secs(300),
            volume_prefix: "sanity".to_string(),
            idempotent_count: DEFAULT_IDEMPOTENT_COUNT,
        }
    }

    pub fn expand_size(&self) -> i64 {
        self.expand_size
            .unwrap_or(self.volume_size + DEFAULT_VOLUME_SIZE)
    }

    /// `<mount_dir>/target`, csi-sanity's publish target.
    pub fn target_path(&self) -> PathBuf {
        self.mount_dir.join("target")
    }

    /// Whether a case with this full name is selected by `filter` and not excluded by `skip`.
    pub fn selects(&self, full_name: &str) -> bool {
        self.filter.as_ref().is_none_or(|f| f.is_match(full_name))
            && !self.skip.as_ref().is_some_and(|s| s.is_match(full_name))
    }
}

/// Read a flat `key: value` YAML map (StorageClass-style parameters). Values that YAML would
/// type as numbers or booleans are kept as the text written.
pub fn load_string_map(path: &Path) -> Result<HashMap<String, String>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    if text.trim().is_empty() {
        return Ok(HashMap::new());
    }
    let value: serde_norway::Value = serde_norway::from_str(&text)
        .map_err(|e| format!("{}: not valid YAML: {e}", path.display()))?;
    let serde_norway::Value::Mapping(map) = value else {
        return Err(format!(
            "{}: expected a map of `key: value` lines",
            path.display()
        ));
    };
    let mut out = HashMap::new();
    for (k, v) in map {
        let key = scalar(&k).ok_or_else(|| format!("{}: keys must be strings", path.display()))?;
        let val = scalar(&v).ok_or_else(|| {
            format!(
                "{}: the value of {key:?} must be a string, number or boolean",
                path.display()
            )
        })?;
        out.insert(key, val);
    }
    Ok(out)
}

fn scalar(v: &serde_norway::Value) -> Option<String> {
    match v {
        serde_norway::Value::String(s) => Some(s.clone()),
        serde_norway::Value::Number(n) => Some(n.to_string()),
        serde_norway::Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// Read a csi-sanity secrets file.
pub fn load_secrets(path: &Path) -> Result<Secrets, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    if text.trim().is_empty() {
        return Ok(Secrets::default());
    }
    serde_norway::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_map_keeps_scalars_as_written() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("p.yaml");
        std::fs::write(&p, "type: ssd\nreplicas: 3\nencrypted: true\n").unwrap();
        let m = load_string_map(&p).unwrap();
        assert_eq!(m["type"], "ssd");
        assert_eq!(m["replicas"], "3");
        assert_eq!(m["encrypted"], "true");
        std::fs::write(&p, "- a\n- b\n").unwrap();
        assert!(load_string_map(&p).unwrap_err().contains("expected a map"));
    }

    #[test]
    fn secrets_use_csi_sanity_layout_and_reject_typos() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.yaml");
        std::fs::write(&p, "CreateVolumeSecret:\n  user: bob\n").unwrap();
        assert_eq!(
            load_secrets(&p).unwrap().create_volume_secret["user"],
            "bob"
        );
        std::fs::write(&p, "CreateVolumeSecrets:\n  user: bob\n").unwrap();
        assert!(load_secrets(&p).is_err());
    }

    #[test]
    fn filter_and_skip_select_by_full_name() {
        let mut c = Config::new("unix:///x", "/s".into(), "/m".into());
        assert!(c.selects("Node/anything"));
        c.filter = Some(Regex::new("^Controller/").unwrap());
        c.skip = Some(Regex::new("ListVolumes").unwrap());
        assert!(c.selects("Controller/CreateVolume x"));
        assert!(!c.selects("Controller/ListVolumes x"));
        assert!(!c.selects("Node/NodeStageVolume x"));
    }
}
