//! The shared watcher against the local imitation: many waits cost one list per round, error
//! states end waits at once, deadlines give WaitTimeout with the last status, and the GET
//! fallbacks.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

use super::pace::{next_interval, POLL_AFTER_PROGRESS, POLL_FIRST, POLL_MAX, POLL_MAX_SHARED};
use super::state::{moved, Entry, Obs};
use crate::cloud::openstack::dto::VolumeDto;
use crate::cloud::openstack::testserver::{step, Fake, Step};
use crate::cloud::openstack::{ApiMetrics, OpenStack};
use crate::cloud::{CloudError, Resource, VolumeStatus, VolumeWait, Volumes};

async fn cloud(fake: &Fake) -> Arc<OpenStack> {
    Arc::new(
        OpenStack::new("", &fake.options(), Arc::new(ApiMetrics::new()))
            .await
            .unwrap(),
    )
}

fn soon() -> Instant {
    Instant::now() + Duration::from_secs(10)
}

#[test]
fn shared_rounds_come_at_least_twice_a_second() {
    let mut alone = POLL_FIRST;
    let mut shared = POLL_FIRST;
    for _ in 0..20 {
        alone = next_interval(alone, false);
        shared = next_interval(shared, true);
    }
    assert_eq!(alone, POLL_MAX);
    assert_eq!(shared, POLL_MAX_SHARED);
    assert!(POLL_MAX_SHARED < POLL_MAX);
    // The first rounds grow the same way either way.
    assert_eq!(
        next_interval(POLL_FIRST, true),
        next_interval(POLL_FIRST, false)
    );
}

#[test]
fn a_read_asked_for_during_a_round_keeps_its_time() {
    let now = Instant::now();
    let entry = |asked_in| Entry {
        waiters: 1,
        known: None,
        interval: POLL_FIRST,
        due: now,
        asked_in,
        tx: watch::channel((0, Obs::Pending)).0,
    };
    // Registered before round 3 took its batch: waits a grown interval for the next.
    let mut before = entry(2);
    before.reschedule(3, true, false, now);
    assert_eq!(before.due, now + next_interval(POLL_FIRST, true));
    // Registered while round 3 ran (it was not in its batch): still due at once.
    let mut during = entry(3);
    during.reschedule(3, true, false, now);
    assert_eq!((during.due, during.interval), (now, POLL_FIRST));
    // A round that saw volumes move on brings the next one back to the first interval.
    let mut grown = entry(1);
    for _ in 0..5 {
        grown.reschedule(3, true, false, now);
    }
    assert_eq!(grown.interval, POLL_MAX_SHARED);
    grown.reschedule(3, true, true, now);
    assert_eq!(
        (grown.due, grown.interval),
        (now + POLL_AFTER_PROGRESS, POLL_AFTER_PROGRESS)
    );
    // ... and so does one alone (a GET of its own), to the first interval.
    grown.reschedule(3, false, true, now);
    assert_eq!((grown.due, grown.interval), (now + POLL_FIRST, POLL_FIRST));
}

#[test]
fn moving_on_is_a_status_or_attachment_change_or_going() {
    let seen = |status: &str, attached: bool| {
        let mut v = serde_json::json!({"id": "v", "status": status, "size": 1});
        if attached {
            v["attachments"] = serde_json::json!([{"server_id": "s"}]);
        }
        Obs::Seen(Arc::new(serde_json::from_value(v).unwrap()))
    };
    assert!(!moved(&Obs::Pending, &seen("creating", false)));
    assert!(!moved(&seen("creating", false), &seen("creating", false)));
    assert!(moved(&seen("creating", false), &seen("available", false)));
    assert!(moved(&seen("in-use", false), &seen("in-use", true)));
    assert!(moved(&seen("deleting", false), &Obs::Gone));
    assert!(!moved(&Obs::Gone, &Obs::Gone));
}

/// `n` volumes created through the adapter (so their change times are known).
async fn created(os: &OpenStack, n: usize) -> Vec<String> {
    let mut ids = Vec::new();
    for _ in 0..n {
        let v = os
            .create_volume(&crate::cloud::NewVolume {
                name: "pvc".into(),
                size_gib: 1,
                ..Default::default()
            })
            .await
            .unwrap();
        ids.push(v.id);
    }
    ids
}

