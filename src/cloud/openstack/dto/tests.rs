//! Wire formats parsed from the bodies the OpenStack API references document
//! (docs.openstack.org api-ref samples for block-storage v3 and compute v2.1).

use chrono::{DateTime, Utc};

use super::cinder::is_true_spec;
use super::*;
use crate::cloud::{
    CopyKind, CopyStatus, Server, ServerAttachment, Volume, VolumeStatus, VolumeType,
};

/// Block Storage API reference, volumes-list-detailed-response.json (3.69), plus a second,
/// attached volume written from the same reference's attachment fields.
const VOLUMES_DETAIL: &str = r#"{
    "volumes": [
        {
            "attachments": [],
            "availability_zone": "nova",
            "bootable": "false",
            "consistencygroup_id": null,
            "created_at": "2018-11-28T06:25:15.288987",
            "description": null,
            "encrypted": false,
            "id": "cb49b381-9012-40cb-b8ee-80c19a4801b5",
            "links": [
                {"href": "http://127.0.0.1:43543/v3/89afd400-b646-4bbc-b12b-c0a4d63e5bd3/volumes/cb49b381-9012-40cb-b8ee-80c19a4801b5", "rel": "self"},
                {"href": "http://127.0.0.1:43543/89afd400-b646-4bbc-b12b-c0a4d63e5bd3/volumes/cb49b381-9012-40cb-b8ee-80c19a4801b5", "rel": "bookmark"}
            ],
            "metadata": {},
            "migration_status": null,
            "multiattach": false,
            "name": null,
            "os-vol-host-attr:host": null,
            "os-vol-mig-status-attr:migstat": null,
            "os-vol-mig-status-attr:name_id": null,
            "os-vol-tenant-attr:tenant_id": "89afd400-b646-4bbc-b12b-c0a4d63e5bd3",
            "replication_status": null,
            "size": 10,
            "snapshot_id": null,
            "source_volid": null,
            "status": "creating",
            "updated_at": null,
            "user_id": "c853ca26-e8ea-4797-8a52-ee124a013d0e",
            "volume_type": "__DEFAULT__",
            "volume_type_id": "5fed9d7c-401d-46e2-8e80-f30c70cb7e1d",
            "provider_id": null,
            "group_id": null,
            "service_uuid": null,
            "shared_targets": null,
            "cluster_name": null,
            "consumes_quota": true
        },
        {
            "attachments": [
                {
                    "server_id": "f4fda93b-06e0-4743-8117-bc8bcecd651b",
                    "attachment_id": "3b8b6631-1cf7-4fd7-9afb-c01e541a073c",
                    "attached_at": "2019-09-30T19:30:34.000000",
                    "host_name": "compute-1",
                    "volume_id": "6edbc2f4-1507-44f8-ac0d-eed1d2608d38",
                    "device": "/dev/vdb",
                    "id": "6edbc2f4-1507-44f8-ac0d-eed1d2608d38"
                }
            ],
            "availability_zone": "az-2",
            "bootable": "true",
            "created_at": "2019-09-30T19:30:20.000000",
            "description": "Created by OpenStack Cinder CSI driver",
            "encrypted": false,
            "id": "6edbc2f4-1507-44f8-ac0d-eed1d2608d38",
            "links": [],
            "metadata": {"cinder.csi.openstack.org/cluster": "kubernetes", "csi.storage.k8s.io/pvc/name": "data"},
            "multiattach": true,
            "name": "pvc-3f1c",
            "size": 2,
            "snapshot_id": "a06b0531-c14b-4a7b-8749-de1378dd1007",
            "source_volid": null,
            "status": "in-use",
            "updated_at": "2019-09-30T19:30:34.000000",
            "user_id": "c853ca26-e8ea-4797-8a52-ee124a013d0e",
            "volume_type": "multi"
        }
    ],
    "volumes_links": [{"href": "http://127.0.0.1:43543/v3/p/volumes/detail?limit=2&marker=6edbc2f4-1507-44f8-ac0d-eed1d2608d38", "rel": "next"}]
}"#;

