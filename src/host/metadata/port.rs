//! The metadata port: what a source answers, and how it fails.

use async_trait::async_trait;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstanceMetadata {
    /// Nova instance UUID: the CSI node id.
    pub uuid: String,
    pub availability_zone: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MetadataError {
    /// No source answered; retrying may help (metadata service down, config drive missing).
    #[error("instance metadata unavailable: {0}")]
    Unavailable(String),
    /// A source answered with something unusable.
    #[error("instance metadata invalid: {0}")]
    Invalid(String),
}

impl MetadataError {
    /// The message without the kind prefix, for aggregating several errors into one.
    pub fn detail(&self) -> &str {
        match self {
            Self::Unavailable(m) | Self::Invalid(m) => m,
        }
    }
}

#[async_trait]
pub trait Metadata: Send + Sync {
    async fn instance(&self) -> Result<InstanceMetadata, MetadataError>;
}

/// Node identity fixed at startup (the local backend's node); never fails.
pub struct StaticMetadata {
    pub instance: InstanceMetadata,
}

#[async_trait]
impl Metadata for StaticMetadata {
    async fn instance(&self) -> Result<InstanceMetadata, MetadataError> {
        Ok(self.instance.clone())
    }
}
