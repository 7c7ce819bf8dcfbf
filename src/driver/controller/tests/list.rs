use std::collections::BTreeSet;

use super::*;
use crate::cloud::Op;
use crate::cloud::{CloudError, RequestId, VolumeStatus};
use crate::driver::Error;

async fn walk(ctl: &Controller, max: u32) -> (Vec<String>, usize) {
    let mut ids = Vec::new();
    let mut token = None;
    let mut pages = 0;
    loop {
        let page = ctl
            .list_volumes(ListVolumes {
                max_entries: max,
                starting_token: token.clone(),
            })
            .await
            .unwrap();
        pages += 1;
        assert!(
            max == 0 || page.entries.len() <= max as usize,
            "MUST NOT return more than max_entries"
        );
        ids.extend(page.entries.into_iter().map(|e| e.volume.id));
        match page.next_token {
            Some(t) => token = Some(t),
            None => return (ids, pages),
        }
        assert!(pages < 100);
    }
}

#[tokio::test(start_paused = true)]
async fn pages_with_max_entries_and_tokens() {
    let e = env();
    let mut all = Vec::new();
    for i in 0..5 {
        all.push(e.create(&format!("v{i}"), 1).await.id);
    }
    let (ids, pages) = walk(&e.ctl, 2).await;
    assert_eq!(ids, all);
    assert_eq!(pages, 3);
    let (ids, pages) = walk(&e.ctl, 0).await;
    assert_eq!((ids, pages), (all.clone(), 1));
    let (ids, _) = walk(&e.ctl, 5).await;
    assert_eq!(ids, all);
}

#[tokio::test(start_paused = true)]
async fn pages_across_clouds() {
    let a = FakeCloud::new();
    let b = FakeCloud::new();
    let ctl = Controller::new(Clouds::new([a.cloud(""), b.cloud("r1")]), opts());
    let mut want = BTreeSet::new();
    for i in 0..3 {
        want.insert(
            ctl.create_volume(create_req(&format!("a{i}"), GIB))
                .await
                .unwrap()
                .id,
        );
    }
    for i in 0..4 {
        let mut req = create_req(&format!("b{i}"), GIB);
        req.cloud = "r1".into();
        want.insert(ctl.create_volume(req).await.unwrap().id);
    }
    for max in [0, 1, 2, 3, 7, 8] {
        let (ids, _) = walk(&ctl, max).await;
        assert_eq!(ids.len(), 7, "max {max}: no duplicates, none missing");
        assert_eq!(ids.into_iter().collect::<BTreeSet<_>>(), want, "max {max}");
    }
}

#[tokio::test(start_paused = true)]
async fn invalid_tokens_are_aborted_stale_markers_restart() {
    let e = env();
    for i in 0..3 {
        e.create(&format!("v{i}"), 1).await;
    }
    for bad in ["invalid-token", "cc1.v.7231.x", "cc1.s..x"] {
        let r = e
            .ctl
            .list_volumes(ListVolumes {
                max_entries: 1,
                starting_token: Some(bad.into()),
            })
            .await;
        assert_matches!(r, Err(Error::BadToken { .. }));
    }
    let page = e
        .ctl
        .list_volumes(ListVolumes {
            max_entries: 1,
            starting_token: None,
        })
        .await
        .unwrap();
    let token = page.next_token.unwrap();
    // The marker volume is deleted between pages (csi-sanity's pagination case): the token
    // still works; the cloud's listing restarts (duplicates are allowed, failures are not).
    let marker = page.entries[0].volume.id.clone();
    e.ctl
        .delete_volume(DeleteVolume {
            volume_id: marker.clone(),
            cloud: String::new(),
            deadline: deadline(),
        })
        .await
        .unwrap();
    let rest = e
        .ctl
        .list_volumes(ListVolumes {
            max_entries: 0,
            starting_token: Some(token),
        })
        .await
        .unwrap();
    let ids: Vec<String> = rest.entries.into_iter().map(|x| x.volume.id).collect();
    assert_eq!(ids.len(), 2);
    assert!(!ids.contains(&marker));
}

