//! The node core: stage, publish, unpublish, unstage, stats, expand and info on top of the
//! host and metadata ports. This file only declares the modules and what they export: each
//! module uses the ones below it (model, params, checks, plan) and none uses this file.

mod block;
mod checks;
mod health;
mod info;
mod mkfs_marker;
mod model;
mod node_core;
pub mod params;
mod plan;
mod publish;
mod stage;
mod stats;

#[cfg(test)]
mod tests;

pub use block::STAGED_DEVICE;
pub use health::{NodeHealth, NodeReadiness, NODE_TOOLS_REFRESH};
pub use model::*;
pub use node_core::NodeCore;
pub use params::Access;
