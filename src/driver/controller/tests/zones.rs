//! Cinder zones whose names are not label values ("zone 1", "dc1:rack2"): topology carries
//! their label form (as the nodes report it), Cinder gets the real name.

use super::*;
use crate::cloud::Op;
use crate::cloud::{Capacity, CloudError, RequestId};
use crate::driver::controller::zones::ZONE_REFRESH;
use crate::driver::{Error, Mismatch, Refusal, VolumeDiff};

/// The fake with zones whose names need mapping; no call counted yet.
fn odd_zones() -> Env {
    let e = env();
    e.fake.set_zones(&["nova", "zone 1", "dc1:rack2"]);
    e
}

fn in_zone(name: &str, preferred: &[&str], requisite: &[&str]) -> CreateVolume {
    let mut req = create_req(name, GIB);
    req.topology.preferred = preferred.iter().map(|z| zone(z)).collect();
    req.topology.requisite = requisite.iter().map(|z| zone(z)).collect();
    req
}

fn capacity_in(z: Option<&str>, p: &[(&str, &str)]) -> GetCapacity {
    GetCapacity {
        capabilities: vec![],
        params: VolumeParams::parse(&params(p)).unwrap(),
        zone: z.map(str::to_string),
    }
}

#[tokio::test(start_paused = true)]
async fn topology_zones_land_in_the_real_zone_and_are_reported_as_labels() {
    let e = odd_zones();
    let a = e
        .ctl
        .create_volume(in_zone("a", &["zone-1"], &["zone-1", "nova"]))
        .await
        .unwrap();
    assert_eq!(e.fake.volume(&a.id).unwrap().availability_zone, "zone 1");
    assert_eq!(a.topology, vec![zone("zone-1")], "what the nodes report");

    let b = e
        .ctl
        .create_volume(in_zone("b", &[], &["dc1-rack2"]))
        .await
        .unwrap();
    assert_eq!(e.fake.volume(&b.id).unwrap().availability_zone, "dc1:rack2");
    assert_eq!(b.topology, vec![zone("dc1-rack2")]);

    let c = e
        .ctl
        .create_volume(in_zone("c", &["nova"], &[]))
        .await
        .unwrap();
    assert_eq!(e.fake.volume(&c.id).unwrap().availability_zone, "nova");
    assert_eq!(
        e.fake.calls(Op::AvailabilityZoneList),
        1,
        "the zones are listed once and kept"
    );

    // Every RPC that reports a volume reports the label form.
    assert_eq!(
        e.ctl.get_volume(&a.id).await.unwrap().volume.topology,
        vec![zone("zone-1")]
    );
    let page = e.ctl.list_volumes(ListVolumes::default()).await.unwrap();
    let listed: Vec<_> = page
        .entries
        .iter()
        .map(|x| (x.volume.id.clone(), x.volume.topology.clone()))
        .collect();
    assert!(listed.contains(&(b.id.clone(), vec![zone("dc1-rack2")])));
}

