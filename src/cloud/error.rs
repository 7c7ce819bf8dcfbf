//! Typed failures of the cloud port. The driver core turns them into CSI semantics; nothing
//! here knows about gRPC.

use std::fmt;

use super::GroupRefusal;

/// The kind of object an error is about, for messages and NotFound mapping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resource {
    Volume,
    Snapshot,
    Backup,
    Server,
    VolumeType,
    Attachment,
    AvailabilityZone,
    GroupSnapshot,
    GroupType,
    Group,
}

impl fmt::Display for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Volume => "volume",
            Self::Snapshot => "snapshot",
            Self::Backup => "backup",
            Self::Server => "server",
            Self::VolumeType => "volume type",
            Self::Attachment => "attachment",
            Self::AvailabilityZone => "availability zone",
            Self::GroupSnapshot => "group snapshot",
            Self::GroupType => "group type",
            Self::Group => "group",
        })
    }
}

/// `(request id …)` suffix for messages when the cloud gave one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestId(pub Option<String>);

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Some(id) => write!(f, " (request {id})"),
            None => Ok(()),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CloudError {
    #[error("{resource} {id} not found")]
    NotFound { resource: Resource, id: String },
    /// 409, "in use", "already attached", an invalid state for the operation.
    #[error("conflict: {message}{request_id}")]
    Conflict {
        message: String,
        request_id: RequestId,
    },
    /// 413 or a quota error.
    #[error("quota exceeded: {message}{request_id}")]
    OverLimit {
        message: String,
        request_id: RequestId,
    },
    /// 400 that is not a state conflict: the request itself was rejected.
    #[error("rejected by the cloud: {message}{request_id}")]
    BadRequest {
        message: String,
        request_id: RequestId,
    },
    /// 401 after re-authentication, or credentials refused by Keystone.
    #[error("authentication failed: {message}{request_id}")]
    Unauthorized {
        message: String,
        request_id: RequestId,
    },
    /// 403.
    #[error("forbidden: {message}{request_id}")]
    Forbidden {
        message: String,
        request_id: RequestId,
    },
    /// 5xx, timeouts, connection errors: worth retrying.
    #[error("cloud unavailable: {message}{request_id}")]
    Unavailable {
        message: String,
        request_id: RequestId,
    },
    /// A wait reached its deadline; the caller retries later.
    #[error("timed out waiting for {resource} {id} to become {wanted}; last status {last_status}")]
    WaitTimeout {
        resource: Resource,
        id: String,
        wanted: String,
        last_status: String,
    },
    /// A wait ended because the object went into an error state.
    #[error("{resource} {id} went into status {status}{}", reason.as_deref().map(|r| format!(": {r}")).unwrap_or_default())]
    ErrorState {
        resource: Resource,
        id: String,
        status: String,
        reason: Option<String>,
    },
    /// The cloud cannot take a consistent group snapshot of these volumes.
    #[error("{0}")]
    GroupRefused(GroupRefusal),
    /// The cloud cannot do this (feature or microversion missing, backups disabled, …).
    #[error("not supported by this cloud: {0}")]
    Unsupported(String),
    /// An answer the adapter did not understand, or a local I/O failure.
    #[error("{0}")]
    Internal(String),
}

impl CloudError {
    pub fn not_found(resource: Resource, id: impl Into<String>) -> Self {
        Self::NotFound {
            resource,
            id: id.into(),
        }
    }

    pub fn is_not_found(&self) -> bool {
        matches!(self, Self::NotFound { .. })
    }

    /// An `ErrorState` without a reason gets `reason` (what the adapter knows of the failure).
    pub fn or_reason(self, reason: &Option<String>) -> Self {
        match self {
            Self::ErrorState {
                resource,
                id,
                status,
                reason: None,
            } => Self::ErrorState {
                resource,
                id,
                status,
                reason: reason.clone(),
            },
            other => other,
        }
    }
}

pub type CloudResult<T> = Result<T, CloudError>;
