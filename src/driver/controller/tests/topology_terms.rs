//! Topology terms that do not name `topology.cinder.csi.openstack.org/zone`. CSI: the volume
//! "MUST be accessible from at least one of the requisite topologies", and a term without our
//! key is met in any zone, so it constrains nothing; preferred terms are tried "in order from
//! first to last". csi-sanity (and Nomad) pass the node's `accessible_topology` back as both
//! requisite and preferred, which for a node without a zone is `{}` or other keys only.

use super::*;
use crate::cloud::Op;
use crate::driver::types::ZONE_TOPOLOGY_KEY;
use crate::driver::{Error, Mismatch, VolumeDiff};

fn term(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

const REGION: &str = "topology.kubernetes.io/region";

/// csi-sanity's shape: requisite and preferred both hold the node's topology.
fn sanity_shape(name: &str, node: BTreeMap<String, String>) -> CreateVolume {
    let mut req = create_req(name, GIB);
    req.topology.requisite = vec![node.clone()];
    req.topology.preferred = vec![node];
    req
}

#[tokio::test(start_paused = true)]
async fn a_term_without_our_key_leaves_the_zone_to_cinder() {
    let e = env();
    e.fake.set_default_az("az1");
    for (name, node) in [
        ("empty", term(&[])),
        ("region-only", term(&[(REGION, "r1")])),
    ] {
        let v = e.ctl.create_volume(sanity_shape(name, node)).await.unwrap();
        assert_eq!(e.fake.volume(&v.id).unwrap().availability_zone, "az1");
        assert_eq!(v.topology, vec![zone("az1")], "the zone Cinder chose");
    }
    // Only the requisite (preferred unset) says the same.
    let mut req = create_req("requisite-only", GIB);
    req.topology.requisite = vec![term(&[])];
    e.ctl.create_volume(req).await.unwrap();
    assert_eq!(
        e.fake.calls(Op::AvailabilityZoneList),
        0,
        "no zone named, no zone list"
    );
    // The retry of each is the same volume (the requisite cannot conflict with its zone).
    let again = e
        .ctl
        .create_volume(sanity_shape("empty", term(&[])))
        .await
        .unwrap();
    assert_eq!(e.fake.volumes().len(), 3);
    assert_eq!(again.topology, vec![zone("az1")]);
}

#[tokio::test(start_paused = true)]
async fn mixed_requisite_terms_are_met_by_the_free_one() {
    let e = env();
    e.fake.set_default_az("az1");
    // {zone: mars} cannot be met, {region: r1} can, in any zone: Cinder's default.
    let mut req = create_req("a", GIB);
    req.topology.requisite = vec![zone("mars"), term(&[(REGION, "r1")])];
    let v = e.ctl.create_volume(req).await.unwrap();
    assert_eq!(e.fake.volume(&v.id).unwrap().availability_zone, "az1");

    // A preferred zone Cinder has still wins; one it lacks is skipped for the next.
    let mut req = create_req("b", GIB);
    req.topology.requisite = vec![zone("mars"), zone("az2"), term(&[])];
    req.topology.preferred = vec![zone("mars"), zone("az2")];
    let v = e.ctl.create_volume(req).await.unwrap();
    assert_eq!(e.fake.volume(&v.id).unwrap().availability_zone, "az2");

    // A first preferred term without our key is met at once, in Cinder's default zone.
    let mut req = create_req("c", GIB);
    req.topology.preferred = vec![term(&[(REGION, "r1")]), zone("az2")];
    let v = e.ctl.create_volume(req).await.unwrap();
    assert_eq!(e.fake.volume(&v.id).unwrap().availability_zone, "az1");

    // A term that names our key with another keeps constraining the zone.
    let mut req = create_req("d", GIB);
    req.topology.requisite = vec![term(&[(REGION, "r1"), (ZONE_TOPOLOGY_KEY, "az2")])];
    let v = e.ctl.create_volume(req).await.unwrap();
    assert_eq!(e.fake.volume(&v.id).unwrap().availability_zone, "az2");
}

#[tokio::test(start_paused = true)]
async fn requisites_that_all_name_a_zone_still_constrain_it() {
    let e = env();
    let mut req = create_req("a", GIB);
    req.topology.requisite = vec![zone("mars"), zone("venus")];
    req.topology.preferred = vec![term(&[])];
    assert!(matches!(
        e.ctl.create_volume(req).await,
        Err(Error::NoZone { .. })
    ));
    assert_eq!(e.fake.calls(Op::VolumeCreate), 0);

    // A retry whose requisite all names other zones conflicts with the existing volume; one
    // with a free term does not.
    e.fake.set_default_az("az1");
    e.ctl.create_volume(create_req("b", GIB)).await.unwrap();
    let mut req = create_req("b", GIB);
    req.topology.requisite = vec![zone("az2")];
    assert!(matches!(
        e.ctl.create_volume(req).await,
        Err(Error::Mismatch(Mismatch::Volume {
            diff: VolumeDiff::Zone { .. },
            ..
        }))
    ));
    let mut req = create_req("b", GIB);
    req.topology.requisite = vec![zone("az2"), term(&[(REGION, "r1")])];
    e.ctl.create_volume(req).await.unwrap();
}
