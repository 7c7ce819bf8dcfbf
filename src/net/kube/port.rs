//! What the core asks of the Kubernetes API, and how that fails.

use std::collections::BTreeMap;

use async_trait::async_trait;

/// Why a PVC could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KubeError {
    /// No answer, or one that says to come back (connection refused, timeout, 429, 5xx):
    /// the provisioner retries.
    #[error("the Kubernetes API server is unavailable: {0}")]
    Unavailable(String),
    /// The API server answered and refused (401, 403) or has no such PVC (404): the
    /// deployment (RBAC, token) or the PVC must change.
    #[error("the Kubernetes API server refused to read PVC {claim}: {why}")]
    Refused { claim: String, why: String },
    /// An answer this client cannot read.
    #[error("the Kubernetes API server's answer for PVC {claim} is unreadable: {why}")]
    Invalid { claim: String, why: String },
}

/// Reads a PersistentVolumeClaim's annotations.
#[async_trait]
pub trait ClaimReader: Send + Sync {
    async fn annotations(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<BTreeMap<String, String>, KubeError>;
}
