//! Table tests of the configuration module. No root, no network: files live
//! in temporary directories and the clouds.yaml environment is a `FixedEnv`.

use std::path::Path;

use super::{parse_str, CloudConfig};

mod cloud_conf;
mod clouds_yaml;
mod ini;
mod malformed;
mod validate;

/// The path every in-memory fixture pretends to come from.
const CONF: &str = "/etc/config/cloud.conf";

fn conf() -> &'static Path {
    Path::new(CONF)
}

/// Parses a fixture that must be valid.
fn parse(text: &str) -> CloudConfig {
    parse_str(conf(), text).unwrap_or_else(|e| panic!("fixture should parse: {e}"))
}

/// Parses a fixture that must fail; returns the one-line message.
fn parse_err(text: &str) -> String {
    match parse_str(conf(), text) {
        Ok(cfg) => panic!("fixture should fail, parsed: {cfg:?}"),
        Err(e) => e.to_string(),
    }
}