/// Volumes known to the adapter (their change time seen) are refreshed with one list per
/// round, however many RPCs wait.
#[tokio::test]
async fn many_waits_cost_one_list_per_round() {
    let fake = Fake::start().await;
    let os = cloud(&fake).await;
    let ids = created(&os, 12).await;
    // Each volume stays `creating` for two more reads, then becomes available.
    fake.with(|s| {
        for id in &ids {
            s.script(
                id,
                vec![step("creating"), step("creating"), step("available")],
            );
        }
    });
    let waits = ids.iter().map(|id| {
        let os = os.clone();
        let id = id.clone();
        tokio::spawn(async move { os.wait_volume(&id, &VolumeWait::Available, soon()).await })
    });
    for r in futures::future::join_all(waits).await {
        assert_eq!(r.unwrap().unwrap().status, VolumeStatus::Available);
    }
    // New volumes (never updated) are found by creation time, then by update time.
    assert_eq!(
        fake.count("GET /cinder/v3/volumes/detail?created_at=gte"),
        1
    );
    assert_eq!(
        fake.count("GET /cinder/v3/volumes/detail?updated_at=gte"),
        2
    );
    assert_eq!(
        fake.count("GET /cinder/v3/volumes/vol-"),
        0,
        "no per-volume GETs"
    );
}

#[tokio::test]
async fn unknown_volumes_are_fetched_once_then_listed() {
    let fake = Fake::start().await;
    let os = cloud(&fake).await;
    for i in 0..5 {
        fake.add_volume(
            &format!("v{i}"),
            "creating",
            vec![step("creating"), step("creating"), step("available")],
        );
    }
    let waits = (0..5).map(|i| {
        let os = os.clone();
        tokio::spawn(async move {
            os.wait_volume(&format!("v{i}"), &VolumeWait::Available, soon())
                .await
        })
    });
    for r in futures::future::join_all(waits).await {
        r.unwrap().unwrap();
    }
    assert_eq!(
        fake.count("GET /cinder/v3/volumes/v"),
        5,
        "one GET each to learn the change time"
    );
    assert_eq!(
        fake.count("GET /cinder/v3/volumes/detail?updated_at=gte"),
        2
    );
}

#[tokio::test]
async fn two_rpcs_on_one_volume_share_its_refresh() {
    let fake = Fake::start().await;
    let os = cloud(&fake).await;
    fake.add_volume(
        "v1",
        "attaching",
        vec![
            step("attaching"),
            Step {
                status: "in-use",
                attached_to: Some("srv"),
                size: None,
            },
        ],
    );
    let a = tokio::spawn({
        let os = os.clone();
        async move {
            os.wait_volume("v1", &VolumeWait::AttachedTo("srv".into()), soon())
                .await
        }
    });
    let b = tokio::spawn({
        let os = os.clone();
        async move { os.wait_volume("v1", &VolumeWait::Stable, soon()).await }
    });
    let (a, b) = (a.await.unwrap().unwrap(), b.await.unwrap().unwrap());
    assert_eq!(
        (a.status, b.status),
        (VolumeStatus::InUse, VolumeStatus::InUse)
    );
    assert_eq!(fake.count("GET /cinder/v3/volumes/v1"), 2);
}

