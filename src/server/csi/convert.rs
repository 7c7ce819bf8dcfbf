//! Proto ⇄ domain conversion shared by the controller and node services.

use std::time::Duration;

use tokio::time::Instant;
use tonic::Request;

use super::pb;
use super::pb::volume_capability::access_mode::Mode;
use crate::driver::types::{
    AccessMode, AccessType, CapacityRange, Topology, TopologyRequirement, VolumeCapability,
};
use crate::driver::{Error, Invalid, Range};

/// Deadline used when the caller sent none (sidecars always send one; csc/tests may not).
pub const DEFAULT_RPC_TIMEOUT: Duration = Duration::from_secs(120);

/// The RPC's deadline from the `grpc-timeout` header.
pub fn deadline<T>(req: &Request<T>) -> Instant {
    let timeout = req
        .metadata()
        .get("grpc-timeout")
        .and_then(|v| v.to_str().ok())
        .and_then(parse_grpc_timeout)
        .unwrap_or(DEFAULT_RPC_TIMEOUT);
    Instant::now() + timeout
}

/// `grpc-timeout` is an integer of at most 8 digits followed by a unit (H M S m u n).
pub fn parse_grpc_timeout(v: &str) -> Option<Duration> {
    if v.len() < 2 || v.len() > 9 {
        return None;
    }
    // Checked: the last byte may be inside a multi-byte character (found by fuzzing).
    let (num, unit) = v.split_at_checked(v.len() - 1)?;
    // Digits only: u64's parser would also take a sign.
    if !num.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: u64 = num.parse().ok()?;
    Some(match unit {
        "H" => Duration::from_secs(n.checked_mul(3600)?),
        "M" => Duration::from_secs(n.checked_mul(60)?),
        "S" => Duration::from_secs(n),
        "m" => Duration::from_millis(n),
        "u" => Duration::from_micros(n),
        "n" => Duration::from_nanos(n),
        _ => return None,
    })
}

pub fn access_mode(mode: i32) -> Result<AccessMode, Error> {
    Ok(match Mode::try_from(mode) {
        Ok(Mode::SingleNodeWriter) => AccessMode::SingleNodeWriter,
        Ok(Mode::SingleNodeReaderOnly) => AccessMode::SingleNodeReaderOnly,
        Ok(Mode::MultiNodeReaderOnly) => AccessMode::MultiNodeReaderOnly,
        Ok(Mode::MultiNodeSingleWriter) => AccessMode::MultiNodeSingleWriter,
        Ok(Mode::MultiNodeMultiWriter) => AccessMode::MultiNodeMultiWriter,
        Ok(Mode::SingleNodeSingleWriter) => AccessMode::SingleNodeSingleWriter,
        Ok(Mode::SingleNodeMultiWriter) => AccessMode::SingleNodeMultiWriter,
        Ok(Mode::Unknown) | Err(_) => return Err(Invalid::UnknownAccessMode { mode }.into()),
    })
}

pub fn access_mode_to_pb(mode: AccessMode) -> Mode {
    match mode {
        AccessMode::SingleNodeWriter => Mode::SingleNodeWriter,
        AccessMode::SingleNodeReaderOnly => Mode::SingleNodeReaderOnly,
        AccessMode::MultiNodeReaderOnly => Mode::MultiNodeReaderOnly,
        AccessMode::MultiNodeSingleWriter => Mode::MultiNodeSingleWriter,
        AccessMode::MultiNodeMultiWriter => Mode::MultiNodeMultiWriter,
        AccessMode::SingleNodeSingleWriter => Mode::SingleNodeSingleWriter,
        AccessMode::SingleNodeMultiWriter => Mode::SingleNodeMultiWriter,
    }
}

/// One capability; both access type and access mode are required by the spec.
pub fn capability(cap: &pb::VolumeCapability) -> Result<VolumeCapability, Error> {
    let access_type = match &cap.access_type {
        Some(pb::volume_capability::AccessType::Block(_)) => AccessType::Block,
        Some(pb::volume_capability::AccessType::Mount(m)) => AccessType::Mount {
            fs_type: Some(m.fs_type.trim().to_string()).filter(|s| !s.is_empty()),
            mount_flags: m.mount_flags.clone(),
            volume_mount_group: Some(m.volume_mount_group.clone()).filter(|s| !s.is_empty()),
        },
        None => return Err(Invalid::NoAccessType.into()),
    };
    let access_mode = match &cap.access_mode {
        Some(m) => access_mode(m.mode)?,
        None => return Err(Invalid::NoAccessMode.into()),
    };
    Ok(VolumeCapability {
        access_type,
        access_mode,
    })
}

/// A required, non-empty list of capabilities.
pub fn capabilities(caps: &[pb::VolumeCapability]) -> Result<Vec<VolumeCapability>, Error> {
    if caps.is_empty() {
        return Err(Invalid::NoCapabilities.into());
    }
    caps.iter().map(capability).collect()
}

