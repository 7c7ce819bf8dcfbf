//! gRPC server on a Unix socket (or TCP for debugging) with graceful shutdown and one
//! tracing span per RPC. This file only declares the parts and what they export.

mod authority;
mod endpoint;
mod forward;
mod serve;
mod span;
#[cfg(test)]
mod tests;
mod tracker;

pub use authority::AuthorityFix;
pub use endpoint::{bind_unix, prepare_socket_path, Endpoint, Listener, SOCKET_MODE};
pub use forward::Forward;
pub use serve::{serve, shutdown_signal};
pub use span::{RpcSpan, RpcSpanLayer};
pub use tracker::RpcTracker;
