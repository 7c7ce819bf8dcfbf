//! The OpenStack adapter of the cloud port: Keystone v3 auth, Cinder v3 and Nova, with
//! microversions negotiated from the version documents, one shared status watcher per cloud
//! and request metrics. Build one [`OpenStack`] per configured cloud with [`OpenStack::new`].
//!
//! Files by job: `keystone`/`auth`/`catalog` (tokens), `http`/`api`/`errors` (requests),
//! `microversion`, `dto` (wire formats); one file per role of the port, each implementing
//! that trait: `volumes` (Volumes, Health), `copies` (snapshots and backups), `servers`
//! (Nova), `placement` (types, zones, quota); `watcher` (volume waits and reads), `metrics`,
//! `diagnose` (what `cinder-csi doctor` asks).

mod adapter;
mod api;
mod auth;
mod catalog;
mod copies;
pub mod diagnose;
pub(crate) mod dto;
pub(crate) mod errors;
mod group_checks;
mod group_helpers;
mod group_retire;
mod groups;
mod http;
mod ids;
pub(crate) mod keystone;
pub mod metrics;
pub(crate) mod microversion;
pub mod options;
mod placement;
pub mod rotate;
mod servers;
mod type_cache;
mod volumes;
mod watcher;

#[cfg(test)]
pub(crate) mod testserver;

pub use adapter::{Microversions, OpenStack};
pub use metrics::{ApiMetrics, ApiObserver, MetricsSnapshot};
pub use options::{AuthOptions, Interface, OpenStackOptions, ProxyOptions, Secret, TlsOptions};
