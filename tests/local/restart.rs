//! kill -9 of a driver holding a created, attached, staged and published volume; a new
//! driver on the same state directory serves every RPC on it, with the data intact and
//! nothing leaked or doubled. Needs root.

use crate::support::local_rig;

use cinder_csi::server::csi::pb;
use local_rig::*;

const FS: &str = "xfs";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_and_restart_loses_and_leaks_nothing() {
    let mut rig = Rig::new();
    let c = rig.start().await;
    let v = create(&c, "pvc-restart", GIB, FS, None).await;
    let idle = create(&c, "pvc-idle", GIB, FS, None).await;
    let p = attach_and_mount(&rig, &c, &v, FS, "pod-1").await;
    let data = pattern(7, 8 << 20);
    write_durable(&p.target.join("data.bin"), &data);
    let devices = rig.loop_devices();
    assert_eq!(devices.len(), 1, "one attached volume, one loop device");

    rig.kill9();
    drop(c);
    // The mounts and the device outlive the driver, as they do on a real node.
    assert_eq!(rig.loop_devices(), devices);
    assert!(rig.mounts().contains(&p.target));

    let c = rig.start().await;
    assert_eq!(
        rig.loop_devices(),
        devices,
        "the same device, no second one"
    );

    // The controller still knows the volumes and where they are published.
    let got = c
        .controller()
        .controller_get_volume(c.req(pb::ControllerGetVolumeRequest {
            volume_id: v.volume_id.clone(),
        }))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        got.status.unwrap().published_node_ids,
        vec![NODE.to_string()]
    );
    let list = c
        .controller()
        .list_volumes(c.req(pb::ListVolumesRequest::default()))
        .await
        .unwrap()
        .into_inner();
    let mut ids: Vec<_> = list
        .entries
        .iter()
        .map(|e| e.volume.as_ref().unwrap().volume_id.clone())
        .collect();
    ids.sort();
    let mut want = vec![v.volume_id.clone(), idle.volume_id.clone()];
    want.sort();
    assert_eq!(ids, want);

    // kubelet and the attacher retry: every call is idempotent on the surviving state.
    let again = c
        .controller()
        .controller_publish_volume(c.req(pb::ControllerPublishVolumeRequest {
            volume_id: v.volume_id.clone(),
            node_id: NODE.into(),
            volume_capability: Some(mount_cap(FS)),
            volume_context: v.volume_context.clone(),
            ..Default::default()
        }))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(again.publish_context, p.publish_context);
    stage_and_publish(&c, &p, FS).await;
    assert_eq!(rig.loop_devices(), devices);
    let read = std::fs::read(p.target.join("data.bin")).unwrap();
    assert!(read == data, "data changed across the restart");

    // Online expand after the restart: the surviving device grows.
    let before = fs_bytes(&c, &p).await;
    c.controller()
        .controller_expand_volume(c.req(pb::ControllerExpandVolumeRequest {
            volume_id: v.volume_id.clone(),
            capacity_range: capacity(2 * GIB),
            volume_capability: Some(mount_cap(FS)),
            ..Default::default()
        }))
        .await
        .unwrap();
    c.node()
        .node_expand_volume(c.req(pb::NodeExpandVolumeRequest {
            volume_id: v.volume_id.clone(),
            volume_path: p.target.display().to_string(),
            staging_target_path: p.staging.display().to_string(),
            capacity_range: capacity(2 * GIB),
            volume_capability: Some(mount_cap(FS)),
            ..Default::default()
        }))
        .await
        .unwrap();
    assert!(fs_bytes(&c, &p).await > before + GIB / 2);

    // A second kill -9 in the middle of nothing, then the whole teardown through the API.
    rig.kill9();
    let c = rig.start().await;
    unmount_and_detach(&c, &p).await;
    delete(&c, &v.volume_id).await;
    delete(&c, &idle.volume_id).await;
    assert!(rig.mounts().is_empty(), "mounts left: {:?}", rig.mounts());
    assert!(
        rig.loop_devices().is_empty(),
        "devices left: {:?}",
        rig.loop_devices()
    );
    assert!(
        rig.data_files().is_empty(),
        "files left: {:?}",
        rig.data_files()
    );
    assert!(rig.stop(), "driver did not exit cleanly:\n{}", rig.log());
}
