//! Logging setup: text or JSON lines on stderr, level from `--log-level`: comma-separated
//! directives `LEVEL`, `TARGET` or `TARGET=LEVEL`, e.g. `info` or `cinder_csi=debug,info`.
//!
//! The directives are EnvFilter's static ones, parsed here into a `Targets` filter: EnvFilter
//! would link a regex engine (0.25 MiB of code, docs/PERFORMANCE.md "Footprint") for span and
//! field-value directives, which this driver's logs never needed; those are refused by name.

use std::io::IsTerminal;

use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{fmt, Layer};

use crate::cli::LogFormat;

pub fn init(format: LogFormat, level: &str) -> Result<(), String> {
    let filter = parse_filter(level)
        .map_err(|e| format!("--log-level {level:?} is not a valid filter: {e}"))?;
    let layer = fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal());
    let layer = match format {
        LogFormat::Text => layer.boxed(),
        LogFormat::Json => layer
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .with_span_list(false)
            .boxed(),
    };
    // A global filter, as `with_env_filter` was: what it disables is never recorded.
    tracing_subscriber::registry()
        .with(filter)
        .with(layer)
        .try_init()
        .map_err(|e| format!("cannot install the logger: {e}"))
}

/// `--log-level` as a filter. Whitespace around directives and empty directives are
/// ignored, as EnvFilter does; `TARGET` alone and `TARGET=` enable every level of it; what no
/// directive names is off (so an empty filter logs nothing, as EnvFilter did).
pub fn parse_filter(spec: &str) -> Result<Targets, String> {
    let mut filter = Targets::new();
    let mut default = None;
    for directive in spec.split(',').map(str::trim).filter(|d| !d.is_empty()) {
        if directive.contains(['[', ']', '{', '}']) {
            return Err(format!(
                "{directive:?}: span and field filters are not supported; use LEVEL or TARGET=LEVEL"
            ));
        }
        let (target, level) = match directive.split_once('=') {
            Some((target, level)) => {
                let level = match level.trim() {
                    "" => LevelFilter::TRACE,
                    l => l.parse().map_err(|_| {
                        format!(
                            "{directive:?}: unknown level {l:?} (off, error, warn, info, debug, trace)"
                        )
                    })?,
                };
                (Some(target.trim()), level)
            }
            None => match directive.parse::<LevelFilter>() {
                Ok(level) => (None, level),
                Err(_) => (Some(directive), LevelFilter::TRACE),
            },
        };
        match target {
            None => default = Some(level),
            Some(t) if valid_target(t) => filter = filter.with_target(t, level),
            Some(t) => {
                return Err(format!(
                "{directive:?}: {t:?} is not a target (a module path such as cinder_csi::driver)"
            ))
            }
        }
    }
    Ok(match default {
        Some(level) => filter.with_default(level),
        None => filter,
    })
}

/// What EnvFilter takes as a target: starts with a letter, digit, `_`, `-` or `:`, and holds
/// no `=` or whitespace.
fn valid_target(t: &str) -> bool {
    t.chars()
        .next()
        .is_some_and(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | ':'))
        && !t.contains(|c: char| c == '=' || c.is_whitespace())
}

#[cfg(test)]
mod tests {
    use tracing::Level;

    use super::*;

    fn enabled(spec: &str, target: &str, level: Level) -> bool {
        parse_filter(spec).unwrap().would_enable(target, &level)
    }

    #[test]
    fn the_documented_forms_filter_as_envfilter_did() {
        for spec in ["info", "INFO", " info ", "3", "info,", ",info"] {
            assert!(enabled(spec, "cinder_csi::driver", Level::INFO), "{spec}");
            assert!(!enabled(spec, "cinder_csi::driver", Level::DEBUG), "{spec}");
            assert!(enabled(spec, "h2", Level::INFO), "{spec}");
        }
        for spec in ["cinder_csi=debug,info", " cinder_csi = debug , info "] {
            assert!(enabled(spec, "cinder_csi::csi", Level::DEBUG), "{spec}");
            assert!(!enabled(spec, "cinder_csi::csi", Level::TRACE), "{spec}");
            assert!(enabled(spec, "h2::proto", Level::INFO), "{spec}");
            assert!(!enabled(spec, "h2::proto", Level::DEBUG), "{spec}");
        }
        // The -v forms (`--v=5` is `debug`, 6 and above `trace`), `warn` and `off`.
        assert!(enabled("debug", "tonic", Level::DEBUG));
        assert!(enabled("trace", "tonic", Level::TRACE));
        assert!(!enabled("warn", "cinder_csi", Level::INFO));
        assert!(!enabled("off", "cinder_csi", Level::ERROR));
        // A target alone, or with an empty level, is every level of it and nothing else.
        for spec in ["cinder_csi", "cinder_csi="] {
            assert!(enabled(spec, "cinder_csi::host", Level::TRACE), "{spec}");
            assert!(!enabled(spec, "hyper", Level::ERROR), "{spec}");
        }
        // The most specific target wins, in any order.
        let spec = "cinder_csi::driver=trace,cinder_csi=warn";
        assert!(enabled(spec, "cinder_csi::driver::node", Level::TRACE));
        assert!(!enabled(spec, "cinder_csi::csi", Level::INFO));
        // Nothing named, nothing logged.
        assert!(!enabled("", "x", Level::ERROR));
        assert!(!enabled(" , ", "x", Level::ERROR));
    }

    #[test]
    fn bad_filters_are_refused_with_the_reason() {
        for (spec, want) in [
            ("=[", "span and field filters"),
            ("=info", "not a target"),
            ("cinder_csi=loud", "unknown level \"loud\""),
            ("a=b=c", "unknown level \"b=c\""),
            ("[rpc]=debug", "span and field filters"),
            ("cinder_csi[{volume_id}]=debug", "span and field filters"),
            ("my target=info", "not a target"),
            ("*=info", "not a target"),
        ] {
            let err = parse_filter(spec).unwrap_err();
            assert!(err.contains(want), "{spec:?}: {err}");
        }
    }
}
