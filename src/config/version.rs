//! Build identity reported by `--version` and GetPluginInfo.

pub const VERSION: &str = env!("CARGO_PKG_VERSION");
pub const GIT_REVISION: &str = env!("CINDER_CSI_GIT_REVISION");

/// `0.1.0+<rev>`: never empty, as GetPluginInfo requires.
pub fn vendor_version() -> String {
    format!("{VERSION}+{GIT_REVISION}")
}

/// Long `--version` text.
pub const LONG_VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (git ",
    env!("CINDER_CSI_GIT_REVISION"),
    ", CSI spec v1.12.0)"
);
