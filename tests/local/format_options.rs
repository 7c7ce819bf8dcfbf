//! StorageClass format options travel CreateVolume → volume context → NodeStage → mkfs, on
//! real loop devices through the real socket.

use crate::support::local_rig;

use std::collections::HashMap;

use cinder_csi::server::csi::pb;
use local_rig::*;

async fn create_with(
    c: &cinder_csi::tools::ctl::Client,
    name: &str,
    params: &[(&str, &str)],
) -> pb::Volume {
    let req = pb::CreateVolumeRequest {
        parameters: params
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect::<HashMap<_, _>>(),
        ..create_req(name, GIB, "ext4")
    };
    create_volume(c, req).await
}

#[tokio::test]
async fn block_size_and_inode_ratio_reach_mkfs() {
    let mut rig = Rig::new();
    let c = rig.start().await;
    let v = create_with(
        &c,
        "fmt",
        &[("blockSize", "1024"), ("bytesPerInode", "65536")],
    )
    .await;
    assert_eq!(
        v.volume_context.get("blockSize").map(String::as_str),
        Some("1024")
    );
    let p = attach_and_mount(&rig, &c, &v, "ext4", "pod-fmt").await;

    let st = nix::sys::statvfs::statvfs(&p.target).unwrap();
    assert_eq!(st.block_size(), 1024, "mkfs got -b 1024");
    // 1 GiB at one inode per 64 KiB: 16384 inodes (mkfs rounds per group, so allow slack).
    let inodes = st.files();
    assert!((15_000..=20_000).contains(&inodes), "inode count {inodes}");

    unmount_and_detach(&c, &p).await;
    delete(&c, &v.volume_id).await;
    assert!(rig.stop());
}

#[tokio::test]
async fn a_bad_format_option_is_refused_before_anything_is_formatted() {
    let mut rig = Rig::new();
    let c = rig.start().await;
    // A positive integer passes the controller; the node knows ext4 needs a power of two.
    let v = create_with(&c, "badfmt", &[("blockSize", "3000")]).await;
    let publish_context = c
        .controller()
        .controller_publish_volume(c.req(pb::ControllerPublishVolumeRequest {
            volume_id: v.volume_id.clone(),
            node_id: NODE.into(),
            volume_capability: Some(mount_cap("ext4")),
            ..Default::default()
        }))
        .await
        .unwrap()
        .into_inner()
        .publish_context;
    let staging = rig.staging(&v.volume_id);
    let err = c
        .node()
        .node_stage_volume(c.req(pb::NodeStageVolumeRequest {
            volume_id: v.volume_id.clone(),
            publish_context,
            staging_target_path: staging.display().to_string(),
            volume_capability: Some(mount_cap("ext4")),
            volume_context: v.volume_context.clone(),
            ..Default::default()
        }))
        .await
        .unwrap_err();
    assert_eq!(err.code(), tonic::Code::InvalidArgument, "{err:?}");
    assert!(err.message().contains("blockSize"), "{}", err.message());
    assert!(rig.mounts().is_empty(), "nothing mounted");

    // The controller refuses what is not a positive number at all.
    let err = c
        .controller()
        .create_volume(c.req(pb::CreateVolumeRequest {
            name: "badfmt2".into(),
            volume_capabilities: vec![mount_cap("ext4")],
            parameters: HashMap::from([("inodeSize".to_string(), "big".to_string())]),
            ..Default::default()
        }))
        .await
        .unwrap_err();
    assert_eq!(err.code(), tonic::Code::InvalidArgument);

    c.controller()
        .controller_unpublish_volume(c.req(pb::ControllerUnpublishVolumeRequest {
            volume_id: v.volume_id.clone(),
            node_id: NODE.into(),
            ..Default::default()
        }))
        .await
        .unwrap();
    delete(&c, &v.volume_id).await;
    assert!(rig.stop());
}