#[tokio::test]
async fn error_state_ends_the_wait_with_cinders_reason() {
    let fake = Fake::start().await;
    let os = cloud(&fake).await;
    fake.add_volume("bad", "creating", vec![step("error")]);
    let started = Instant::now();
    let err = os
        .wait_volume("bad", &VolumeWait::Available, soon())
        .await
        .unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(2));
    match err {
        CloudError::ErrorState {
            status, reason, id, ..
        } => {
            assert_eq!((status.as_str(), id.as_str()), ("error", "bad"));
            assert!(reason
                .unwrap()
                .contains("Could not find any available weighted backend"));
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn the_deadline_gives_wait_timeout_with_the_last_status() {
    let fake = Fake::start().await;
    let os = cloud(&fake).await;
    fake.add_volume("slow", "creating", vec![]);
    // Polls come at about 0, 0.25, 0.63, 1.19, 2.03, 3.29 s, then 5.29 s: a wait that slept
    // past the deadline would end there, 1.7 s late. The 1 s slack leaves room for a busy
    // machine and still catches that.
    let deadline = Instant::now() + Duration::from_millis(3600);
    let err = os
        .wait_volume("slow", &VolumeWait::Available, deadline)
        .await
        .unwrap_err();
    let late = Instant::now().saturating_duration_since(deadline);
    assert!(
        late < Duration::from_secs(1),
        "ends at the deadline, not {late:?} after"
    );
    assert_eq!(
        err,
        CloudError::WaitTimeout {
            resource: Resource::Volume,
            id: "slow".into(),
            wanted: "available".into(),
            last_status: "creating".into(),
        }
    );
}

#[tokio::test]
async fn deletion_and_missing_volumes() {
    let fake = Fake::start().await;
    let os = cloud(&fake).await;
    fake.add_volume("old", "deleting", vec![step("deleting")]);
    fake.vanish_after_script("old");
    // Gone is NotFound, for a deletion wait too (the port's contract).
    let gone = os
        .wait_volume("old", &VolumeWait::Deleted, soon())
        .await
        .unwrap_err();
    assert_eq!(gone, CloudError::not_found(Resource::Volume, "old"));
    assert!(
        fake.count("GET /cinder/v3/volumes/old") >= 2,
        "saw it deleting first"
    );
    let err = os
        .wait_volume("never", &VolumeWait::Available, soon())
        .await
        .unwrap_err();
    assert_eq!(err, CloudError::not_found(Resource::Volume, "never"));
}

/// Volumes of our project that vanish from a list covering them are gone without a GET;
/// a volume of another project (an admin's view) is confirmed with one.
#[tokio::test]
async fn deletions_are_seen_in_the_list() {
    let fake = Fake::start().await;
    let os = cloud(&fake).await;
    for id in [
        "00000000-0000-4000-8000-0000000000d1",
        "00000000-0000-4000-8000-0000000000d2",
        "00000000-0000-4000-8000-0000000000d3",
    ] {
        fake.add_volume(id, "deleting", vec![step("deleting")]);
        fake.vanish_after_script(id);
    }
    fake.with(|s| {
        s.volumes
            .get_mut("00000000-0000-4000-8000-0000000000d3")
            .unwrap()["os-vol-tenant-attr:tenant_id"] = serde_json::json!("other")
    });
    for id in [
        "00000000-0000-4000-8000-0000000000d1",
        "00000000-0000-4000-8000-0000000000d2",
        "00000000-0000-4000-8000-0000000000d3",
    ] {
        os.get_volume(id).await.unwrap();
    }
    let gets = || {
        [
            "00000000-0000-4000-8000-0000000000d1",
            "00000000-0000-4000-8000-0000000000d2",
            "00000000-0000-4000-8000-0000000000d3",
        ]
        .iter()
        .map(|id| fake.count(&format!("GET /cinder/v3/volumes/{id}")))
        .sum::<usize>()
    };
    let before = gets();
    let waits = [
        "00000000-0000-4000-8000-0000000000d1",
        "00000000-0000-4000-8000-0000000000d2",
        "00000000-0000-4000-8000-0000000000d3",
    ]
    .map(|id| {
        let os = os.clone();
        tokio::spawn(async move { os.wait_volume(id, &VolumeWait::Deleted, soon()).await })
    });
    for (r, id) in futures::future::join_all(waits).await.into_iter().zip([
        "00000000-0000-4000-8000-0000000000d1",
        "00000000-0000-4000-8000-0000000000d2",
        "00000000-0000-4000-8000-0000000000d3",
    ]) {
        assert_eq!(
            r.unwrap().unwrap_err(),
            CloudError::not_found(Resource::Volume, id)
        );
    }
    assert_eq!(
        gets() - before,
        1,
        "only the other project's volume is confirmed by GET"
    );
    assert_eq!(fake.count("GET /cinder/v3/volumes/detail?updated_at"), 1);
}

#[tokio::test]
async fn a_refused_time_filter_falls_back_to_gets_for_good() {
    let fake = Fake::start().await;
    fake.with(|s| s.refuse_time_filter = true);
    let os = cloud(&fake).await;
    for i in 0..3 {
        os.get_volume(&{
            fake.add_volume(
                &format!("00000000-0000-4000-8000-0000000000f{i}"),
                "creating",
                vec![
                    step("creating"),
                    step("creating"),
                    step("creating"),
                    step("available"),
                ],
            );
            format!("00000000-0000-4000-8000-0000000000f{i}")
        })
        .await
        .unwrap();
    }
    let waits = (0..3).map(|i| {
        let os = os.clone();
        tokio::spawn(async move {
            os.wait_volume(
                &format!("00000000-0000-4000-8000-0000000000f{i}"),
                &VolumeWait::Available,
                soon(),
            )
            .await
        })
    });
    for r in futures::future::join_all(waits).await {
        r.unwrap().unwrap();
    }
    assert_eq!(fake.count("GET /cinder/v3/volumes/detail"), 1, "tried once");
}

#[tokio::test]
async fn below_3_60_the_watcher_uses_gets() {
    let fake = Fake::start().await;
    fake.with(|s| s.cinder_max = "3.59".into());
    let os = cloud(&fake).await;
    for i in 0..3 {
        fake.add_volume(
            &format!("00000000-0000-4000-8000-0000000000a{i}"),
            "creating",
            vec![step("creating"), step("available")],
        );
        os.get_volume(&format!("00000000-0000-4000-8000-0000000000a{i}"))
            .await
            .unwrap();
    }
    let waits = (0..3).map(|i| {
        let os = os.clone();
        tokio::spawn(async move {
            os.wait_volume(
                &format!("00000000-0000-4000-8000-0000000000a{i}"),
                &VolumeWait::Available,
                soon(),
            )
            .await
        })
    });
    for r in futures::future::join_all(waits).await {
        r.unwrap().unwrap();
    }
    assert_eq!(fake.count("GET /cinder/v3/volumes/detail"), 0);
}

#[tokio::test]
async fn a_cancelled_wait_stops_the_polling() {
    let fake = Fake::start().await;
    let os = cloud(&fake).await;
    fake.add_volume("c", "creating", vec![]);
    let _ = tokio::time::timeout(
        Duration::from_millis(600),
        os.wait_volume("c", &VolumeWait::Available, soon()),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let n = fake.count("GET /cinder/v3/volumes/c");
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert_eq!(
        fake.count("GET /cinder/v3/volumes/c"),
        n,
        "nobody polls for a dropped wait"
    );
    assert!(!os.watcher.inner.lock().running);
}

#[tokio::test]
async fn a_burst_of_reads_costs_one_list_not_a_get_each() {
    let fake = Fake::start().await;
    let os = cloud(&fake).await;
    let ids = created(&os, 12).await;
    let gets_before = fake.count("GET /cinder/v3/volumes/vol-");
    let reads = ids.iter().map(|id| {
        let os = os.clone();
        let id = id.clone();
        tokio::spawn(async move { os.watcher.read(&id).await })
    });
    for (r, id) in futures::future::join_all(reads).await.into_iter().zip(&ids) {
        assert_eq!(&r.unwrap().unwrap().id, id);
    }
    let gets = fake.count("GET /cinder/v3/volumes/vol-") - gets_before;
    let lists = fake.count("GET /cinder/v3/volumes/detail?");
    // The first read may start a round alone (one GET); the rest share the next one.
    assert!(gets <= 1, "{gets} GETs for 12 concurrent reads");
    assert!(
        (1..=2).contains(&lists),
        "{lists} lists for 12 concurrent reads"
    );
}

#[tokio::test]
async fn every_read_is_fresh() {
    let fake = Fake::start().await;
    let os = cloud(&fake).await;
    fake.add_volume(
        "v1",
        "creating",
        vec![step("creating"), step("available"), step("in-use")],
    );
    let mut seen = Vec::new();
    for _ in 0..3 {
        seen.push(os.watcher.read("v1").await.unwrap().status);
    }
    assert_eq!(
        seen,
        [
            VolumeStatus::Creating,
            VolumeStatus::Available,
            VolumeStatus::InUse
        ]
    );
}

#[tokio::test]
async fn a_volume_unchanged_for_long_is_fetched_not_listed() {
    let fake = Fake::start().await;
    let os = cloud(&fake).await;
    // Two volumes the watcher knows: one changed just now, one 11 minutes before it.
    let now = chrono::Utc::now();
    for (id, t) in [("new", now), ("old", now - chrono::TimeDelta::minutes(11))] {
        let dto: VolumeDto = serde_json::from_value(serde_json::json!({
            "id": id, "status": "available", "size": 1,
            "updated_at": t.format("%Y-%m-%dT%H:%M:%S%.6f").to_string(),
        }))
        .unwrap();
        os.watcher.note(&dto);
        fake.add_volume(id, "available", vec![]);
    }
    let lists_before = fake.count("GET /cinder/v3/volumes/detail?");
    let (a, b) = tokio::join!(os.watcher.read("new"), os.watcher.read("old"));
    a.unwrap();
    b.unwrap();
    assert_eq!(fake.count("GET /cinder/v3/volumes/detail?"), lists_before);
    assert_eq!(fake.count("GET /cinder/v3/volumes/old"), 1);
}
