//! The whole CSI lifecycle of a volume against the real OpenStack test cloud
//! (tests/harness/openstack/ostack), through the real `cinder-csi` binary on a Unix socket:
//! CreateVolume (Cinder, in the node's zone) → ControllerPublish (Nova attach → in-use; the test hypervisor makes a
//! loop device) → NodeStage (mkfs + mount) → NodePublish → write → unpublish/unstage →
//! ControllerUnpublish (detach → available, device gone) → CreateSnapshot → CreateVolume from
//! it → attach + stage + publish that one and read the same data → delete everything.
//!
//! Runs only with CINDER_CSI_OSTACK_ENV=<state>/env.sh (see docs/TESTING.md); prints
//! "skipped: ..." otherwise.

use crate::support::openstack_support;
use crate::support::scratch;

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use cinder_csi::server::csi::pb;
use openstack_support::{
    call, mounts_under, requests, Cloud, CloudObjects, Controller, Driver, Identity, MountGuard,
    Node,
};

const NODE: usize = 1;
const GIB: i64 = 1 << 30;

/// The device mounted at `path` (major:minor from mountinfo), if any.
fn mounted_device(path: &Path) -> Option<String> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    info.lines()
        .map(|l| l.split(' ').collect::<Vec<_>>())
        .find(|f| f.len() > 4 && Path::new(f[4]) == path)
        .map(|f| f[2].to_string())
}

fn dev_numbers(dev: &Path) -> String {
    let rdev = std::fs::metadata(dev).expect("stat device").rdev();
    format!(
        "{}:{}",
        nix::sys::stat::major(rdev),
        nix::sys::stat::minor(rdev)
    )
}

struct Paths {
    staging: PathBuf,
    target: PathBuf,
}

fn paths(kubelet: &Path, name: &str) -> Paths {
    let staging = kubelet.join(format!(
        "plugins/kubernetes.io/csi/cinder.csi.openstack.org/{name}/globalmount"
    ));
    let target = kubelet.join(format!(
        "pods/pod-{name}/volumes/kubernetes.io~csi/{name}/mount"
    ));
    std::fs::create_dir_all(&staging).unwrap();
    std::fs::create_dir_all(target.parent().unwrap()).unwrap();
    Paths { staging, target }
}

/// ControllerPublish + NodeStage + NodePublish; checks the disk is the volume's loop device.
async fn attach_and_mount(
    cloud: &Cloud,
    ctl: &mut Controller,
    node: &mut Node,
    node_id: &str,
    volume_id: &str,
    p: &Paths,
) {
    let published = call(
        "ControllerPublishVolume",
        ctl.controller_publish_volume(pb::ControllerPublishVolumeRequest {
            volume_id: volume_id.into(),
            node_id: node_id.into(),
            volume_capability: Some(requests::mount_cap()),
            ..Default::default()
        }),
    )
    .await;
    assert_eq!(
        cloud.volume_status(volume_id),
        "in-use",
        "after ControllerPublish"
    );
    let staged_at = std::time::Instant::now();
    call(
        "NodeStageVolume",
        node.node_stage_volume(pb::NodeStageVolumeRequest {
            volume_id: volume_id.into(),
            publish_context: published.publish_context.clone(),
            staging_target_path: p.staging.display().to_string(),
            volume_capability: Some(requests::mount_cap()),
            ..Default::default()
        }),
    )
    .await;
    println!("NodeStage took {:?}", staged_at.elapsed());
    let link = cloud.disk_link(NODE, volume_id);
    let dev = std::fs::canonicalize(&link).expect("the hypervisor's by-id link");
    assert_eq!(
        mounted_device(&p.staging),
        Some(dev_numbers(&dev)),
        "staging path must be a mount of {} ({})",
        dev.display(),
        link.display()
    );
    call(
        "NodePublishVolume",
        node.node_publish_volume(pb::NodePublishVolumeRequest {
            volume_id: volume_id.into(),
            publish_context: published.publish_context,
            staging_target_path: p.staging.display().to_string(),
            target_path: p.target.display().to_string(),
            volume_capability: Some(requests::mount_cap()),
            ..Default::default()
        }),
    )
    .await;
    assert!(
        mounted_device(&p.target).is_some(),
        "target path is not a mount"
    );
}

