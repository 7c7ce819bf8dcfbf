//! The driver core: controller and node use cases on top of the cloud, host and metadata
//! ports. No gRPC, HTTP or syscall crates here (checked by `tests/layering/main.rs`).

pub mod controller;
mod error;
pub mod inflight;
pub mod node;
pub mod probe;
pub mod types;

pub use error::{
    Change, Cleanup, Error, Failure, Invalid, Mismatch, Named, NodeRefusal, NotAtPath, ParamClass,
    PathRole, Range, Refusal, Result, Task, TokenProblem, Unsupported, VolumeDiff,
};
pub use inflight::{InFlight, InFlightGuard};
