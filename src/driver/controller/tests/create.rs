use super::*;
use crate::cloud::Op;
use crate::cloud::{CloudError, RequestId, VolumeStatus};
use crate::driver::{
    Cleanup, Error, Failure, Invalid, Mismatch, Named, ParamClass, Range, Refusal, VolumeDiff,
};

#[tokio::test(start_paused = true)]
async fn creates_rounds_up_and_waits_until_available() {
    let e = env();
    let mut req = create_req("pvc-1", GIB + GIB / 2);
    req.params = VolumeParams::parse(&params(&[
        ("csi.storage.k8s.io/pvc/name", "data"),
        ("csi.storage.k8s.io/pvc/namespace", "apps"),
        ("csi.storage.k8s.io/pv/name", "pvc-1"),
    ]))
    .unwrap();
    let info = e.ctl.create_volume(req).await.unwrap();
    assert_eq!(info.capacity_bytes, 2 * GIB);
    assert!(info.context.is_empty(), "no resize hint without a source");
    assert_eq!(info.topology, vec![zone("nova")]);
    let v = e.fake.volume(&info.id).unwrap();
    // Upstream returned while the volume was still `creating`.
    assert_eq!(v.status, VolumeStatus::Available);
    assert_eq!(v.size_gib, 2);
    assert_eq!(
        v.metadata.get(params::CLUSTER_KEY).map(String::as_str),
        Some("k8s-1")
    );
    assert_eq!(
        v.metadata.get(params::PVC_NAME_KEY).map(String::as_str),
        Some("data")
    );
    assert_eq!(
        v.metadata
            .get(params::PVC_NAMESPACE_KEY)
            .map(String::as_str),
        Some("apps")
    );
    assert_eq!(
        v.metadata.get(params::PV_NAME_KEY).map(String::as_str),
        Some("pvc-1")
    );
}

#[tokio::test(start_paused = true)]
async fn no_capacity_range_means_one_gib() {
    let e = env();
    let info = e.ctl.create_volume(create_req("pvc-1", 0)).await.unwrap();
    assert_eq!(info.capacity_bytes, GIB);
}

#[tokio::test(start_paused = true)]
async fn limit_below_rounded_size_is_out_of_range_and_creates_nothing() {
    let e = env();
    let mut req = create_req("pvc-1", GIB + 1);
    req.capacity.limit_bytes = GIB + 100;
    assert_matches!(e.ctl.create_volume(req).await, Err(Error::OutOfRange(_)));
    let mut req = create_req("pvc-1", 0);
    req.capacity.limit_bytes = GIB / 2;
    assert_matches!(e.ctl.create_volume(req).await, Err(Error::OutOfRange(_)));
    assert!(e.fake.volumes().is_empty());
    assert_eq!(e.fake.calls(Op::VolumeCreate), 0);
}

#[tokio::test(start_paused = true)]
async fn same_name_same_size_returns_the_same_volume() {
    let e = env();
    let first = e.create("pvc-1", 1).await;
    for _ in 0..5 {
        assert_eq!(e.create("pvc-1", 1).await, first);
    }
    // An exact range equal to the size is compatible too.
    let mut req = create_req("pvc-1", GIB);
    req.capacity.limit_bytes = GIB;
    assert_eq!(e.ctl.create_volume(req).await.unwrap(), first);
    assert_eq!(e.fake.volumes().len(), 1);
    assert_eq!(e.fake.calls(Op::VolumeCreate), 1);
}

