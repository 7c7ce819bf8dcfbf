//! `--pvc-annotations`: PVC affinity annotations → Cinder scheduler hints, on the fake cloud
//! with a PVC reader in memory (the real API server: tests/cloud/kube_claims.rs).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use async_trait::async_trait;

use super::*;
use crate::cloud::SchedulerHints;
use crate::driver::controller::affinity::{split_list, AFFINITY_KEY, ANTI_AFFINITY_KEY};
use crate::driver::Error;
use crate::driver::Invalid;
use crate::net::kube::{ClaimReader, KubeError};

/// PVCs by `namespace/name`; a missing one answers `fail` (or Refused 404).
#[derive(Default)]
struct Claims {
    pvcs: BTreeMap<String, BTreeMap<String, String>>,
    fail: Option<KubeError>,
    reads: AtomicU32,
}

#[async_trait]
impl ClaimReader for Claims {
    async fn annotations(
        &self,
        namespace: &str,
        name: &str,
    ) -> std::result::Result<BTreeMap<String, String>, KubeError> {
        self.reads.fetch_add(1, Ordering::SeqCst);
        if let Some(e) = &self.fail {
            return Err(e.clone());
        }
        let key = format!("{namespace}/{name}");
        self.pvcs.get(&key).cloned().ok_or(KubeError::Refused {
            claim: key,
            why: "HTTP 404 Not Found".into(),
        })
    }
}

fn claims(pvcs: &[(&str, &[(&str, &str)])]) -> Claims {
    Claims {
        pvcs: pvcs
            .iter()
            .map(|(k, a)| {
                let a = a.iter().map(|(k, v)| (k.to_string(), v.to_string()));
                (k.to_string(), a.collect())
            })
            .collect(),
        ..Default::default()
    }
}

fn env_claims(c: Claims) -> (Env, Arc<Claims>) {
    let c = Arc::new(c);
    let e = env();
    let Env { fake, ctl } = e;
    let ctl = ctl.with_claims(c.clone());
    (Env { fake, ctl }, c)
}

/// A CreateVolume as the provisioner with --extra-create-metadata sends it for PVC ns/`pvc`.
fn for_pvc(name: &str, pvc: &str) -> CreateVolume {
    let mut r = create_req(name, GIB);
    r.params = VolumeParams::parse(&params(&[
        ("csi.storage.k8s.io/pvc/name", pvc),
        ("csi.storage.k8s.io/pvc/namespace", "ns"),
        ("csi.storage.k8s.io/pv/name", name),
    ]))
    .unwrap();
    r
}

#[test]
fn lists_split_at_commas_and_whitespace_as_upstream() {
    assert_eq!(
        split_list(" a, b,,c\td\n e ,"),
        vec!["a", "b", "c", "d", "e"]
    );
    assert!(split_list(" , ").is_empty());
}

