//! How a command calls an RPC and fails: shared by every command.

use tonic::Status;

/// A failed command: the RPC's status, or a local problem (bad flags, unreadable file).
#[derive(Debug)]
pub enum CtlError {
    Rpc { rpc: &'static str, status: Status },
    Local(String),
}

impl std::fmt::Display for CtlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Rpc { rpc, status } => {
                write!(f, "{rpc} failed: {:?}: {}", status.code(), status.message())
            }
            Self::Local(m) => f.write_str(m),
        }
    }
}

pub(super) fn rpc_err(rpc: &'static str) -> impl FnOnce(Status) -> CtlError {
    move |status| CtlError::Rpc { rpc, status }
}

/// `client.service().method(request with deadline)`, mapping the status to [`CtlError`].
macro_rules! call_rpc {
    ($client:expr, $svc:ident, $method:ident, $name:literal, $msg:expr) => {
        $client
            .$svc()
            .$method($client.req($msg))
            .await
            .map(|r| r.into_inner())
            .map_err(rpc_err($name))
    };
}
pub(super) use call_rpc;
