//! Command line of `cinder-csi-sanity`, turned into a [`Config`].

use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, ValueEnum};
use regex::Regex;

use crate::config::{load_secrets, load_string_map, AccessType, Config, DEFAULT_VOLUME_SIZE};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AccessArg {
    /// Volumes are mounted file systems.
    Mount,
    /// Volumes are raw block devices.
    Block,
}

/// CSI conformance runner: checks a CSI driver against the CSI v1.12 spec over gRPC.
#[derive(Debug, Parser)]
#[command(name = "cinder-csi-sanity", version, about)]
pub struct Cli {
    /// The driver's node (and controller) endpoint: unix:///path.sock, /path.sock or tcp://host:port.
    #[arg(long, env = "CSI_ENDPOINT", default_value = "unix:///csi/csi.sock")]
    pub endpoint: String,

    /// The controller endpoint when the controller is served elsewhere.
    #[arg(long, value_name = "ENDPOINT")]
    pub controller_endpoint: Option<String>,

    /// Staging directory, made before each case and removed after it (its parent must exist).
    #[arg(long, value_name = "DIR", default_value = "/tmp/csi-staging")]
    pub staging_dir: PathBuf,

    /// Mount directory, made before each case and removed after it; the publish target is
    /// <DIR>/target.
    #[arg(long, value_name = "DIR", default_value = "/tmp/csi-mount")]
    pub mount_dir: PathBuf,

    /// Size of the volumes the cases create, in bytes (suffixes Ki, Mi, Gi, Ti accepted).
    #[arg(long, value_name = "BYTES", value_parser = parse_size, default_value_t = DEFAULT_VOLUME_SIZE)]
    pub volume_size: i64,

    /// Size to expand volumes to; volume size + 1 GiB when unset.
    #[arg(long, value_name = "BYTES", value_parser = parse_size)]
    pub expand_size: Option<i64>,

    /// How volumes are used: mounted file systems or raw block devices.
    #[arg(long, value_enum, default_value_t = AccessArg::Mount)]
    pub access_type: AccessArg,

    /// YAML map of CreateVolume parameters (StorageClass parameters).
    #[arg(long, value_name = "FILE.yaml")]
    pub parameters: Option<PathBuf>,

    /// YAML map of CreateSnapshot parameters (VolumeSnapshotClass parameters).
    #[arg(long, value_name = "FILE.yaml")]
    pub snapshot_parameters: Option<PathBuf>,

    /// YAML map of mutable parameters for CreateVolume and ControllerModifyVolume; the cases
    /// that need them are skipped without it.
    #[arg(long, value_name = "FILE.yaml")]
    pub mutable_parameters: Option<PathBuf>,

    /// Secrets per RPC, in csi-sanity's layout (CreateVolumeSecret: {key: value}, ...).
    #[arg(long, value_name = "FILE.yaml")]
    pub secrets: Option<PathBuf>,

    /// Run only the cases whose full name (Group/name) matches this regular expression.
    #[arg(long, value_name = "REGEX")]
    pub filter: Option<Regex>,

    /// Do not run the cases whose full name matches this regular expression.
    #[arg(long, value_name = "REGEX")]
    pub skip: Option<Regex>,

    /// Also write the results as JUnit XML to this file.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,

    /// List the selected cases and what each needs, then exit without contacting the driver.
    #[arg(long)]
    pub list: bool,

    /// Deadline of each RPC: seconds, or a number with s/m/h.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "60s")]
    pub timeout: Duration,

    /// How long to keep asking CreateSnapshot until the snapshot is ready_to_use.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "5m")]
    pub snapshot_ready_timeout: Duration,

    /// Prefix of every volume and snapshot name the runner creates.
    #[arg(long, value_name = "PREFIX", default_value = "sanity")]
    pub test_volume_prefix: String,
}

