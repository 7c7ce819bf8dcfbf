//! Nova servers (the nodes) and their volume attachments.

/// A Nova server (a Kubernetes node).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Server {
    pub id: String,
    pub name: String,
    pub status: String,
    pub availability_zone: Option<String>,
}

/// A Nova volume attachment of one server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerAttachment {
    pub volume_id: String,
    pub device: Option<String>,
}
