//! Volume group snapshots against the real OpenStack test cloud (tests/harness/openstack/ostack),
//! through the real `cinder-csi` binary: Cinder groups of the consistent group type, group
//! snapshots whose members the test cloud's fake driver cuts with the volumes' filesystems
//! frozen (docs/TESTING.md, "The fake Cinder driver").
//!
//! - A writer appends a sequence across three attached, mounted volumes; a group snapshot is
//!   taken while it writes; each member restored into a new volume holds its own source's data
//!   and together the restores hold a prefix of the sequence with no gap. Cinder shows one
//!   helper group with the three volumes while the group snapshot exists, and after the group
//!   snapshot is deleted no group, group snapshot or member snapshot is left.
//! - What cannot be consistent is refused with nothing made: the inconsistent group type (named
//!   in the message), a volume in a group the driver did not make, volumes in two zones; an
//!   unknown group type is InvalidArgument. A member cannot be deleted alone; a volume with a
//!   group snapshot cannot be deleted until the group snapshot is.
//!
//! Runs only with CINDER_CSI_OSTACK_ENV=<state>/env.sh; prints "skipped: ..." otherwise.

use crate::support::openstack_support;
use crate::support::scratch;
use crate::support::seq_writer;

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::time::Duration;

use cinder_csi::server::csi::pb;
use openstack_support::{
    call, log_cleanup, requests, Cloud, CloudObjects, Controller, Driver, MountGuard, Node,
};
use seq_writer::{numbers, Writer};
use serde_json::{json, Value};
use tonic::transport::Channel;
use tonic::Code;

const NODE: usize = 1;
const GIB: i64 = 1 << 30;
type Groups = pb::group_controller_client::GroupControllerClient<Channel>;

fn timeout<T>(msg: T, secs: u64) -> tonic::Request<T> {
    let mut r = tonic::Request::new(msg);
    r.set_timeout(Duration::from_secs(secs));
    r
}

struct Mounted {
    id: String,
    staging: PathBuf,
    target: PathBuf,
}

async fn create(
    ctl: &mut Controller,
    name: &str,
    zone: &str,
    volume_type: &str,
    source: Option<&str>,
) -> String {
    let req = pb::CreateVolumeRequest {
        name: name.into(),
        capacity_range: Some(pb::CapacityRange {
            required_bytes: GIB,
            limit_bytes: 0,
        }),
        volume_capabilities: vec![requests::mount_cap()],
        parameters: HashMap::from([
            ("availability".to_string(), zone.to_string()),
            ("type".to_string(), volume_type.to_string()),
        ]),
        volume_content_source: source.map(|s| pb::VolumeContentSource {
            r#type: Some(pb::volume_content_source::Type::Snapshot(
                pb::volume_content_source::SnapshotSource {
                    snapshot_id: s.into(),
                },
            )),
        }),
        ..Default::default()
    };
    call("CreateVolume", ctl.create_volume(timeout(req, 120)))
        .await
        .volume
        .unwrap()
        .volume_id
}

async fn mount(
    ctl: &mut Controller,
    node: &mut Node,
    node_id: &str,
    kubelet: &Path,
    id: &str,
) -> Mounted {
    let staging = kubelet.join(format!("plugins/kubernetes.io/csi/x/{id}/globalmount"));
    let target = kubelet.join(format!("pods/p-{id}/volumes/kubernetes.io~csi/{id}/mount"));
    std::fs::create_dir_all(&staging).unwrap();
    std::fs::create_dir_all(target.parent().unwrap()).unwrap();
    let published = call(
        "ControllerPublishVolume",
        ctl.controller_publish_volume(timeout(
            pb::ControllerPublishVolumeRequest {
                volume_id: id.into(),
                node_id: node_id.into(),
                volume_capability: Some(requests::mount_cap()),
                ..Default::default()
            },
            120,
        )),
    )
    .await;
    call(
        "NodeStageVolume",
        node.node_stage_volume(timeout(
            pb::NodeStageVolumeRequest {
                volume_id: id.into(),
                publish_context: published.publish_context.clone(),
                staging_target_path: staging.display().to_string(),
                volume_capability: Some(requests::mount_cap()),
                ..Default::default()
            },
            120,
        )),
    )
    .await;
    call(
        "NodePublishVolume",
        node.node_publish_volume(timeout(
            pb::NodePublishVolumeRequest {
                volume_id: id.into(),
                publish_context: published.publish_context,
                staging_target_path: staging.display().to_string(),
                target_path: target.display().to_string(),
                volume_capability: Some(requests::mount_cap()),
                ..Default::default()
            },
            60,
        )),
    )
    .await;
    Mounted {
        id: id.into(),
        staging,
        target,
    }
}

