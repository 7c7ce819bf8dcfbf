//! cinder-csi: a CSI driver for OpenStack Cinder.
//!
//! `src/` is eight rooms; each uses only rooms on lower floors (docs/ARCHITECTURE.md "Rooms",
//! checked by tests/layering/main.rs), from the top:
//! `tools` (ctl, demo, doctor) → `app` (wiring, serve flags) → `server` (CSI gRPC surface,
//! servers, metrics) → `driver` (core) → `cloud` · `host` (ports and adapters) → `net`
//! (HTTP client, TLS, Kubernetes API) → `config`.
#![deny(unsafe_code)]

pub mod app;
pub mod cloud;
pub mod config;
pub mod driver;
pub mod host;
pub mod net;
pub mod server;
pub mod tools;
