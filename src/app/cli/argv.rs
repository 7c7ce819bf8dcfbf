//! The command line before clap reads it: upstream's binary name dropped, the log format
//! a usage error is printed in.

use super::serve::LogFormat;

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
