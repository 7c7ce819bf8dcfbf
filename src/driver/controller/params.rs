//! Typed StorageClass, VolumeSnapshotClass and VolumeAttributesClass parameters, parsed once at
//! the edge. Unknown keys are InvalidArgument naming the key (a typo must not be silently
//! ignored, as upstream does); keys under `csi.storage.k8s.io/` belong to the sidecars and are
//! ignored, except the PVC/PV and snapshot names the sidecars inject for metadata.

use std::collections::{BTreeMap, HashMap};

use crate::driver::{Error, Invalid, ParamClass, Result};

/// Volume metadata key carrying `--cluster`.
pub const CLUSTER_KEY: &str = "cinder.csi.openstack.org/cluster";
/// Volume context key telling the node to grow the filesystem (restored from a source).
pub const RESIZE_REQUIRED_KEY: &str = "cinder.csi.openstack.org/resizeRequired";
/// Metadata key marking the temporary snapshot a backup is taken from.
pub const BACKUP_SOURCE_KEY: &str = "cinder.csi.openstack.org/backup-source-for";
/// Volume metadata key recording the content source a volume was created from
/// (`snapshot/<id>`, `backup/<id>`, `volume/<id>`): Cinder does not always report a backup
/// source, and a retried CreateVolume must match the source it asked for.
pub const CONTENT_SOURCE_KEY: &str = "cinder.csi.openstack.org/content-source";
/// Publish context key (upstream name; the node looks disks up by serial, not by this path).
pub const DEVICE_PATH_KEY: &str = "DevicePath";
/// Secrets key selecting a `[Global "name"]` cloud.
pub const CLOUD_SECRET_KEY: &str = "cloud";

/// Prefix of keys owned by the Kubernetes sidecars.
pub const SIDECAR_PREFIX: &str = "csi.storage.k8s.io/";
pub const PVC_NAME_KEY: &str = "csi.storage.k8s.io/pvc/name";
pub const PVC_NAMESPACE_KEY: &str = "csi.storage.k8s.io/pvc/namespace";
pub const PV_NAME_KEY: &str = "csi.storage.k8s.io/pv/name";
pub const SNAPSHOT_NAME_KEY: &str = "csi.storage.k8s.io/volumesnapshot/name";
pub const SNAPSHOT_NAMESPACE_KEY: &str = "csi.storage.k8s.io/volumesnapshot/namespace";
pub const SNAPSHOT_CONTENT_NAME_KEY: &str = "csi.storage.k8s.io/volumesnapshotcontent/name";

/// `backup-max-duration-seconds-per-gb` when unset (upstream default).
pub const DEFAULT_BACKUP_SECONDS_PER_GIB: u64 = 20;
/// Fixed part of the backup duration bound (upstream: 30 s + per-GiB part).
pub const BACKUP_BASE_SECONDS: u64 = 30;
/// Larger `backup-max-duration-seconds-per-gb` values are clamped to this (a day per GiB):
/// the bound only decides when a backup counts as stuck, and larger values would overflow.
pub const MAX_BACKUP_SECONDS_PER_GIB: u64 = 86_400;

/// Sorted view of a request map, so messages list keys in a stable order.
fn sorted(map: &HashMap<String, String>) -> BTreeMap<&str, &str> {
    map.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
}

fn unknown_keys(class: ParamClass, keys: &[&str], accepted: &'static str) -> Error {
    Invalid::UnknownParameters {
        class,
        keys: keys.iter().map(|k| k.to_string()).collect(),
        accepted,
    }
    .into()
}

/// A value that must be set once: two spellings of the same key are ambiguous.
fn set_once(slot: &mut Option<String>, key: &str, value: &str) -> Result<()> {
    if slot.is_some() {
        return Err(Invalid::ParameterTwice {
            key: key.to_string(),
        }
        .into());
    }
    let v = value.trim();
    *slot = (!v.is_empty()).then(|| v.to_string());
    Ok(())
}

