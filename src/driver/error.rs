//! Semantic errors of the driver core. `csi::status` maps each to exactly one gRPC code;
//! nothing below `csi` builds a gRPC status.

use std::path::PathBuf;

use crate::cloud::CloudError;
use crate::host::HostError;
use crate::metadata::MetadataError;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The request is malformed; the message says which field and how to fix it.
    #[error("{0}")]
    InvalidArgument(String),
    #[error("volume {id} not found")]
    VolumeNotFound { id: String },
    #[error("snapshot {id} not found")]
    SnapshotNotFound { id: String },
    #[error("node {id} not found")]
    NodeNotFound { id: String },
    #[error("path {} not found", path.display())]
    PathNotFound { path: PathBuf },
    /// Something is at `path`, but it is not volume `id` (NodeGetVolumeStats).
    #[error("volume {id} is not staged or published at {}: {reason}", path.display())]
    VolumeNotAtPath {
        id: String,
        path: PathBuf,
        reason: String,
    },
    #[error("{0}")]
    AlreadyExists(String),
    /// The request is valid but the system is not in a state to honour it.
    #[error("{0}")]
    FailedPrecondition(String),
    #[error("{0}")]
    OutOfRange(String),
    #[error("{0}")]
    ResourceExhausted(String),
    /// Another operation on the same object is in flight.
    #[error("an operation on {key} is already in progress; retry later")]
    Busy { key: String },
    /// A wait ran out of time; retrying later is expected to succeed.
    #[error("{0}")]
    Aborted(String),
    #[error("{0}")]
    Unavailable(String),
    #[error("{0}")]
    Unimplemented(String),
    #[error("{0}")]
    Internal(String),
    #[error(transparent)]
    Cloud(#[from] CloudError),
    #[error(transparent)]
    Host(#[from] HostError),
    #[error(transparent)]
    Metadata(#[from] MetadataError),
}

impl Error {
    pub fn invalid(msg: impl Into<String>) -> Self {
        Self::InvalidArgument(msg.into())
    }

    pub fn precondition(msg: impl Into<String>) -> Self {
        Self::FailedPrecondition(msg.into())
    }

    pub fn internal(msg: impl Into<String>) -> Self {
        Self::Internal(msg.into())
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
