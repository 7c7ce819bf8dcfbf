//! The metadata port: who this node is (Nova instance UUID) and where it is (AZ).
//! Adapters: config drive, metadata service, the chain that tries them in `[Metadata]
//! search-order` and caches the answer, and the `--node-id` / `--node-az` overrides over it.
//! This file only declares the modules and what they export; none of them uses it.

pub mod chain;
pub mod config_drive;
pub mod document;
mod from_options;
mod options;
mod overrides;
mod port;
pub mod service;

pub use from_options::from_options;
pub use options::*;
pub use port::*;
