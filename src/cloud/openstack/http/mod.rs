//! The HTTP client of one cloud and the single place where a request is sent: it is timed and
//! counted, its request id captured, and an error status turned into an [`ApiError`]. Tokens
//! and microversions are added by `api.rs`. Requests in flight are bounded per endpoint here
//! (`limit.rs`), open and idle connections by the transport (`crate::net::http_client`).

mod limit;
pub use limit::{EndpointLimits, Turn, DEFAULT_PER_ENDPOINT};
#[cfg(test)]
mod tests;

mod client;
pub use client::*;
