//! What a rule refuses: each rule's file words its own refusals (`VolumeRefusal`,
//! `CopyRefusal`, `GroupSnapshotRefusal`: the data, and its words on each variant, the objects
//! named and what to do), so a new rule and its refusal are one file; here the one type the
//! adapters take, and its code.

use crate::cloud::{CloudError, RequestId, Resource};

use super::copies::CopyRefusal;
use super::groups::GroupSnapshotRefusal;
use super::profile::Profile;
use super::volumes::VolumeRefusal;

/// One of Cinder's rules broken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error(transparent)]
    Volume(#[from] VolumeRefusal),
    #[error(transparent)]
    Copy(#[from] CopyRefusal),
    #[error(transparent)]
    GroupSnapshot(#[from] GroupSnapshotRefusal),
}

impl Refusal {
    /// The error an adapter of profile `p` answers this refusal with, carrying `request_id`.
    pub fn into_error(self, p: &Profile, request_id: RequestId) -> CloudError {
        let bad_request = match &self {
            Self::Volume(VolumeRefusal::NotAttached { .. }) => {
                return CloudError::not_found(Resource::Attachment, self.to_string())
            }
            Self::Volume(r) => r.is_bad_request(p),
            Self::Copy(r) => r.is_bad_request(p),
            Self::GroupSnapshot(_) => false,
        };
        let message = self.to_string();
        match bad_request {
            true => CloudError::BadRequest {
                message,
                request_id,
            },
            false => CloudError::Conflict {
                message,
                request_id,
            },
        }
    }
}
