//! Command line: clap derive, every flag documented and settable from the environment.
//! Upstream cinder-csi-plugin flag names are kept so operators can migrate unchanged.

mod compat;
mod serve;
#[cfg(test)]
mod tests;

use clap::{Parser, Subcommand};
pub use compat::{UpstreamCompat, NODE_ID_ENV_WARNING, PVC_ANNOTATIONS_WARNING};
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
