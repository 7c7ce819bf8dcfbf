//! Responses as JSON values (one conversion per message), printed as JSON or as indented
//! `key: value` text. Requests are never rendered, so secrets never are.

use std::collections::HashMap;

use serde_json::{json, Map, Value};

use crate::server::csi::pb;

fn map(m: &HashMap<String, String>) -> Value {
    let sorted: std::collections::BTreeMap<_, _> = m.iter().collect();
    json!(sorted)
}

fn topology(t: &pb::Topology) -> Value {
    map(&t.segments)
}

/// `1073741824` → `"1 GiB"`, for the text output's readability.
pub fn human_bytes(n: i64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut i = 0;
    while v.abs() >= 1024.0 && i < UNITS.len() - 1 {
        v /= 1024.0;
        i += 1;
    }
    if v.fract() == 0.0 {
        format!("{v:.0} {}", UNITS[i])
    } else {
        format!("{v:.2} {}", UNITS[i])
    }
}

/// RFC 3339 UTC from a protobuf timestamp.
pub fn timestamp(t: &prost_types::Timestamp) -> String {
    let secs = t.seconds;
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

pub fn volume(v: &pb::Volume) -> Value {
    let source = v.content_source.as_ref().and_then(|s| s.r#type.as_ref());
    json!({
        "volume_id": v.volume_id,
        "capacity_bytes": v.capacity_bytes,
        "capacity": human_bytes(v.capacity_bytes),
        "volume_context": map(&v.volume_context),
        "content_source": match source {
            Some(pb::volume_content_source::Type::Snapshot(s)) => json!({"snapshot_id": s.snapshot_id}),
            Some(pb::volume_content_source::Type::Volume(s)) => json!({"volume_id": s.volume_id}),
            None => Value::Null,
        },
        "accessible_topology": v.accessible_topology.iter().map(topology).collect::<Vec<_>>(),
    })
}

pub fn snapshot(s: &pb::Snapshot) -> Value {
    json!({
        "snapshot_id": s.snapshot_id,
        "source_volume_id": s.source_volume_id,
        "size_bytes": s.size_bytes,
        "size": human_bytes(s.size_bytes),
        "creation_time": s.creation_time.as_ref().map(timestamp),
        "ready_to_use": s.ready_to_use,
        "group_snapshot_id": s.group_snapshot_id,
    })
}

pub fn capability(c: &pb::VolumeCapability) -> Value {
    let mode = c
        .access_mode
        .as_ref()
        .and_then(|m| pb::volume_capability::access_mode::Mode::try_from(m.mode).ok())
        .map(|m| m.as_str_name());
    match &c.access_type {
        Some(pb::volume_capability::AccessType::Block(_)) => {
            json!({"access_type": "block", "access_mode": mode})
        }
        Some(pb::volume_capability::AccessType::Mount(m)) => json!({
            "access_type": "mount", "fs_type": m.fs_type, "mount_flags": m.mount_flags,
            "access_mode": mode,
        }),
        None => json!({"access_mode": mode}),
    }
}

pub fn usage(u: &pb::VolumeUsage) -> Value {
    let unit = pb::volume_usage::Unit::try_from(u.unit)
        .map(|x| x.as_str_name())
        .unwrap_or("UNKNOWN");
    let fmt = |n: i64| {
        if unit == "BYTES" {
            human_bytes(n)
        } else {
            n.to_string()
        }
    };
    json!({
        "unit": unit, "total": u.total, "used": u.used, "available": u.available,
        "summary": format!("{} used of {}, {} available", fmt(u.used), fmt(u.total), fmt(u.available)),
    })
}

pub fn condition(c: Option<&pb::VolumeCondition>) -> Value {
    c.map_or(
        Value::Null,
        |c| json!({"abnormal": c.abnormal, "message": c.message}),
    )
}

pub fn string_map(m: &HashMap<String, String>) -> Value {
    map(m)
}

pub fn topologies(t: Option<&pb::Topology>) -> Value {
    t.map_or(Value::Null, topology)
}

/// Print `v` as text: nested maps indented, lists as `- ` items, empty objects as `ok`.
pub fn text(v: &Value) -> String {
    let mut out = String::new();
    match v {
        Value::Object(m) if m.is_empty() => out.push_str("ok\n"),
        _ => write_value(&mut out, v, 0),
    }
    out
}

fn scalar(v: &Value) -> Option<String> {
    match v {
        Value::Null => Some("-".into()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.to_string()),
        Value::String(s) if s.is_empty() => Some("\"\"".into()),
        Value::String(s) => Some(s.clone()),
        Value::Object(m) if m.is_empty() => Some("{}".into()),
        Value::Array(a) if a.is_empty() => Some("[]".into()),
        _ => None,
    }
}

fn write_value(out: &mut String, v: &Value, indent: usize) {
    let pad = "  ".repeat(indent);
    match v {
        Value::Object(m) => write_object(out, m, indent),
        Value::Array(items) => {
            for item in items {
                match scalar(item) {
                    Some(s) => out.push_str(&format!("{pad}- {s}\n")),
                    None => {
                        out.push_str(&format!("{pad}-\n"));
                        write_value(out, item, indent + 1);
                    }
                }
            }
        }
        other => out.push_str(&format!("{pad}{}\n", scalar(other).unwrap_or_default())),
    }
}

fn write_object(out: &mut String, m: &Map<String, Value>, indent: usize) {
    let pad = "  ".repeat(indent);
    for (k, v) in m {
        match scalar(v) {
            Some(s) => out.push_str(&format!("{pad}{k}: {s}\n")),
            None => {
                out.push_str(&format!("{pad}{k}:\n"));
                write_value(out, v, indent + 1);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_sizes() {
        assert_eq!(human_bytes(1 << 30), "1 GiB");
        assert_eq!(human_bytes(1536 << 20), "1.50 GiB");
        assert_eq!(human_bytes(12), "12 B");
    }

    #[test]
    fn timestamps() {
        let t = prost_types::Timestamp {
            seconds: 1_700_000_000,
            nanos: 0,
        };
        assert_eq!(timestamp(&t), "2023-11-14T22:13:20Z");
        let t = prost_types::Timestamp {
            seconds: 951_782_400,
            nanos: 0,
        };
        assert_eq!(timestamp(&t), "2000-02-29T00:00:00Z");
    }

    #[test]
    fn text_output() {
        let v = json!({"a": 1, "b": {"c": "x"}, "l": [{"k": true}], "e": {}});
        assert_eq!(text(&v), "a: 1\nb:\n  c: x\ne: {}\nl:\n  -\n    k: true\n");
        assert_eq!(text(&json!({})), "ok\n");
    }
}
