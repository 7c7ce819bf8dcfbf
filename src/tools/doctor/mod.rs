//! `cinder-csi doctor`: checks what breaks deployments, one line each (OK, WARN, SKIP or FAIL
//! with what to do), exit status 1 on any FAIL. It reads the same flags, environment and
//! cloud.conf as `serve` and builds the same adapters (`app`), so it judges the configuration
//! the driver would run with; `--pid 1` inside the plugin container takes the running
//! driver's own command line. It changes nothing: no mount, no cloud object, no file.

pub mod args;
mod cloud;
mod node;
mod report;
pub use args::DoctorArgs;
pub use report::{Check, Report, Status, REDACTED};

mod run;
pub use run::*;
