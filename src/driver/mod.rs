//! The driver core: controller and node use cases on top of the cloud, host and metadata
//! ports. No gRPC, HTTP or syscall crates here (checked by `tests/layering.rs`).

pub mod controller;
mod error;
pub mod inflight;
pub mod node;
pub mod probe;
pub mod types;

pub use error::{Error, Result};
pub use inflight::{InFlight, InFlightGuard};