async fn unmount(ctl: &mut Controller, node: &mut Node, node_id: &str, m: &Mounted) {
    call(
        "NodeUnpublishVolume",
        node.node_unpublish_volume(pb::NodeUnpublishVolumeRequest {
            volume_id: m.id.clone(),
            target_path: m.target.display().to_string(),
        }),
    )
    .await;
    call(
        "NodeUnstageVolume",
        node.node_unstage_volume(pb::NodeUnstageVolumeRequest {
            volume_id: m.id.clone(),
            staging_target_path: m.staging.display().to_string(),
        }),
    )
    .await;
    call(
        "ControllerUnpublishVolume",
        ctl.controller_unpublish_volume(timeout(
            pb::ControllerUnpublishVolumeRequest {
                volume_id: m.id.clone(),
                node_id: node_id.into(),
                ..Default::default()
            },
            120,
        )),
    )
    .await;
}

/// CreateVolumeGroupSnapshot once, as the snapshotter first calls it. Its answer must already
/// be ready, every member too: csi-snapshotter v8.7.0 keeps each member's readyToUse from the
/// first answer, and the snapshot-controller writes it onto the member VolumeSnapshotContents
/// (the cluster stage saw them turn back to false when this answered `creating` members).
async fn group_first_answer(
    g: &mut Groups,
    name: &str,
    volumes: &[String],
) -> pb::VolumeGroupSnapshot {
    let r = call(
        "CreateVolumeGroupSnapshot",
        g.create_volume_group_snapshot(timeout(
            pb::CreateVolumeGroupSnapshotRequest {
                name: name.into(),
                source_volume_ids: volumes.to_vec(),
                ..Default::default()
            },
            120,
        )),
    )
    .await
    .group_snapshot
    .unwrap();
    assert!(r.ready_to_use, "first answer not ready: {r:?}");
    assert!(
        r.snapshots.iter().all(|m| m.ready_to_use),
        "first answer has members not ready: {r:?}"
    );
    r
}

async fn try_group(
    g: &mut Groups,
    name: &str,
    volumes: &[String],
    params: &[(&str, &str)],
) -> Result<pb::VolumeGroupSnapshot, tonic::Status> {
    g.create_volume_group_snapshot(timeout(
        pb::CreateVolumeGroupSnapshotRequest {
            name: name.into(),
            source_volume_ids: volumes.to_vec(),
            parameters: params
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..Default::default()
        },
        120,
    ))
    .await
    .map(|r| r.into_inner().group_snapshot.unwrap())
}

async fn delete_group(g: &mut Groups, id: &str) {
    call(
        "DeleteVolumeGroupSnapshot",
        g.delete_volume_group_snapshot(timeout(
            pb::DeleteVolumeGroupSnapshotRequest {
                group_snapshot_id: id.into(),
                ..Default::default()
            },
            120,
        )),
    )
    .await;
}

/// Cinder's groups, group snapshots and snapshots of the member project (as the member).
fn listing(cloud: &Cloud, path: &str, key: &str) -> Vec<Value> {
    cloud
        .api(false, "block-storage", "GET", path)
        .and_then(|v| v[key].as_array().cloned())
        .unwrap_or_default()
}

fn helper_groups(cloud: &Cloud) -> Vec<Value> {
    listing(cloud, "/groups/detail", "groups")
        .into_iter()
        .filter(|g| {
            g["name"]
                .as_str()
                .unwrap_or_default()
                .starts_with("csi-group-")
        })
        .collect()
}

/// Deletes group snapshots and groups a failed run left (the shared guard knows volumes and
/// snapshots only). Helper groups are the driver's: all of them go.
struct Groupware<'a>(&'a Cloud, Vec<String>);

