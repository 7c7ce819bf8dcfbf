//! `serve`'s command line (tools::cli adds the tools' subcommands): clap derive, every flag documented and settable from the environment.
//! Upstream cinder-csi-plugin flag names are kept so operators can migrate unchanged.

mod argv;
mod compat;
mod serve;
#[cfg(test)]
mod tests;

pub use argv::{log_format_hint, normalize_argv};
pub use compat::{UpstreamCompat, NODE_ID_ENV_WARNING};
pub use serve::ADVANCED_HEADING;
pub use serve::{Backend, LogFormat, Mode, ServeArgs};
