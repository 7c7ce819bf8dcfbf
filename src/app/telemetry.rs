//! Logging setup: text or JSON lines on stderr, level from `--log-level`: comma-separated
//! directives `LEVEL` or `TARGET=LEVEL`, e.g. `info` or `cinder_csi=debug,info`. A bare word
//! that is no level is refused (EnvFilter takes it as a target: `--log-level warning` then
//! silenced every line), and so are fatal errors printed as the log is (text or JSON).
//!
//! The directives are EnvFilter's static ones, parsed here into a `Targets` filter: EnvFilter
//! would link a regex engine (0.25 MiB of code, docs/PERFORMANCE.md "Footprint") for span and
//! field-value directives, which this driver's logs never needed; those are refused by name.

use std::io::IsTerminal;

use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{fmt, Layer};

use crate::app::cli::LogFormat;

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

/// The last line of a process that gives up (bad flags, bad config, a runtime error), as the
/// log prints lines: `cinder-csi: MESSAGE` in text, else one JSON object shaped as the JSON
/// log's (timestamp, level, fields, target), so a pipeline that parses the log as JSON sees
/// why the pod restarts. Written directly: the logger may not be installed yet.
pub fn fatal_line(format: LogFormat, message: &str, exit_code: u8) -> String {
    match format {
        LogFormat::Text => format!("cinder-csi: {message}"),
        LogFormat::Json => {
            let timestamp = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
            let quote = |s: &str| serde_json::Value::from(s).to_string();
            format!(
                "{{\"timestamp\":{},\"level\":\"ERROR\",\"message\":{},\"exit_code\":{exit_code},\"target\":\"cinder_csi\"}}",
                quote(&timestamp),
                quote(message.trim_end()),
            )
        }
    }
}

/// `--log-level` as a filter. Whitespace around directives and empty directives are
/// ignored, as EnvFilter does; `TARGET=` enables every level of it; what no directive names is
/// off (so an empty filter logs nothing, as EnvFilter did). A bare `TARGET` (EnvFilter's every
/// level of it) is refused: the misspelt levels it catches (`warning`, `verbose`) are far
/// more common than a wish to log one module at every level.
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
                    l => parse_level(l).map_err(|e| format!("{directive:?}: {e}"))?,
                };
                (Some(target.trim()), level)
            }
            None => (None, parse_level(directive)?),
        };
        match target {
            None => default = Some(level),
            Some(t) if t.contains('-') && valid_target(t) => {
                return Err(format!(
                "{directive:?}: {t:?} is not a target: module paths are written with `_` ({:?})",
                t.replace('-', "_")
            ))
            }
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

/// A level by name (any case) or number (EnvFilter's 0-5), with the likely meaning of a
/// misspelling in the error.
fn parse_level(l: &str) -> Result<LevelFilter, String> {
    if let Ok(level) = l.parse() {
        return Ok(level);
    }
    let hint = match l.to_ascii_lowercase().as_str() {
        "warning" => "; did you mean \"warn\"?".to_string(),
        "err" | "fatal" | "critical" | "crit" | "panic" => "; did you mean \"error\"?".into(),
        "verbose" | "debugging" | "all" => "; did you mean \"debug\" or \"trace\"?".into(),
        "none" | "quiet" | "silent" => "; did you mean \"off\"?".into(),
        "information" | "notice" => "; did you mean \"info\"?".into(),
        _ if !l.contains(['=', ' ']) => {
            format!("; to filter by target write {l}=LEVEL (e.g. {l}=debug)")
        }
        _ => String::new(),
    };
    Err(format!(
        "unknown level {l:?} (off, error, warn, info, debug, trace, or 0-5){hint}"
    ))
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
            assert!(
                enabled(spec, "cinder_csi::server::csi", Level::DEBUG),
                "{spec}"
            );
            assert!(
                !enabled(spec, "cinder_csi::server::csi", Level::TRACE),
                "{spec}"
            );
            assert!(enabled(spec, "h2::proto", Level::INFO), "{spec}");
            assert!(!enabled(spec, "h2::proto", Level::DEBUG), "{spec}");
        }
        // The -v forms (`--v=5` is `debug`, 6 and above `trace`), `warn` and `off`.
        assert!(enabled("debug", "tonic", Level::DEBUG));
        assert!(enabled("trace", "tonic", Level::TRACE));
        assert!(!enabled("warn", "cinder_csi", Level::INFO));
        assert!(!enabled("off", "cinder_csi", Level::ERROR));
        // A target with an empty level is every level of it and nothing else.
        assert!(enabled("cinder_csi=", "cinder_csi::host", Level::TRACE));
        assert!(!enabled("cinder_csi=", "hyper", Level::ERROR));
        // The most specific target wins, in any order.
        let spec = "cinder_csi::driver=trace,cinder_csi=warn";
        assert!(enabled(spec, "cinder_csi::driver::node", Level::TRACE));
        assert!(!enabled(spec, "cinder_csi::server::csi", Level::INFO));
        // Nothing named, nothing logged.
        assert!(!enabled("", "x", Level::ERROR));
        assert!(!enabled(" , ", "x", Level::ERROR));
    }

    #[test]
    fn fatal_lines_follow_the_log_format() {
        assert_eq!(
            fatal_line(LogFormat::Text, "bad \"x\"", 64),
            "cinder-csi: bad \"x\""
        );
        let line = fatal_line(LogFormat::Json, "cloud.conf:3: bad \"x\"\nsecond\n", 64);
        assert!(!line.contains('\n'), "{line}");
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["level"], "ERROR");
        assert_eq!(v["message"], "cloud.conf:3: bad \"x\"\nsecond");
        assert_eq!(v["exit_code"], 64);
        assert_eq!(v["target"], "cinder_csi");
        assert!(v["timestamp"].as_str().unwrap().ends_with('Z'), "{line}");
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
            // Bare words are levels: EnvFilter took these as targets and logged nothing.
            ("warning", "unknown level \"warning\" (off, error, warn, info, debug, trace, or 0-5); did you mean \"warn\"?"),
            ("verbose", "did you mean \"debug\" or \"trace\"?"),
            ("cinder_csi=debug,Warning", "unknown level \"Warning\""),
            ("cinder_csi", "to filter by target write cinder_csi=LEVEL"),
            ("cinder_csi=warning", "\"cinder_csi=warning\": unknown level \"warning\""),
            ("cinder-csi=debug", "module paths are written with `_` (\"cinder_csi\")"),
        ] {
            let err = parse_filter(spec).unwrap_err();
            assert!(err.contains(want), "{spec:?}: {err}");
        }
    }
}
