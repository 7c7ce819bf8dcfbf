//! cinder-csi: a CSI driver for OpenStack Cinder.
//!
//! Layers (dependencies point down only):
//! `app`/`server` → `csi` (gRPC surface) → `driver` (core) → `cloud` / `host` / `metadata`
//! ports ← adapters.
#![deny(unsafe_code)]

pub mod app;
pub mod cli;
pub mod cloud;
pub mod config;
pub mod csi;
pub mod ctl;
pub mod demo;
pub mod doctor;
pub mod driver;
pub mod host;
pub mod http_client;
pub mod http_endpoint;
pub mod kube;
pub mod memory;
pub mod metadata;
pub mod metrics;
pub mod process_metrics;
pub mod server;
pub mod telemetry;
pub mod tls;
pub mod version;

#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
