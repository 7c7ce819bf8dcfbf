//! The core's `Error`: one variant per kind of failure, the conversions into it, `Result`.

use super::*;

use std::path::PathBuf;

use crate::cloud::{CloudError, VolumeStatus};
use crate::host::metadata::MetadataError;
use crate::host::HostError;
use crate::net::kube::KubeError;

#[derive(Debug)]
pub enum Error {
    /// The request is malformed.
    Invalid(Invalid),
    VolumeNotFound {
        id: String,
    },
    SnapshotNotFound {
        id: String,
    },
    GroupSnapshotNotFound {
        id: String,
    },
    NodeNotFound {
        id: String,
    },
    PathNotFound {
        path: PathBuf,
    },
    /// Something is at `path`, but it is not volume `id`.
    VolumeNotAtPath {
        id: String,
        path: PathBuf,
        why: NotAtPath,
    },
    /// An object exists under the request's name or at its path, but not as asked.
    Mismatch(Mismatch),
    /// The cloud's objects are not in a state to honour the request.
    Refused(Refusal),
    /// The node's paths, mounts or devices do not allow the request.
    NodeRefused(NodeRefusal),
    OutOfRange(Range),
    /// No Cinder zone satisfies the requisite topology, whose every term names a zone (of
    /// `asked`); `known` are Cinder's.
    NoZone {
        asked: Vec<String>,
        known: Vec<String>,
    },
    /// Another operation on the same object is in flight.
    Busy {
        key: String,
    },
    /// The volume kept changing state through every retry of one RPC.
    KeptChanging {
        id: String,
        status: VolumeStatus,
    },
    /// A `starting_token` this driver did not issue for this listing.
    BadToken {
        token: String,
        why: TokenProblem,
    },
    /// Volume `id` is staged, but growing its filesystem failed; the mount stays (kubelet
    /// must keep the volume staged in its books, so this is a code it retries).
    GrowFailed {
        id: String,
        staging: PathBuf,
        source: Box<Error>,
    },
    /// The device is `size` bytes, less than `required`: the resize has not reached the node.
    ResizePending {
        id: String,
        device: PathBuf,
        size: u64,
        required: u64,
    },
    Failed(Failure),
    /// The blocking task running a node RPC panicked or was cancelled.
    TaskFailed {
        task: Task,
        source: tokio::task::JoinError,
    },
    Cloud(CloudError),
    Host(HostError),
    Metadata(MetadataError),
    /// The Kubernetes API could not give the PVC's annotations (`--pvc-annotations`).
    Kube(KubeError),
}

/// Why a listing token is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenProblem {
    NotIssued,
    /// Issued by the other List call.
    OtherListing,
    DamagedCloud,
    UnknownCloud(String),
}

/// Which node task failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Task {
    Operation,
    Stats,
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            // The adapters' errors stand for themselves: their causes are ours.
            Self::Cloud(e) => e.source(),
            Self::Host(e) => e.source(),
            Self::Metadata(e) => e.source(),
            Self::Kube(e) => e.source(),
            Self::GrowFailed { source, .. } => Some(source.as_ref()),
            Self::TaskFailed { source, .. } => Some(source),
            Self::Invalid(_)
            | Self::VolumeNotFound { .. }
            | Self::SnapshotNotFound { .. }
            | Self::GroupSnapshotNotFound { .. }
            | Self::NodeNotFound { .. }
            | Self::PathNotFound { .. }
            | Self::VolumeNotAtPath { .. }
            | Self::Mismatch(_)
            | Self::Refused(_)
            | Self::NodeRefused(_)
            | Self::OutOfRange(_)
            | Self::NoZone { .. }
            | Self::Busy { .. }
            | Self::KeptChanging { .. }
            | Self::BadToken { .. }
            | Self::ResizePending { .. }
            | Self::Failed(_) => None,
        }
    }
}

macro_rules! from {
    ($($ty:ty => $variant:ident),* $(,)?) => {$(
        impl From<$ty> for Error {
            fn from(e: $ty) -> Self {
                Self::$variant(e)
            }
        }
    )*};
}

from! {
    Invalid => Invalid,
    Mismatch => Mismatch,
    Refusal => Refused,
    NodeRefusal => NodeRefused,
    Range => OutOfRange,
    Failure => Failed,
    CloudError => Cloud,
    HostError => Host,
    MetadataError => Metadata,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
