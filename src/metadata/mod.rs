//! The metadata port: who this node is (Nova instance UUID) and where it is (AZ).
//! Adapters: config drive, metadata service, static (`--node-id`).

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

#[async_trait]
pub trait Metadata: Send + Sync {
    async fn instance(&self) -> Result<InstanceMetadata, MetadataError>;
}

/// Node identity given on the command line; never fails.
pub struct StaticMetadata {
    pub instance: InstanceMetadata,
}

#[async_trait]
impl Metadata for StaticMetadata {
    async fn instance(&self) -> Result<InstanceMetadata, MetadataError> {
        Ok(self.instance.clone())
    }
}