impl Cli {
    pub fn into_config(self) -> Result<(Config, Option<PathBuf>, bool), String> {
        let mut c = Config::new(self.endpoint, self.staging_dir, self.mount_dir);
        c.controller_endpoint = self.controller_endpoint;
        c.volume_size = self.volume_size;
        c.expand_size = self.expand_size;
        if let Some(e) = c.expand_size {
            if e <= c.volume_size {
                return Err(format!(
                    "--expand-size {e} must be larger than --volume-size {}",
                    c.volume_size
                ));
            }
        }
        c.access_type = match self.access_type {
            AccessArg::Mount => AccessType::Mount,
            AccessArg::Block => AccessType::Block,
        };
        if let Some(p) = &self.parameters {
            c.parameters = load_string_map(p)?;
        }
        if let Some(p) = &self.snapshot_parameters {
            c.snapshot_parameters = load_string_map(p)?;
        }
        if let Some(p) = &self.mutable_parameters {
            c.mutable_parameters = Some(load_string_map(p)?);
        }
        if let Some(p) = &self.secrets {
            c.secrets = load_secrets(p)?;
        }
        c.filter = self.filter;
        c.skip = self.skip;
        c.timeout = self.timeout;
        c.snapshot_ready_timeout = self.snapshot_ready_timeout;
        if self.test_volume_prefix.is_empty() {
            return Err("--test-volume-prefix must not be empty".into());
        }
        c.volume_prefix = self.test_volume_prefix;
        Ok((c, self.junit, self.list))
    }
}

/// `1073741824`, `1Gi`, `512Mi`.
pub fn parse_size(s: &str) -> Result<i64, String> {
    let (num, mult) = [
        ("Ki", 1i64 << 10),
        ("Mi", 1 << 20),
        ("Gi", 1 << 30),
        ("Ti", 1 << 40),
    ]
    .iter()
    .find_map(|(suf, m)| s.strip_suffix(suf).map(|n| (n, *m)))
    .unwrap_or((s, 1));
    let n: i64 = num
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a size in bytes (e.g. 1073741824 or 1Gi)"))?;
    n.checked_mul(mult)
        .filter(|v| *v > 0)
        .ok_or_else(|| format!("{s:?} must be a positive size"))
}

/// `90`, `90s`, `2m`, `1h`.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let (num, mult) = [("ms", 0u64), ("s", 1), ("m", 60), ("h", 3600)]
        .iter()
        .find_map(|(suf, m)| s.strip_suffix(suf).map(|n| (n, *m)))
        .unwrap_or((s, 1));
    let n: u64 = num
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a duration (e.g. 60, 60s, 2m)"))?;
    let d = if mult == 0 {
        Duration::from_millis(n)
    } else {
        Duration::from_secs(n * mult)
    };
    if d.is_zero() {
        return Err(format!("{s:?} must be longer than zero"));
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_durations() {
        assert_eq!(parse_size("1Gi"), Ok(1 << 30));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert!(parse_size("-1").is_err());
        assert!(parse_size("big").is_err());
        assert_eq!(parse_duration("90"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert!(parse_duration("0s").is_err());
    }

    #[test]
    fn cli_builds_a_config() {
        let cli = Cli::try_parse_from([
            "cinder-csi-sanity",
            "--endpoint",
            "unix:///x.sock",
            "--access-type",
            "block",
            "--volume-size",
            "2Gi",
            "--filter",
            "^Node/",
            "--timeout",
            "5s",
        ])
        .unwrap();
        let (c, junit, list) = cli.into_config().unwrap();
        assert_eq!(c.access_type, AccessType::Block);
        assert_eq!(c.volume_size, 2 << 30);
        assert_eq!(c.expand_size(), 3 << 30);
        assert_eq!(c.timeout, Duration::from_secs(5));
        assert!(c.selects("Node/x") && !c.selects("Controller/x"));
        assert!(junit.is_none() && !list);
        let cli =
            Cli::try_parse_from(["x", "--volume-size", "2Gi", "--expand-size", "1Gi"]).unwrap();
        assert!(cli.into_config().unwrap_err().contains("--expand-size"));
    }
}
