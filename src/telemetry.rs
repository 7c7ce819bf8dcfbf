//! Logging setup: text or JSON lines on stderr, level from `--log-level` (an EnvFilter
//! directive such as `info` or `cinder_csi=debug,info`).

use std::io::IsTerminal;

use tracing_subscriber::{fmt, EnvFilter};

use crate::cli::LogFormat;

pub fn init(format: LogFormat, level: &str) -> Result<(), String> {
    let filter = EnvFilter::try_new(level)
        .map_err(|e| format!("--log-level {level:?} is not a valid filter: {e}"))?;
    let builder = fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal());
    let result = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .with_span_list(false)
            .try_init(),
    };
    result.map_err(|e| format!("cannot install the logger: {e}"))
}
