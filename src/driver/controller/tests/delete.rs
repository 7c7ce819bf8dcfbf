use super::*;
use crate::cloud::Op;
use crate::cloud::{CloudError, RequestId, VolumeStatus};
use crate::driver::{Error, Refusal};

fn delete_req(id: &str) -> DeleteVolume {
    DeleteVolume {
        volume_id: id.into(),
        cloud: String::new(),
        deadline: deadline(),
    }
}

#[tokio::test(start_paused = true)]
async fn unknown_volume_is_ok() {
    let e = env();
    for _ in 0..3 {
        e.ctl
            .delete_volume(delete_req("no-such-volume"))
            .await
            .unwrap();
    }
}

#[tokio::test(start_paused = true)]
async fn deletes_and_waits_until_gone_then_repeats_ok() {
    let e = env();
    let v = e.create("a", 1).await;
    let gets = e.fake.calls(Op::VolumeGet);
    e.ctl.delete_volume(delete_req(&v.id)).await.unwrap();
    assert!(e.fake.volume(&v.id).is_none(), "gone when the RPC returns");
    for _ in 0..3 {
        e.ctl.delete_volume(delete_req(&v.id)).await.unwrap();
    }
    // DELETE first, no GET before it: each repeat is one DELETE answered 404.
    assert_eq!(e.fake.calls(Op::VolumeDelete), 4);
    assert_eq!(e.fake.calls(Op::VolumeGet), gets);
}

#[tokio::test(start_paused = true)]
async fn attached_volume_is_failed_precondition_and_kept() {
    let e = env();
    let v = e.create("a", 1).await;
    e.publish(&v.id, "node-1").await.unwrap();
    assert_matches!(
        e.ctl.delete_volume(delete_req(&v.id)).await,
        Err(Error::Refused(Refusal::Attached { nodes, .. })) if nodes == ["node-1"]
    );
    assert_eq!(e.fake.volume(&v.id).unwrap().status, VolumeStatus::InUse);
    // Cinder refused the one DELETE (it checks attachments atomically; a GET before it could
    // not, the volume may be attached in between); nothing was retried.
    assert_eq!(e.fake.calls(Op::VolumeDelete), 1);
}

#[tokio::test(start_paused = true)]
async fn volume_with_snapshots_needs_cascade() {
    let e = env();
    let v = e.create("a", 1).await;
    let s = e.snapshot_ready("s", &v.id, &[]).await;
    assert_matches!(
        e.ctl.delete_volume(delete_req(&v.id)).await,
        Err(Error::Refused(Refusal::HasSnapshots { snapshots, .. })) if snapshots == [s.id.clone()]
    );
    assert!(e.fake.volume(&v.id).is_some());
    assert!(e.fake.snapshot(&s.id).is_some());

    let e = env_with(with_block_storage(|b| b.cascade_delete = true));
    let v = e.create("a", 1).await;
    let s = e.snapshot_ready("s", &v.id, &[]).await;
    e.ctl.delete_volume(delete_req(&v.id)).await.unwrap();
    assert!(e.fake.volume(&v.id).is_none());
    assert!(e.fake.snapshot(&s.id).is_none());
}

#[tokio::test(start_paused = true)]
async fn transitional_states_are_waited_out() {
    let e = env();
    let v = e.create("a", 1).await;
    // Right after an unpublish Cinder may still say `detaching`; upstream got a 400 here.
    e.fake.set_volume_status(&v.id, VolumeStatus::Detaching);
    e.fake.fail_next(
        Op::VolumeWatch,
        CloudError::Unavailable {
            message: "flaky".into(),
            request_id: RequestId::default(),
        },
    );
    assert!(e.ctl.delete_volume(delete_req(&v.id)).await.is_err());
    // A status that never settles ends in Aborted (WaitTimeout) at the deadline.
    let mut req = delete_req(&v.id);
    req.deadline = Instant::now() + Duration::from_secs(3);
    assert_matches!(
        e.ctl.delete_volume(req).await,
        Err(Error::Cloud(CloudError::WaitTimeout { ref last_status, .. })) if last_status == "detaching"
    );
    e.fake.set_volume_status(&v.id, VolumeStatus::Available);
    e.ctl.delete_volume(delete_req(&v.id)).await.unwrap();
    assert!(e.fake.volume(&v.id).is_none());
}

#[tokio::test(start_paused = true)]
async fn a_deleting_volume_is_waited_for() {
    let e = env();
    let v = e.create("a", 1).await;
    e.fake.set_settle_after(5);
    let cloud = e.fake.cloud("");
    cloud.volumes.delete_volume(&v.id, false).await.unwrap();
    e.ctl.delete_volume(delete_req(&v.id)).await.unwrap();
    assert!(e.fake.volume(&v.id).is_none());
    // Ours: one DELETE, refused while `deleting`, then the wait; no retry of the delete.
    assert_eq!(
        e.fake.calls(Op::VolumeDelete),
        2,
        "no second delete call of ours"
    );
}

#[tokio::test(start_paused = true)]
async fn volume_in_error_can_be_deleted() {
    let e = env();
    let v = e.create("a", 1).await;
    e.fake
        .set_volume_status(&v.id, VolumeStatus::ErrorExtending);
    e.ctl.delete_volume(delete_req(&v.id)).await.unwrap();
    assert!(e.fake.volume(&v.id).is_none());
}