/// NodeUnpublish + NodeUnstage + ControllerUnpublish; checks the disk is gone.
async fn unmount_and_detach(
    cloud: &Cloud,
    ctl: &mut Controller,
    node: &mut Node,
    node_id: &str,
    volume_id: &str,
    p: &Paths,
) {
    call(
        "NodeUnpublishVolume",
        node.node_unpublish_volume(pb::NodeUnpublishVolumeRequest {
            volume_id: volume_id.into(),
            target_path: p.target.display().to_string(),
        }),
    )
    .await;
    assert!(mounted_device(&p.target).is_none(), "target still mounted");
    call(
        "NodeUnstageVolume",
        node.node_unstage_volume(pb::NodeUnstageVolumeRequest {
            volume_id: volume_id.into(),
            staging_target_path: p.staging.display().to_string(),
        }),
    )
    .await;
    assert!(
        mounted_device(&p.staging).is_none(),
        "staging still mounted"
    );
    call(
        "ControllerUnpublishVolume",
        ctl.controller_unpublish_volume(pb::ControllerUnpublishVolumeRequest {
            volume_id: volume_id.into(),
            node_id: node_id.into(),
            ..Default::default()
        }),
    )
    .await;
    assert_eq!(
        cloud.volume_status(volume_id),
        "available",
        "after ControllerUnpublish"
    );
    let link = cloud.disk_link(NODE, volume_id);
    cloud.wait_for("the hypervisor to remove the disk", || !link.exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn volume_lifecycle_against_real_openstack() {
    let Some(cloud) = Cloud::from_env("openstack_lifecycle") else {
        return;
    };
    let (tmp, kubelet) = scratch::with_kubelet("cinder-csi-ostack-test");
    // Declared first so they drop last: mounts go after the driver, cloud objects after both.
    let mut objects = CloudObjects::new(&cloud);
    let _mounts = MountGuard(kubelet.clone());
    let mut driver = Driver::start(&cloud, NODE, tmp.path(), &kubelet);
    let channel = driver.connect().await;
    let mut identity = Identity::new(channel.clone());
    let mut ctl = Controller::new(channel.clone());
    let mut node = Node::new(channel);

    let info = call(
        "GetPluginInfo",
        identity.get_plugin_info(pb::GetPluginInfoRequest {}),
    )
    .await;
    assert_eq!(info.name, "cinder.csi.openstack.org");
    let node_info = call("NodeGetInfo", node.node_get_info(pb::NodeGetInfoRequest {})).await;
    let node_id = cloud.node(NODE, "ID").to_string();
    assert_eq!(
        node_info.node_id, node_id,
        "node id must come from the metadata service"
    );
    let zone = node_info
        .accessible_topology
        .as_ref()
        .and_then(|t| t.segments.get("topology.cinder.csi.openstack.org/zone"))
        .cloned();
    assert_eq!(
        zone.as_deref(),
        Some(cloud.node(NODE, "AZ")),
        "node topology"
    );

    // CreateVolume → a Cinder volume, in the node's zone as the provisioner asks for it
    // (WaitForFirstConsumer: the node's topology is requisite and preferred).
    let node_topology = node_info
        .accessible_topology
        .clone()
        .expect("node topology");
    let created = call(
        "CreateVolume",
        ctl.create_volume(pb::CreateVolumeRequest {
            name: format!("pvc-ostack-{}", uuid::Uuid::new_v4()),
            capacity_range: Some(pb::CapacityRange {
                required_bytes: GIB,
                limit_bytes: 0,
            }),
            volume_capabilities: vec![requests::mount_cap()],
            parameters: HashMap::from([("type".into(), cloud.var("OSTACK_VOLUME_TYPE").into())]),
            accessibility_requirements: Some(pb::TopologyRequirement {
                requisite: vec![node_topology.clone()],
                preferred: vec![node_topology.clone()],
            }),
            ..Default::default()
        }),
    )
    .await
    .volume
    .expect("CreateVolume returned no volume");
    let vol = created.volume_id.clone();
    objects.volumes.push(vol.clone());
    assert_eq!(created.capacity_bytes, GIB);
    assert_eq!(cloud.volume_status(&vol), "available");
    assert_eq!(
        cloud.volume(&vol).unwrap()["availability_zone"],
        cloud.node(NODE, "AZ"),
        "created in the node's zone"
    );
    assert_eq!(
        created.accessible_topology,
        vec![node_topology],
        "reported as the node reports its zone"
    );

    // Attach, mkfs + mount, write.
    let p1 = paths(&kubelet, "pv-one");
    attach_and_mount(&cloud, &mut ctl, &mut node, &node_id, &vol, &p1).await;
    let payload = format!(
        "written through cinder-csi at {:?}\n",
        std::time::SystemTime::now()
    );
    std::fs::write(p1.target.join("data.txt"), &payload).unwrap();
    nix::unistd::sync();
    unmount_and_detach(&cloud, &mut ctl, &mut node, &node_id, &vol, &p1).await;

    // Snapshot, and a new volume from it.
    let snap = call(
        "CreateSnapshot",
        ctl.create_snapshot(pb::CreateSnapshotRequest {
            source_volume_id: vol.clone(),
            name: format!("snapshot-ostack-{}", uuid::Uuid::new_v4()),
            ..Default::default()
        }),
    )
    .await
    .snapshot
    .expect("CreateSnapshot returned no snapshot");
    objects.snapshots.push(snap.snapshot_id.clone());
    let restored = call(
        "CreateVolume from snapshot",
        ctl.create_volume(pb::CreateVolumeRequest {
            name: format!("pvc-ostack-restore-{}", uuid::Uuid::new_v4()),
            capacity_range: Some(pb::CapacityRange {
                required_bytes: GIB,
                limit_bytes: 0,
            }),
            volume_capabilities: vec![requests::mount_cap()],
            volume_content_source: Some(pb::VolumeContentSource {
                r#type: Some(pb::volume_content_source::Type::Snapshot(
                    pb::volume_content_source::SnapshotSource {
                        snapshot_id: snap.snapshot_id.clone(),
                    },
                )),
            }),
            ..Default::default()
        }),
    )
    .await
    .volume
    .expect("CreateVolume returned no volume");
    let vol2 = restored.volume_id.clone();
    objects.volumes.push(vol2.clone());
    assert_ne!(vol2, vol);

    // The restored volume carries the data (and NodeStage must not have formatted it).
    let p2 = paths(&kubelet, "pv-two");
    attach_and_mount(&cloud, &mut ctl, &mut node, &node_id, &vol2, &p2).await;
    let read = std::fs::read_to_string(p2.target.join("data.txt")).expect("data.txt on restore");
    assert_eq!(read, payload);
    unmount_and_detach(&cloud, &mut ctl, &mut node, &node_id, &vol2, &p2).await;
    assert!(
        mounts_under(&kubelet).is_empty(),
        "mounts left: {:?}",
        mounts_under(&kubelet)
    );

    // Delete everything; Cinder forgets it.
    call(
        "DeleteSnapshot",
        ctl.delete_snapshot(pb::DeleteSnapshotRequest {
            snapshot_id: snap.snapshot_id.clone(),
            ..Default::default()
        }),
    )
    .await;
    let snap_path = format!("/snapshots/{}", snap.snapshot_id);
    cloud.wait_for("Cinder to delete the snapshot", || {
        cloud
            .api(false, "block-storage", "GET", &snap_path)
            .is_none()
    });
    for v in [&vol2, &vol] {
        call(
            "DeleteVolume",
            ctl.delete_volume(pb::DeleteVolumeRequest {
                volume_id: v.clone(),
                ..Default::default()
            }),
        )
        .await;
        cloud.wait_for("Cinder to delete the volume", || cloud.volume(v).is_none());
    }
    drop(driver);
}
