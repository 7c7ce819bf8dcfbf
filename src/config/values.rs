//! Value parsers shared by the sections (gcfg booleans and integers, Go durations, URLs)
//! and the endpoint type, which clouds.yaml sets too.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use super::error::quote;

/// Which Keystone catalog interface to use (`os-endpoint-type`, clouds.yaml
/// `interface`). Upstream passes the string to gophercloud, which accepts
/// `public`, `internal` and `admin`; the Keystone v2 spellings `publicURL`,
/// `internalURL` and `adminURL` (accepted by gophercloud's clouds.yaml
/// reader) are mapped too. Case-insensitive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EndpointType {
    #[default]
    Public,
    Internal,
    Admin,
}

impl EndpointType {
    /// The Keystone v3 catalog `interface` value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Public => "public",
            Self::Internal => "internal",
            Self::Admin => "admin",
        }
    }
}

impl fmt::Display for EndpointType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for EndpointType {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let lower = s.to_ascii_lowercase();
        match lower.strip_suffix("url").unwrap_or(&lower) {
            "public" => Ok(Self::Public),
            "internal" => Ok(Self::Internal),
            "admin" => Ok(Self::Admin),
            _ => Err(format!(
                "{} is not an endpoint type (use public, internal or admin)",
                quote(s)
            )),
        }
    }
}

/// gcfg booleans: true/yes/on/1 and false/no/off/0, case-insensitive.
pub(crate) fn parse_bool(s: &str) -> Option<bool> {
    match s.to_ascii_lowercase().as_str() {
        "true" | "yes" | "on" | "1" => Some(true),
        "false" | "no" | "off" | "0" => Some(false),
        _ => None,
    }
}

/// gcfg integers: optional sign, then decimal digits or `0x` hex.
pub(crate) fn parse_int(s: &str) -> Option<i64> {
    let (negative, digits) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let magnitude = if let Some(hex) = digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        if hex.is_empty() || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        i64::from_str_radix(hex, 16).ok()?
    } else {
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        digits.parse::<i64>().ok()?
    };
    Some(if negative { -magnitude } else { magnitude })
}

/// A duration: plain seconds (`30`) or Go syntax (`5s`, `1m30s`, `1.5h`,
/// `250ms`; units h, m, s, ms, us/µs, ns). Negative values are rejected.
pub(crate) fn parse_duration(s: &str) -> Option<Duration> {
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
        return s.parse::<u64>().ok().map(Duration::from_secs);
    }
    let mut rest = s.strip_prefix('+').unwrap_or(s);
    if rest.is_empty() {
        return None;
    }
    let mut nanos: u128 = 0;
    while !rest.is_empty() {
        let num_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (number, tail) = rest.split_at(num_end);
        let unit_end = tail
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(tail.len());
        let (unit, tail) = tail.split_at(unit_end);
        rest = tail;
        let per: u128 = match unit {
            "ns" => 1,
            "us" | "µs" | "μs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            _ => return None,
        };
        let (whole, frac) = number.split_once('.').unwrap_or((number, ""));
        if (whole.is_empty() && frac.is_empty()) || frac.contains('.') {
            return None;
        }
        if !whole.is_empty() {
            nanos = nanos.checked_add(whole.parse::<u128>().ok()?.checked_mul(per)?)?;
        }
        if !frac.is_empty() {
            let frac = &frac[..frac.len().min(18)];
            let scale = 10u128.pow(u32::try_from(frac.len()).ok()?);
            nanos = nanos.checked_add(frac.parse::<u128>().ok()? * per / scale)?;
        }
    }
    Some(Duration::from_nanos(u64::try_from(nanos).ok()?))
}

/// `http://…` or `https://…` with something after the scheme.
pub(crate) fn is_http_url(s: &str) -> bool {
    let lower = s.to_ascii_lowercase();
    ["http://", "https://"]
        .iter()
        .any(|scheme| lower.starts_with(scheme) && lower.len() > scheme.len())
}
