//! The host port: what the node core needs from the machine it runs on — mounts, block
//! devices and filesystems. Adapter: `linux` (direct syscalls; mkfs/resize tools are spawned).
//! What differs between filesystems is in `fs`, one file per filesystem.
//!
//! The traits are synchronous on purpose: every call is a few syscalls, and the node core runs
//! one RPC's host work inside a single `spawn_blocking`, which is cheaper than hopping to the
//! blocking pool per call.

#[cfg(any(test, feature = "test-support"))]
pub mod fake;
pub mod fs;
pub mod linux;
pub mod metadata;
pub mod options;
mod types;
pub use fs::FsKind;
pub use types::*;

mod node_port;
mod port;
pub use node_port::*;
pub use port::*;
