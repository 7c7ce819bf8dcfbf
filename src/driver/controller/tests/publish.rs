use super::*;
use crate::cloud::Op;
use crate::cloud::{CloudError, RequestId, VolumeStatus};
use crate::driver::{Change, Error, Invalid, Refusal};

fn publish_req(id: &str, node: &str, c: VolumeCapability) -> Publish {
    Publish {
        volume_id: id.into(),
        node_id: node.into(),
        capability: c,
        readonly: false,
        cloud: String::new(),
        deadline: deadline(),
    }
}

#[tokio::test(start_paused = true)]
async fn attaches_waits_in_use_and_repeats_with_the_same_context() {
    let e = env();
    let v = e.create("a", 1).await;
    let ctx = e.publish(&v.id, "node-1").await.unwrap();
    assert_eq!(
        ctx.get(params::DEVICE_PATH_KEY).map(String::as_str),
        Some("/dev/vdb")
    );
    let vol = e.fake.volume(&v.id).unwrap();
    assert_eq!(vol.status, VolumeStatus::InUse);
    assert!(vol.attached_to("node-1").is_some());
    for _ in 0..5 {
        assert_eq!(e.publish(&v.id, "node-1").await.unwrap(), ctx);
    }
    assert_eq!(e.fake.calls(Op::ServerAttach), 1);
}

#[tokio::test(start_paused = true)]
async fn unknown_volume_or_node_is_not_found() {
    let e = env();
    assert_matches!(
        e.publish("nope", "node-1").await,
        Err(Error::VolumeNotFound { .. })
    );
    let v = e.create("a", 1).await;
    assert_matches!(e.publish(&v.id, "node-9").await, Err(Error::NodeNotFound { ref id }) if id == "node-9");
    assert_eq!(
        e.fake.volume(&v.id).unwrap().status,
        VolumeStatus::Available
    );
}

#[tokio::test(start_paused = true)]
async fn attached_elsewhere_is_failed_precondition_naming_the_node() {
    let e = env();
    let v = e.create("a", 1).await;
    e.publish(&v.id, "node-1").await.unwrap();
    assert_matches!(
        e.publish(&v.id, "node-2").await,
        Err(Error::Refused(Refusal::PublishedNoMultiattach { nodes, .. })) if nodes == ["node-1"]
    );
    assert_eq!(e.fake.calls(Op::ServerAttach), 1);
}

#[tokio::test(start_paused = true)]
async fn multiattach_volumes_publish_to_several_nodes() {
    let e = env();
    e.fake.add_volume_type("shared", true);
    let mut req = create_req("a", GIB);
    req.params.volume_type = Some("shared".into());
    req.capabilities = vec![cap(AccessMode::MultiNodeMultiWriter, true)];
    let v = e.ctl.create_volume(req).await.unwrap();
    let c = cap(AccessMode::MultiNodeMultiWriter, true);
    e.ctl
        .publish_volume(publish_req(&v.id, "node-1", c.clone()))
        .await
        .unwrap();
    e.ctl
        .publish_volume(publish_req(&v.id, "node-2", c))
        .await
        .unwrap();
    assert_eq!(e.fake.volume(&v.id).unwrap().attachments.len(), 2);
    e.unpublish(&v.id, Some("node-1")).await.unwrap();
    let vol = e.fake.volume(&v.id).unwrap();
    assert_eq!(vol.status, VolumeStatus::InUse);
    assert!(vol.attached_to("node-2").is_some());
}

#[tokio::test(start_paused = true)]
async fn capability_the_volume_cannot_serve_is_invalid_argument() {
    let e = env();
    let v = e.create("a", 1).await;
    let r = e
        .ctl
        .publish_volume(publish_req(
            &v.id,
            "node-1",
            cap(AccessMode::MultiNodeReaderOnly, false),
        ))
        .await;
    assert_matches!(r, Err(Error::Invalid(Invalid::VolumeCapability { .. })));
    let mut ro = publish_req(&v.id, "node-1", rwo());
    ro.readonly = true;
    assert_matches!(
        e.ctl.publish_volume(ro).await,
        Err(Error::Invalid(Invalid::ReadOnlyPublish))
    );
    assert_eq!(e.fake.calls(Op::ServerAttach), 0);
}

