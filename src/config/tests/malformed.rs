//! Malformed cloud.conf input: each case with its exact one-line message.

use super::super::{load, ConfigError};
use super::parse_err;

/// (what, cloud.conf text, the whole expected message).
const CASES: &[(&str, &str, &str)] = &[
    (
        "section header without ']'",
        "[Global\nauth-url = x\n",
        r#"/etc/config/cloud.conf:1: invalid section header "[Global": missing ']'"#,
    ),
    (
        "unquoted subsection name",
        "[Global east]\n",
        r#"/etc/config/cloud.conf:1: invalid section header "[Global east]": expected ']' or a quoted subsection name after "Global" (write [Section "name"])"#,
    ),
    (
        "git-style dotted subsection",
        "[Global.east]\n",
        r#"/etc/config/cloud.conf:1: invalid section header "[Global.east]": expected ']' or a quoted subsection name after "Global" (write [Section "name"])"#,
    ),
    (
        "empty section name",
        "[]\n",
        r#"/etc/config/cloud.conf:1: invalid section header "[]": expected a section name (letters, digits and '-') after '['"#,
    ),
    (
        "empty cloud name subsection",
        "[Global]\n[Global \"\"]\n",
        r#"/etc/config/cloud.conf:2: invalid section header "[Global \"\"]": empty subsection name (use [Global] for the default cloud)"#,
    ),
    (
        "unterminated subsection name",
        "[Global \"east]\n",
        r#"/etc/config/cloud.conf:1: invalid section header "[Global \"east]": unterminated subsection name (missing closing '"')"#,
    ),
    (
        "text after the header",
        "[Global] auth-url = x\n",
        r#"/etc/config/cloud.conf:1: invalid section header "[Global] auth-url = x": unexpected text after ']'"#,
    ),
    (
        "key outside any section",
        "; comment\nauth-url = https://k/v3\n[Global]\n",
        "/etc/config/cloud.conf:2: auth-url: key outside any section (add a section header such as [Global] above it)",
    ),
    (
        "line starting with '='",
        "[Global]\n= value\n",
        r#"/etc/config/cloud.conf:2: unexpected "=" at the start of a line (expected a [Section] header, key = value, or a comment)"#,
    ),
    (
        "underscore in key name",
        "[Global]\nauth_url = https://k/v3\n",
        r#"/etc/config/cloud.conf:2: [Global] "auth_url": invalid key name: only letters, digits and '-' are allowed (did you mean "auth-url"?)"#,
    ),
    (
        "two words as a key",
        "[Global]\nauth url = https://k/v3\n",
        "/etc/config/cloud.conf:2: [Global] auth: expected '=' after the key name",
    ),
    (
        "duplicate key in one section",
        "[Global]\nregion = A\nauth-url = https://k/v3\nRegion = B\n",
        "/etc/config/cloud.conf:4: [Global] region: duplicate key (already set on line 2)",
    ),
    (
        "duplicate key in a named cloud",
        "[Global \"east\"]\nregion = A\n[Global \"west\"]\nregion = B\n[Global \"east\"]\nregion = C\n",
        r#"/etc/config/cloud.conf:6: [Global "east"] region: duplicate key (already set on line 2)"#,
    ),
    (
        "unterminated quote",
        "[Global]\npassword = \"abc\n",
        r#"/etc/config/cloud.conf:2: [Global] password: unterminated quoted value (missing closing '"')"#,
    ),
    (
        "unknown escape in quotes",
        "[Global]\npassword = \"a\\qb\"\n",
        r#"/etc/config/cloud.conf:2: [Global] password: unknown escape sequence \q in quoted value (use \", \\, \n or \t)"#,
    ),
    (
        "backslash outside quotes",
        "[Global]\nca-file = C:\\certs\\ca.pem\n",
        r#"/etc/config/cloud.conf:2: [Global] ca-file: a '\' outside quotes must end the line (line continuation); put the value in double quotes to use escapes"#,
    ),
    (
        "line continuation at end of file",
        "[Global]\nregion = a \\",
        r#"/etc/config/cloud.conf:2: [Global] region: line continuation '\' at the end of the file"#,
    ),
    (
        "bad bool",
        "[Global]\nauth-url = https://k/v3\n\n\n\n\ntls-insecure = maybe\n",
        r#"/etc/config/cloud.conf:7: [Global] tls-insecure: "maybe" is not a boolean (use true or false)"#,
    ),
    (
        "tls-insecure only takes true/false",
        "[Global]\ntls-insecure = yes\n",
        r#"/etc/config/cloud.conf:2: [Global] tls-insecure: "yes" is not a boolean (use true or false)"#,
    ),
    (
        "empty bool",
        "[BlockStorage]\nrescan-on-resize =\n",
        r#"/etc/config/cloud.conf:2: [BlockStorage] rescan-on-resize: "" is not a boolean (use true or false)"#,
    ),
    (
        "bad int",
        "[BlockStorage]\nnode-volume-attach-limit = lots\n",
        r#"/etc/config/cloud.conf:2: [BlockStorage] node-volume-attach-limit: "lots" is not an integer"#,
    ),
    (
        "int with a unit",
        "[BlockStorage]\nnode-volume-attach-limit = 25 volumes\n",
        r#"/etc/config/cloud.conf:2: [BlockStorage] node-volume-attach-limit: "25 volumes" is not an integer"#,
    ),
    (
        "bare non-boolean key",
        "[Global]\nregion\n",
        "/etc/config/cloud.conf:2: [Global] region: has no value (write region = value; only boolean keys may stand alone)",
    ),
    (
        "bad endpoint type",
        "[Global]\nos-endpoint-type = private\n",
        r#"/etc/config/cloud.conf:2: [Global] os-endpoint-type: "private" is not an endpoint type (use public, internal or admin)"#,
    ),
    (
        "bad search-order element",
        "[Metadata]\nsearch-order = configDrive, cloudInit\n",
        r#"/etc/config/cloud.conf:2: [Metadata] search-order: unknown source "cloudInit" (use configDrive and/or metadataService, comma-separated)"#,
    ),
    (
        "repeated search-order element",
        "[Metadata]\nsearch-order = configDrive,configDrive\n",
        "/etc/config/cloud.conf:2: [Metadata] search-order: configDrive is listed twice",
    ),
    (
        "empty search-order element",
        "[Metadata]\nsearch-order = configDrive,\n",
        r#"/etc/config/cloud.conf:2: [Metadata] search-order: "configDrive," has an empty element"#,
    ),
    (
        "bad duration",
        "[Metadata]\nrequest-timeout = 5 minutes\n",
        r#"/etc/config/cloud.conf:2: [Metadata] request-timeout: "5 minutes" is not a duration (use e.g. 10s, 1m30s, or plain seconds)"#,
    ),
    (
        "negative duration",
        "[Metadata]\nrequest-timeout = -5s\n",
        r#"/etc/config/cloud.conf:2: [Metadata] request-timeout: "-5s" is not a duration (use e.g. 10s, 1m30s, or plain seconds)"#,
    ),
    (
        "metadata-url without scheme",
        "[Metadata]\nmetadata-url = 169.254.169.254/openstack\n",
        r#"/etc/config/cloud.conf:2: [Metadata] metadata-url: "169.254.169.254/openstack" is not an http(s) URL"#,
    ),
    (
        "bad retype policy",
        "[BlockStorage]\nretype-migration-policy = always\n",
        r#"/etc/config/cloud.conf:2: [BlockStorage] retype-migration-policy: "always" is not a retype migration policy (use never or on-demand)"#,
    ),
    (
        "api-concurrency out of range",
        "[BlockStorage]\napi-concurrency = 0\n",
        "/etc/config/cloud.conf:2: [BlockStorage] api-concurrency: 0 is not between 1 and 64 (requests in flight per API endpoint)",
    ),
];