/// StorageClass `parameters` of CreateVolume (also GetCapacity and ValidateVolumeCapabilities).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VolumeParams {
    /// `type`: Cinder volume type, name or id.
    pub volume_type: Option<String>,
    /// `availability`: Cinder AZ; overrides topology.
    pub availability: Option<String>,
    /// PVC/PV names injected by the provisioner (`--extra-create-metadata`), as metadata.
    pub k8s_metadata: BTreeMap<String, String>,
    /// `appendVolumeMetadata`: pairs added to the volume's metadata.
    pub append_metadata: BTreeMap<String, String>,
    /// Filesystem format options (`blockSize`, `inodeSize`, `bytesPerInode`,
    /// `numberOfInodes`, `mkfsOptions`), handed to the node through the volume context; the
    /// node checks them against the filesystem it formats.
    pub format: BTreeMap<String, String>,
}

/// StorageClass key (and volume context key, as upstream's PR #3084) of extra mkfs arguments.
pub const MKFS_OPTIONS_KEY: &str = "mkfsOptions";

/// StorageClass keys passed to the node's mkfs through the volume context.
pub const FORMAT_KEYS: [&str; 4] = ["blockSize", "inodeSize", "bytesPerInode", "numberOfInodes"];

impl VolumeParams {
    pub const ACCEPTED: &'static str =
        "type, availability, blockSize, inodeSize, bytesPerInode, numberOfInodes, mkfsOptions, \
         appendVolumeMetadata";

    /// `type` and `availability` are matched case-insensitively, as the in-tree
    /// `kubernetes.io/cinder` provisioner did: in-tree migration passes every StorageClass
    /// parameter through unchanged (only `fstype` is rewritten to `csi.storage.k8s.io/fstype`).
    pub fn parse(params: &HashMap<String, String>) -> Result<Self> {
        let mut out = Self::default();
        let mut unknown = Vec::new();
        for (key, value) in sorted(params) {
            if let Some(rest) = key.strip_prefix(SIDECAR_PREFIX) {
                if matches!(rest, "pvc/name" | "pvc/namespace" | "pv/name") {
                    out.k8s_metadata.insert(key.to_string(), value.to_string());
                }
                continue;
            }
            match key.to_ascii_lowercase().as_str() {
                "type" => set_once(&mut out.volume_type, key, value)?,
                "availability" => set_once(&mut out.availability, key, value)?,
                lower if FORMAT_KEYS.iter().any(|k| k.eq_ignore_ascii_case(lower)) => {
                    let canonical = FORMAT_KEYS
                        .iter()
                        .find(|k| k.eq_ignore_ascii_case(lower))
                        .expect("matched above");
                    let v = value.trim();
                    if !v.parse::<u64>().is_ok_and(|n| n > 0) {
                        return Err(Invalid::NotPositive {
                            class: ParamClass::StorageClass,
                            key: key.to_string(),
                            value: value.to_string(),
                        }
                        .into());
                    }
                    if out
                        .format
                        .insert(canonical.to_string(), v.to_string())
                        .is_some()
                    {
                        return Err(Invalid::FormatOptionTwice { key: canonical }.into());
                    }
                }
                "appendvolumemetadata" => {
                    let mut slot = None;
                    set_once(&mut slot, key, value)?;
                    if !out.append_metadata.is_empty() {
                        return Err(Invalid::ParameterTwice {
                            key: key.to_string(),
                        }
                        .into());
                    }
                    out.append_metadata = super::append_metadata::parse(
                        slot.as_deref().unwrap_or_default(),
                        ParamClass::StorageClass,
                    )?;
                }
                "mkfsoptions" => {
                    let mut slot = None;
                    set_once(&mut slot, key, value)?;
                    if let Some(v) = slot {
                        if out.format.insert(MKFS_OPTIONS_KEY.to_string(), v).is_some() {
                            return Err(Invalid::ParameterTwice {
                                key: key.to_string(),
                            }
                            .into());
                        }
                    }
                }
                "fstype" => {
                    return Err(Invalid::FsTypeParameter {
                        key: key.to_string(),
                    }
                    .into())
                }
                _ => unknown.push(key),
            }
        }
        if !unknown.is_empty() {
            return Err(unknown_keys(
                ParamClass::StorageClass,
                &unknown,
                Self::ACCEPTED,
            ));
        }
        Ok(out)
    }
}