impl Drop for Groupware<'_> {
    fn drop(&mut self) {
        let c = self.0;
        for gs in listing(c, "/group_snapshots/detail", "group_snapshots") {
            let name = gs["name"].as_str().unwrap_or_default();
            if self.1.iter().any(|p| name.starts_with(p.as_str())) {
                let path = format!("/group_snapshots/{}", gs["id"].as_str().unwrap_or_default());
                if let Err(e) = c.try_api_body(true, "block-storage", "DELETE", &path, None) {
                    log_cleanup(&format!("DELETE {path}: {e}"));
                }
            }
        }
        std::thread::sleep(Duration::from_secs(3));
        for g in helper_groups(c) {
            let id = g["id"].as_str().unwrap_or_default();
            let vols: Vec<String> =
                listing(c, &format!("/volumes/detail?group_id={id}"), "volumes")
                    .iter()
                    .filter_map(|v| v["id"].as_str().map(str::to_string))
                    .collect();
            if !vols.is_empty() {
                let body = json!({"group": {"remove_volumes": vols.join(",")}});
                let _ = c.try_api_body(
                    true,
                    "block-storage",
                    "PUT",
                    &format!("/groups/{id}"),
                    Some(&body),
                );
                std::thread::sleep(Duration::from_secs(3));
            }
            let body = json!({"delete": {"delete-volumes": false}});
            if let Err(e) = c.try_api_body(
                true,
                "block-storage",
                "POST",
                &format!("/groups/{id}/action"),
                Some(&body),
            ) {
                log_cleanup(&format!("delete group {id}: {e}"));
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn group_snapshots_against_real_openstack() {
    let Some(cloud) = Cloud::from_env("openstack_groups") else {
        return;
    };
    let (tmp, kubelet) = scratch::with_kubelet("cinder-csi-ostack-groups");
    let prefix = format!("grp-{}-", &uuid::Uuid::new_v4().simple().to_string()[..6]);
    // Dropped in reverse: the group snapshots and groups go before the volumes and snapshots.
    let mut objects = CloudObjects::new(&cloud);
    let _groupware = Groupware(&cloud, vec![prefix.clone()]);
    let _mounts = MountGuard(kubelet.clone());
    let mut driver = Driver::start(&cloud, NODE, tmp.path(), &kubelet);
    let channel = driver.connect().await;
    let mut ctl = Controller::new(channel.clone());
    let mut node = Node::new(channel.clone());
    let mut groups = Groups::new(channel);
    let node_id = cloud.node(NODE, "ID").to_string();
    let zone = cloud.node(NODE, "AZ").to_string();
    let vtype = cloud.var("OSTACK_GROUP_VOLUME_TYPE").to_string();
    let groups_before = helper_groups(&cloud).len();

    // Three volumes in the node's zone, attached and mounted, each with data of its own.
    let mut sources = Vec::new();
    let mut mounted = Vec::new();
    for i in 0..3 {
        let id = create(&mut ctl, &format!("{prefix}src-{i}"), &zone, &vtype, None).await;
        objects.volumes.push(id.clone());
        let m = mount(&mut ctl, &mut node, &node_id, &kubelet, &id).await;
        std::fs::write(m.target.join("own.txt"), format!("volume {i} of {prefix}")).unwrap();
        sources.push(id);
        mounted.push(m);
    }

    // Refusals first: nothing may be made by them.
    let e = try_group(
        &mut groups,
        &format!("{prefix}bad"),
        &sources,
        &[("group-type", cloud.var("OSTACK_INCONSISTENT_GROUP_TYPE"))],
    )
    .await
    .unwrap_err();
    assert_eq!(e.code(), Code::FailedPrecondition, "{e:?}");
    assert!(
        e.message()
            .contains(cloud.var("OSTACK_INCONSISTENT_GROUP_TYPE")),
        "{}",
        e.message()
    );
    let e = try_group(
        &mut groups,
        &format!("{prefix}bad"),
        &sources,
        &[("group-type", "no-such-type")],
    )
    .await
    .unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");
    assert_eq!(
        helper_groups(&cloud).len(),
        groups_before,
        "a refusal made a group"
    );

    // The writer: 0, 1, 2, ... round-robin over the three volumes, each write after the last.
    let writer = Writer::start(mounted.iter().map(|m| m.target.join("seq.log")).collect());
    while writer.written() < 3000 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let t = std::time::Instant::now();
    let g = group_first_answer(&mut groups, &format!("{prefix}g1"), &sources).await;
    let at = writer.written();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let total = writer.finish();
    println!(
        "group snapshot ready in {:?}, {at} of {total} writes done by then",
        t.elapsed()
    );
    assert_eq!(g.snapshots.len(), 3);
    for s in &g.snapshots {
        assert_eq!(s.group_snapshot_id, g.group_snapshot_id);
        objects.snapshots.push(s.snapshot_id.clone());
    }
    // What csi-snapshotter asks of each member once the group is ready: a member stays listed
    // by its id, ready, in its group.
    tokio::time::sleep(Duration::from_secs(5)).await;
    for s in &g.snapshots {
        let listed = call(
            "ListSnapshots",
            ctl.list_snapshots(timeout(
                pb::ListSnapshotsRequest {
                    snapshot_id: s.snapshot_id.clone(),
                    ..Default::default()
                },
                60,
            )),
        )
        .await
        .entries;
        assert_eq!(
            listed.len(),
            1,
            "member {} not listed by its id",
            s.snapshot_id
        );
        let m = listed[0].snapshot.as_ref().unwrap();
        assert!(
            m.ready_to_use,
            "member {} listed not ready: {m:?}",
            s.snapshot_id
        );
        assert_eq!(m.group_snapshot_id, g.group_snapshot_id);
    }
    let again = call(
        "GetVolumeGroupSnapshot",
        groups.get_volume_group_snapshot(timeout(
            pb::GetVolumeGroupSnapshotRequest {
                group_snapshot_id: g.group_snapshot_id.clone(),
                ..Default::default()
            },
            60,
        )),
    )
    .await
    .group_snapshot
    .unwrap();
    assert!(again.ready_to_use, "{again:?}");
    assert!(again.snapshots.iter().all(|m| m.ready_to_use), "{again:?}");
    // Cinder: one helper group holding the three volumes, the group snapshot of it.
    let hg = helper_groups(&cloud);
    assert_eq!(hg.len(), groups_before + 1, "{hg:?}");
    let gs = cloud
        .api(
            false,
            "block-storage",
            "GET",
            &format!("/group_snapshots/{}", g.group_snapshot_id),
        )
        .expect("the group snapshot in Cinder");
    let gid = gs["group_snapshot"]["group_id"]
        .as_str()
        .unwrap()
        .to_string();
    for v in &sources {
        assert_eq!(cloud.volume(v).unwrap()["group_id"], gid.as_str());
    }
    // A member alone cannot go; a member volume cannot either.
    let e = ctl
        .delete_snapshot(pb::DeleteSnapshotRequest {
            snapshot_id: g.snapshots[0].snapshot_id.clone(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::FailedPrecondition, "{e:?}");
    assert!(
        e.message().contains(&g.group_snapshot_id),
        "{}",
        e.message()
    );

    // Restore each member and check the sequence.
    let mut present = BTreeSet::new();
    let mut restored = Vec::new();
    for s in &g.snapshots {
        let i = sources
            .iter()
            .position(|v| *v == s.source_volume_id)
            .unwrap();
        let id = create(
            &mut ctl,
            &format!("{prefix}restore-{i}"),
            &zone,
            &vtype,
            Some(&s.snapshot_id),
        )
        .await;
        objects.volumes.push(id.clone());
        let m = mount(&mut ctl, &mut node, &node_id, &kubelet, &id).await;
        assert_eq!(
            std::fs::read_to_string(m.target.join("own.txt")).unwrap(),
            format!("volume {i} of {prefix}")
        );
        for n in numbers(&m.target.join("seq.log")) {
            assert_eq!(n % 3, i as u64);
            present.insert(n);
        }
        restored.push(m);
    }
    let last = *present.last().expect("the restores hold written numbers");
    let gaps: Vec<u64> = (0..=last).filter(|n| !present.contains(n)).collect();
    assert!(
        gaps.is_empty(),
        "0..={last} has gaps at {:?}",
        &gaps[..gaps.len().min(10)]
    );
    assert!(last < total, "the writer went on past the group snapshot");
    println!("the restores hold writes 0..={last} of {total}: one point in time");

    for m in restored.iter().chain(&mounted) {
        unmount(&mut ctl, &mut node, &node_id, m).await;
    }
    delete_group(&mut groups, &g.group_snapshot_id).await;
    delete_group(&mut groups, &g.group_snapshot_id).await;
    assert!(cloud
        .api(
            false,
            "block-storage",
            "GET",
            &format!("/group_snapshots/{}", g.group_snapshot_id)
        )
        .is_none());
    for s in &g.snapshots {
        assert!(cloud
            .api(
                false,
                "block-storage",
                "GET",
                &format!("/snapshots/{}", s.snapshot_id)
            )
            .is_none());
    }
    assert_eq!(
        helper_groups(&cloud).len(),
        groups_before,
        "the helper group is gone"
    );
    for v in &sources {
        assert!(cloud.volume(v).unwrap()["group_id"].is_null());
    }
    for id in restored
        .iter()
        .chain(&mounted)
        .map(|m| m.id.clone())
        .collect::<Vec<_>>()
    {
        call(
            "DeleteVolume",
            ctl.delete_volume(timeout(
                pb::DeleteVolumeRequest {
                    volume_id: id.clone(),
                    ..Default::default()
                },
                120,
            )),
        )
        .await;
    }
    objects.volumes.clear();
    objects.snapshots.clear();
    drop(driver);
}