#[test]
fn volumes_from_the_reference_list() {
    let list: VolumeList = serde_json::from_str(VOLUMES_DETAIL).unwrap();
    assert!(has_next(&list.volumes_links));
    let mut vols: Vec<Volume> = list.volumes.into_iter().map(Volume::from).collect();
    let attached = vols.pop().unwrap();
    let creating = vols.pop().unwrap();

    assert_eq!(creating.id, "cb49b381-9012-40cb-b8ee-80c19a4801b5");
    assert_eq!(creating.name, "", "a null name is empty");
    assert_eq!(creating.status, VolumeStatus::Creating);
    assert_eq!(creating.size_gib, 10);
    assert_eq!(creating.availability_zone, "nova");
    assert_eq!(creating.volume_type.as_deref(), Some("__DEFAULT__"));
    assert!(!creating.bootable && !creating.multiattach);
    assert!(creating.attachments.is_empty() && creating.metadata.is_empty());
    assert!(creating.created_at.is_some());

    assert_eq!(attached.status, VolumeStatus::InUse);
    assert!(attached.bootable, "bootable arrives as the string \"true\"");
    assert!(attached.multiattach);
    assert_eq!(attached.availability_zone, "az-2");
    assert_eq!(
        attached.snapshot_id.as_deref(),
        Some("a06b0531-c14b-4a7b-8749-de1378dd1007")
    );
    assert_eq!(
        attached
            .metadata
            .get("cinder.csi.openstack.org/cluster")
            .map(String::as_str),
        Some("kubernetes")
    );
    let a = attached
        .attached_to("f4fda93b-06e0-4743-8117-bc8bcecd651b")
        .unwrap();
    assert_eq!(a.device.as_deref(), Some("/dev/vdb"));
    assert_eq!(
        a.attachment_id.as_deref(),
        Some("3b8b6631-1cf7-4fd7-9afb-c01e541a073c")
    );
}

/// A volume attached both to a Nova server and to a host (`server_id: null`, as Cinder
/// reports attachments made outside Nova), in a list with a plain volume.
const HOST_ATTACHED: &str = r#"{
    "volumes": [
        {
            "id": "0b1f2c9e-6a7d-4f3e-9c1b-2d3e4f5a6b7c", "name": "shared", "size": 1,
            "status": "in-use", "multiattach": true,
            "attachments": [
                {"server_id": null, "attachment_id": "8d0e5f64-1111-4c3b-9a2e-0c1d2e3f4a5b",
                 "host_name": "backup-host", "volume_id": "0b1f2c9e-6a7d-4f3e-9c1b-2d3e4f5a6b7c",
                 "device": "/dev/sdb", "id": "0b1f2c9e-6a7d-4f3e-9c1b-2d3e4f5a6b7c"},
                {"server_id": "f4fda93b-06e0-4743-8117-bc8bcecd651b",
                 "attachment_id": "3b8b6631-1cf7-4fd7-9afb-c01e541a073c",
                 "volume_id": "0b1f2c9e-6a7d-4f3e-9c1b-2d3e4f5a6b7c", "device": "/dev/vdb",
                 "id": "0b1f2c9e-6a7d-4f3e-9c1b-2d3e4f5a6b7c"}
            ]
        },
        {"id": "cb49b381-9012-40cb-b8ee-80c19a4801b5", "name": "plain", "size": 1,
         "status": "available", "attachments": []}
    ]
}"#;

#[test]
fn host_attachments_are_skipped_not_fatal() {
    let list: VolumeList = serde_json::from_str(HOST_ATTACHED).unwrap();
    let vols: Vec<Volume> = list.volumes.into_iter().map(Volume::from).collect();
    assert_eq!(
        vols.len(),
        2,
        "one host attachment must not fail the whole list"
    );
    let servers: Vec<&str> = vols[0]
        .attachments
        .iter()
        .map(|a| a.server_id.as_str())
        .collect();
    assert_eq!(servers, ["f4fda93b-06e0-4743-8117-bc8bcecd651b"]);
}

#[test]
fn change_marks() {
    let list: VolumeList = serde_json::from_str(VOLUMES_DETAIL).unwrap();
    let t = |s: &str| parse_time(s).unwrap();
    assert_eq!(
        list.volumes[0].change_mark(),
        Some(ChangeMark::Created(t("2018-11-28T06:25:15.288987")))
    );
    assert_eq!(
        list.volumes[1].change_mark(),
        Some(ChangeMark::Updated(t("2019-09-30T19:30:34")))
    );
}

#[test]
fn every_timestamp_spelling() {
    let want = DateTime::parse_from_rfc3339("2018-01-15T22:14:05Z")
        .unwrap()
        .with_timezone(&Utc);
    for s in [
        "2018-01-15T22:14:05.000000Z",
        "2018-01-15T22:14:05Z",
        "2018-01-15T22:14:05",
        "2018-01-15T22:14:05.000000",
        "2018-01-15T22:14:05+00:00",
        "2018-01-15T23:14:05+01:00",
        "2018-01-15 22:14:05",
    ] {
        assert_eq!(parse_time(s), Some(want), "{s}");
    }
    assert_eq!(parse_time("yesterday"), None);
}