/// VolumeAttributesClass `mutable_parameters` (ControllerModifyVolume, CreateVolume).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MutableParams {
    /// `type`: retype to this Cinder volume type.
    pub volume_type: Option<String>,
    /// `appendVolumeMetadata`: pairs set in the volume's metadata (the StorageClass key's
    /// format and checks), at creation and on every modification.
    pub append_metadata: BTreeMap<String, String>,
}

impl MutableParams {
    pub const ACCEPTED: &'static str = "type, appendVolumeMetadata";

    pub fn parse(params: &HashMap<String, String>) -> Result<Self> {
        let mut out = Self::default();
        let mut unknown = Vec::new();
        for (key, value) in sorted(params) {
            if key.starts_with(SIDECAR_PREFIX) {
                continue;
            }
            match key {
                "type" => {
                    if value.trim().is_empty() {
                        return Err(Invalid::EmptyMutableType.into());
                    }
                    out.volume_type = Some(value.trim().to_string());
                }
                "appendVolumeMetadata" => {
                    out.append_metadata =
                        super::append_metadata::parse(value, ParamClass::VolumeAttributesClass)?;
                }
                _ => unknown.push(key),
            }
        }
        if !unknown.is_empty() {
            return Err(unknown_keys(
                ParamClass::VolumeAttributesClass,
                &unknown,
                Self::ACCEPTED,
            ));
        }
        Ok(out)
    }

    pub fn is_empty(&self) -> bool {
        self.volume_type.is_none() && self.append_metadata.is_empty()
    }
}

/// What CreateSnapshot makes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SnapshotKind {
    #[default]
    Snapshot,
    /// A Cinder backup, taken from a temporary snapshot that is deleted afterwards.
    Backup,
}

/// VolumeSnapshotClass `parameters`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotParams {
    /// `type`: `snapshot` (default) or `backup`.
    pub kind: SnapshotKind,
    /// `force-create`: allow snapshots/backups of in-use volumes.
    pub force: bool,
    /// `backup-max-duration-seconds-per-gb`: a backup still `creating` after
    /// `BACKUP_BASE_SECONDS + this × GiB` is reported as stuck.
    pub backup_seconds_per_gib: u64,
    /// `availability`: AZ of the backup.
    pub availability: Option<String>,
    /// Snapshot names injected by the snapshotter (`--extra-create-metadata`).
    pub k8s_metadata: BTreeMap<String, String>,
}

impl Default for SnapshotParams {
    fn default() -> Self {
        Self {
            kind: SnapshotKind::Snapshot,
            force: false,
            backup_seconds_per_gib: DEFAULT_BACKUP_SECONDS_PER_GIB,
            availability: None,
            k8s_metadata: BTreeMap::new(),
        }
    }
}

