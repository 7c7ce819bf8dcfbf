//! The HTTP client of the adapters (Keystone, Cinder and Nova; the metadata service): hyper's
//! pooled HTTP/1.1 connections, at most N open per endpoint and reused before new ones are
//! opened (`pool.rs` says why no stock pool would do), through a proxy when one applies, TLS
//! with the system's roots plus `ca-file`.

mod connect;
mod endpoint;
mod pool;
mod request;
mod tls_config;
mod transport;

pub use endpoint::key as endpoint_key;
pub use request::Outgoing;
pub use transport::{Reply, SendError, Settings, Transport};
