//! Bad input to the node service gets the CSI spec's code and a message saying what to fix,
//! with nothing changed: names too long, mount flags unknown or not allowed (at stage and at
//! publish), flag values the kernel refuses, stats/expand where no volume is, and a
//! SINGLE_NODE_SINGLE_WRITER volume at a second target. What kubelet itself sends keeps
//! working. The real binary in node mode on loop devices; needs root; cleaned up by the RAII
//! helpers in `blockdev`, also when a test fails.

use crate::support::blockdev;

use std::path::{Path, PathBuf};

use blockdev::{
    block_cap, is_mounted, mount_cap_as, mount_cap_flags, publish_req, stage_and_publish,
    stage_req, stage_volume, unpublish_and_unstage, unpublish_req, unstage_volume, NodeEnv,
};
use cinder_csi::server::csi::pb::volume_capability::access_mode::Mode;
use cinder_csi::server::csi::pb::*;
use tonic::Code;

const MIB: u64 = 1 << 20;

fn snw(flags: &[&str]) -> VolumeCapability {
    mount_cap_flags("ext4", Mode::SingleNodeWriter, flags)
}

fn code<T: std::fmt::Debug>(res: Result<T, tonic::Status>, want: Code, what: &str) -> String {
    let err = res.expect_err(what);
    assert_eq!(err.code(), want, "{what}: {err:?}");
    err.message().to_string()
}

fn blank(dev: &Path) -> bool {
    let mut head = vec![0u8; 1 << 20];
    std::os::unix::fs::FileExt::read_exact_at(&std::fs::File::open(dev).unwrap(), &mut head, 0)
        .unwrap();
    head.iter().all(|&b| b == 0)
}

/// Another pod's target path for volume `id`.
fn second_target(env: &NodeEnv, id: &str) -> PathBuf {
    env.kubelet
        .join("pods/0f1e2d3c/volumes/kubernetes.io~csi")
        .join(id)
        .join("mount")
}

fn at(mut req: NodePublishVolumeRequest, target: &Path) -> NodePublishVolumeRequest {
    req.target_path = target.display().to_string();
    req
}

#[tokio::test]
async fn names_too_long_are_invalid_argument() {
    let mut env = NodeEnv::start();
    let id = "toolong";
    env.volume(id, 64 * MIB);
    let mut c = env.client().await;
    // 10 KiB of 200-byte names, and one name of 300 bytes.
    let deep: String = (0..50).map(|_| format!("/{}", "d".repeat(200))).collect();
    let long = env.kubelet.join(format!("pods{deep}"));
    let wide = env.kubelet.join(format!("pods/{}", "w".repeat(300)));
    for p in [&long, &wide] {
        let mut req = stage_req(&env, id, snw(&[]));
        req.staging_target_path = p.display().to_string();
        let msg = code(
            c.node_stage_volume(req).await,
            Code::InvalidArgument,
            "stage",
        );
        assert!(msg.contains("shorter path"), "{msg}");
    }
    stage_volume(&mut c, &env, id, snw(&[])).await;
    for p in [&long, &wide] {
        let req = at(publish_req(&env, id, snw(&[]), false), p);
        let msg = code(
            c.node_publish_volume(req).await,
            Code::InvalidArgument,
            "publish",
        );
        assert!(msg.contains("shorter path"), "{msg}");
    }
    assert!(!env.kubelet.join("pods").exists(), "something was created");
    unstage_volume(&mut c, &env, id).await;
}

#[tokio::test]
async fn unknown_or_forbidden_mount_flags_are_refused_at_stage_and_at_publish() {
    let mut env = NodeEnv::start();
    let id = "badflags";
    let dev = env.volume(id, 64 * MIB).dev.clone();
    let mut c = env.client().await;
    for flags in [
        &["notaflag"][..],
        &["noatime,nouuid"],
        &["bind"],
        &["rshared"],
    ] {
        let msg = code(
            c.node_stage_volume(stage_req(&env, id, snw(flags))).await,
            Code::InvalidArgument,
            &format!("stage with {flags:?}"),
        );
        assert!(msg.contains("mount flag"), "{msg}");
    }
    assert!(blank(&dev), "a refused stage wrote to the disk");
    assert!(!env.staging(id).exists());

    stage_volume(&mut c, &env, id, snw(&[])).await;
    for flags in [
        &["notaflag"][..],
        &["remount"],
        &["noatime", "make-private"],
    ] {
        let msg = code(
            c.node_publish_volume(publish_req(&env, id, snw(flags), false))
                .await,
            Code::InvalidArgument,
            &format!("publish with {flags:?}"),
        );
        assert!(msg.contains("mount flag"), "{msg}");
    }
    assert!(
        !env.target(id).exists(),
        "a refused publish created the target"
    );
    unstage_volume(&mut c, &env, id).await;
}

