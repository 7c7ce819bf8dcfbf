//! Bad input the cloud would store or choke on: names, filesystems, sizes, topology. Each is
//! refused with the spec's code before any cloud call, so nothing changes.

use super::*;
use crate::cloud::Op;
use crate::driver::{Error, Invalid, Range, Unsupported};

fn with_fs(fs: &str) -> VolumeCapability {
    VolumeCapability {
        access_type: AccessType::Mount {
            fs_type: Some(fs.into()),
            mount_flags: vec![],
            volume_mount_group: None,
        },
        access_mode: AccessMode::SingleNodeWriter,
    }
}

const BAD_FS: [&str; 4] = ["notafs", "../../bin/sh", "ext4; touch X", "vfat"];

#[tokio::test(start_paused = true)]
async fn create_refuses_filesystems_no_node_supports() {
    let e = env();
    for fs in BAD_FS {
        let mut req = create_req("a", GIB);
        req.capabilities = vec![rwo(), with_fs(fs)];
        assert_matches!(
            e.ctl.create_volume(req).await,
            Err(e @ Error::Invalid(Invalid::Capability(Unsupported::FsType { .. })))
                if e.to_string().contains(&format!("{fs:?}")) && e.to_string().contains("xfs")
        );
    }
    assert_eq!(e.fake.total_calls(), 0, "refused before any cloud call");
    for fs in ["ext4", "XFS", "btrfs", "ext3"] {
        let mut req = create_req(&format!("ok-{fs}"), GIB);
        req.capabilities = vec![with_fs(fs)];
        e.ctl.create_volume(req).await.unwrap();
    }
}

#[tokio::test(start_paused = true)]
async fn validate_capabilities_does_not_confirm_an_unsupported_filesystem() {
    let e = env();
    let v = e.create("a", 1).await;
    for fs in BAD_FS {
        let got = e
            .ctl
            .validate_capabilities(ValidateCapabilities {
                volume_id: v.id.clone(),
                capabilities: vec![rwo(), with_fs(fs)],
                params: VolumeParams::default(),
                mutable: MutableParams::default(),
                cloud: String::new(),
            })
            .await
            .unwrap();
        assert_matches!(
            got,
            Err(why @ Unsupported::FsType { .. })
                if why.to_string().contains(&format!("{fs:?}")) && why.to_string().contains("ext4")
        );
    }
}

#[tokio::test(start_paused = true)]
async fn names_cinder_cannot_store_are_invalid_argument() {
    let e = env();
    let v = e.create("src", 1).await;
    let calls = e.fake.total_calls();
    let bad = [
        "a".repeat(256),
        "b".repeat(10 * 1024),
        "nul\0inside".to_string(),
        "esc\u{1b}[31m".to_string(),
        "vt\u{b}".to_string(),
        "c1\u{85}".to_string(),
    ];
    for name in &bad {
        assert_matches!(
            e.ctl.create_volume(create_req(name, GIB)).await,
            Err(e @ Error::Invalid(_)) if e.to_string().starts_with("volume name")
        );
        assert_matches!(
            e.snapshot(name, &v.id, &[]).await,
            Err(e @ Error::Invalid(_)) if e.to_string().starts_with("snapshot name")
        );
        assert_matches!(
            e.snapshot(name, &v.id, &[("type", "backup")]).await,
            Err(e @ Error::Invalid(_)) if e.to_string().starts_with("snapshot name")
        );
    }
    assert_eq!(e.fake.total_calls(), calls, "nothing asked of the cloud");
    // 255 bytes is Cinder's limit, and allowed.
    e.ctl
        .create_volume(create_req(&"c".repeat(255), GIB))
        .await
        .unwrap();
    e.snapshot(&"d".repeat(255), &v.id, &[]).await.unwrap();
    // CSI allows TAB, LF and CR in names.
    e.ctl
        .create_volume(create_req("new\nline\tand\rcr", GIB))
        .await
        .unwrap();
    e.snapshot("snap\nshot", &v.id, &[]).await.unwrap();
}

/// 4 EiB: more than Cinder's size column holds. CSI: "Unsupported capacity_range" is
/// OUT_OF_RANGE, not RESOURCE_EXHAUSTED (that is for a full backend).
#[tokio::test(start_paused = true)]
async fn sizes_beyond_cinder_are_out_of_range() {
    let e = env();
    let eib4: u64 = 4 << 60;
    assert_matches!(
        e.ctl.create_volume(create_req("huge", eib4)).await,
        Err(e @ Error::OutOfRange(Range::TooLarge { gib: 4294967296 }))
            if e.to_string().contains("2147483647 GiB")
    );
    assert_eq!(e.fake.total_calls(), 0);
    let v = e.create("a", 1).await;
    let calls = e.fake.total_calls();
    let got = e
        .ctl
        .expand_volume(ExpandVolume {
            volume_id: v.id.clone(),
            capacity: CapacityRange {
                required_bytes: eib4,
                limit_bytes: 0,
            },
            capability: None,
            cloud: String::new(),
            deadline: deadline(),
        })
        .await;
    assert_matches!(got, Err(Error::OutOfRange(_)));
    assert_eq!(e.fake.total_calls(), calls);
    assert_eq!(e.fake.volume(&v.id).unwrap().size_gib, 1);
    // The largest size Cinder holds is no OutOfRange (the quota decides).
    e.fake.set_quota_gib(Some(10));
    assert_matches!(
        e.ctl
            .create_volume(create_req(
                "max",
                crate::driver::controller::validate::MAX_VOLUME_GIB * GIB
            ))
            .await,
        Err(Error::Cloud(crate::cloud::CloudError::OverLimit { .. }))
    );
}

/// CSI: a requisite topology the plugin cannot provision in is RESOURCE_EXHAUSTED ("Unable to
/// provision in accessible_topology"), and nothing is created.
#[tokio::test(start_paused = true)]
async fn a_requisite_no_zone_satisfies_is_resource_exhausted() {
    let e = env();
    let mut req = create_req("a", GIB);
    req.topology.requisite = vec![zone("mars"), zone("venus")];
    assert_matches!(
        e.ctl.create_volume(req).await,
        Err(Error::NoZone { asked, known })
            if asked == ["mars", "venus"] && known.contains(&"az1".to_string())
    );
    assert!(e.fake.volumes().is_empty());
    assert_eq!(e.fake.calls(Op::VolumeCreate), 0);

    // One zone Cinder has among those allowed: the volume goes there, even when the
    // preferred one is unknown.
    let mut req = create_req("c", GIB);
    req.topology.requisite = vec![zone("mars"), zone("az2")];
    req.topology.preferred = vec![zone("mars")];
    let v = e.ctl.create_volume(req).await.unwrap();
    assert_eq!(v.topology, vec![zone("az2")]);
    assert_eq!(e.fake.volume(&v.id).unwrap().availability_zone, "az2");

    // ignore-volume-az: the requisite holds Nova zones that Cinder may fall back from, so
    // Cinder decides (the fake has no fallback and refuses the zone with a 400).
    let e = env_with(with_block_storage(|b| b.ignore_volume_az = true));
    let mut req = create_req("d", GIB);
    req.topology.requisite = vec![zone("nova-compute-zone")];
    assert_matches!(
        e.ctl.create_volume(req).await,
        Err(Error::Cloud(crate::cloud::CloudError::BadRequest { .. }))
    );
    assert_eq!(e.fake.calls(Op::VolumeCreate), 1);
}