#[test]
fn malformed_cloud_conf_gives_one_exact_line() {
    assert!(CASES.len() >= 15);
    for (what, text, want) in CASES {
        let got = parse_err(text);
        assert_eq!(got, *want, "case: {what}");
        assert!(!got.contains('\n'), "case {what}: message must be one line");
    }
}

#[test]
fn missing_file() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("cloud.conf");
    std::fs::write(&good, "[Global]\n").unwrap();
    let missing = dir.path().join("nope.conf");
    let err = load(&[good, missing.clone()]).unwrap_err();
    assert!(matches!(err, ConfigError::NotFound { .. }));
    assert_eq!(
        err.to_string(),
        format!("{}: file not found", missing.display())
    );
}

#[test]
fn unreadable_file() {
    // A directory cannot be read as a file, even by root.
    let dir = tempfile::tempdir().unwrap();
    let err = load(&[dir.path().to_path_buf()]).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "{}: cannot read: Is a directory (os error 21)",
            dir.path().display()
        )
    );
}

#[test]
fn non_utf8_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("latin1.conf");
    std::fs::write(&file, b"[Global]\nregion = R\xe9gion\n").unwrap();
    let err = load(std::slice::from_ref(&file)).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "{}: cannot read: not UTF-8 text (invalid byte at offset 19)",
            file.display()
        )
    );
}

#[test]
fn error_in_a_later_file_names_that_file() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.conf");
    let b = dir.path().join("b.conf");
    std::fs::write(&a, "[Global]\nregion = A\n").unwrap();
    std::fs::write(&b, "[Global]\n\nregion = B\nuse-clouds = maybe\n").unwrap();
    let err = load(&[a, b.clone()]).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "{}:4: [Global] use-clouds: \"maybe\" is not a boolean (use true or false)",
            b.display()
        )
    );
}
