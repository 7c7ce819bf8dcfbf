use super::*;
use crate::cloud::{MigrationPolicy, Op};
use crate::driver::{Change, Error, Invalid, Refusal};

fn modify_req(id: &str, p: &[(&str, &str)]) -> ModifyVolume {
    ModifyVolume {
        volume_id: id.into(),
        mutable: MutableParams::parse(&params(p)).unwrap(),
        cloud: String::new(),
        deadline: deadline(),
    }
}

#[tokio::test(start_paused = true)]
async fn retypes_and_repeats_without_a_second_retype() {
    let e = env();
    e.fake.add_volume_type("bronze", false);
    let gold_id = e.fake.add_volume_type("gold", false);
    let mut req = create_req("a", GIB);
    req.params.volume_type = Some("bronze".into());
    let v = e.ctl.create_volume(req).await.unwrap();
    e.ctl
        .modify_volume(modify_req(&v.id, &[("type", "gold")]))
        .await
        .unwrap();
    assert_eq!(
        e.fake.volume(&v.id).unwrap().volume_type.as_deref(),
        Some("gold")
    );
    for _ in 0..3 {
        e.ctl
            .modify_volume(modify_req(&v.id, &[("type", "gold")]))
            .await
            .unwrap();
        e.ctl
            .modify_volume(modify_req(&v.id, &[("type", &gold_id)]))
            .await
            .unwrap();
    }
    assert_eq!(e.fake.calls(Op::VolumeRetype), 1);
}

#[tokio::test(start_paused = true)]
async fn bad_requests() {
    let e = env();
    let v = e.create("a", 1).await;
    assert_matches!(
        e.ctl.modify_volume(modify_req(&v.id, &[("type", "nope")])).await,
        Err(Error::Invalid(Invalid::UnknownVolumeType { name })) if name == "nope"
    );
    e.fake.add_volume_type("gold", false);
    assert_matches!(
        e.ctl
            .modify_volume(modify_req("missing", &[("type", "gold")]))
            .await,
        Err(Error::VolumeNotFound { .. })
    );
    assert_eq!(e.fake.calls(Op::VolumeRetype), 0);
}

/// csi-sanity (no mutable-parameters file) sends empty `mutable_parameters`: NotFound for a
/// volume that does not exist, OK and nothing changed for one that does.
#[tokio::test(start_paused = true)]
async fn empty_parameters_check_the_volume_and_change_nothing() {
    let e = env();
    assert_matches!(
        e.ctl.modify_volume(modify_req("missing", &[])).await,
        Err(Error::VolumeNotFound { id }) if id == "missing"
    );
    let v = e.create("a", 1).await;
    let before = e.fake.volume(&v.id).unwrap();
    for _ in 0..2 {
        e.ctl.modify_volume(modify_req(&v.id, &[])).await.unwrap();
        // Sidecar keys alone are no request either.
        e.ctl
            .modify_volume(modify_req(&v.id, &[("csi.storage.k8s.io/pv/name", "pv-1")]))
            .await
            .unwrap();
    }
    assert_eq!(e.fake.volume(&v.id).unwrap(), before);
    assert_eq!(e.fake.calls(Op::VolumeRetype), 0);
    assert_eq!(e.fake.calls(Op::VolumeTypeGet), 0);
}

#[tokio::test(start_paused = true)]
async fn migration_policy_is_honoured() {
    let e = env();
    e.fake.add_volume_type("gold", false);
    e.fake.set_retype_needs_migration(true);
    let v = e.create("a", 1).await;
    assert_matches!(
        e.ctl.modify_volume(modify_req(&v.id, &[("type", "gold")])).await,
        Err(e @ Error::Refused(Refusal::NotRetyped { policy: MigrationPolicy::Never, .. }))
            if e.to_string().contains("retype-migration-policy")
    );
    assert_eq!(e.fake.volume(&v.id).unwrap().volume_type, None);

    let e = env_with(with_block_storage(|b| {
        b.retype_migration_policy = MigrationPolicy::OnDemand
    }));
    e.fake.add_volume_type("gold", false);
    e.fake.set_retype_needs_migration(true);
    let v = e.create("a", 1).await;
    e.ctl
        .modify_volume(modify_req(&v.id, &[("type", "gold")]))
        .await
        .unwrap();
    assert_eq!(
        e.fake.volume(&v.id).unwrap().volume_type.as_deref(),
        Some("gold")
    );
}

