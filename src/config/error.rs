//! Errors and warnings of the configuration module.
//!
//! Every error renders as ONE line that names the file, the line (when there
//! is one), the section and the key, e.g.
//! `/etc/config/cloud.conf:7: [Global] tls-insecure: "maybe" is not a boolean (use true or false)`.

use std::fmt;
use std::path::{Path, PathBuf};

/// Where something was read: a file and, when known, a 1-based line number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    pub file: PathBuf,
    pub line: Option<usize>,
}

impl Location {
    /// A line of a file.
    pub fn at(file: &Path, line: usize) -> Self {
        Self {
            file: file.to_path_buf(),
            line: Some(line),
        }
    }

    /// A whole file (no line).
    pub fn file(file: &Path) -> Self {
        Self {
            file: file.to_path_buf(),
            line: None,
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{line}", self.file.display()),
            None => write!(f, "{}", self.file.display()),
        }
    }
}

/// A configuration error. `Display` is one line, suitable as the whole
/// message of a fatal startup error (exit code 64).
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A `--cloud-config` file (or an explicit `clouds-file`) does not exist.
    #[error("{}: file not found", .path.display())]
    NotFound { path: PathBuf },

    /// A file exists but cannot be read (permissions, a directory, not UTF-8).
    #[error("{}: cannot read: {reason}", .path.display())]
    Unreadable { path: PathBuf, reason: String },

    /// The INI text is malformed (section header, key syntax, quoting).
    #[error("{at}: {message}")]
    Syntax { at: Location, message: String },

    /// A key has a bad value, is duplicated, or a section fails validation.
    /// `section` is the canonical label, e.g. `[Global "east"]`.
    #[error("{at}: {section} {key}: {message}")]
    Key {
        at: Location,
        section: String,
        key: String,
        message: String,
    },

    /// `--cloud-name` names a cloud with no `[Global "name"]` section.
    #[error("{}", unknown_cloud_message(.name, .files, .defined))]
    UnknownCloud {
        /// The requested name; `""` is the plain `[Global]` section.
        name: String,
        /// The cloud.conf files that were read.
        files: Vec<PathBuf>,
        /// Labels of the `[Global]` sections that do exist.
        defined: Vec<String>,
    },

    /// clouds.yaml (or secure.yaml) is malformed or lacks the selected cloud.
    #[error("{at}: {message}")]
    CloudsYaml { at: Location, message: String },
}

/// `[Global]` for the default cloud, `[Global "name"]` otherwise.
pub fn global_label(name: &str) -> String {
    if name.is_empty() {
        "[Global]".to_string()
    } else {
        format!("[Global {}]", quote(name))
    }
}

/// Quotes a string for messages: `"text"` with `"` and `\` escaped.
pub(crate) fn quote(s: &str) -> String {
    format!("{s:?}")
}

fn unknown_cloud_message(name: &str, files: &[PathBuf], defined: &[String]) -> String {
    let subject = if name.is_empty() {
        "the default cloud (--cloud-name \"\") is not defined".to_string()
    } else {
        format!("cloud {} (--cloud-name) is not defined", quote(name))
    };
    let files = if files.is_empty() {
        "the cloud config".to_string()
    } else {
        files
            .iter()
            .map(|f| f.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let defined = if defined.is_empty() {
        "none".to_string()
    } else {
        defined.join(", ")
    };
    format!(
        "{subject}: no {} section in {files} (defined: {defined})",
        global_label(name)
    )
}

/// What a [`Warning`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WarningKind {
    /// A section cinder-csi does not use (e.g. `[LoadBalancer]`); ignored.
    UnknownSection,
    /// A key cinder-csi does not know; ignored.
    UnknownKey,
    /// A key upstream accepts but that has no effect here (e.g. `bs-version`).
    IgnoredKey,
    /// A value out of range that was replaced by the default.
    ValueAdjusted,
    /// A `--cloud-config` file that does not exist, skipped (node only).
    MissingFile,
}

/// A problem that does not stop the driver. Collected in
/// `CloudConfig::warnings` and also emitted with `tracing::warn!` when found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    pub kind: WarningKind,
    pub at: Location,
    /// Canonical section label, e.g. `[Global]`, when the warning is about one.
    pub section: Option<String>,
    pub key: Option<String>,
    pub message: String,
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.at)?;
        match (&self.section, &self.key) {
            (Some(s), Some(k)) => write!(f, "{s} {k}: ")?,
            (Some(s), None) => write!(f, "{s}: ")?,
            (None, Some(k)) => write!(f, "{k}: ")?,
            (None, None) => {}
        }
        f.write_str(&self.message)
    }
}

/// Records a warning: logs it once and keeps it for the caller.
pub(crate) fn record(warnings: &mut Vec<Warning>, warning: Warning) {
    tracing::warn!(
        file = %warning.at.file.display(),
        line = warning.at.line,
        section = warning.section.as_deref(),
        key = warning.key.as_deref(),
        "cloud config: {}",
        warning.message
    );
    warnings.push(warning);
}
