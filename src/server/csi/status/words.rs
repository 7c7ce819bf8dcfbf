//! Small pieces of wording the status messages share.

use std::fmt::{self, Display};
use std::path::{Path, PathBuf};

/// `a, b, c`.
pub fn joined<T: Display>(items: &[T]) -> String {
    items
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// `"a", "b"`.
pub fn quoted(items: &[String]) -> String {
    items
        .iter()
        .map(|s| format!("{s:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Paths as `a, b`.
pub fn paths(items: &[PathBuf]) -> String {
    items
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// A path the caller sent, quoted as the string it sent (paths come from UTF-8 requests).
pub fn quoted_path(path: &Path) -> String {
    format!("{:?}", path.to_string_lossy())
}

/// The text of an errno, as the kernel's error.
pub fn errno(n: i32) -> std::io::Error {
    std::io::Error::from_raw_os_error(n)
}

/// "" or "s".
pub fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// `": reason"` when there is one.
pub fn reason(r: &Option<String>) -> impl Display + '_ {
    struct Reason<'a>(&'a Option<String>);
    impl Display for Reason<'_> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            match self.0 {
                Some(r) => write!(f, ": {r}"),
                None => Ok(()),
            }
        }
    }
    Reason(r)
}
