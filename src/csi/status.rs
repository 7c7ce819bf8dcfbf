//! The one place where driver errors become gRPC statuses. Every variant is matched
//! explicitly (no `_ =>`), so a new error kind cannot silently become `Internal`.

use tonic::{Code, Status};

use crate::cloud::CloudError;
use crate::driver::Error;
use crate::host::HostError;
use crate::metadata::MetadataError;

pub fn code_of(err: &Error) -> Code {
    match err {
        Error::InvalidArgument(_) => Code::InvalidArgument,
        Error::VolumeNotFound { .. }
        | Error::SnapshotNotFound { .. }
        | Error::NodeNotFound { .. }
        | Error::PathNotFound { .. }
        | Error::VolumeNotAtPath { .. } => Code::NotFound,
        Error::AlreadyExists(_) => Code::AlreadyExists,
        Error::FailedPrecondition(_) => Code::FailedPrecondition,
        Error::OutOfRange(_) => Code::OutOfRange,
        Error::ResourceExhausted(_) => Code::ResourceExhausted,
        Error::Busy { .. } | Error::Aborted(_) => Code::Aborted,
        Error::Unavailable(_) => Code::Unavailable,
        Error::Unimplemented(_) => Code::Unimplemented,
        Error::Internal(_) => Code::Internal,
        Error::Cloud(e) => cloud_code(e),
        Error::Host(e) => host_code(e),
        Error::Metadata(e) => metadata_code(e),
    }
}

fn cloud_code(err: &CloudError) -> Code {
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
        CloudError::Unsupported(_) => Code::FailedPrecondition,
        CloudError::Internal(_) => Code::Internal,
    }
}

fn host_code(err: &HostError) -> Code {
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

fn metadata_code(err: &MetadataError) -> Code {
    match err {
        MetadataError::Unavailable(_) => Code::Unavailable,
        MetadataError::Invalid(_) => Code::FailedPrecondition,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cloud::{RequestId, Resource};

    #[test]
    fn codes() {
        assert_eq!(code_of(&Error::Busy { key: "v".into() }), Code::Aborted);
        assert_eq!(
            code_of(&Error::Cloud(CloudError::OverLimit {
                message: "q".into(),
                request_id: RequestId::default()
            })),
            Code::ResourceExhausted
        );
        assert_eq!(
            code_of(&Error::Cloud(CloudError::not_found(Resource::Volume, "x"))),
            Code::NotFound
        );
        assert_eq!(
            code_of(&Error::Cloud(CloudError::WaitTimeout {
                resource: Resource::Volume,
                id: "x".into(),
                wanted: "available".into(),
                last_status: "creating".into()
            })),
            Code::Aborted
        );
    }

    #[test]
    fn message_has_cause_chain() {
        let err = Error::Host(HostError::Io {
            op: "mkdir",
            path: "/x".into(),
            source: std::io::Error::from_raw_os_error(13),
        });
        let msg = message_of(&err);
        assert!(msg.starts_with("mkdir /x: "), "{msg}");
        assert!(msg.contains("ermission denied"), "{msg}");
    }
}
