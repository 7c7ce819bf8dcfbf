//! Wiring: turn the command line and config into adapters, services and a running server.
//! Everything is built here and passed down as `Arc`s; nothing is global. This file only
//! declares the steps and what they export.

mod claims;
pub mod cli;
mod clouds;
mod device_addresses;
mod error;
mod local_node;
pub mod memory;
mod options;
mod plan;
mod reload;
mod run;
mod standby;
pub mod telemetry;
#[cfg(test)]
mod tests;

pub use clouds::{build_clouds, openstack_cloud};
pub use error::AppError;
pub use local_node::local_node_id;
pub use options::{by_id_dir, controller_options, metadata_options};
pub use plan::{plan, Plan};
pub use run::{node_core, run};
