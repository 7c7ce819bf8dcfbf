//! The words for an object that exists, but not as the request asks (AlreadyExists).

use std::fmt::{self, Display, Formatter};

use super::words::joined;
use crate::driver::controller::params::CLUSTER_KEY;
use crate::driver::{Mismatch, VolumeDiff};

fn rw(read_only: bool) -> &'static str {
    if read_only {
        "read-only"
    } else {
        "read-write"
    }
}

impl Display for Mismatch {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Self::ForeignVolume {
                name,
                id,
                cluster,
                tag,
            } => write!(
                f,
                "a volume named {name:?} already exists ({id}) but was not created by this \
                 driver for cluster {cluster:?} (its metadata {CLUSTER_KEY} is {}); it is not \
                 adopted: rename or delete it",
                tag.as_ref()
                    .map(|c| format!("{c:?}"))
                    .unwrap_or_else(|| "missing".into())
            ),
            Self::Volume { name, id, diff } => write!(
                f,
                "volume {name:?} already exists as {id} but {diff}; use another name or \
                 delete it"
            ),
            Self::CopyOfOther {
                kind,
                name,
                id,
                of,
                wanted,
            } => write!(
                f,
                "{} {name:?} already exists as {id} of volume {of}, not of {wanted}",
                kind.as_str()
            ),
            Self::GroupOfOther {
                name,
                id,
                of,
                wanted,
            } => write!(
                f,
                "group snapshot {name:?} exists as {id}, of volumes {}, not of {}",
                joined(of),
                joined(wanted)
            ),
            Self::BackupOfOther { name, of, wanted } => write!(
                f,
                "a backup named {name:?} is being taken of volume {of}, not of {wanted}"
            ),
            Self::StagedForBlock { id, staging } => write!(
                f,
                "volume {id} is staged at {} for block access; call NodeUnstageVolume before \
                 staging it with mount access",
                staging.display()
            ),
            Self::StagedWithMount { id, staging } => write!(
                f,
                "volume {id} is staged at {} with mount access (its filesystem is mounted \
                 there); call NodeUnstageVolume before staging it for block access",
                staging.display()
            ),
            Self::PublishedOtherwise {
                id,
                target,
                read_only,
            } => write!(
                f,
                "volume {id} is already published at {} {}; unpublish it before publishing it {}",
                target.display(),
                rw(!read_only),
                rw(*read_only)
            ),
        }
    }
}

impl Display for VolumeDiff {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Self::Size { size_gib, capacity } => write!(
                f,
                "its size {size_gib} GiB does not fit capacity_range (required {}, limit {})",
                capacity.required_bytes, capacity.limit_bytes
            ),
            Self::Source => f.write_str("its content source differs"),
            Self::Capability(why) => write!(f, "it cannot serve the capability: {why}"),
            Self::Type { have, want } => {
                write!(f, "its volume type is {have:?}, not {want:?}")
            }
            Self::Zone {
                zone,
                topology,
                requisite,
            } => write!(
                f,
                "its availability zone {zone:?} (topology {topology:?}) is not among the \
                 requisite zones {requisite:?}"
            ),
        }
    }
}