#[test]
fn unknown_statuses_are_kept() {
    let v: VolumeDto = serde_json::from_value(serde_json::json!({
        "id": "x", "size": 1, "status": "reverting", "attachments": null, "metadata": null
    }))
    .unwrap();
    let v = Volume::from(v);
    assert_eq!(v.status, VolumeStatus::Other("reverting".into()));
    assert_eq!(v.availability_zone, "");
}

#[test]
fn snapshots_from_the_reference() {
    // snapshots-list-detailed-response.json (3.65)
    let list: CopyList = serde_json::from_str(
        r#"{
        "snapshots": [{
            "created_at": "2019-03-11T16:24:36.464445",
            "description": "Daily backup",
            "id": "d0083dc5-8795-4c1a-bc9c-74f70006c205",
            "metadata": {"key": "v3"},
            "name": "snap-001",
            "os-extended-snapshot-attributes:progress": "0%",
            "os-extended-snapshot-attributes:project_id": "89afd400-b646-4bbc-b12b-c0a4d63e5bd3",
            "size": 10,
            "status": "creating",
            "updated_at": null,
            "volume_id": "7acd675e-4e06-4653-af9f-2ecd546342d6",
            "group_snapshot_id": null,
            "user_id": "c853ca26-e8ea-4797-8a52-ee124a013d0e",
            "consumes_quota": true
        }]
    }"#,
    )
    .unwrap();
    assert!(!has_next(&list.links));
    let s = list
        .copies
        .into_iter()
        .next()
        .unwrap()
        .into_copy(CopyKind::Snapshot);
    assert_eq!(s.id, "d0083dc5-8795-4c1a-bc9c-74f70006c205");
    assert_eq!(s.volume_id, "7acd675e-4e06-4653-af9f-2ecd546342d6");
    assert_eq!(
        (s.kind, s.status),
        (CopyKind::Snapshot, CopyStatus::Creating)
    );
    assert_eq!(s.size_gib, 10);
    assert_eq!(s.metadata.get("key").map(String::as_str), Some("v3"));
}

#[test]
fn backups_from_the_reference() {
    // backup-show-response.json (3.56)
    let env: CopyEnvelope = serde_json::from_str(
        r#"{
        "backup": {
            "availability_zone": null,
            "container": null,
            "created_at": "2023-06-23T11:56:08.691468",
            "data_timestamp": "2023-06-23T11:56:08.691468",
            "description": "Test backup",
            "fail_reason": null,
            "has_dependent_backups": false,
            "id": "3052c307-119e-4f78-960e-972078aa15a8",
            "is_incremental": false,
            "links": [],
            "metadata": {},
            "name": "backup001",
            "object_count": 0,
            "os-backup-project-attr:project_id": "89afd400-b646-4bbc-b12b-c0a4d63e5bd3",
            "size": 10,
            "snapshot_id": null,
            "status": "creating",
            "updated_at": "2023-06-23T11:56:08.693488",
            "user_id": "c853ca26-e8ea-4797-8a52-ee124a013d0e",
            "volume_id": "e763a78b-edc5-48fb-bbb3-fddc1062e27a"
        }
    }"#,
    )
    .unwrap();
    let b = env.copy.into_copy(CopyKind::Backup);
    assert_eq!((b.kind, b.status), (CopyKind::Backup, CopyStatus::Creating));
    assert_eq!(b.volume_id, "e763a78b-edc5-48fb-bbb3-fddc1062e27a");
    assert_eq!(
        (b.size_gib, b.snapshot_id, b.availability_zone),
        (10, None, None)
    );
}

#[test]
fn a_backup_create_answers_with_its_id_only() {
    // backup-create-response.json
    let c: BackupCreated = serde_json::from_str(r#"{"backup": {
        "id": "b1f41f9b-741e-4992-a246-b97de7e6e87e",
        "links": [{"href": "http://127.0.0.1:40797/v3/p/backups/b1f41f9b-741e-4992-a246-b97de7e6e87e", "rel": "self"}],
        "name": "backup001"}}"#).unwrap();
    assert_eq!(c.backup.id, "b1f41f9b-741e-4992-a246-b97de7e6e87e");
    assert!(serde_json::from_str::<CopyEnvelope>(
        r#"{"backup": {"id": "b", "links": [], "name": "n"}}"#
    )
    .is_err());
}

