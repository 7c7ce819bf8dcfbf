//! The HTTP client of the adapters (Keystone, Cinder and Nova; the metadata service): hyper's
//! pooled HTTP/1.1 client over connections opened here, at most N open per endpoint
//! (`conns.rs` says why reqwest's pool would not do), through a proxy when one applies, TLS
//! with the system's roots plus `ca-file`.

mod connect;
mod conns;
mod endpoint;
mod request;
mod tls_config;
mod transport;

pub use endpoint::key as endpoint_key;
pub use request::Outgoing;
pub use transport::{Reply, SendError, Settings, Transport};
