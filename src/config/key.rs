//! The key being set from one INI entry: where it is (for messages) and how its value is
//! read as each type. The section files use these readers, so every key of one type is
//! checked and worded the same way.

use std::path::{Path, PathBuf};

use super::error::{quote, record, ConfigError, Location, Warning, WarningKind};
use super::secret::Secret;
use super::values::{parse_bool, parse_int};

/// One `key = value` entry being applied: file, line, section label and key name.
pub(crate) struct Cx<'a> {
    pub file: &'a Path,
    pub line: usize,
    pub section: &'a str,
    pub key: &'a str,
}

impl Cx<'_> {
    pub fn at(&self) -> Location {
        Location::at(self.file, self.line)
    }

    /// An error about this key's value, naming file, line, section and key.
    pub fn err(&self, message: String) -> ConfigError {
        ConfigError::Key {
            at: self.at(),
            section: self.section.to_string(),
            key: self.key.to_string(),
            message,
        }
    }

    pub fn warn(&self, warnings: &mut Vec<Warning>, kind: WarningKind, message: String) {
        record(
            warnings,
            Warning {
                kind,
                at: self.at(),
                section: Some(self.section.to_string()),
                key: Some(self.key.to_string()),
                message,
            },
        );
    }

    /// The value of a non-boolean key; a bare key is an error.
    pub fn value<'v>(&self, v: Option<&'v str>) -> Result<&'v str, ConfigError> {
        v.ok_or_else(|| {
            self.err(format!(
                "has no value (write {} = value; only boolean keys may stand alone)",
                self.key
            ))
        })
    }

    /// Text; an empty value unsets the key.
    pub fn text(&self, v: Option<&str>) -> Result<Option<String>, ConfigError> {
        let v = self.value(v)?;
        Ok((!v.is_empty()).then(|| v.to_string()))
    }

    pub fn secret(&self, v: Option<&str>) -> Result<Option<Secret>, ConfigError> {
        Ok(self.text(v)?.map(Secret::from))
    }

    pub fn path(&self, v: Option<&str>) -> Result<Option<PathBuf>, ConfigError> {
        Ok(self.text(v)?.map(PathBuf::from))
    }

    /// A value parsed with `FromStr` (whose error is the message); empty unsets the key.
    pub fn parsed<T: std::str::FromStr<Err = String>>(
        &self,
        v: Option<&str>,
    ) -> Result<Option<T>, ConfigError> {
        self.text(v)?
            .map(|s| s.parse().map_err(|m| self.err(m)))
            .transpose()
    }

    /// gcfg boolean; a bare key is `true`.
    pub fn boolean(&self, v: Option<&str>) -> Result<bool, ConfigError> {
        match v {
            None => Ok(true),
            Some(s) => parse_bool(s).ok_or_else(|| self.not_bool(s)),
        }
    }

    pub fn not_bool(&self, s: &str) -> ConfigError {
        self.err(format!("{} is not a boolean (use true or false)", quote(s)))
    }

    pub fn integer(&self, v: Option<&str>) -> Result<i64, ConfigError> {
        let s = self.value(v)?;
        parse_int(s).ok_or_else(|| self.err(format!("{} is not an integer", quote(s))))
    }
}
