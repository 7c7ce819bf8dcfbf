//! Lenient deserialisation shared by the Cinder and Nova formats: times, nulls, string maps,
//! booleans as strings, and paging links.

use std::collections::BTreeMap;
use std::time::SystemTime;

use chrono::{DateTime, NaiveDateTime, Utc};
use serde::{Deserialize, Deserializer};

/// OpenStack timestamps: `2018-11-28T06:25:15.288987` (Cinder, UTC without zone),
/// `2018-01-15T22:14:05.000000Z` (Keystone), `2017-02-14T19:23:58Z` or with an offset (Nova).
pub fn parse_time(s: &str) -> Option<DateTime<Utc>> {
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Some(t.with_timezone(&Utc));
    }
    let naive = s.trim_end_matches('Z');
    NaiveDateTime::parse_from_str(naive, "%Y-%m-%dT%H:%M:%S%.f")
        .or_else(|_| NaiveDateTime::parse_from_str(naive, "%Y-%m-%d %H:%M:%S%.f"))
        .ok()
        .map(|n| n.and_utc())
}

pub(super) fn system_time(s: &Option<String>) -> Option<SystemTime> {
    s.as_deref().and_then(parse_time).map(SystemTime::from)
}

pub(super) fn null_as_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// Metadata values are strings in practice; anything else is kept as its JSON text.
pub(super) fn string_map<'de, D>(d: D) -> Result<BTreeMap<String, String>, D::Error>
where
    D: Deserializer<'de>,
{
    let raw: Option<BTreeMap<String, serde_json::Value>> = Option::deserialize(d)?;
    Ok(raw
        .unwrap_or_default()
        .into_iter()
        .map(|(k, v)| match v {
            serde_json::Value::String(s) => (k, s),
            other => (k, other.to_string()),
        })
        .collect())
}

/// Cinder sends `bootable` as `"true"`/`"false"`.
pub(super) fn loose_bool<'de, D>(d: D) -> Result<bool, D::Error>
where
    D: Deserializer<'de>,
{
    Ok(match Option::<serde_json::Value>::deserialize(d)? {
        Some(serde_json::Value::Bool(b)) => b,
        Some(serde_json::Value::String(s)) => s.eq_ignore_ascii_case("true"),
        _ => false,
    })
}

#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct Link {
    pub href: String,
    #[serde(default)]
    pub rel: String,
}

/// Whether a list answer says there is another page.
pub fn has_next(links: &[Link]) -> bool {
    links.iter().any(|l| l.rel == "next")
}
