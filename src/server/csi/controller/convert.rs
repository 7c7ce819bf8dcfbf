//! Proto ⇄ controller-core conversion for the Controller service.

use crate::driver::controller::{Condition, ContentSource, SnapshotInfo, VolumeEntry, VolumeInfo};
use crate::driver::types::ZONE_TOPOLOGY_KEY;
use crate::driver::{Invalid, Result};
use crate::server::csi::convert::{required, topology_to_pb};
use crate::server::csi::pb;

/// `volume_content_source`: exactly one of snapshot / volume, with a non-empty id.
pub fn content_source(src: Option<&pb::VolumeContentSource>) -> Result<Option<ContentSource>> {
    use pb::volume_content_source::Type;
    let Some(src) = src else {
        return Ok(None);
    };
    Ok(Some(match &src.r#type {
        Some(Type::Snapshot(s)) => ContentSource::Snapshot(
            required(&s.snapshot_id, "volume_content_source.snapshot.snapshot_id")?.to_string(),
        ),
        Some(Type::Volume(v)) => ContentSource::Volume(
            required(&v.volume_id, "volume_content_source.volume.volume_id")?.to_string(),
        ),
        None => return Err(Invalid::EmptyContentSource.into()),
    }))
}

pub fn content_source_to_pb(src: &ContentSource) -> pb::VolumeContentSource {
    use pb::volume_content_source::{SnapshotSource, Type, VolumeSource};
    pb::VolumeContentSource {
        r#type: Some(match src {
            ContentSource::Snapshot(id) => Type::Snapshot(SnapshotSource {
                snapshot_id: id.clone(),
            }),
            ContentSource::Volume(id) => Type::Volume(VolumeSource {
                volume_id: id.clone(),
            }),
        }),
    }
}

/// Bytes as the wire's int64 (sizes beyond i64 are reported as the largest int64).
pub fn bytes(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

pub fn volume_to_pb(v: &VolumeInfo) -> pb::Volume {
    pb::Volume {
        capacity_bytes: bytes(v.capacity_bytes),
        volume_id: v.id.clone(),
        volume_context: v.context.clone().into_iter().collect(),
        content_source: v.source.as_ref().map(content_source_to_pb),
        accessible_topology: v.topology.iter().map(topology_to_pb).collect(),
    }
}

pub fn condition_to_pb(c: &Condition) -> pb::VolumeCondition {
    pb::VolumeCondition {
        abnormal: c.abnormal,
        message: c.message.clone(),
    }
}

pub fn list_entry_to_pb(e: &VolumeEntry) -> pb::list_volumes_response::Entry {
    pb::list_volumes_response::Entry {
        volume: Some(volume_to_pb(&e.volume)),
        status: Some(pb::list_volumes_response::VolumeStatus {
            published_node_ids: e.published_node_ids.clone(),
            volume_condition: Some(condition_to_pb(&e.condition)),
        }),
    }
}

pub fn get_volume_to_pb(e: &VolumeEntry) -> pb::ControllerGetVolumeResponse {
    pb::ControllerGetVolumeResponse {
        volume: Some(volume_to_pb(&e.volume)),
        status: Some(pb::controller_get_volume_response::VolumeStatus {
            published_node_ids: e.published_node_ids.clone(),
            volume_condition: Some(condition_to_pb(&e.condition)),
        }),
    }
}

pub fn snapshot_to_pb(s: &SnapshotInfo) -> pb::Snapshot {
    pb::Snapshot {
        size_bytes: bytes(s.size_bytes),
        snapshot_id: s.id.clone(),
        source_volume_id: s.source_volume_id.clone(),
        creation_time: Some(prost_types::Timestamp::from(s.created_at)),
        ready_to_use: s.ready_to_use,
        group_snapshot_id: s.group_snapshot_id.clone().unwrap_or_default(),
    }
}

/// `max_entries`: MUST NOT be negative; 0 = no limit.
pub fn max_entries(n: i32) -> Result<u32> {
    u32::try_from(n).map_err(|_| Invalid::NegativeMaxEntries { n }.into())
}

/// An optional string field: empty means unset.
pub fn optional(s: &str) -> Option<String> {
    (!s.is_empty()).then(|| s.to_string())
}

/// The AZ a GetCapacity `accessible_topology` asks about.
pub fn zone(t: Option<&pb::Topology>) -> Option<String> {
    t.and_then(|t| t.segments.get(ZONE_TOPOLOGY_KEY).cloned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_sources() {
        use pb::volume_content_source::{SnapshotSource, Type};
        assert_eq!(content_source(None).unwrap(), None);
        let empty = pb::VolumeContentSource { r#type: None };
        assert!(content_source(Some(&empty)).is_err());
        let no_id = pb::VolumeContentSource {
            r#type: Some(Type::Snapshot(SnapshotSource {
                snapshot_id: String::new(),
            })),
        };
        assert!(content_source(Some(&no_id)).is_err());
        let src = ContentSource::Volume("v".into());
        assert_eq!(
            content_source(Some(&content_source_to_pb(&src))).unwrap(),
            Some(src)
        );
    }

    #[test]
    fn limits() {
        assert_eq!(max_entries(0).unwrap(), 0);
        assert!(max_entries(-1).is_err());
        assert_eq!(bytes(u64::MAX), i64::MAX);
    }
}