#[tokio::test]
async fn a_flag_value_the_kernel_refuses_is_invalid_argument() {
    let mut env = NodeEnv::start();
    let id = "badvalue";
    env.volume(id, 64 * MIB);
    let mut c = env.client().await;
    let msg = code(
        c.node_stage_volume(stage_req(&env, id, snw(&["commit=soon"])))
            .await,
        Code::InvalidArgument,
        "stage with commit=soon",
    );
    assert!(msg.contains("commit=soon"), "{msg}");
    assert!(!is_mounted(&env.staging(id)));
}

#[tokio::test]
async fn flags_kubelet_and_storage_classes_send_keep_working() {
    let mut env = NodeEnv::start();
    let id = "goodflags";
    env.volume(id, 64 * MIB);
    let mut c = env.client().await;
    let mut flags = vec![
        "noatime",
        "nodiratime,nosuid",
        "discard",
        "nofail",
        "data=ordered",
    ];
    // kubelet adds `context=` only on SELinux nodes (CSIDriver seLinuxMount).
    let selinux = Path::new("/sys/fs/selinux/enforce").exists();
    let ctx = "context=\"system_u:object_r:container_file_t:s0:c0,c1\"";
    if selinux {
        flags.push(ctx);
    } else {
        eprintln!("no SELinux on this host: {ctx} is not mounted here");
    }
    let cap = snw(&flags);
    stage_and_publish(&mut c, &env, id, cap, false).await;
    assert!(is_mounted(&env.target(id)));
    unpublish_and_unstage(&mut c, &env, id).await;
}

#[tokio::test]
async fn stats_and_expand_where_no_volume_is_are_not_found() {
    let env = NodeEnv::start();
    let mut c = env.client().await;
    let empty = env
        .kubelet
        .join("pods/none/volumes/kubernetes.io~csi/v/mount");
    std::fs::create_dir_all(&empty).unwrap();
    let outside = env.root().join("elsewhere");
    std::fs::create_dir_all(&outside).unwrap();
    for path in [
        PathBuf::from("some/path"),
        empty.clone(),
        outside,
        env.kubelet.join("pods/missing"),
    ] {
        let p = path.display().to_string();
        code(
            c.node_get_volume_stats(NodeGetVolumeStatsRequest {
                volume_id: "novolume".into(),
                volume_path: p.clone(),
                staging_target_path: String::new(),
            })
            .await,
            Code::NotFound,
            &format!("stats at {p}"),
        );
        code(
            c.node_expand_volume(NodeExpandVolumeRequest {
                volume_id: "novolume".into(),
                volume_path: p.clone(),
                ..Default::default()
            })
            .await,
            Code::NotFound,
            &format!("expand at {p}"),
        );
    }
    // Malformed stays InvalidArgument.
    code(
        c.node_get_volume_stats(NodeGetVolumeStatsRequest {
            volume_id: "novolume".into(),
            volume_path: format!("{}/../x", env.kubelet.display()),
            staging_target_path: String::new(),
        })
        .await,
        Code::InvalidArgument,
        "stats at a path with ..",
    );
}

async fn second_target_case(cap: VolumeCapability, single: bool) {
    let mut env = NodeEnv::start();
    let id = "snsw";
    env.volume(id, 64 * MIB);
    let mut c = env.client().await;
    stage_volume(&mut c, &env, id, cap.clone()).await;
    let first = publish_req(&env, id, cap.clone(), false);
    c.node_publish_volume(first.clone()).await.unwrap();
    // The same target again is idempotent.
    c.node_publish_volume(first).await.unwrap();
    let other = second_target(&env, id);
    let second = at(publish_req(&env, id, cap.clone(), false), &other);
    if single {
        let msg = code(
            c.node_publish_volume(second.clone()).await,
            Code::FailedPrecondition,
            "second target of a SINGLE_NODE_SINGLE_WRITER volume",
        );
        assert!(msg.contains("SINGLE_NODE_SINGLE_WRITER"), "{msg}");
        assert!(!other.exists(), "the refused target was created");
        // Once the first is unpublished the second may go ahead.
        c.node_unpublish_volume(unpublish_req(&env, id))
            .await
            .unwrap();
    }
    c.node_publish_volume(second).await.unwrap();
    c.node_unpublish_volume(NodeUnpublishVolumeRequest {
        volume_id: id.into(),
        target_path: other.display().to_string(),
    })
    .await
    .unwrap();
    unpublish_and_unstage(&mut c, &env, id).await;
}

#[tokio::test]
async fn single_node_single_writer_is_published_at_one_target_only() {
    second_target_case(mount_cap_as("ext4", Mode::SingleNodeSingleWriter), true).await;
}

#[tokio::test]
async fn single_node_single_writer_block_is_published_at_one_target_only() {
    second_target_case(block_cap(Mode::SingleNodeSingleWriter), true).await;
}

#[tokio::test]
async fn multi_writer_modes_publish_at_many_targets() {
    second_target_case(mount_cap_as("ext4", Mode::SingleNodeMultiWriter), false).await;
    second_target_case(snw(&[]), false).await;
}
