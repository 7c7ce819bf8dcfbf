//! `cinder-csi doctor`'s flags.

use clap::Args;

use crate::app::cli::ServeArgs;
use crate::tools::ctl::Output;

/// Where `doctor --help` lists the serve flags: what is checked, not how.
pub const CONFIG_HEADING: &str =
    "Configuration to check (the driver's flags and environment; --pid reads the running driver's)";
/// ... and its advanced and test flags.
pub const CONFIG_ADVANCED_HEADING: &str = "Configuration to check: advanced and test options";

/// The doctor's own options come first under their heading; the serve flags it checks (the
/// configuration, exactly as `serve` takes it) follow under theirs, so `--help` does not read as
/// if `--endpoint` or `--mode` changed what the doctor does rather than what it judges.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Doctor options")]
pub struct DoctorArgs {
    /// Check the configuration of the running driver with this PID: its command line
    /// replaces the serve flags given here (the environment is this process's; inside the
    /// plugin container the driver is PID 1).
    #[arg(long, value_name = "PID")]
    pub pid: Option<u32>,
    /// A Nova server (a node) to check from the controller: it exists, and its zone is one
    /// Cinder has. On a node the node's own id is checked.
    #[arg(long, value_name = "UUID")]
    pub server: Option<String>,
    /// Bound on each check that waits on the network.
    #[arg(long, default_value_t = 20, value_name = "SECONDS")]
    pub check_timeout: u64,
    /// Output format (as `cinder-csi ctl -o`).
    #[arg(long, short = 'o', value_enum, default_value_t = Output::Text)]
    pub output: Output,
    #[command(flatten, next_help_heading = CONFIG_HEADING)]
    pub serve: ServeArgs,
}
