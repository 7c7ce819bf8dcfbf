//! `cinder-csi-sanity`: a CSI v1.12 conformance runner usable against any CSI driver. It talks to
//! the driver only over gRPC (plus the node paths it hands the driver), runs one case per rule
//! of the spec, skips cases whose capability the driver does not advertise, and cleans up
//! everything each case created, also when the case fails.
//!
//! The binary is a thin CLI over [`runner::run`], so tests can run the whole suite in-process.
#![deny(unsafe_code)]

pub mod caps;
pub mod cases;
pub mod check;
pub mod cli;
pub mod client;
pub mod config;
pub mod context;
pub mod mountinfo;
pub mod paths;
pub mod report;
pub mod runner;
pub mod tracker;

/// The CSI protobuf and gRPC code generated from `proto/csi.proto`.
#[allow(clippy::all, clippy::pedantic, missing_docs, rustdoc::all)]
pub mod pb {
    tonic::include_proto!("csi.v1");
}

pub use config::{AccessType, Config, Secrets};
pub use report::{CaseReport, Report, Verdict};
pub use runner::{list, run, RunError};
