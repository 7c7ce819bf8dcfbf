//! Reading a configuration file's text (cloud.conf, clouds.yaml, secure.yaml).

use std::path::Path;

use super::error::ConfigError;

/// Reads a UTF-8 text file, mapping failures to one-line errors.
pub(crate) fn read_text(path: &Path) -> Result<String, ConfigError> {
    let bytes = std::fs::read(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => ConfigError::NotFound {
            path: path.to_path_buf(),
        },
        _ => ConfigError::Unreadable {
            path: path.to_path_buf(),
            reason: e.to_string(),
        },
    })?;
    String::from_utf8(bytes).map_err(|e| ConfigError::Unreadable {
        path: path.to_path_buf(),
        reason: format!(
            "not UTF-8 text (invalid byte at offset {})",
            e.utf8_error().valid_up_to()
        ),
    })
}
