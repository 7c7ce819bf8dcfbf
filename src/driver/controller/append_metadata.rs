//! StorageClass `appendVolumeMetadata` (upstream PR #3162): a JSON object of string pairs added
//! to the Cinder volume's metadata. Empty means none, as upstream. Keys the driver or the
//! sidecars set (`cinder.csi.openstack.org/*`, `csi.storage.k8s.io/*`) are refused rather than
//! silently overwritten or overwriting.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::driver::{Invalid, ParamClass, Result};

/// Prefix of the metadata keys this driver writes.
pub const DRIVER_PREFIX: &str = "cinder.csi.openstack.org/";
/// Prefix of the keys the sidecars own (`params::SIDECAR_PREFIX`; not imported, since params
/// uses this file).
const SIDECAR_PREFIX: &str = "csi.storage.k8s.io/";
/// Cinder's metadata keys and values are at most 255 characters.
pub const MAX_METADATA_CHARS: usize = 255;

fn invalid(
    class: ParamClass,
    key: Option<&str>,
    problem: impl Into<String>,
) -> crate::driver::Error {
    Invalid::AppendVolumeMetadata {
        class,
        key: key.map(str::to_string),
        problem: problem.into(),
    }
    .into()
}

/// Parse the parameter's value (in a StorageClass or a VolumeAttributesClass) into the pairs to
/// add.
pub fn parse(raw: &str, class: ParamClass) -> Result<BTreeMap<String, String>> {
    let raw = raw.trim();
    if raw.is_empty() {
        return Ok(BTreeMap::new());
    }
    let value: Value = serde_json::from_str(raw)
        .map_err(|e| invalid(class, None, format!("is not valid JSON ({e})")))?;
    let Value::Object(map) = value else {
        return Err(invalid(
            class,
            None,
            "must be a JSON object of string pairs, e.g. {\"billing\": \"team-a\"}",
        ));
    };
    let mut out = BTreeMap::new();
    for (key, value) in map {
        let Value::String(value) = value else {
            return Err(invalid(
                class,
                Some(&key),
                format!("has the value {value}; values must be JSON strings"),
            ));
        };
        if key.is_empty() {
            return Err(invalid(class, Some(&key), "is empty; Cinder needs a key"));
        }
        if key.starts_with(DRIVER_PREFIX) || key.starts_with(SIDECAR_PREFIX) {
            return Err(invalid(
                class,
                Some(&key),
                format!(
                    "is set by the driver or its sidecars (keys under {DRIVER_PREFIX} and \
                     {SIDECAR_PREFIX}); use another key"
                ),
            ));
        }
        for (what, s) in [("key", &key), ("value", &value)] {
            if s.chars().count() > MAX_METADATA_CHARS {
                return Err(invalid(
                    class,
                    Some(&key),
                    format!("{what} is longer than Cinder's {MAX_METADATA_CHARS} characters"),
                ));
            }
        }
        out.insert(key, value);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(raw: &str) -> Result<BTreeMap<String, String>> {
        super::parse(raw, ParamClass::StorageClass)
    }

    fn problem(raw: &str) -> String {
        parse(raw).unwrap_err().to_string()
    }

    #[test]
    fn string_pairs_are_taken() {
        let m = parse(r#"{"billing": "team-a", "qos/iops": "5000"}"#).unwrap();
        assert_eq!(m.len(), 2);
        assert_eq!(m["qos/iops"], "5000");
        assert!(parse("").unwrap().is_empty());
        assert!(parse("  ").unwrap().is_empty());
        assert!(parse("{}").unwrap().is_empty());
    }

    #[test]
    fn bad_values_name_what_to_fix() {
        assert!(problem("{").contains("not valid JSON"));
        assert!(problem(r#"["a"]"#).contains("JSON object"));
        let e = problem(r#"{"iops": 5000}"#);
        assert!(e.contains("\"iops\"") && e.contains("JSON strings"), "{e}");
        let e = problem(r#"{"cinder.csi.openstack.org/cluster": "x"}"#);
        assert!(e.contains("\"cinder.csi.openstack.org/cluster\""), "{e}");
        let e = problem(r#"{"csi.storage.k8s.io/pvc/name": "x"}"#);
        assert!(e.contains("sidecars"), "{e}");
        let long = format!(r#"{{"k": "{}"}}"#, "v".repeat(256));
        assert!(problem(&long).contains("255"));
        assert!(problem(r#"{"": "x"}"#).contains("empty"));
        assert!(problem(r#"{"a": null}"#).contains("null"));
    }
}