#[tokio::test(start_paused = true)]
async fn a_permanent_refusal_is_failed_precondition_with_cinders_message() {
    let e = env();
    e.fake.add_volume_type("gold", false);
    let v = e.create("a", 1).await;
    for _ in 0..2 {
        e.fake.fail_next(
            Op::VolumeRetype,
            crate::cloud::CloudError::Conflict {
                message: "Invalid volume: Retype needs volume to be in available or in-use \
                          state, not be part of an active migration"
                    .into(),
                request_id: Default::default(),
            },
        );
    }
    assert_matches!(
        e.ctl.modify_volume(modify_req(&v.id, &[("type", "gold")])).await,
        Err(Error::Refused(Refusal::ChangeRefused { change: Change::Retype { .. }, message, .. }))
            if message.contains("active migration")
    );
    assert_eq!(e.fake.calls(Op::VolumeRetype), 2);
}

/// VolumeAttributesClass `appendVolumeMetadata`: its pairs are set in the volume's metadata
/// (the others kept), once; a repeat sends nothing; with `type`, both change.
#[tokio::test(start_paused = true)]
async fn sets_metadata_once_and_keeps_the_rest() {
    let e = env();
    let v = e.create("a", 1).await;
    let before = e.fake.volume(&v.id).unwrap().metadata;
    let set = |billing: &str| {
        modify_req(
            &v.id,
            &[(
                "appendVolumeMetadata",
                &format!(r#"{{"billing": "{billing}"}}"#),
            )],
        )
    };
    e.ctl.modify_volume(set("team-a")).await.unwrap();
    let after = e.fake.volume(&v.id).unwrap().metadata;
    assert_eq!(after["billing"], "team-a");
    for (k, val) in &before {
        assert_eq!(after.get(k), Some(val), "{k}");
    }
    for _ in 0..3 {
        e.ctl.modify_volume(set("team-a")).await.unwrap();
    }
    assert_eq!(e.fake.calls(Op::VolumeMetadataUpdate), 1);
    e.ctl.modify_volume(set("team-b")).await.unwrap();
    assert_eq!(e.fake.volume(&v.id).unwrap().metadata["billing"], "team-b");
    assert_eq!(e.fake.calls(Op::VolumeMetadataUpdate), 2);

    e.fake.add_volume_type("gold", false);
    let both = modify_req(
        &v.id,
        &[
            ("type", "gold"),
            ("appendVolumeMetadata", r#"{"tier": "gold"}"#),
        ],
    );
    e.ctl.modify_volume(both).await.unwrap();
    let now = e.fake.volume(&v.id).unwrap();
    assert_eq!(now.volume_type.as_deref(), Some("gold"));
    assert_eq!(now.metadata["tier"], "gold");

    assert_matches!(
        e.ctl
            .modify_volume(modify_req(
                "missing",
                &[("appendVolumeMetadata", r#"{"a": "b"}"#)]
            ))
            .await,
        Err(Error::VolumeNotFound { .. })
    );
}

/// At creation, the VolumeAttributesClass's pairs are set too, and win over the StorageClass's.
#[tokio::test(start_paused = true)]
async fn create_sets_the_mutable_metadata() {
    let e = env();
    let mut req = create_req("a", GIB);
    req.params.append_metadata = [("billing".to_string(), "sc".to_string())].into();
    req.mutable = MutableParams::parse(&params(&[(
        "appendVolumeMetadata",
        r#"{"billing": "vac", "tier": "1"}"#,
    )]))
    .unwrap();
    let v = e.ctl.create_volume(req).await.unwrap();
    let m = e.fake.volume(&v.id).unwrap().metadata;
    assert_eq!((m["billing"].as_str(), m["tier"].as_str()), ("vac", "1"));
}
