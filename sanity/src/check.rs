//! How a case says what went wrong: `Stop::Fail` or `Stop::Skip` with a reason, plus helpers
//! that turn gRPC results into those with messages that name the RPC, the expected and the
//! actual code.

use std::fmt::Display;

use tonic::{Code, Status};

/// Why a case stopped before passing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stop {
    Fail(String),
    Skip(String),
}

pub type CaseResult = Result<(), Stop>;

/// `Stop::Fail` with a formatted reason.
#[macro_export]
macro_rules! fail {
    ($($arg:tt)*) => { $crate::check::Stop::Fail(format!($($arg)*)) };
}

/// Return `Stop::Fail` from the case unless `cond` holds.
#[macro_export]
macro_rules! ensure {
    ($cond:expr, $($arg:tt)*) => {
        if !$cond {
            return Err($crate::check::Stop::Fail(format!($($arg)*)));
        }
    };
}

/// Short text of a status: `NotFound: volume x does not exist`.
pub fn describe(s: &Status) -> String {
    if s.message().is_empty() {
        format!("{:?} (no message; the spec requires one)", s.code())
    } else {
        format!("{:?}: {}", s.code(), s.message())
    }
}

fn codes(want: &[Code]) -> String {
    want.iter()
        .map(|c| format!("{c:?}"))
        .collect::<Vec<_>>()
        .join(" or ")
}

/// The call must have succeeded.
pub fn ok<T>(res: Result<T, Status>, what: impl Display) -> Result<T, Stop> {
    res.map_err(|s| Stop::Fail(format!("{what} failed: {}", describe(&s))))
}

/// The call must have failed with one of `want`.
pub fn code<T>(res: Result<T, Status>, want: &[Code], what: impl Display) -> Result<Status, Stop> {
    match res {
        Ok(_) => Err(Stop::Fail(format!(
            "{what}: expected {}, got OK",
            codes(want)
        ))),
        Err(s) if want.contains(&s.code()) => {
            if s.message().is_empty() {
                return Err(Stop::Fail(format!(
                    "{what}: {:?} without a message (the spec requires a human-readable one)",
                    s.code()
                )));
            }
            Ok(s)
        }
        Err(s) => Err(Stop::Fail(format!(
            "{what}: expected {}, got {}",
            codes(want),
            describe(&s)
        ))),
    }
}

/// The call must have succeeded or failed with one of `also`.
pub fn ok_or<T>(
    res: Result<T, Status>,
    also: &[Code],
    what: impl Display,
) -> Result<Option<T>, Stop> {
    match res {
        Ok(v) => Ok(Some(v)),
        Err(s) if also.contains(&s.code()) => Ok(None),
        Err(s) => Err(Stop::Fail(format!(
            "{what}: expected OK or {}, got {}",
            codes(also),
            describe(&s)
        ))),
    }
}

/// A spec rule for plugin and topology names: 63 characters or less, alphanumeric at both
/// ends, dashes, dots (and, for topology keys/values, underscores) between.
pub fn valid_dns_like(s: &str, allow_underscore: bool) -> bool {
    let b = s.as_bytes();
    if b.is_empty() || b.len() > 63 {
        return false;
    }
    let inner_ok = |c: u8| {
        c.is_ascii_alphanumeric() || c == b'-' || c == b'.' || (allow_underscore && c == b'_')
    };
    b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter().all(|&c| inner_ok(c))
}

/// A topology key is `[prefix/]name` where the prefix is a lower-case DNS name.
pub fn valid_topology_key(k: &str) -> bool {
    match k.split_once('/') {
        Some((prefix, name)) => {
            valid_dns_like(prefix, false)
                && !prefix.bytes().any(|c| c.is_ascii_uppercase())
                && valid_dns_like(name, true)
        }
        None => valid_dns_like(k, true),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_accepts_only_listed_codes_with_messages() {
        let r: Result<(), Status> = Err(Status::invalid_argument("name missing"));
        assert!(code(r, &[Code::InvalidArgument], "x").is_ok());
        let r: Result<(), Status> = Err(Status::not_found("gone"));
        let e = code(r, &[Code::InvalidArgument], "CreateVolume").unwrap_err();
        assert_eq!(
            e,
            Stop::Fail("CreateVolume: expected InvalidArgument, got NotFound: gone".into())
        );
        let r: Result<(), Status> = Ok(());
        assert!(code(r, &[Code::NotFound], "x").is_err());
        let r: Result<(), Status> = Err(Status::new(Code::NotFound, ""));
        assert!(code(r, &[Code::NotFound], "x").is_err());
    }

    #[test]
    fn names_follow_the_spec() {
        assert!(valid_dns_like("cinder.csi.openstack.org", false));
        assert!(!valid_dns_like("-bad", false));
        assert!(!valid_dns_like("bad.", false));
        assert!(!valid_dns_like("under_score", false));
        assert!(!valid_dns_like(&"a".repeat(64), false));
        assert!(valid_topology_key("topology.cinder.csi.openstack.org/zone"));
        assert!(valid_topology_key("zone"));
        assert!(!valid_topology_key("Upper.Case/zone"));
    }
}
