//! Request pieces built from `ctl` flags: capabilities, secrets, maps, topology.

use std::collections::{BTreeMap, HashMap};

use super::args::{Capability, Secrets};
use crate::server::csi::pb;
use crate::server::csi::pb::volume_capability::access_mode::Mode;

pub fn capability(c: &Capability) -> pb::VolumeCapability {
    // The driver's names are the spec's, which are the protobuf's.
    let mode = Mode::from_str_name(c.access_mode.as_str()).expect("a CSI access mode");
    let access_type = if c.block {
        pb::volume_capability::AccessType::Block(pb::volume_capability::BlockVolume {})
    } else {
        pb::volume_capability::AccessType::Mount(pb::volume_capability::MountVolume {
            fs_type: c.fs_type.clone().unwrap_or_default(),
            mount_flags: c.mount_flags.clone(),
            volume_mount_group: String::new(),
        })
    };
    pb::VolumeCapability {
        access_type: Some(access_type),
        access_mode: Some(pb::volume_capability::AccessMode { mode: mode as i32 }),
    }
}

/// Only when a capability flag was given (RPCs where the capability is optional).
pub fn optional_capability(c: &Capability) -> Option<pb::VolumeCapability> {
    c.given().then(|| capability(c))
}

pub fn kv_map(pairs: &[(String, String)]) -> HashMap<String, String> {
    pairs.iter().cloned().collect()
}

pub fn topology(segments: &BTreeMap<String, String>) -> pb::Topology {
    pb::Topology {
        segments: segments.clone().into_iter().collect(),
    }
}

/// `--secret` pairs, then `--secrets-file` lines (later wins). Errors never show values.
pub fn secrets(s: &Secrets) -> Result<HashMap<String, String>, String> {
    let mut out = HashMap::new();
    for arg in &s.secret {
        let (k, v) = super::args::parse_secret(arg)?;
        out.insert(k, v);
    }
    if let Some(path) = &s.secrets_file {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read secrets file {}: {e}", path.display()))?;
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            match line.split_once('=') {
                Some((k, v)) if !k.trim().is_empty() => {
                    out.insert(k.trim().to_string(), v.trim().to_string());
                }
                _ => {
                    return Err(format!(
                        "{}:{}: expected KEY=VALUE (the line is not shown)",
                        path.display(),
                        n + 1
                    ))
                }
            }
        }
    }
    Ok(out)
}

pub fn capacity_range(required: Option<u64>, limit: Option<u64>) -> Option<pb::CapacityRange> {
    (required.is_some() || limit.is_some()).then(|| pb::CapacityRange {
        required_bytes: required.unwrap_or(0) as i64,
        limit_bytes: limit.unwrap_or(0) as i64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::ctl::args::AccessMode;

    #[test]
    fn secrets_file_lines() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s");
        std::fs::write(&p, "# c\nuser=a\npassword = p=w\n").unwrap();
        let s = secrets(&Secrets {
            secret: vec!["user=cli".into()],
            secrets_file: Some(p.clone()),
        })
        .unwrap();
        assert_eq!(s["user"], "a");
        assert_eq!(s["password"], "p=w");
        std::fs::write(&p, "topsecret\n").unwrap();
        let e = secrets(&Secrets {
            secret: vec!["hunter2".into()],
            secrets_file: None,
        })
        .unwrap_err();
        assert!(!e.contains("hunter2"), "{e}");
        let e = secrets(&Secrets {
            secret: vec![],
            secrets_file: Some(p),
        })
        .unwrap_err();
        assert!(!e.contains("topsecret"), "{e}");
    }

    #[test]
    fn block_and_mount_capabilities() {
        let c = Capability {
            block: true,
            fs_type: None,
            mount_flags: vec![],
            access_mode: AccessMode::SingleNodeWriter,
        };
        assert!(matches!(
            capability(&c).access_type,
            Some(pb::volume_capability::AccessType::Block(_))
        ));
        let c = Capability {
            block: false,
            fs_type: Some("xfs".into()),
            mount_flags: vec!["noatime".into()],
            access_mode: AccessMode::MultiNodeReaderOnly,
        };
        let cap = capability(&c);
        assert_eq!(
            cap.access_mode.unwrap().mode,
            Mode::MultiNodeReaderOnly as i32
        );
        assert!(optional_capability(&Capability {
            block: false,
            fs_type: None,
            mount_flags: vec![],
            access_mode: AccessMode::SingleNodeWriter
        })
        .is_none());
    }
}