#[test]
fn volume_types_and_the_multiattach_spec() {
    // volume-type-show-response.json, with the multiattach spec of the multiattach docs.
    let env: VolumeTypeEnvelope = serde_json::from_str(
        r#"{
        "volume_type": {
            "id": "6685584b-1eac-4da6-b5c3-555430cf68ff",
            "qos_specs_id": null,
            "name": "vol-type-001",
            "description": "volume type 0001",
            "is_public": true,
            "extra_specs": {"capabilities": "gpu", "multiattach": "<is> True"}
        }
    }"#,
    )
    .unwrap();
    let t = VolumeType::from(env.volume_type);
    assert_eq!(t.name, "vol-type-001");
    assert!(t.multiattach);
    for (spec, want) in [
        ("<is> True", true),
        ("<is>true", true),
        ("True", true),
        ("<is> False", false),
        ("", false),
    ] {
        assert_eq!(is_true_spec(spec), want, "{spec}");
    }
    let list: VolumeTypeList = serde_json::from_str(
        r#"{"volume_types": [{"id": "a", "name": "__DEFAULT__", "extra_specs": {}},
                             {"id": "b", "name": "plain", "is_public": true}]}"#,
    )
    .unwrap();
    assert!(list
        .volume_types
        .into_iter()
        .map(VolumeType::from)
        .all(|t| !t.multiattach));
}

#[test]
fn nova_servers_and_attachments() {
    let env: ServerEnvelope = serde_json::from_str(r#"{"server": {
        "id": "9168b536-cd40-4630-b43f-b259807c6e87", "name": "new-server-test",
        "status": "ACTIVE", "OS-EXT-AZ:availability_zone": "us-west",
        "OS-EXT-STS:task_state": null, "addresses": {}, "metadata": {"My Server Name": "Apache1"}}}"#)
        .unwrap();
    let s = Server::from(env.server);
    assert_eq!(s.availability_zone.as_deref(), Some("us-west"));
    assert_eq!(s.status, "ACTIVE");

    // list-volume-attachments-resp.json (2.79)
    let list: NovaAttachmentList = serde_json::from_str(r#"{"volumeAttachments": [
        {"delete_on_termination": false, "device": "/dev/sdc", "id": "227cc671-f30b-4488-96fd-7d0bf13648d8",
         "serverId": "d5e4ae35-ac0e-4311-a8c5-0ee863e951d9", "tag": null, "volumeId": "227cc671-f30b-4488-96fd-7d0bf13648d8"},
        {"delete_on_termination": true, "device": "/dev/sdb", "id": "a07f71dc-8151-4e7d-a0cc-cd24a3f11113",
         "serverId": "d5e4ae35-ac0e-4311-a8c5-0ee863e951d9", "tag": "foo", "volumeId": "a07f71dc-8151-4e7d-a0cc-cd24a3f11113"}]}"#)
        .unwrap();
    let a: Vec<ServerAttachment> = list.attachments.into_iter().map(Into::into).collect();
    assert_eq!(a[1].volume_id, "a07f71dc-8151-4e7d-a0cc-cd24a3f11113");
    assert_eq!(a[1].device.as_deref(), Some("/dev/sdb"));

    // volume-attachment-detail-resp.json (2.89): attachment_id and bdm_uuid, no id
    let env: NovaAttachmentEnvelope = serde_json::from_str(r#"{"volumeAttachment": {
        "attachment_id": "721a5c82-5ebc-4c6a-8339-3d33d8d027ed", "delete_on_termination": true,
        "device": null, "serverId": "7ebed2ce-85b3-40b5-84ae-8cc725c37ed2", "tag": "foo",
        "volumeId": "a07f71dc-8151-4e7d-a0cc-cd24a3f11113", "bdm_uuid": "c088db45-92b8-49e8-81e2-a1b77a144b3b"}}"#)
        .unwrap();
    assert_eq!(ServerAttachment::from(env.attachment).device, None);
}

#[test]
fn quota_usage_headroom() {
    let u = QuotaUsage {
        limit: 10,
        in_use: 3,
        reserved: 2,
    };
    assert_eq!(u.headroom(), Some(5));
    assert_eq!(
        QuotaUsage {
            limit: -1,
            in_use: 3,
            reserved: 0
        }
        .headroom(),
        None
    );
}