#[tokio::test(start_paused = true)]
async fn transitional_state_is_waited_out_then_attached() {
    let e = env();
    e.fake.set_settle_after(4);
    let cloud = e.fake.cloud("");
    // A volume still `creating` (upstream: Nova 400 "must be available to reserve").
    let v = cloud
        .volumes
        .create_volume(&crate::cloud::NewVolume {
            name: "a".into(),
            size_gib: 1,
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(v.status, VolumeStatus::Creating);
    e.publish(&v.id, "node-1").await.unwrap();
    assert_eq!(e.fake.volume(&v.id).unwrap().status, VolumeStatus::InUse);
}

#[tokio::test(start_paused = true)]
async fn stuck_transitional_state_is_aborted_with_the_last_status() {
    let e = env();
    let v = e.create("a", 1).await;
    e.fake.set_volume_status(&v.id, VolumeStatus::Reserved);
    let mut req = publish_req(&v.id, "node-1", rwo());
    req.deadline = Instant::now() + Duration::from_secs(10);
    assert_matches!(
        e.ctl.publish_volume(req).await,
        Err(Error::Cloud(CloudError::WaitTimeout { ref last_status, .. })) if last_status == "reserved"
    );
    assert_eq!(e.fake.calls(Op::ServerAttach), 0);
}

#[tokio::test(start_paused = true)]
async fn error_state_is_failed_precondition() {
    let e = env();
    let v = e.create("a", 1).await;
    e.fake.set_volume_status(&v.id, VolumeStatus::Error);
    assert_matches!(
        e.publish(&v.id, "node-1").await,
        Err(Error::Refused(Refusal::CannotAttach {
            status: VolumeStatus::Error,
            ..
        }))
    );
}

#[tokio::test(start_paused = true)]
async fn a_conflict_from_nova_is_looked_at_again() {
    let e = env();
    let v = e.create("a", 1).await;
    e.fake.fail_next(
        Op::ServerAttach,
        CloudError::Conflict {
            message: "volume is reserved".into(),
            request_id: RequestId::default(),
        },
    );
    e.publish(&v.id, "node-1").await.unwrap();
    assert_eq!(e.fake.calls(Op::ServerAttach), 2);
}

#[tokio::test(start_paused = true)]
async fn nova_outage_is_unavailable() {
    let e = env();
    let v = e.create("a", 1).await;
    e.fake.fail_next(
        Op::ServerAttach,
        CloudError::Unavailable {
            message: "502".into(),
            request_id: RequestId::default(),
        },
    );
    assert_matches!(
        e.publish(&v.id, "node-1").await,
        Err(Error::Cloud(CloudError::Unavailable { .. }))
    );
}

#[tokio::test(start_paused = true)]
async fn unpublish_waits_until_cinder_shows_it_detached() {
    let e = env();
    let v = e.create("a", 1).await;
    e.publish(&v.id, "node-1").await.unwrap();
    e.unpublish(&v.id, Some("node-1")).await.unwrap();
    // Not `detaching` any more: a DeleteVolume right after succeeds (upstream: 400).
    let vol = e.fake.volume(&v.id).unwrap();
    assert_eq!(vol.status, VolumeStatus::Available);
    assert!(vol.attachments.is_empty());
    for _ in 0..3 {
        e.unpublish(&v.id, Some("node-1")).await.unwrap();
    }
    assert_eq!(e.fake.calls(Op::ServerDetach), 1);
}

#[tokio::test(start_paused = true)]
async fn unpublish_of_what_is_gone_is_ok() {
    let e = env();
    e.unpublish("no-such-volume", Some("node-1")).await.unwrap();
    let v = e.create("a", 1).await;
    e.unpublish(&v.id, Some("node-1")).await.unwrap();
    e.unpublish(&v.id, Some("no-such-node")).await.unwrap();
    e.publish(&v.id, "node-1").await.unwrap();
    e.fake.remove_server("node-1");
    e.unpublish(&v.id, Some("node-1")).await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn unpublish_without_node_detaches_everywhere() {
    let e = env();
    e.fake.add_volume_type("shared", true);
    let mut req = create_req("a", GIB);
    req.params.volume_type = Some("shared".into());
    let v = e.ctl.create_volume(req).await.unwrap();
    let c = cap(AccessMode::MultiNodeReaderOnly, false);
    e.ctl
        .publish_volume(publish_req(&v.id, "node-1", c.clone()))
        .await
        .unwrap();
    e.ctl
        .publish_volume(publish_req(&v.id, "node-2", c))
        .await
        .unwrap();
    e.unpublish(&v.id, None).await.unwrap();
    let vol = e.fake.volume(&v.id).unwrap();
    assert!(vol.attachments.is_empty());
    assert_eq!(vol.status, VolumeStatus::Available);
}

#[tokio::test(start_paused = true)]
async fn unpublish_stuck_detaching_is_aborted() {
    let e = env();
    let v = e.create("a", 1).await;
    e.publish(&v.id, "node-1").await.unwrap();
    e.fake.set_volume_status(&v.id, VolumeStatus::Detaching);
    let mut req = Unpublish {
        volume_id: v.id.clone(),
        node_id: Some("node-1".into()),
        cloud: String::new(),
        deadline: Instant::now() + Duration::from_secs(5),
    };
    assert_matches!(
        e.ctl.unpublish_volume(req.clone()).await,
        Err(Error::Cloud(CloudError::WaitTimeout { ref last_status, .. })) if last_status == "detaching"
    );
    e.fake.set_volume_status(&v.id, VolumeStatus::InUse);
    req.deadline = deadline();
    e.ctl.unpublish_volume(req).await.unwrap();
    assert!(e.fake.volume(&v.id).unwrap().attachments.is_empty());
}

#[tokio::test(start_paused = true)]
async fn published_volume_being_extended_online_is_still_published() {
    let e = env();
    let v = e.create("a", 1).await;
    let ctx = e.publish(&v.id, "node-1").await.unwrap();
    e.fake.set_volume_status(&v.id, VolumeStatus::Extending);
    e.fake.reset_calls();
    assert_eq!(e.publish(&v.id, "node-1").await.unwrap(), ctx);
    assert_eq!(
        e.fake.calls(Op::VolumeWatch),
        0,
        "no need to wait for the extend"
    );
    assert_eq!(e.fake.calls(Op::ServerAttach), 0);
}

fn conflict(message: &str) -> CloudError {
    CloudError::Conflict {
        message: message.into(),
        request_id: RequestId::default(),
    }
}

#[tokio::test(start_paused = true)]
async fn multiattach_volume_elsewhere_with_a_single_node_mode_is_failed_precondition() {
    let e = env();
    e.fake.add_volume_type("shared", true);
    let mut req = create_req("a", GIB);
    req.params.volume_type = Some("shared".into());
    req.capabilities = vec![cap(AccessMode::MultiNodeMultiWriter, true)];
    let v = e.ctl.create_volume(req).await.unwrap();
    e.ctl
        .publish_volume(publish_req(
            &v.id,
            "node-1",
            cap(AccessMode::MultiNodeMultiWriter, true),
        ))
        .await
        .unwrap();
    for mode in [
        AccessMode::SingleNodeWriter,
        AccessMode::SingleNodeMultiWriter,
    ] {
        assert_matches!(
            e.ctl.publish_volume(publish_req(&v.id, "node-2", cap(mode, true))).await,
            Err(Error::Refused(Refusal::PublishedSingleNode { nodes, mode: m, .. }))
                if nodes == ["node-1"] && m == mode
        );
    }
    assert_eq!(e.fake.calls(Op::ServerAttach), 1);
    assert!(e
        .fake
        .volume(&v.id)
        .unwrap()
        .attached_to("node-2")
        .is_none());
}

/// A publish ran out of time while Nova was still attaching; the attacher gives up and
/// unpublishes. Cinder shows no attachment yet (only `attaching`): unpublish must wait for
/// the attach to land and undo it, not answer OK and leave the disk on the node.
#[tokio::test(start_paused = true)]
async fn unpublish_during_an_attach_in_flight_waits_and_detaches() {
    for node in [Some("node-1"), None] {
        let e = env();
        e.fake.set_settle_after(5);
        let v = e.create("a", 1).await;
        let cloud = e.fake.cloud("");
        cloud
            .servers
            .attach_volume("node-1", &v.id, false)
            .await
            .unwrap();
        let vol = e.fake.volume(&v.id).unwrap();
        assert_eq!(vol.status, VolumeStatus::Attaching);
        assert!(vol.attachments.is_empty(), "Cinder lists only attached");
        e.unpublish(&v.id, node).await.unwrap();
        e.fake.settle_all();
        let vol = e.fake.volume(&v.id).unwrap();
        assert!(vol.attachments.is_empty(), "{node:?}: {vol:?}");
        assert_eq!(vol.status, VolumeStatus::Available);
        assert_eq!(e.fake.calls(Op::ServerDetach), 1);
    }
}

#[tokio::test(start_paused = true)]
async fn unpublish_while_reserved_for_too_long_is_aborted() {
    let e = env();
    let v = e.create("a", 1).await;
    e.fake.set_volume_status(&v.id, VolumeStatus::Reserved);
    let req = Unpublish {
        volume_id: v.id.clone(),
        node_id: Some("node-1".into()),
        cloud: String::new(),
        deadline: Instant::now() + Duration::from_secs(5),
    };
    assert_matches!(
        e.ctl.unpublish_volume(req).await,
        Err(Error::Cloud(CloudError::WaitTimeout { ref last_status, .. })) if last_status == "reserved"
    );
    assert_eq!(e.fake.calls(Op::ServerDetach), 0);
}

#[tokio::test(start_paused = true)]
async fn unpublish_of_a_ghost_attachment_ends_within_a_bound() {
    let e = env();
    let v = e.create("a", 1).await;
    e.publish(&v.id, "node-1").await.unwrap();
    // Nova has no such attachment; Cinder still lists it (a stale record).
    e.fake.fail_next(
        Op::ServerDetach,
        CloudError::not_found(crate::cloud::Resource::Attachment, "att"),
    );
    let start = Instant::now();
    e.unpublish(&v.id, Some("node-1")).await.unwrap();
    assert!(Instant::now() - start <= Duration::from_secs(11));
    assert_eq!(e.fake.calls(Op::ServerDetach), 1);
}

#[tokio::test(start_paused = true)]
async fn a_refusal_that_changes_nothing_is_failed_precondition_with_novas_message() {
    let e = env();
    let v = e.create("a", 1).await;
    for _ in 0..2 {
        e.fake.fail_next(
            Op::ServerAttach,
            conflict("Invalid volume: encrypted volume"),
        );
    }
    assert_matches!(
        e.publish(&v.id, "node-1").await,
        Err(Error::Refused(Refusal::ChangeRefused { change: Change::Attach { .. }, message, .. }))
            if message.contains("encrypted volume")
    );
    assert_eq!(e.fake.calls(Op::ServerAttach), 2);

    let e = env();
    let v = e.create("a", 1).await;
    e.publish(&v.id, "node-1").await.unwrap();
    for _ in 0..2 {
        e.fake
            .fail_next(Op::ServerDetach, conflict("Invalid volume: cannot detach"));
    }
    assert_matches!(
        e.unpublish(&v.id, Some("node-1")).await,
        Err(Error::Refused(Refusal::ChangeRefused { change: Change::Detach { .. }, message, .. }))
            if message.contains("cannot detach")
    );
    assert_eq!(e.fake.calls(Op::ServerDetach), 2);
}