#[tokio::test(start_paused = true)]
async fn entries_carry_published_nodes_and_condition() {
    let e = env();
    let v = e.create("a", 1).await;
    e.publish(&v.id, "node-1").await.unwrap();
    let w = e.create("b", 1).await;
    e.fake.set_volume_status(&w.id, VolumeStatus::Error);
    let page = e.ctl.list_volumes(ListVolumes::default()).await.unwrap();
    let a = page.entries.iter().find(|x| x.volume.id == v.id).unwrap();
    assert_eq!(a.published_node_ids, vec!["node-1".to_string()]);
    assert!(!a.condition.abnormal);
    assert_eq!(a.volume.capacity_bytes, GIB);
    let b = page.entries.iter().find(|x| x.volume.id == w.id).unwrap();
    assert!(b.condition.abnormal);
    assert!(b.condition.message.contains("error"));
}

#[tokio::test(start_paused = true)]
async fn cluster_filter_lists_only_this_clusters_volumes() {
    let e = env_with(with_block_storage(|b| b.list_cluster_volumes_only = true));
    let mine = e.create("mine", 1).await;
    let cloud = e.fake.cloud("");
    cloud
        .volumes
        .create_volume(&crate::cloud::NewVolume {
            name: "theirs".into(),
            size_gib: 1,
            ..Default::default()
        })
        .await
        .unwrap();
    let (ids, _) = walk(&e.ctl, 0).await;
    assert_eq!(ids, vec![mine.id]);
    assert_eq!(e.fake.volumes().len(), 2);
}

#[tokio::test(start_paused = true)]
async fn get_volume_condition_and_not_found() {
    let e = env();
    let v = e.create("a", 1).await;
    let got = e.ctl.get_volume(&v.id).await.unwrap();
    assert_eq!(got.volume, v);
    assert!(!got.condition.abnormal);
    for status in [
        VolumeStatus::Error,
        VolumeStatus::ErrorExtending,
        VolumeStatus::ErrorDeleting,
    ] {
        e.fake.set_volume_status(&v.id, status);
        assert!(e.ctl.get_volume(&v.id).await.unwrap().condition.abnormal);
    }
    assert_matches!(
        e.ctl.get_volume("nope").await,
        Err(Error::VolumeNotFound { .. })
    );
    // A cloud that did not answer is not a NotFound.
    e.fake.fail_next(
        Op::VolumeGet,
        CloudError::Unavailable {
            message: "down".into(),
            request_id: RequestId::default(),
        },
    );
    assert_matches!(
        e.ctl.get_volume("nope").await,
        Err(Error::Cloud(CloudError::Unavailable { .. }))
    );
}

#[tokio::test(start_paused = true)]
async fn get_volume_looks_in_every_cloud() {
    let a = FakeCloud::new();
    let b = FakeCloud::new();
    let ctl = Controller::new(Clouds::new([a.cloud(""), b.cloud("r1")]), opts());
    let mut req = create_req("x", GIB);
    req.cloud = "r1".into();
    let v = ctl.create_volume(req).await.unwrap();
    assert_eq!(ctl.get_volume(&v.id).await.unwrap().volume.id, v.id);
}

#[tokio::test(start_paused = true)]
async fn validate_capabilities() {
    let e = env();
    let v = e.create("a", 1).await;
    let req = |caps: Vec<VolumeCapability>| ValidateCapabilities {
        volume_id: v.id.clone(),
        capabilities: caps,
        params: VolumeParams::default(),
        mutable: MutableParams::default(),
        cloud: String::new(),
    };
    assert_eq!(
        e.ctl.validate_capabilities(req(vec![rwo()])).await.unwrap(),
        Ok(())
    );
    let both = vec![rwo(), cap(AccessMode::MultiNodeReaderOnly, false)];
    // Confirmed only when ALL are supported.
    assert!(e
        .ctl
        .validate_capabilities(req(both))
        .await
        .unwrap()
        .is_err());
    let mut missing = req(vec![rwo()]);
    missing.volume_id = "nope".into();
    assert_matches!(
        e.ctl.validate_capabilities(missing).await,
        Err(Error::VolumeNotFound { .. })
    );
}
