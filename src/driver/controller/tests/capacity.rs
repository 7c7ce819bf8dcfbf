use super::*;
use crate::cloud::{Capacity, Op};
use crate::driver::{Error, Refusal};

fn req(caps: Vec<VolumeCapability>, p: &[(&str, &str)], zone: Option<&str>) -> GetCapacity {
    GetCapacity {
        capabilities: caps,
        params: VolumeParams::parse(&params(p)).unwrap(),
        zone: zone.map(str::to_string),
    }
}

#[tokio::test(start_paused = true)]
async fn unlimited_quota_headroom_and_per_zone_and_type() {
    let e = env();
    let c = e.ctl.get_capacity(req(vec![], &[], None)).await.unwrap();
    assert_eq!(c.available_bytes, i64::MAX as u64);
    assert_eq!(c.minimum_volume_bytes, Some(GIB));
    e.fake.set_quota_gib(Some(10));
    e.create("a", 3).await;
    let c = e
        .ctl
        .get_capacity(req(vec![rwo()], &[], None))
        .await
        .unwrap();
    assert_eq!(c.available_bytes, 7 * GIB);
    let gold = Capacity {
        available_bytes: Some(2 * GIB),
        maximum_volume_bytes: Some(GIB),
    };
    e.fake.set_capacity(Some("az1"), Some("gold"), gold);
    let c = e
        .ctl
        .get_capacity(req(vec![], &[("type", "gold")], Some("az1")))
        .await
        .unwrap();
    assert_eq!(c.available_bytes, 2 * GIB);
    assert_eq!(c.maximum_volume_bytes, Some(GIB));
    let c = e
        .ctl
        .get_capacity(req(
            vec![],
            &[("type", "gold"), ("availability", "az1")],
            None,
        ))
        .await
        .unwrap();
    assert_eq!(c.available_bytes, 2 * GIB);
}

#[tokio::test(start_paused = true)]
async fn capabilities_no_volume_can_serve_have_no_capacity() {
    let e = env();
    e.fake.add_volume_type("shared", true);
    let mnmw_fs = cap(AccessMode::MultiNodeMultiWriter, false);
    let c = e
        .ctl
        .get_capacity(req(vec![mnmw_fs], &[("type", "shared")], None))
        .await
        .unwrap();
    assert_eq!(c.available_bytes, 0);
    let rox = cap(AccessMode::MultiNodeReaderOnly, false);
    let c = e
        .ctl
        .get_capacity(req(vec![rox.clone()], &[], None))
        .await
        .unwrap();
    assert_eq!(c.available_bytes, 0);
    let c = e
        .ctl
        .get_capacity(req(vec![rox], &[("type", "shared")], None))
        .await
        .unwrap();
    assert!(c.available_bytes > 0);
    // `availability` pins another AZ than the topology segment asked about.
    let c = e
        .ctl
        .get_capacity(req(vec![], &[("availability", "az1")], Some("az2")))
        .await
        .unwrap();
    assert_eq!(c.available_bytes, 0);
    assert_eq!(e.fake.calls(Op::QuotaGet), 1);
}

#[tokio::test(start_paused = true)]
async fn several_clouds_without_default_cannot_answer() {
    let a = FakeCloud::new();
    let b = FakeCloud::new();
    let ctl = Controller::new(Clouds::new([a.cloud("r1"), b.cloud("r2")]), opts());
    assert_matches!(
        ctl.get_capacity(req(vec![], &[], None)).await,
        Err(Error::Refused(Refusal::NoCapacityCloud))
    );
    let ctl = Controller::new(Clouds::new([a.cloud("r1")]), opts());
    assert!(ctl.get_capacity(req(vec![], &[], None)).await.is_ok());
}