/// A required single capability (node RPCs, ControllerPublish).
pub fn required_capability(cap: Option<&pb::VolumeCapability>) -> Result<VolumeCapability, Error> {
    match cap {
        Some(c) => capability(c),
        None => Err(Invalid::Required {
            field: "volume_capability",
        }
        .into()),
    }
}

pub fn capability_to_pb(cap: &VolumeCapability) -> pb::VolumeCapability {
    let access_type = match &cap.access_type {
        AccessType::Block => {
            pb::volume_capability::AccessType::Block(pb::volume_capability::BlockVolume {})
        }
        AccessType::Mount {
            fs_type,
            mount_flags,
            volume_mount_group,
        } => pb::volume_capability::AccessType::Mount(pb::volume_capability::MountVolume {
            fs_type: fs_type.clone().unwrap_or_default(),
            mount_flags: mount_flags.clone(),
            volume_mount_group: volume_mount_group.clone().unwrap_or_default(),
        }),
    };
    pb::VolumeCapability {
        access_type: Some(access_type),
        access_mode: Some(pb::volume_capability::AccessMode {
            mode: access_mode_to_pb(cap.access_mode) as i32,
        }),
    }
}

pub fn capacity_range(r: Option<&pb::CapacityRange>) -> Result<CapacityRange, Error> {
    let Some(r) = r else {
        return Ok(CapacityRange::default());
    };
    if r.required_bytes < 0 || r.limit_bytes < 0 {
        return Err(Invalid::NegativeCapacity.into());
    }
    let range = CapacityRange {
        required_bytes: r.required_bytes as u64,
        limit_bytes: r.limit_bytes as u64,
    };
    if range.limit_bytes != 0 && range.required_bytes > range.limit_bytes {
        return Err(Range::RequiredOverLimit(range).into());
    }
    Ok(range)
}

pub fn topology(t: &pb::Topology) -> Topology {
    t.segments.clone().into_iter().collect()
}

pub fn topology_to_pb(t: &Topology) -> pb::Topology {
    pb::Topology {
        segments: t.clone().into_iter().collect(),
    }
}

pub fn topology_requirement(t: Option<&pb::TopologyRequirement>) -> TopologyRequirement {
    match t {
        None => TopologyRequirement::default(),
        Some(t) => TopologyRequirement {
            requisite: t.requisite.iter().map(topology).collect(),
            preferred: t.preferred.iter().map(topology).collect(),
        },
    }
}

/// Record the volume id on the RPC's span (opened by the server's span layer).
pub fn record_volume(id: &str) {
    tracing::Span::current().record("volume_id", id);
}

/// A required string field: empty is InvalidArgument naming the field.
pub fn required<'a>(value: &'a str, field: &'static str) -> Result<&'a str, Error> {
    if value.is_empty() {
        Err(Invalid::Required { field }.into())
    } else {
        Ok(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grpc_timeouts() {
        assert_eq!(parse_grpc_timeout("10S"), Some(Duration::from_secs(10)));
        assert_eq!(
            parse_grpc_timeout("1500m"),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(parse_grpc_timeout("2M"), Some(Duration::from_secs(120)));
        assert_eq!(parse_grpc_timeout("1H"), Some(Duration::from_secs(3600)));
        assert_eq!(parse_grpc_timeout("5u"), Some(Duration::from_micros(5)));
        assert_eq!(parse_grpc_timeout("S"), None);
        assert_eq!(parse_grpc_timeout("10x"), None);
        assert_eq!(parse_grpc_timeout("123456789S"), None);
        assert_eq!(parse_grpc_timeout("+5S"), None);
        // tests/fuzz/corpus/grpc_request/crash-grpc-timeout-char-boundary: a panic before.
        assert_eq!(parse_grpc_timeout("11!2251\u{759}"), None);
        assert_eq!(parse_grpc_timeout("1\u{e9}"), None);
    }

    #[test]
    fn capability_roundtrip() {
        let cap = VolumeCapability {
            access_type: AccessType::Mount {
                fs_type: Some("xfs".into()),
                mount_flags: vec!["noatime".into()],
                volume_mount_group: None,
            },
            access_mode: AccessMode::SingleNodeWriter,
        };
        assert_eq!(capability(&capability_to_pb(&cap)).unwrap(), cap);
        assert!(capabilities(&[]).is_err());
        assert!(capability(&pb::VolumeCapability::default()).is_err());
    }

    #[test]
    fn capacity_limits() {
        let r = pb::CapacityRange {
            required_bytes: 10,
            limit_bytes: 5,
        };
        assert!(matches!(
            capacity_range(Some(&r)),
            Err(Error::OutOfRange(_))
        ));
        let r = pb::CapacityRange {
            required_bytes: -1,
            limit_bytes: 0,
        };
        assert!(matches!(
            capacity_range(Some(&r)),
            Err(Error::Invalid(Invalid::NegativeCapacity))
        ));
    }
}
