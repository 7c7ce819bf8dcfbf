//! Whose words a refusal is given in, and the error it becomes.

use crate::cloud::{CloudError, RequestId, Resource};

#[cfg(any(test, feature = "test-support"))]
use super::cinder_words;
use super::local_words;
use super::refusal::{Code, Refusal};

/// Whose words a refusal is given in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Voice {
    /// Cinder's and Nova's own words and codes (the fake: the core's tests see what the real
    /// cloud answers). Built with the fake only, never in a release.
    #[cfg(any(test, feature = "test-support"))]
    Cinder,
    /// The local backend's words: the objects named, and what to do about it.
    Local,
}

impl Voice {
    /// The error an adapter answers `r` with, carrying `request_id`.
    pub fn refuse(self, r: Refusal, request_id: RequestId) -> CloudError {
        let (code, message) = match self {
            #[cfg(any(test, feature = "test-support"))]
            Voice::Cinder => cinder_words::words(&r),
            Voice::Local => local_words::words(&r),
        };
        match code {
            Code::Conflict => CloudError::Conflict {
                message,
                request_id,
            },
            Code::BadRequest => CloudError::BadRequest {
                message,
                request_id,
            },
            Code::NoAttachment => CloudError::not_found(Resource::Attachment, message),
        }
    }
}
