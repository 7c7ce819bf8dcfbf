//! What the process serves: the CSI gRPC surface (`csi`), the gRPC server on a Unix socket
//! (or TCP for debugging) with graceful shutdown and one tracing span per RPC, the HTTP
//! endpoint (`/metrics`, `/healthz`, `/readyz`) and the metrics it reports. This file only
//! declares the parts and what they export.

mod authority;
pub mod csi;
mod endpoint;
mod forward;
pub mod http_endpoint;
pub mod metrics;
pub mod process_metrics;
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