#[tokio::test(start_paused = true)]
async fn a_retry_matches_the_existing_volume_by_label_form() {
    let e = odd_zones();
    let first = e
        .ctl
        .create_volume(in_zone("a", &["zone-1"], &["zone-1"]))
        .await
        .unwrap();
    let listed = e.fake.calls(Op::AvailabilityZoneList);
    let again = e
        .ctl
        .create_volume(in_zone("a", &["zone-1"], &["zone-1"]))
        .await
        .unwrap();
    assert_eq!(again, first);
    assert_eq!(
        e.fake.calls(Op::AvailabilityZoneList),
        listed,
        "an existing volume needs no zone list"
    );
    let err = e
        .ctl
        .create_volume(in_zone("a", &[], &["nova", "dc1-rack2"]))
        .await
        .unwrap_err();
    assert_matches!(
        &err,
        Error::Mismatch(Mismatch::Volume { diff: VolumeDiff::Zone { zone, topology, .. }, .. })
            if zone == "zone 1" && topology == "zone-1"
    );
    assert_eq!(e.fake.volumes().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_volume_in_a_zone_without_a_label_form_has_no_topology() {
    let e = env();
    e.fake.set_zones(&["nova", "---"]);
    e.fake.set_default_az("---");
    let v = e.create("a", 1).await;
    assert!(v.topology.is_empty(), "{:?}", v.topology);
}

#[tokio::test(start_paused = true)]
async fn capacity_per_topology_zone_asks_for_the_real_zone() {
    let e = odd_zones();
    let small = Capacity {
        available_bytes: Some(3 * GIB),
        maximum_volume_bytes: None,
    };
    e.fake.set_capacity(Some("zone 1"), None, small);
    let c = e
        .ctl
        .get_capacity(capacity_in(Some("zone-1"), &[]))
        .await
        .unwrap();
    assert_eq!(c.available_bytes, 3 * GIB);
    // `availability` (a Cinder name) pinning the zone the segment stands for.
    let c = e
        .ctl
        .get_capacity(capacity_in(Some("zone-1"), &[("availability", "zone 1")]))
        .await
        .unwrap();
    assert_eq!(c.available_bytes, 3 * GIB);
    let c = e
        .ctl
        .get_capacity(capacity_in(
            Some("dc1-rack2"),
            &[("availability", "zone 1")],
        ))
        .await
        .unwrap();
    assert_eq!(c.available_bytes, 0, "the class never lands in dc1:rack2");
    assert_eq!(e.fake.calls(Op::AvailabilityZoneList), 1);
}

#[tokio::test(start_paused = true)]
async fn zones_sharing_a_label_form_are_refused() {
    let e = env();
    e.fake.set_zones(&["nova", "zone 1", "zone:1"]);
    let err = e
        .ctl
        .create_volume(in_zone("a", &["zone-1"], &[]))
        .await
        .unwrap_err();
    assert_matches!(&err, Error::Refused(Refusal::AmbiguousZone { zones, .. })
        if zones.contains(&"zone 1".to_string()) && zones.contains(&"zone:1".to_string()));
    assert!(e.fake.volumes().is_empty(), "nothing created");
    assert_eq!(e.fake.calls(Op::VolumeCreate), 0);
    assert_matches!(
        e.ctl.get_capacity(capacity_in(Some("zone-1"), &[])).await,
        Err(Error::Refused(Refusal::AmbiguousZone { .. }))
    );
    // `availability` names the zone outright: no mapping, no ambiguity.
    let mut req = in_zone("b", &["zone-1"], &[]);
    req.params.availability = Some("zone:1".into());
    let v = e.ctl.create_volume(req).await.unwrap();
    assert_eq!(e.fake.volume(&v.id).unwrap().availability_zone, "zone:1");
}

#[tokio::test(start_paused = true)]
async fn no_zone_list_without_a_topology_zone() {
    let e = odd_zones();
    e.create("plain", 1).await;
    let mut pinned = in_zone("pinned", &["zone-1"], &["zone-1"]);
    pinned.params.availability = Some("zone 1".into());
    let v = e.ctl.create_volume(pinned).await.unwrap();
    assert_eq!(v.topology, vec![zone("zone-1")]);
    e.ctl
        .get_capacity(capacity_in(None, &[("availability", "nova")]))
        .await
        .unwrap();
    e.ctl.get_capacity(capacity_in(None, &[])).await.unwrap();
    e.ctl.list_volumes(ListVolumes::default()).await.unwrap();

    let off = env_with(ControllerOptions {
        with_topology: false,
        ..opts()
    });
    off.ctl
        .create_volume(in_zone("a", &["zone-1"], &[]))
        .await
        .unwrap();
    off.ctl
        .get_capacity(capacity_in(Some("zone-1"), &[]))
        .await
        .unwrap();
    assert_eq!(e.fake.calls(Op::AvailabilityZoneList), 0);
    assert_eq!(off.fake.calls(Op::AvailabilityZoneList), 0);
}

#[tokio::test(start_paused = true)]
async fn a_new_zone_is_learnt_at_the_next_refresh() {
    let e = env();
    e.fake.set_zones(&["nova"]);
    // Unknown: goes to Cinder as it is, and Cinder refuses it.
    let err = e
        .ctl
        .create_volume(in_zone("a", &["zone-1"], &[]))
        .await
        .unwrap_err();
    assert_matches!(&err, Error::Cloud(CloudError::BadRequest { message, .. }) if message.contains("zone-1"));
    assert_eq!(e.fake.calls(Op::AvailabilityZoneList), 1);

    e.fake.set_zones(&["nova", "zone 1"]);
    // Within the refresh interval a miss does not list again.
    tokio::time::advance(ZONE_REFRESH / 2).await;
    e.ctl
        .create_volume(in_zone("a", &["zone-1"], &[]))
        .await
        .unwrap_err();
    assert_eq!(e.fake.calls(Op::AvailabilityZoneList), 1);
    // Known zones need no list however old the list is.
    tokio::time::advance(ZONE_REFRESH).await;
    e.ctl
        .create_volume(in_zone("b", &["nova"], &[]))
        .await
        .unwrap();
    assert_eq!(e.fake.calls(Op::AvailabilityZoneList), 1);
    // After it, the miss lists again and finds the new zone.
    let v = e
        .ctl
        .create_volume(in_zone("a", &["zone-1"], &[]))
        .await
        .unwrap();
    assert_eq!(e.fake.volume(&v.id).unwrap().availability_zone, "zone 1");
    assert_eq!(e.fake.calls(Op::AvailabilityZoneList), 2);
}

#[tokio::test(start_paused = true)]
async fn a_failed_zone_list_passes_the_value_on_and_waits_to_retry() {
    let e = odd_zones();
    e.fake.fail_next(
        Op::AvailabilityZoneList,
        CloudError::Unavailable {
            message: "503".into(),
            request_id: RequestId::default(),
        },
    );
    // The value goes to Cinder as it is: a real name still works.
    let v = e
        .ctl
        .create_volume(in_zone("a", &["nova"], &[]))
        .await
        .unwrap();
    assert_eq!(e.fake.volume(&v.id).unwrap().availability_zone, "nova");
    e.ctl
        .create_volume(in_zone("b", &["zone-1"], &[]))
        .await
        .unwrap_err();
    assert_eq!(
        e.fake.calls(Op::AvailabilityZoneList),
        1,
        "not once per RPC"
    );
    tokio::time::advance(ZONE_REFRESH).await;
    let v = e
        .ctl
        .create_volume(in_zone("b", &["zone-1"], &[]))
        .await
        .unwrap();
    assert_eq!(e.fake.volume(&v.id).unwrap().availability_zone, "zone 1");
    assert_eq!(e.fake.calls(Op::AvailabilityZoneList), 2);
}

#[tokio::test(start_paused = true)]
async fn concurrent_creates_share_one_zone_list() {
    let e = odd_zones();
    let reqs = (0..5).map(|i| in_zone(&format!("v{i}"), &["zone-1"], &[]));
    let all = futures::future::join_all(reqs.map(|r| e.ctl.create_volume(r))).await;
    assert!(all.iter().all(|r| r.is_ok()), "{all:?}");
    assert_eq!(e.fake.calls(Op::AvailabilityZoneList), 1);
}
