//! `openstack/latest/meta_data.json`: the document both the config drive and the metadata
//! service serve. Only what we use or will use is typed; unknown keys are ignored.

use serde::Deserialize;

use super::port::{InstanceMetadata, MetadataError};

/// Nova's document is a few KiB (keys, `meta`, device tags); anything this large is not one.
pub const MAX_DOCUMENT_BYTES: u64 = 1024 * 1024;

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct MetaData {
    /// Nova instance UUID. Optional here only so a missing one gets our own message.
    #[serde(default)]
    pub uuid: Option<String>,
    #[serde(default)]
    pub availability_zone: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub hostname: Option<String>,
    /// Device role tags (Nova 2.32+): bus addresses of disks by serial, which the node's disk
    /// lookup falls back to where by-id links are missing (`app/device_addresses.rs`, as
    /// upstream does on Hyper-V).
    #[serde(default)]
    pub devices: Vec<Device>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Device {
    /// `disk` or `nic`.
    #[serde(rename = "type", default)]
    pub kind: String,
    /// `scsi`, `virtio`, `pci`, `usb`, `xen`, `ide`.
    #[serde(default)]
    pub bus: String,
    /// Disks: the Cinder volume id.
    #[serde(default)]
    pub serial: Option<String>,
    /// Bus address, e.g. `0:0:0:0` (SCSI) or `0000:00:05.0` (PCI).
    #[serde(default)]
    pub address: Option<String>,
    #[serde(default)]
    pub path: Option<String>,
    #[serde(default)]
    pub mac: Option<String>,
    #[serde(default)]
    pub tags: Vec<String>,
}

impl MetaData {
    /// Parses and checks a document; `origin` says where it came from, for messages.
    pub fn parse(bytes: &[u8], origin: &str) -> Result<Self, MetadataError> {
        let doc: MetaData = serde_json::from_slice(bytes).map_err(|e| {
            MetadataError::Invalid(format!("{origin}: not a meta_data.json document: {e}"))
        })?;
        match doc.uuid.as_deref() {
            None => Err(MetadataError::Invalid(format!(
                "{origin}: meta_data.json has no \"uuid\""
            ))),
            // Nova ids are always UUIDs; anything else would not name a server to attach to.
            Some(id) if uuid::Uuid::try_parse(id).is_err() => Err(MetadataError::Invalid(format!(
                "{origin}: meta_data.json \"uuid\" {id:?} is not a UUID"
            ))),
            Some(_) => Ok(doc),
        }
    }

    /// The port's view: the id as Nova wrote it, and the AZ when it is not blank.
    pub fn instance(&self) -> InstanceMetadata {
        InstanceMetadata {
            uuid: self.uuid.clone().unwrap_or_default(),
            availability_zone: self
                .availability_zone
                .as_deref()
                .map(str::trim)
                .filter(|az| !az.is_empty())
                .map(str::to_string),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOVA: &str = r#"{
        "uuid": "83679162-1378-4288-a2d4-70e13ec132aa",
        "meta": {"role": "worker"},
        "public_keys": {"k": "ssh-ed25519 AAAA"},
        "hostname": "node-1.novalocal",
        "name": "node-1",
        "launch_index": 0,
        "availability_zone": "az-1",
        "random_seed": "aGVsbG8=",
        "project_id": "0f1d",
        "devices": [
            {"type": "disk", "bus": "scsi", "serial": "c5b4d3a2-0000-4000-8000-000000000001",
             "address": "0:0:0:1", "path": "/dev/sdb", "tags": ["data"]},
            {"type": "nic", "bus": "pci", "address": "0000:00:03.0", "mac": "fa:16:3e:00:00:01",
             "tags": [], "vlan": 10}
        ]
    }"#;

    #[test]
    fn parses_a_nova_document() {
        let doc = MetaData::parse(NOVA.as_bytes(), "test").unwrap();
        assert_eq!(doc.name.as_deref(), Some("node-1"));
        assert_eq!(doc.hostname.as_deref(), Some("node-1.novalocal"));
        assert_eq!(doc.devices.len(), 2);
        assert_eq!(doc.devices[0].kind, "disk");
        assert_eq!(doc.devices[0].address.as_deref(), Some("0:0:0:1"));
        assert_eq!(
            doc.instance(),
            InstanceMetadata {
                uuid: "83679162-1378-4288-a2d4-70e13ec132aa".into(),
                availability_zone: Some("az-1".into()),
            }
        );
    }

    #[test]
    fn blank_or_missing_zone_is_none() {
        for az in [r#""""#, r#""  ""#, "null"] {
            let s = format!(
                r#"{{"uuid":"83679162-1378-4288-a2d4-70e13ec132aa","availability_zone":{az}}}"#
            );
            let doc = MetaData::parse(s.as_bytes(), "t").unwrap();
            assert_eq!(doc.instance().availability_zone, None, "{az}");
        }
        let doc = MetaData::parse(br#"{"uuid":"83679162-1378-4288-a2d4-70e13ec132aa"}"#, "t");
        assert_eq!(doc.unwrap().instance().availability_zone, None);
    }

    #[test]
    fn unusable_documents_are_invalid_with_the_origin() {
        let cases: [(&[u8], &str); 5] = [
            (b"", "not a meta_data.json document"),
            (b"<html>", "not a meta_data.json document"),
            (br#"{"name":"x"}"#, "has no \"uuid\""),
            (br#"{"uuid":"i-0abc"}"#, "is not a UUID"),
            (br#"{"uuid":7}"#, "not a meta_data.json document"),
        ];
        for (bytes, want) in cases {
            let err = MetaData::parse(bytes, "config drive /x").unwrap_err();
            assert!(matches!(err, MetadataError::Invalid(_)), "{err}");
            assert!(err.detail().starts_with("config drive /x: "), "{err}");
            assert!(err.detail().contains(want), "{err} lacks {want}");
        }
    }
}
