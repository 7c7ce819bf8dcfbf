//! Typed VolumeGroupSnapshotClass `parameters` of CreateVolumeGroupSnapshot. Unknown keys are
//! InvalidArgument naming them; the snapshotter's own keys (`csi.storage.k8s.io/...`, e.g.
//! the group snapshot's name with `--extra-create-metadata`) are accepted and not used.

use std::collections::{BTreeMap, HashMap};

use super::params::SIDECAR_PREFIX;
use crate::driver::{Invalid, ParamClass, Result};

/// The parameters of a group snapshot.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GroupSnapshotParams {
    /// `group-type`: the Cinder group type (name or id) whose snapshots are consistent; unset
    /// (or empty): `[BlockStorage] group-type`, then Cinder's default group type.
    pub group_type: Option<String>,
}

impl GroupSnapshotParams {
    pub const ACCEPTED: &'static str = "group-type";

    pub fn parse(params: &HashMap<String, String>) -> Result<Self> {
        let sorted: BTreeMap<&str, &str> = params
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let mut out = Self::default();
        let mut unknown = Vec::new();
        for (key, value) in sorted {
            if key.starts_with(SIDECAR_PREFIX) {
                continue;
            }
            match key {
                "group-type" => {
                    let v = value.trim();
                    out.group_type = (!v.is_empty()).then(|| v.to_string());
                }
                _ => unknown.push(key.to_string()),
            }
        }
        if !unknown.is_empty() {
            return Err(Invalid::UnknownParameters {
                class: ParamClass::VolumeGroupSnapshotClass,
                keys: unknown,
                accepted: Self::ACCEPTED,
            }
            .into());
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::Error;

    fn map(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn group_type_and_sidecar_keys() {
        let p = GroupSnapshotParams::parse(&map(&[
            ("group-type", " consistent "),
            ("csi.storage.k8s.io/volumegroupsnapshot/name", "g"),
            ("csi.storage.k8s.io/volumegroupsnapshotcontent/name", "gc"),
        ]))
        .unwrap();
        assert_eq!(p.group_type.as_deref(), Some("consistent"));
        let p = GroupSnapshotParams::parse(&map(&[("group-type", "")])).unwrap();
        assert_eq!(p.group_type, None);
        assert_eq!(
            GroupSnapshotParams::parse(&map(&[])).unwrap(),
            Default::default()
        );
    }

    #[test]
    fn unknown_keys_are_named() {
        match GroupSnapshotParams::parse(&map(&[("type", "x"), ("zz", "y")])) {
            Err(Error::Invalid(Invalid::UnknownParameters {
                class: ParamClass::VolumeGroupSnapshotClass,
                keys,
                ..
            })) => assert_eq!(keys, ["type", "zz"]),
            other => panic!("{other:?}"),
        }
    }
}
