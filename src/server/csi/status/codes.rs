//! Which gRPC code each error gets, its message, and the Status built from both.

use super::*;

use std::fmt::{self, Display, Formatter};

use tonic::{Code, Status};

use crate::cloud::CloudError;
use crate::driver::{Error, Task, TokenProblem};
use crate::host::metadata::MetadataError;
use crate::host::HostError;
use crate::net::kube::KubeError;

pub fn code_of(err: &Error) -> Code {
    match err {
        Error::Invalid(_) => Code::InvalidArgument,
        Error::VolumeNotFound { .. }
        | Error::SnapshotNotFound { .. }
        | Error::GroupSnapshotNotFound { .. }
        | Error::NodeNotFound { .. }
        | Error::PathNotFound { .. }
        | Error::VolumeNotAtPath { .. } => Code::NotFound,
        Error::Mismatch(_) => Code::AlreadyExists,
        Error::Refused(_) | Error::NodeRefused(_) => Code::FailedPrecondition,
        Error::OutOfRange(_) => Code::OutOfRange,
        Error::NoZone { .. } => Code::ResourceExhausted,
        // The CO retries: the operation in the way, or the cloud, will have moved on.
        Error::Busy { .. } | Error::KeptChanging { .. } => Code::Aborted,
        // CSI: "Invalid starting_token" is ABORTED; the caller restarts the listing.
        Error::BadToken { .. } => Code::Aborted,
        // Kubelet keeps an uncertain stage in its books and retries; a final code would make
        // it forget a mount that stays.
        Error::GrowFailed { .. } | Error::ResizePending { .. } => Code::Unavailable,
        Error::Failed(_) | Error::TaskFailed { .. } => Code::Internal,
        Error::Cloud(e) => cloud_code(e),
        Error::Host(e) => host_code(e),
        Error::Metadata(e) => metadata_code(e),
        Error::Kube(e) => kube_code(e),
    }
}

pub(super) fn cloud_code(err: &CloudError) -> Code {
    match err {
        CloudError::NotFound { .. } => Code::NotFound,
        CloudError::Conflict { .. } => Code::FailedPrecondition,
        CloudError::OverLimit { .. } => Code::ResourceExhausted,
        CloudError::BadRequest { .. } => Code::InvalidArgument,
        CloudError::Unauthorized { .. } => Code::Unauthenticated,
        CloudError::Forbidden { .. } => Code::PermissionDenied,
        CloudError::Unavailable { .. } => Code::Unavailable,
        // The sidecar retries; the operation is still progressing in the cloud.
        CloudError::WaitTimeout { .. } => Code::Aborted,
        CloudError::ErrorState { .. } => Code::Internal,
        CloudError::GroupRefused(_) | CloudError::Unsupported(_) => Code::FailedPrecondition,
        CloudError::Internal(_) => Code::Internal,
    }
}

pub(super) fn host_code(err: &HostError) -> Code {
    match err {
        HostError::NotFound { .. } => Code::NotFound,
        HostError::Io { .. } => Code::Internal,
        // Something still holds the mount or directory; kubelet retries.
        HostError::Busy { .. } => Code::Unavailable,
        // Privilege missing (e.g. ext4 online grow without CAP_SYS_RESOURCE): an operator
        // has to change the deployment; retrying alone does not help.
        HostError::NotPermitted { .. } => Code::FailedPrecondition,
        HostError::Command { .. } => Code::Internal,
        // No disk for the volume on this node after the bounded wait (node::DEVICE_WAIT): as
        // far as this node can tell the volume does not exist here, which is the CSI spec's
        // NotFound for NodeStage/NodePublish; the CO retries stage anyway, and the message
        // says to check the attachment.
        HostError::DeviceNotFound { .. } => Code::NotFound,
        HostError::Unsupported(_) => Code::FailedPrecondition,
        // A symlink or an escape below the kubelet dir, a name too long, options the kernel
        // refuses: the request must change (CSI: INVALID_ARGUMENT for a bad field).
        HostError::UnsafePath { .. } | HostError::InvalidInput { .. } => Code::InvalidArgument,
        // Non-final for kubelet: it retries.
        HostError::TimedOut { .. } => Code::Unavailable,
    }
}

pub(super) fn metadata_code(err: &MetadataError) -> Code {
    match err {
        MetadataError::Unavailable(_) => Code::Unavailable,
        MetadataError::Invalid(_) => Code::FailedPrecondition,
    }
}

