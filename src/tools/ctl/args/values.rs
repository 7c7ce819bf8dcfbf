//! Flag values clap cannot parse alone: KEY=VALUE pairs, topology segments, sizes, and
//! secrets whose errors never echo the value.

use std::collections::BTreeMap;

pub fn parse_kv(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.to_string())),
        _ => Err(format!("{s:?} is not KEY=VALUE")),
    }
}

/// Like [`parse_kv`], but the error never contains the value.
pub fn parse_secret(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.to_string())),
        _ => Err("a secret must be KEY=VALUE (the argument is not shown)".to_string()),
    }
}

pub fn parse_segments(s: &str) -> Result<BTreeMap<String, String>, String> {
    s.split(',').map(parse_kv).collect()
}

/// `1073741824`, `1Gi`, `512Mi`, `1G` (= 10^9), `1GiB`.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: u64 = num
        .parse()
        .map_err(|_| format!("{s:?} is not a size (e.g. 1Gi, 512Mi, 1073741824)"))?;
    let mult: u64 = match unit.trim().trim_end_matches('B') {
        "" => 1,
        "K" | "k" => 1000,
        "M" => 1000_u64.pow(2),
        "G" => 1000_u64.pow(3),
        "T" => 1000_u64.pow(4),
        "Ki" => 1 << 10,
        "Mi" => 1 << 20,
        "Gi" => 1 << 30,
        "Ti" => 1 << 40,
        _ => return Err(format!("{s:?}: unknown unit {unit:?} (use Ki, Mi, Gi, Ti)")),
    };
    n.checked_mul(mult)
        .ok_or_else(|| format!("{s:?} is too large"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("1Gi").unwrap(), 1 << 30);
        assert_eq!(parse_size("1GiB").unwrap(), 1 << 30);
        assert_eq!(parse_size("512Mi").unwrap(), 512 << 20);
        assert_eq!(parse_size("2G").unwrap(), 2_000_000_000);
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert!(parse_size("1Xi").is_err());
        assert!(parse_size("Gi").is_err());
    }

    #[test]
    fn secret_errors_do_not_echo_values() {
        let e = parse_secret("hunter2").unwrap_err();
        assert!(!e.contains("hunter2"));
        assert_eq!(
            parse_secret("password=a=b").unwrap(),
            ("password".into(), "a=b".into())
        );
    }

    #[test]
    fn segments() {
        let m = parse_segments("a=1,b=2").unwrap();
        assert_eq!(m.len(), 2);
        assert!(parse_segments("a=1,b").is_err());
    }
}
