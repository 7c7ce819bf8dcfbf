use super::*;
use crate::cloud::Op;
use crate::cloud::{CloudError, VolumeStatus};
use crate::driver::{Change, Error, Invalid, Refusal};

fn expand_req(id: &str, required: u64, c: Option<VolumeCapability>) -> ExpandVolume {
    ExpandVolume {
        volume_id: id.into(),
        capacity: CapacityRange {
            required_bytes: required,
            limit_bytes: 0,
        },
        capability: c,
        cloud: String::new(),
        deadline: deadline(),
    }
}

#[tokio::test(start_paused = true)]
async fn extends_an_available_volume_and_waits_for_the_size() {
    let e = env();
    let v = e.create("a", 1).await;
    let r = e
        .ctl
        .expand_volume(expand_req(&v.id, 2 * GIB + 1, None))
        .await
        .unwrap();
    assert_eq!(r.capacity_bytes, 3 * GIB);
    assert!(
        r.node_expansion_required,
        "unknown access: assume a filesystem"
    );
    let vol = e.fake.volume(&v.id).unwrap();
    assert_eq!((vol.size_gib, vol.status), (3, VolumeStatus::Available));
    for _ in 0..3 {
        let again = e
            .ctl
            .expand_volume(expand_req(&v.id, 2 * GIB + 1, None))
            .await
            .unwrap();
        assert_eq!(again, r);
    }
    assert_eq!(e.fake.calls(Op::VolumeExtend), 1);
}

#[tokio::test(start_paused = true)]
async fn online_extend_of_an_in_use_volume() {
    let e = env();
    let v = e.create("a", 1).await;
    e.publish(&v.id, "node-1").await.unwrap();
    let block = cap(AccessMode::SingleNodeWriter, true);
    let r = e
        .ctl
        .expand_volume(expand_req(&v.id, 2 * GIB, Some(block)))
        .await
        .unwrap();
    assert!(
        !r.node_expansion_required,
        "raw block needs no filesystem grow"
    );
    assert_eq!(e.fake.volume(&v.id).unwrap().status, VolumeStatus::InUse);
    let r = e
        .ctl
        .expand_volume(expand_req(&v.id, 3 * GIB, Some(rwo())))
        .await
        .unwrap();
    assert!(r.node_expansion_required);
}

#[tokio::test(start_paused = true)]
async fn already_large_enough_is_ok_without_a_call() {
    let e = env();
    let v = e.create("a", 4).await;
    let r = e
        .ctl
        .expand_volume(expand_req(&v.id, 2 * GIB, None))
        .await
        .unwrap();
    assert_eq!(r.capacity_bytes, 4 * GIB);
    assert_eq!(e.fake.calls(Op::VolumeExtend), 0);
}

#[tokio::test(start_paused = true)]
async fn bad_ranges_and_missing_volumes() {
    let e = env();
    let v = e.create("a", 1).await;
    let mut req = expand_req(&v.id, 2 * GIB + 1, None);
    req.capacity.limit_bytes = 2 * GIB + 10;
    assert_matches!(e.ctl.expand_volume(req).await, Err(Error::OutOfRange(_)));
    assert_matches!(
        e.ctl.expand_volume(expand_req(&v.id, 0, None)).await,
        Err(Error::Invalid(Invalid::NoExpandSize))
    );
    assert_matches!(
        e.ctl.expand_volume(expand_req("nope", GIB, None)).await,
        Err(Error::VolumeNotFound { .. })
    );
    assert_eq!(e.fake.calls(Op::VolumeExtend), 0);
}

#[tokio::test(start_paused = true)]
async fn quota_and_error_states() {
    let e = env();
    let v = e.create("a", 1).await;
    e.fake.set_quota_gib(Some(2));
    assert_matches!(
        e.ctl.expand_volume(expand_req(&v.id, 5 * GIB, None)).await,
        Err(Error::Cloud(CloudError::OverLimit { .. }))
    );
    e.fake
        .set_volume_status(&v.id, VolumeStatus::ErrorExtending);
    assert_matches!(
        e.ctl.expand_volume(expand_req(&v.id, 2 * GIB, None)).await,
        Err(Error::Refused(Refusal::CannotExtend {
            status: VolumeStatus::ErrorExtending,
            ..
        }))
    );
}

#[tokio::test(start_paused = true)]
async fn an_extend_in_progress_is_joined() {
    let e = env();
    let v = e.create("a", 1).await;
    e.fake.set_settle_after(5);
    let cloud = e.fake.cloud("");
    cloud.volumes.extend_volume(&v.id, 2, false).await.unwrap();
    let r = e
        .ctl
        .expand_volume(expand_req(&v.id, 2 * GIB, None))
        .await
        .unwrap();
    assert_eq!(r.capacity_bytes, 2 * GIB);
    assert_eq!(e.fake.calls(Op::VolumeExtend), 1, "no second extend");
}

#[tokio::test(start_paused = true)]
async fn a_permanent_refusal_is_failed_precondition_with_cinders_message() {
    let e = env();
    let v = e.create("a", 1).await;
    for _ in 0..2 {
        e.fake.fail_next(
            Op::VolumeExtend,
            CloudError::Conflict {
                message: "Invalid volume: Volume cannot be extended while it has snapshots".into(),
                request_id: Default::default(),
            },
        );
    }
    assert_matches!(
        e.ctl.expand_volume(expand_req(&v.id, 2 * GIB, None)).await,
        Err(Error::Refused(Refusal::ChangeRefused { change: Change::Extend { gib: 2 }, message, .. }))
            if message.contains("while it has snapshots")
    );
    assert_eq!(e.fake.calls(Op::VolumeExtend), 2);
    assert_eq!(e.fake.volume(&v.id).unwrap().size_gib, 1);
    // One refusal only (a race): the retry extends.
    e.fake.reset_calls();
    e.fake.fail_next(
        Op::VolumeExtend,
        CloudError::Conflict {
            message: "Invalid volume: status must be available".into(),
            request_id: Default::default(),
        },
    );
    e.ctl
        .expand_volume(expand_req(&v.id, 2 * GIB, None))
        .await
        .unwrap();
    assert_eq!(e.fake.volume(&v.id).unwrap().size_gib, 2);
}
