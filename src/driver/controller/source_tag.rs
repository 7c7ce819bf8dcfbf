//! How a volume's content source is recorded in its metadata ([`CONTENT_SOURCE_KEY`]): Cinder
//! keeps `snapshot_id` and `source_volid`, but only this tag says reliably that a volume was
//! restored from a backup.

use super::model::ContentSource;
use super::params::CONTENT_SOURCE_KEY;
use crate::cloud::{Volume, VolumeSource};

/// The metadata value recording a volume's source (see [`CONTENT_SOURCE_KEY`]).
pub(super) fn source_tag(src: &VolumeSource) -> String {
    match src {
        VolumeSource::Snapshot(id) => format!("snapshot/{id}"),
        VolumeSource::Backup(id) => format!("backup/{id}"),
        VolumeSource::Volume(id) => format!("volume/{id}"),
    }
}

/// The source recorded in a volume's metadata, as a CSI content source.
pub(super) fn recorded_source(v: &Volume) -> Option<ContentSource> {
    let tag = v.metadata.get(CONTENT_SOURCE_KEY)?;
    let (kind, id) = tag.split_once('/')?;
    match kind {
        "snapshot" | "backup" => Some(ContentSource::Snapshot(id.to_string())),
        "volume" => Some(ContentSource::Volume(id.to_string())),
        _ => None,
    }
}
