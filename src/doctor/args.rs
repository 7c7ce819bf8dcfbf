//! `cinder-csi doctor`'s flags.

use clap::Args;

use crate::cli::ServeArgs;
use crate::ctl::Output;

#[derive(Debug, Clone, Args)]
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
    /// Output format.
    #[arg(long, value_enum, default_value_t = Output::Text)]
    pub output: Output,
    #[command(flatten)]
    pub serve: ServeArgs,
}
