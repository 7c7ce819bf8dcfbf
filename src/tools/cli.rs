//! The binary's command line: `serve` (the product, also the default) or one of the tools.
//! It names every tool, so it sits with them, above the product.

use clap::{Parser, Subcommand};

use crate::app::cli::{ServeArgs, ADVANCED_HEADING};
use crate::config::version::LONG_VERSION;

#[derive(Debug, Parser)]
#[command(
    name = "cinder-csi",
    version = crate::config::version::VERSION,
    long_version = LONG_VERSION,
    about = "CSI driver for OpenStack Cinder block storage (driver name cinder.csi.openstack.org)",
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    #[command(flatten)]
    pub serve: ServeArgs,

    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the CSI services (the default when no subcommand is given).
    Serve(Box<ServeArgs>),
    /// Call one CSI RPC on a running driver and print the answer (an operator's debug tool).
    Ctl(Box<super::ctl::CtlArgs>),
    /// Run the driver's whole job end to end on the local backend (the quick start; root).
    Demo(super::demo::DemoArgs),
    /// Check what breaks deployments (tools, mounts, metadata, cloud.conf, Keystone, catalog,
    /// microversions, quota, zones): one line each, exit status 1 on any FAIL.
    Doctor(Box<super::doctor::args::DoctorArgs>),
}

/// Parse a command line (as `Cli::try_parse_from`), with `doctor --help` listing the serve
/// flags' advanced ones under the configuration it checks too.
pub fn parse_from(argv: &[std::ffi::OsString]) -> Result<Cli, clap::Error> {
    use clap::{CommandFactory, FromArgMatches};
    let advanced = ADVANCED_HEADING;
    let command = Cli::command().mut_subcommand("doctor", |doctor| {
        doctor.mut_args(|a| {
            if a.get_help_heading() == Some(advanced) {
                a.help_heading(super::doctor::args::CONFIG_ADVANCED_HEADING)
            } else {
                a
            }
        })
    });
    Cli::from_arg_matches(&command.try_get_matches_from(argv)?)
}
