//! The operator's subcommands through the real binary: `ctl`, `doctor`, and the chart's
//! rendered cloud.conf read back by the driver.
//! One binary per subject (tests/README.md); each file below was a test binary of its own.

#[path = "../support/mod.rs"]
mod support;

mod chart_cloud_conf;
mod ctl;
mod doctor;
