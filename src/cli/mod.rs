//! Command line: clap derive, every flag documented and settable from the environment.
//! Upstream cinder-csi-plugin flag names are kept so operators can migrate unchanged.

mod compat;
mod serve;
#[cfg(test)]
mod tests;

use clap::{Parser, Subcommand};
pub use compat::{UpstreamCompat, NODE_ID_ENV_WARNING};
pub use serve::{Backend, LogFormat, Mode, ServeArgs};

use crate::version::LONG_VERSION;

#[derive(Debug, Parser)]
#[command(
    name = "cinder-csi",
    version = crate::version::VERSION,
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
    Ctl(Box<crate::ctl::CtlArgs>),
    /// Run the driver's whole job end to end on the local backend (the quick start; root).
    Demo(crate::demo::DemoArgs),
    /// Check what breaks deployments (tools, mounts, metadata, cloud.conf, Keystone, catalog,
    /// microversions, quota, zones): one line each, exit status 1 on any FAIL.
    Doctor(Box<crate::doctor::args::DoctorArgs>),
}

/// Parse a command line (as `Cli::try_parse_from`), with `doctor --help` listing the serve
/// flags' advanced ones under the configuration it checks too.
pub fn parse_from(argv: &[std::ffi::OsString]) -> Result<Cli, clap::Error> {
    use clap::{CommandFactory, FromArgMatches};
    let advanced = ADVANCED_HEADING;
    let command = Cli::command().mut_subcommand("doctor", |doctor| {
        doctor.mut_args(|a| {
            if a.get_help_heading() == Some(advanced) {
                a.help_heading(crate::doctor::args::CONFIG_ADVANCED_HEADING)
            } else {
                a
            }
        })
    });
    Cli::from_arg_matches(&command.try_get_matches_from(argv)?)
}

/// The serve flags' heading for the advanced and test ones.
pub const ADVANCED_HEADING: &str = "Advanced and test options";

/// The image ships `/bin/cinder-csi-plugin` (a link to this binary) and upstream manifests
/// pass it as the first argument (`args: [/bin/cinder-csi-plugin, --endpoint=…]`), which the
/// image's entrypoint then receives as a positional argument. A first argument that names
/// upstream's binary is therefore dropped.
pub fn normalize_argv<I, T>(argv: I) -> Vec<std::ffi::OsString>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString>,
{
    let mut args: Vec<std::ffi::OsString> = argv.into_iter().map(Into::into).collect();
    let names_upstream = |a: &std::ffi::OsString| {
        std::path::Path::new(a)
            .file_name()
            .is_some_and(|n| n == "cinder-csi-plugin")
    };
    if args.len() > 1 && names_upstream(&args[1]) {
        args.remove(1);
    }
    args
}

/// The log format the command line asks for, read before clap parses it (a usage error has
/// no parsed flags but must still be printed as the log would be): `--log-format json`,
/// `--log-format=json`, else `CINDER_CSI_LOG_FORMAT`.
pub fn log_format_hint(argv: &[std::ffi::OsString], env: Option<&str>) -> LogFormat {
    let mut value = None;
    let mut args = argv.iter().map(|a| a.to_string_lossy());
    while let Some(arg) = args.next() {
        if arg == "--" {
            break;
        }
        if let Some(v) = arg.strip_prefix("--log-format=") {
            value = Some(v.to_string());
        } else if arg == "--log-format" {
            value = args.next().map(|v| v.to_string());
        }
    }
    match value.as_deref().or(env) {
        Some(v) if v.eq_ignore_ascii_case("json") => LogFormat::Json,
        _ => LogFormat::Text,
    }
}