/// Go's `strconv.ParseBool` spellings, which upstream StorageClasses use.
fn parse_bool(key: &str, value: &str) -> Result<bool> {
    match value.trim() {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Ok(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Ok(false),
        other => Err(Invalid::NotBoolean {
            key: key.to_string(),
            value: other.to_string(),
        }
        .into()),
    }
}

impl SnapshotParams {
    pub const ACCEPTED: &'static str =
        "type, force-create, backup-max-duration-seconds-per-gb, availability";

    pub fn parse(params: &HashMap<String, String>) -> Result<Self> {
        let mut out = Self::default();
        let mut unknown = Vec::new();
        for (key, value) in sorted(params) {
            if let Some(rest) = key.strip_prefix(SIDECAR_PREFIX) {
                if matches!(
                    rest,
                    "volumesnapshot/name"
                        | "volumesnapshot/namespace"
                        | "volumesnapshotcontent/name"
                ) {
                    out.k8s_metadata.insert(key.to_string(), value.to_string());
                }
                continue;
            }
            match key {
                "type" => {
                    out.kind = match value.trim() {
                        "" | "snapshot" => SnapshotKind::Snapshot,
                        "backup" => SnapshotKind::Backup,
                        other => {
                            return Err(Invalid::UnknownSnapshotType {
                                value: other.to_string(),
                            }
                            .into())
                        }
                    }
                }
                "force-create" => out.force = parse_bool(key, value)?,
                "backup-max-duration-seconds-per-gb" => {
                    let secs: u64 = value.trim().parse().map_err(|_| Invalid::NotSeconds {
                        key: key.to_string(),
                        value: value.to_string(),
                    })?;
                    out.backup_seconds_per_gib = secs.min(MAX_BACKUP_SECONDS_PER_GIB);
                }
                "availability" => {
                    let v = value.trim();
                    out.availability = (!v.is_empty()).then(|| v.to_string());
                }
                _ => unknown.push(key),
            }
        }
        if !unknown.is_empty() {
            return Err(unknown_keys(
                ParamClass::VolumeSnapshotClass,
                &unknown,
                Self::ACCEPTED,
            ));
        }
        Ok(out)
    }
}

/// The cloud a request addresses: the `cloud` secret, or the default cloud `""`.
pub fn cloud_name(secrets: &HashMap<String, String>) -> String {
    secrets
        .get(CLOUD_SECRET_KEY)
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// Whether the request named a cloud at all (lists walk every cloud when it did not).
pub fn named_cloud(secrets: &HashMap<String, String>) -> Option<String> {
    secrets
        .get(CLOUD_SECRET_KEY)
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn volume_params_accept_upstream_and_migrated_keys() {
        let p = VolumeParams::parse(&map(&[
            ("type", "ssd"),
            ("availability", "az1"),
            ("csi.storage.k8s.io/fstype", "xfs"),
            ("csi.storage.k8s.io/pvc/name", "data"),
            ("csi.storage.k8s.io/pvc/namespace", "ns"),
            ("csi.storage.k8s.io/pv/name", "pv-1"),
            ("csi.storage.k8s.io/provisioner-secret-name", "s"),
        ]))
        .unwrap();
        assert_eq!(p.volume_type.as_deref(), Some("ssd"));
        assert_eq!(p.availability.as_deref(), Some("az1"));
        assert_eq!(p.k8s_metadata.len(), 3);
        // In-tree keys were case-insensitive.
        let p = VolumeParams::parse(&map(&[("Type", "ssd"), ("AVAILABILITY", "az")])).unwrap();
        assert_eq!(p.volume_type.as_deref(), Some("ssd"));
        assert_eq!(p.availability.as_deref(), Some("az"));
        assert_eq!(
            VolumeParams::parse(&map(&[("type", " ")]))
                .unwrap()
                .volume_type,
            None
        );
    }

    #[test]
    fn volume_params_name_unknown_keys() {
        let p = VolumeParams::parse(&map(&[("blockSize", "4096"), ("inodesize", "512")])).unwrap();
        assert_eq!(p.format.get("blockSize").map(String::as_str), Some("4096"));
        assert_eq!(p.format.get("inodeSize").map(String::as_str), Some("512"));
        for bad in ["0", "-1", "4k", ""] {
            let e = VolumeParams::parse(&map(&[("numberOfInodes", bad)])).unwrap_err();
            assert!(e.to_string().contains("positive whole number"), "{e}");
        }
        let e = VolumeParams::parse(&map(&[("typo", "x"), ("zzz", "y")])).unwrap_err();
        let msg = e.to_string();
        assert!(matches!(
            e,
            Error::Invalid(Invalid::UnknownParameters {
                class: ParamClass::StorageClass,
                ..
            })
        ));
        assert!(msg.contains("\"typo\", \"zzz\""), "{msg}");
        let e = VolumeParams::parse(&map(&[("fsType", "xfs")])).unwrap_err();
        assert!(e.to_string().contains("csi.storage.k8s.io/fstype"), "{e}");
        let e = VolumeParams::parse(&map(&[("type", "a"), ("Type", "b")])).unwrap_err();
        assert!(e.to_string().contains("twice"), "{e}");
    }

    #[test]
    fn mkfs_options_travel_as_given() {
        let p = VolumeParams::parse(&map(&[("mkfsOptions", " -E nodiscard,-i 65536 ")])).unwrap();
        assert_eq!(
            p.format.get(MKFS_OPTIONS_KEY).map(String::as_str),
            Some("-E nodiscard,-i 65536")
        );
        assert!(VolumeParams::parse(&map(&[("mkfsOptions", "")]))
            .unwrap()
            .format
            .is_empty());
        let e =
            VolumeParams::parse(&map(&[("mkfsOptions", "-q"), ("mkfsoptions", "-q")])).unwrap_err();
        assert!(e.to_string().contains("twice"), "{e}");
    }

    #[test]
    fn snapshot_params() {
        let p = SnapshotParams::parse(&map(&[])).unwrap();
        assert_eq!(p, SnapshotParams::default());
        let p = SnapshotParams::parse(&map(&[
            ("type", "backup"),
            ("force-create", "True"),
            ("backup-max-duration-seconds-per-gb", "5"),
            ("availability", "az2"),
            ("csi.storage.k8s.io/volumesnapshot/name", "snap"),
        ]))
        .unwrap();
        assert_eq!(p.kind, SnapshotKind::Backup);
        assert!(p.force);
        assert_eq!(p.backup_seconds_per_gib, 5);
        assert_eq!(p.availability.as_deref(), Some("az2"));
        assert_eq!(p.k8s_metadata.len(), 1);
        // Huge bounds are clamped, so bound × size cannot overflow.
        let p = SnapshotParams::parse(&map(&[(
            "backup-max-duration-seconds-per-gb",
            "18446744073709551615",
        )]))
        .unwrap();
        assert_eq!(p.backup_seconds_per_gib, MAX_BACKUP_SECONDS_PER_GIB);
        for bad in [
            ("type", "clone"),
            ("force-create", "yes"),
            ("backup-max-duration-seconds-per-gb", "-1"),
            ("other", "x"),
        ] {
            let e = SnapshotParams::parse(&map(&[bad])).unwrap_err();
            assert!(matches!(e, Error::Invalid(_)), "{bad:?}");
            assert!(e.to_string().contains(bad.0), "{e}");
        }
    }

    #[test]
    fn mutable_params() {
        let p = MutableParams::parse(&map(&[("type", "gold")])).unwrap();
        assert_eq!(p.volume_type.as_deref(), Some("gold"));
        assert!(MutableParams::parse(&map(&[("iops", "5")]))
            .unwrap_err()
            .to_string()
            .contains("\"iops\""));
        assert!(MutableParams::parse(&map(&[("type", "")])).is_err());
        assert!(MutableParams::parse(&map(&[])).unwrap().is_empty());
        let p =
            MutableParams::parse(&map(&[("appendVolumeMetadata", r#"{"billing": "b"}"#)])).unwrap();
        assert_eq!(p.append_metadata["billing"], "b");
        assert!(!p.is_empty());
        let e = MutableParams::parse(&map(&[("appendVolumeMetadata", r#"{"a": 1}"#)]))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("VolumeAttributesClass appendVolumeMetadata: key \"a\""),
            "{e}"
        );
    }

    #[test]
    fn cloud_from_secrets() {
        assert_eq!(cloud_name(&map(&[])), "");
        assert_eq!(
            cloud_name(&map(&[("cloud", "r1"), ("password", "x")])),
            "r1"
        );
        assert_eq!(named_cloud(&map(&[("cloud", "")])), None);
    }
}