#[tokio::test(start_paused = true)]
async fn same_name_incompatible_is_already_exists() {
    let e = env();
    let v = e.create("pvc-1", 1).await;
    let mut bigger = create_req("pvc-1", 2 * GIB);
    bigger.capacity.limit_bytes = 2 * GIB;
    assert_matches!(
        e.ctl.create_volume(bigger).await,
        Err(Error::Mismatch(Mismatch::Volume {
            diff: VolumeDiff::Size { .. },
            ..
        }))
    );
    let mut smaller_limit = create_req("pvc-1", 0);
    smaller_limit.capacity.limit_bytes = GIB / 2;
    assert!(e.ctl.create_volume(smaller_limit).await.is_err());
    let mut cloned = create_req("pvc-1", GIB);
    cloned.source = Some(ContentSource::Volume(v.id.clone()));
    assert_matches!(
        e.ctl.create_volume(cloned).await,
        Err(Error::Mismatch(Mismatch::Volume {
            diff: VolumeDiff::Source,
            ..
        }))
    );
    let mut rwx = create_req("pvc-1", GIB);
    rwx.capabilities = vec![cap(AccessMode::MultiNodeMultiWriter, true)];
    assert_matches!(
        e.ctl.create_volume(rwx).await,
        Err(Error::Mismatch(Mismatch::Volume {
            diff: VolumeDiff::Capability(_),
            ..
        }))
    );
    e.fake.add_volume_type("gold", false);
    let mut gold = create_req("pvc-1", GIB);
    gold.params.volume_type = Some("gold".into());
    assert_matches!(
        e.ctl.create_volume(gold).await,
        Err(Error::Mismatch(Mismatch::Volume {
            diff: VolumeDiff::Type { .. },
            ..
        }))
    );
    let mut elsewhere = create_req("pvc-1", GIB);
    elsewhere.topology.requisite = vec![zone("az2")];
    assert_matches!(
        e.ctl.create_volume(elsewhere).await,
        Err(Error::Mismatch(Mismatch::Volume { diff: VolumeDiff::Zone { requisite, .. }, .. }))
            if requisite == ["az2"]
    );
    assert_eq!(e.fake.volumes().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn existing_volume_matches_a_type_given_by_id() {
    let e = env();
    let id = e.fake.add_volume_type("gold", false);
    let mut req = create_req("pvc-1", GIB);
    req.params.volume_type = Some("gold".into());
    let v = e.ctl.create_volume(req).await.unwrap();
    let mut by_id = create_req("pvc-1", GIB);
    by_id.params.volume_type = Some(id);
    assert_eq!(e.ctl.create_volume(by_id).await.unwrap(), v);
}

/// A volume named like the request, created outside this driver (no cluster tag) or for
/// another cluster; `None` = untagged.
async fn foreign(e: &Env, name: &str, cluster: Option<&str>) -> crate::cloud::Volume {
    let mut metadata = BTreeMap::new();
    if let Some(c) = cluster {
        metadata.insert(params::CLUSTER_KEY.to_string(), c.to_string());
    }
    let v = e
        .fake
        .cloud("")
        .volumes
        .create_volume(&crate::cloud::NewVolume {
            name: name.into(),
            size_gib: 1,
            metadata,
            ..Default::default()
        })
        .await
        .unwrap();
    e.fake.settle_all();
    v
}

#[tokio::test(start_paused = true)]
async fn two_volumes_with_one_name_is_failed_precondition() {
    let e = env();
    let ours = e.create("pvc-1", 1).await;
    // A same-named volume of someone else's (Cinder allows duplicates) is not ours to use
    // or to worry about: ours is still the answer.
    foreign(&e, "pvc-1", None).await;
    assert_eq!(e.create("pvc-1", 1).await, ours);
    // Two of ours: the name no longer identifies one volume.
    foreign(&e, "pvc-1", Some("k8s-1")).await;
    assert_matches!(
        e.ctl.create_volume(create_req("pvc-1", GIB)).await,
        Err(Error::Refused(Refusal::SameName { what: Named::Volume, ids, .. })) if ids.len() == 2
    );
}

#[tokio::test(start_paused = true)]
async fn a_same_named_volume_not_ours_is_already_exists_and_untouched() {
    for cluster in [None, Some("other")] {
        let e = env();
        let v = foreign(&e, "pvc-1", cluster).await;
        e.fake.reset_calls();
        assert_matches!(
            e.ctl.create_volume(create_req("pvc-1", GIB)).await,
            Err(Error::Mismatch(Mismatch::ForeignVolume { id, tag, .. }))
                if id == v.id && tag.as_deref() == cluster
        );
        // Even in `error`, it is not deleted.
        e.fake.set_volume_status(&v.id, VolumeStatus::Error);
        assert_matches!(
            e.ctl.create_volume(create_req("pvc-1", GIB)).await,
            Err(Error::Mismatch(Mismatch::ForeignVolume { .. }))
        );
        assert_eq!(e.fake.calls(Op::VolumeCreate), 0);
        assert_eq!(e.fake.calls(Op::VolumeDelete), 0);
        assert!(e.fake.volume(&v.id).is_some());
    }
}

#[tokio::test(start_paused = true)]
async fn idempotent_across_restarts_with_or_without_a_cluster() {
    for cluster in ["k8s-1", ""] {
        let o = ControllerOptions {
            cluster: cluster.into(),
            ..Default::default()
        };
        let e = env_with(o.clone());
        let v = e.create("pvc-1", 1).await;
        // A new controller process: only the cloud remembers.
        let restarted = Controller::new(Clouds::new([e.fake.cloud("")]), o);
        assert_eq!(
            restarted
                .create_volume(create_req("pvc-1", GIB))
                .await
                .unwrap(),
            v
        );
        assert_eq!(e.fake.calls(Op::VolumeCreate), 1);
    }
}

#[tokio::test(start_paused = true)]
async fn a_volume_in_another_error_state_is_kept_and_failed_precondition() {
    for status in [
        VolumeStatus::ErrorExtending,
        VolumeStatus::ErrorRestoring,
        VolumeStatus::ErrorBackingUp,
    ] {
        let e = env();
        let v = e.create("pvc-1", 1).await;
        e.fake.set_volume_status(&v.id, status.clone());
        assert_matches!(
            e.ctl.create_volume(create_req("pvc-1", GIB)).await,
            Err(Error::Refused(Refusal::MayHoldData { status: got, .. })) if got == status
        );
        assert_eq!(e.fake.calls(Op::VolumeDelete), 0);
        assert!(e.fake.volume(&v.id).is_some());
    }
}

#[tokio::test(start_paused = true)]
async fn access_modes_are_validated() {
    let e = env();
    let plain = e.fake.add_volume_type("plain", false);
    e.fake.add_volume_type("shared", true);
    let cases: Vec<(Option<&str>, VolumeCapability, bool)> = vec![
        (None, cap(AccessMode::SingleNodeWriter, false), true),
        (None, cap(AccessMode::SingleNodeReaderOnly, true), true),
        (None, cap(AccessMode::SingleNodeMultiWriter, false), true),
        (None, cap(AccessMode::MultiNodeReaderOnly, false), false),
        (
            Some(plain.as_str()),
            cap(AccessMode::MultiNodeSingleWriter, false),
            false,
        ),
        (
            Some("shared"),
            cap(AccessMode::MultiNodeReaderOnly, false),
            true,
        ),
        (
            Some("shared"),
            cap(AccessMode::MultiNodeSingleWriter, false),
            false,
        ),
        (
            Some("shared"),
            cap(AccessMode::MultiNodeSingleWriter, true),
            true,
        ),
        (
            Some("shared"),
            cap(AccessMode::MultiNodeMultiWriter, false),
            false,
        ),
        (
            Some("shared"),
            cap(AccessMode::MultiNodeMultiWriter, true),
            true,
        ),
    ];
    for (i, (ty, c, ok)) in cases.into_iter().enumerate() {
        let mut req = create_req(&format!("pvc-{i}"), GIB);
        req.params.volume_type = ty.map(str::to_string);
        req.capabilities = vec![rwo(), c.clone()];
        let r = e.ctl.create_volume(req).await;
        if ok {
            assert!(r.is_ok(), "{ty:?} {c:?}: {r:?}");
        } else {
            assert_matches!(r, Err(Error::Invalid(Invalid::Capability(_))));
        }
    }
    assert_eq!(e.fake.volumes().len(), 6);
    let shared = e
        .fake
        .volumes()
        .into_iter()
        .filter(|v| v.multiattach)
        .count();
    assert_eq!(shared, 3);
}

#[tokio::test(start_paused = true)]
async fn availability_zone_precedence() {
    let e = env();
    let mut req = create_req("a", GIB);
    req.params.availability = Some("az1".into());
    req.topology.preferred = vec![zone("az2")];
    assert_eq!(
        e.ctl.create_volume(req).await.unwrap().topology,
        vec![zone("az1")]
    );

    let mut req = create_req("b", GIB);
    req.topology.requisite = vec![zone("az1"), zone("az2")];
    req.topology.preferred = vec![zone("az2")];
    assert_eq!(
        e.ctl.create_volume(req).await.unwrap().topology,
        vec![zone("az2")]
    );

    let mut req = create_req("c", GIB);
    req.topology.requisite = vec![zone("az1")];
    assert_eq!(
        e.ctl.create_volume(req).await.unwrap().topology,
        vec![zone("az1")]
    );

    // Without a zone anywhere Cinder picks its default and we report that, not a guess.
    let req = create_req("d", GIB);
    assert_eq!(
        e.ctl.create_volume(req).await.unwrap().topology,
        vec![zone("nova")]
    );
}

#[tokio::test(start_paused = true)]
async fn topology_off_and_ignore_volume_az() {
    let e = env_with(ControllerOptions {
        with_topology: false,
        ..opts()
    });
    let mut req = create_req("a", GIB);
    req.topology.preferred = vec![zone("az2")];
    let info = e.ctl.create_volume(req).await.unwrap();
    assert!(info.topology.is_empty());
    assert_eq!(e.fake.volume(&info.id).unwrap().availability_zone, "nova");

    let e = env_with(with_block_storage(|b| b.ignore_volume_az = true));
    e.fake.set_default_az("nova");
    let mut req = create_req("a", GIB);
    req.params.availability = Some("nova".into());
    req.topology.preferred = vec![zone("zone-of-nova-compute")];
    let info = e.ctl.create_volume(req).await.unwrap();
    assert_eq!(info.topology, vec![zone("zone-of-nova-compute")]);
}

#[tokio::test(start_paused = true)]
async fn volume_in_error_is_deleted_and_the_reason_reported() {
    let e = env();
    e.fake
        .fail_next_volume_creation("No valid backend was found");
    let err = e
        .ctl
        .create_volume(create_req("pvc-1", GIB))
        .await
        .unwrap_err();
    assert_matches!(
        &err,
        Error::Failed(Failure::Creation { reason: Some(r), cleanup: Cleanup::Deleted, .. })
            if r.contains("No valid backend")
    );
    e.fake.settle_all();
    assert!(e.fake.volumes().is_empty(), "the failed volume is deleted");
    // The retry starts afresh and succeeds.
    let v = e.create("pvc-1", 1).await;
    assert_eq!(
        e.fake.volume(&v.id).unwrap().status,
        VolumeStatus::Available
    );
}

#[tokio::test(start_paused = true)]
async fn wait_ends_at_the_deadline_with_aborted_and_the_retry_resumes() {
    let e = env();
    e.fake.set_settle_after(10_000);
    let mut req = create_req("pvc-1", GIB);
    req.deadline = Instant::now() + Duration::from_secs(5);
    let started = Instant::now();
    let err = e.ctl.create_volume(req).await.unwrap_err();
    assert_matches!(&err, Error::Cloud(CloudError::WaitTimeout { last_status, .. }) if last_status == "creating");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "answers before the RPC deadline"
    );
    e.fake.set_settle_after(0);
    e.fake.settle_all();
    let v = e.create("pvc-1", 1).await;
    assert_eq!(
        e.fake.calls(Op::VolumeCreate),
        1,
        "the retry found it by name"
    );
    assert_eq!(
        e.fake.volume(&v.id).unwrap().status,
        VolumeStatus::Available
    );
}

#[tokio::test(start_paused = true)]
async fn content_sources() {
    let e = env();
    let src = e.create("src", 2).await;
    let snap = e.snapshot_ready("snap", &src.id, &[]).await;

    // From a snapshot, asked smaller than the snapshot: the snapshot's size.
    let mut req = create_req("from-snap", GIB);
    req.source = Some(ContentSource::Snapshot(snap.id.clone()));
    let v = e.ctl.create_volume(req).await.unwrap();
    assert_eq!(v.capacity_bytes, 2 * GIB);
    assert_eq!(v.source, Some(ContentSource::Snapshot(snap.id.clone())));
    assert_eq!(
        v.context
            .get(params::RESIZE_REQUIRED_KEY)
            .map(String::as_str),
        Some("true")
    );
    assert_eq!(
        e.fake.volume(&v.id).unwrap().snapshot_id.as_deref(),
        Some(snap.id.as_str())
    );

    // A same-named volume created empty is not "restored from the snapshot".
    e.create("empty", 2).await;
    let mut req = create_req("empty", GIB);
    req.source = Some(ContentSource::Snapshot(snap.id.clone()));
    assert_matches!(
        e.ctl.create_volume(req).await,
        Err(Error::Mismatch(Mismatch::Volume {
            diff: VolumeDiff::Source,
            ..
        }))
    );

    // A limit below the source's size cannot be honoured.
    let mut req = create_req("too-small", GIB);
    req.capacity.limit_bytes = GIB;
    req.source = Some(ContentSource::Snapshot(snap.id.clone()));
    assert_matches!(
        e.ctl.create_volume(req).await,
        Err(Error::OutOfRange(Range::SourceOverLimit { .. }))
    );

    // Clone, larger than the source.
    let mut req = create_req("clone", 3 * GIB);
    req.source = Some(ContentSource::Volume(src.id.clone()));
    let c = e.ctl.create_volume(req.clone()).await.unwrap();
    assert_eq!(c.capacity_bytes, 3 * GIB);
    assert_eq!(c.source, Some(ContentSource::Volume(src.id.clone())));
    assert_eq!(e.ctl.create_volume(req).await.unwrap(), c, "idempotent");

    // Missing sources are NotFound and create nothing.
    let before = e.fake.volumes().len();
    let mut req = create_req("x", GIB);
    req.source = Some(ContentSource::Snapshot("nope".into()));
    assert_matches!(
        e.ctl.create_volume(req).await,
        Err(Error::SnapshotNotFound { .. })
    );
    let mut req = create_req("y", GIB);
    req.source = Some(ContentSource::Volume("nope".into()));
    assert_matches!(
        e.ctl.create_volume(req).await,
        Err(Error::VolumeNotFound { .. })
    );
    assert_eq!(e.fake.volumes().len(), before);
}

#[tokio::test(start_paused = true)]
async fn restores_from_a_backup_addressed_as_a_snapshot() {
    let e = env();
    let src = e.create("src", 1).await;
    let b = e.snapshot_ready("bk", &src.id, &[("type", "backup")]).await;
    assert!(e.fake.backup(&b.id).is_some());
    let mut req = create_req("restored", GIB);
    req.source = Some(ContentSource::Snapshot(b.id.clone()));
    let v = e.ctl.create_volume(req.clone()).await.unwrap();
    assert_eq!(
        e.fake.volume(&v.id).unwrap().backup_id.as_deref(),
        Some(b.id.as_str())
    );
    // Clouds that do not report backup_id: the source recorded in metadata still matches
    // a retry, and another source does not.
    e.fake.clear_backup_id(&v.id);
    assert_eq!(e.ctl.create_volume(req.clone()).await.unwrap(), v);
    let mut other = req;
    other.source = Some(ContentSource::Snapshot("another-backup".into()));
    assert_matches!(
        e.ctl.create_volume(other).await,
        Err(Error::Mismatch(Mismatch::Volume {
            diff: VolumeDiff::Source,
            ..
        }))
    );
    assert_eq!(
        v.context
            .get(params::RESIZE_REQUIRED_KEY)
            .map(String::as_str),
        Some("true")
    );
}

#[tokio::test(start_paused = true)]
async fn quota_is_resource_exhausted() {
    let e = env();
    e.fake.set_quota_gib(Some(3));
    e.create("a", 2).await;
    let err = e
        .ctl
        .create_volume(create_req("b", 2 * GIB))
        .await
        .unwrap_err();
    assert_matches!(err, Error::Cloud(CloudError::OverLimit { .. }));
}

#[tokio::test(start_paused = true)]
async fn unknown_type_is_invalid_argument() {
    let e = env();
    let mut req = create_req("a", GIB);
    req.params.volume_type = Some("platinum".into());
    assert_matches!(
        e.ctl.create_volume(req).await,
        Err(Error::Invalid(Invalid::TypeParamUnknown { class: ParamClass::StorageClass, name }))
            if name == "platinum"
    );
}

#[tokio::test(start_paused = true)]
async fn mutable_type_takes_precedence() {
    let e = env();
    e.fake.add_volume_type("bronze", false);
    e.fake.add_volume_type("gold", false);
    let mut req = create_req("a", GIB);
    req.params.volume_type = Some("bronze".into());
    req.mutable.volume_type = Some("gold".into());
    let v = e.ctl.create_volume(req).await.unwrap();
    assert_eq!(
        e.fake.volume(&v.id).unwrap().volume_type.as_deref(),
        Some("gold")
    );
}

#[tokio::test(start_paused = true)]
async fn clouds_are_selected_by_the_cloud_secret() {
    let default = FakeCloud::new();
    let region = FakeCloud::new();
    let ctl = Controller::new(Clouds::new([default.cloud(""), region.cloud("r1")]), opts());
    let mut req = create_req("a", GIB);
    req.cloud = "r1".into();
    ctl.create_volume(req).await.unwrap();
    assert_eq!(region.volumes().len(), 1);
    assert!(default.volumes().is_empty());
    ctl.create_volume(create_req("b", GIB)).await.unwrap();
    assert_eq!(default.volumes().len(), 1);
    let mut req = create_req("c", GIB);
    req.cloud = "r9".into();
    assert_matches!(
        ctl.create_volume(req).await,
        Err(Error::Invalid(Invalid::UnknownCloud { name, .. })) if name == "r9"
    );

    // Only named clouds: a request without the secret cannot pick one.
    let ctl = Controller::new(Clouds::new([region.cloud("r1")]), opts());
    assert_matches!(
        ctl.create_volume(create_req("d", GIB)).await,
        Err(Error::Invalid(Invalid::NoDefaultCloud { .. }))
    );
}

#[tokio::test(start_paused = true)]
async fn cloud_failures_keep_their_kind() {
    let e = env();
    e.fake.fail_next(
        Op::VolumeList,
        CloudError::Unavailable {
            message: "503".into(),
            request_id: RequestId::default(),
        },
    );
    assert_matches!(
        e.ctl.create_volume(create_req("a", GIB)).await,
        Err(Error::Cloud(CloudError::Unavailable { .. }))
    );
    assert!(e.fake.volumes().is_empty());
}

#[test]
fn name_guards_are_per_name() {
    let e = env();
    let g = e.ctl.lock_volume_name("pvc-1").unwrap();
    assert!(matches!(
        e.ctl.lock_volume_name("pvc-1"),
        Err(Error::Busy { .. })
    ));
    assert!(e.ctl.lock_volume_name("pvc-2").is_ok());
    assert!(
        e.ctl.lock_volume("pvc-1").is_ok(),
        "ids and names do not collide"
    );
    drop(g);
    assert!(e.ctl.lock_volume_name("pvc-1").is_ok());
    let _s = e.ctl.lock_snapshot_name("s").unwrap();
    assert!(e.ctl.lock_snapshot_name("s").is_err());
    let _s = e.ctl.lock_snapshot("s").unwrap();
    assert!(e.ctl.lock_snapshot("s").is_err());
}

#[tokio::test(start_paused = true)]
async fn format_options_reach_the_node_through_the_volume_context() {
    let e = env();
    let mut req = create_req("pvc-fmt", GIB);
    req.params =
        VolumeParams::parse(&params(&[("blockSize", "1024"), ("bytesPerInode", "8192")])).unwrap();
    let info = e.ctl.create_volume(req).await.unwrap();
    assert_eq!(
        info.context.get("blockSize").map(String::as_str),
        Some("1024")
    );
    assert_eq!(
        info.context.get("bytesPerInode").map(String::as_str),
        Some("8192")
    );
}

/// StorageClass `appendVolumeMetadata` (upstream PR #3162): its pairs reach Cinder's metadata
/// beside the driver's own; a bad value creates nothing.
#[tokio::test(start_paused = true)]
async fn append_volume_metadata_reaches_cinder() {
    let e = env();
    let mut req = create_req("meta", GIB);
    req.params = VolumeParams::parse(&params(&[
        (
            "appendVolumeMetadata",
            r#"{"billing": "team-a", "qos": "gold"}"#,
        ),
        ("csi.storage.k8s.io/pvc/name", "data"),
    ]))
    .unwrap();
    let v = e.ctl.create_volume(req).await.unwrap();
    let md = e.fake.volume(&v.id).unwrap().metadata;
    assert_eq!(md.get("billing").map(String::as_str), Some("team-a"));
    assert_eq!(md.get("qos").map(String::as_str), Some("gold"));
    assert_eq!(
        md.get("cinder.csi.openstack.org/cluster")
            .map(String::as_str),
        Some("k8s-1")
    );
    assert_eq!(
        md.get("csi.storage.k8s.io/pvc/name").map(String::as_str),
        Some("data")
    );
    for bad in [
        r#"{"billing": 1}"#,
        r#"{"cinder.csi.openstack.org/cluster": "other"}"#,
        "not json",
    ] {
        let err = VolumeParams::parse(&params(&[("appendVolumeMetadata", bad)])).unwrap_err();
        assert!(matches!(err, Error::Invalid(_)), "{bad}: {err}");
        assert!(err.to_string().contains("appendVolumeMetadata"), "{err}");
    }
}