#[tokio::test(start_paused = true)]
async fn names_and_uuids_become_hints_and_context() {
    let (e, _) = env_claims(Claims::default());
    let a = e.create("pvc-a", 1).await.id;
    let b = e.create("pvc-b", 1).await.id;
    let upper_braced = format!("{{{}}}", b.to_uppercase());
    let anti = format!("pvc-a,{upper_braced}");
    let (e2, reads) = {
        let c = claims(&[(
            "ns/third",
            &[
                (AFFINITY_KEY, " pvc-b "),
                (ANTI_AFFINITY_KEY, anti.as_str()),
                ("other", "x"),
            ],
        )]);
        let c = Arc::new(c);
        (
            Env {
                fake: e.fake.clone(),
                ctl: Controller::new(Clouds::new([e.fake.cloud("")]), opts())
                    .with_claims(c.clone()),
            },
            c,
        )
    };
    let info = e2
        .ctl
        .create_volume(for_pvc("pvc-c", "third"))
        .await
        .unwrap();
    assert_eq!(reads.reads.load(Ordering::SeqCst), 1);
    assert_eq!(
        e2.fake.hints(&info.id),
        SchedulerHints {
            same_host: vec![b.clone()],
            different_host: vec![a.clone(), b.clone()],
        }
    );
    assert_eq!(info.context.get("affinity"), Some(&b));
    assert_eq!(info.context.get("anti-affinity"), Some(&format!("{a},{b}")));
    // The retry finds the volume by name and reads no PVC again.
    let again = e2
        .ctl
        .create_volume(for_pvc("pvc-c", "third"))
        .await
        .unwrap();
    assert_eq!(again.id, info.id);
    assert_eq!(reads.reads.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn a_uuid_that_is_no_volume_is_tried_as_a_name() {
    let (e, _) = env_claims(Claims::default());
    let odd = "0b7e3c1a-5d7f-4a3e-9a43-2f1f4e0f6c11";
    let v = e.create(odd, 1).await.id;
    assert_ne!(v, odd);
    let c = Arc::new(claims(&[("ns/p", &[(AFFINITY_KEY, odd)])]));
    let ctl = Controller::new(Clouds::new([e.fake.cloud("")]), opts()).with_claims(c);
    let info = ctl.create_volume(for_pvc("pvc-d", "p")).await.unwrap();
    assert_eq!(e.fake.hints(&info.id).same_host, vec![v]);
}

#[tokio::test(start_paused = true)]
async fn no_volume_or_several_is_invalid_and_creates_nothing() {
    let (e, _) = env_claims(Claims::default());
    // Two volumes of one name (made outside this driver: it never makes two).
    let cloud = e.fake.cloud("");
    for _ in 0..2 {
        let twin = crate::cloud::NewVolume {
            name: "twin".into(),
            size_gib: 1,
            ..Default::default()
        };
        cloud.volumes.create_volume(&twin).await.unwrap();
    }
    let c = Arc::new(claims(&[
        ("ns/none", &[(ANTI_AFFINITY_KEY, "pvc-a, missing")]),
        ("ns/two", &[(AFFINITY_KEY, "twin")]),
    ]));
    e.create("pvc-a", 1).await;
    let ctl = Controller::new(Clouds::new([e.fake.cloud("")]), opts()).with_claims(c);
    let before = e.fake.volumes().len();
    let err = ctl
        .create_volume(for_pvc("pvc-x", "none"))
        .await
        .unwrap_err();
    assert_matches!(
        &err,
        Error::Invalid(Invalid::AffinityVolume { claim, annotation, entry, matches })
            if claim == "ns/none" && *annotation == ANTI_AFFINITY_KEY && entry == "missing"
                && matches.is_empty()
    );
    let err = ctl
        .create_volume(for_pvc("pvc-y", "two"))
        .await
        .unwrap_err();
    assert_matches!(
        &err,
        Error::Invalid(Invalid::AffinityVolume { annotation, matches, .. })
            if *annotation == AFFINITY_KEY && matches.len() == 2
    );
    assert_eq!(e.fake.volumes().len(), before, "nothing created");
}

#[tokio::test(start_paused = true)]
async fn api_server_failures_stop_the_create() {
    for fail in [
        KubeError::Unavailable("connection refused".into()),
        KubeError::Refused {
            claim: "ns/p".into(),
            why: "HTTP 403 Forbidden".into(),
        },
    ] {
        let (e, _) = env_claims(Claims {
            fail: Some(fail.clone()),
            ..Default::default()
        });
        let err = e
            .ctl
            .create_volume(for_pvc("pvc-e", "p"))
            .await
            .unwrap_err();
        assert_matches!(&err, Error::Kube(k) if *k == fail);
        assert!(e.fake.volumes().is_empty());
    }
}

#[tokio::test(start_paused = true)]
async fn without_pvc_names_or_annotations_there_are_no_hints() {
    let (e, reads) = env_claims(claims(&[("ns/plain", &[("a", "b")])]));
    // csi-sanity and other COs send no PVC names: upstream creates without hints.
    let info = e.create("pvc-f", 1).await;
    assert_eq!(reads.reads.load(Ordering::SeqCst), 0);
    assert_eq!(e.fake.hints(&info.id), SchedulerHints::default());
    let info = e
        .ctl
        .create_volume(for_pvc("pvc-g", "plain"))
        .await
        .unwrap();
    assert_eq!(reads.reads.load(Ordering::SeqCst), 1);
    assert_eq!(e.fake.hints(&info.id), SchedulerHints::default());
    assert!(!info.context.contains_key("affinity") && !info.context.contains_key("anti-affinity"));
    // Without --pvc-annotations nothing is read, whatever the request names.
    let plain = env();
    let info = plain
        .ctl
        .create_volume(for_pvc("pvc-h", "plain"))
        .await
        .unwrap();
    assert_eq!(plain.fake.hints(&info.id), SchedulerHints::default());
}