pub(super) fn kube_code(err: &KubeError) -> Code {
    match err {
        // The provisioner retries; the API server will be back.
        KubeError::Unavailable(_) => Code::Unavailable,
        // RBAC, the token or the PVC must change first.
        KubeError::Refused { .. } | KubeError::Invalid { .. } => Code::FailedPrecondition,
    }
}

/// The full cause chain, so a status says everything that went wrong.
pub fn message_of(err: &(dyn std::error::Error + 'static)) -> String {
    let mut msg = err.to_string();
    let mut source = err.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !msg.contains(&text) {
            msg.push_str(": ");
            msg.push_str(&text);
        }
        source = s.source();
    }
    msg
}

impl Display for Error {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Error::Invalid(e) => write!(f, "{e}"),
            Error::VolumeNotFound { id } => write!(f, "volume {id} not found"),
            Error::SnapshotNotFound { id } => write!(f, "snapshot {id} not found"),
            Error::GroupSnapshotNotFound { id } => write!(f, "group snapshot {id} not found"),
            Error::NodeNotFound { id } => write!(f, "node {id} not found"),
            Error::PathNotFound { path } => write!(f, "path {} not found", path.display()),
            Error::VolumeNotAtPath { id, path, why } => write!(
                f,
                "volume {id} is not staged or published at {}: {why}",
                path.display()
            ),
            Error::Mismatch(e) => write!(f, "{e}"),
            Error::Refused(e) => write!(f, "{e}"),
            Error::NodeRefused(e) => write!(f, "{e}"),
            Error::OutOfRange(e) => write!(f, "{e}"),
            Error::NoZone { asked, known } => no_zone(f, asked, known),
            Error::Busy { key } => write!(
                f,
                "an operation on {key} is already in progress; retry later"
            ),
            Error::KeptChanging { id, status } => write!(
                f,
                "volume {id} kept changing state (now {status}); retry later"
            ),
            Error::BadToken { token, why } => write!(
                f,
                "starting_token {token:?} is not valid ({why}); start the listing again \
                 without a token"
            ),
            Error::GrowFailed {
                id,
                staging,
                source,
            } => write!(
                f,
                "volume {id} is staged at {} but growing its filesystem failed: {source}",
                staging.display()
            ),
            Error::ResizePending {
                id,
                device,
                size,
                required,
            } => write!(
                f,
                "device {} of volume {id} is {size} bytes, less than the {required} bytes \
                 requested: the resize has not reached this node yet; retry",
                device.display()
            ),
            Error::Failed(e) => write!(f, "{e}"),
            Error::TaskFailed { task, source } => {
                let task = match task {
                    Task::Operation => "operation",
                    Task::Stats => "stats",
                };
                write!(f, "node {task} task failed: {source}")
            }
            // The adapters' errors say themselves.
            Error::Cloud(e) => write!(f, "{e}"),
            Error::Host(e) => write!(f, "{e}"),
            Error::Metadata(e) => write!(f, "{e}"),
            Error::Kube(e) => write!(f, "{e}"),
        }
    }
}

/// No Cinder zone satisfies the requisite topology (CSI: RESOURCE_EXHAUSTED).
pub(super) fn no_zone(f: &mut Formatter<'_>, asked: &[String], known: &[String]) -> fmt::Result {
    let known = if known.is_empty() {
        "(none)".to_string()
    } else {
        words::quoted(known)
    };
    write!(
        f,
        "no Cinder availability zone satisfies accessibility_requirements.requisite: it allows \
         zone{} {} and Cinder's zones are {known}; schedule the volume to nodes in one of \
         Cinder's zones, or add the zone to Cinder",
        words::plural(asked.len()),
        words::quoted(asked)
    )
}

impl Display for TokenProblem {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotIssued => f.write_str("not issued by this driver"),
            Self::OtherListing => f.write_str("issued by a different List call"),
            Self::DamagedCloud => f.write_str("damaged cloud name"),
            Self::UnknownCloud(name) => write!(f, "cloud {name:?} is not configured"),
        }
    }
}

impl From<Error> for Status {
    fn from(err: Error) -> Self {
        let status = Status::new(code_of(&err), message_of(&err));
        // Logged once, here at the boundary, inside the RPC's span.
        match status.code() {
            Code::Internal | Code::Unknown => {
                tracing::error!(code = ?status.code(), error = %status.message(), "rpc failed")
            }
            _ => tracing::warn!(code = ?status.code(), error = %status.message(), "rpc failed"),
        }
        status
    }
}
