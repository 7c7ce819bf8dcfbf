//! The controller core: CSI Controller use cases on top of the cloud port, one file per
//! resource. Handlers in `csi::controller` validate and convert, take the in-flight guard,
//! and make exactly one call in here.
//!
//! Wait model: every wait goes through the port's `wait_*` with the RPC deadline (minus
//! [`waits::DEADLINE_MARGIN`]); when it runs out the RPC answers Aborted with the last status
//! seen, the sidecar retries, and the retry picks the operation up where it stands (by name
//! for creates, by state for everything else). Error states end a wait at once.

pub mod affinity;
mod append_metadata;
mod capabilities;
mod capacity;
mod create;
mod create_existing;
mod delete;
mod expand;
mod group_delete;
pub mod group_params;
mod groups;
mod list;
mod model;
mod modify;
pub mod params;
mod publish;
mod snapshot_delete;
mod snapshot_list;
mod snapshots;
mod source_tag;
#[cfg(test)]
mod tests;
pub mod tokens;
pub mod validate;
pub mod waits;
mod zone_cache;
mod zones;
pub use capabilities::unsupported_capability;
pub use model::*;

mod core;
pub use core::*;
