//! Volumes staged and published by upstream's cinder-csi-plugin v1.36.0, taken over by this
//! driver when the plugins are swapped under running pods (tests/harness/k8s/swap.sh does it in a
//! cluster; docs/MIGRATING.md). Upstream's mounts are made here as its node plugin makes them
//! (pkg/csi/cinder/nodeserver.go through k8s.io/mount-utils): `mkfs.ext4 -F -m0` / `mkfs.xfs -f`,
//! the staging mount by mount(8) (xfs with `nouuid`), the publish a bind mount then a
//! `bind,remount,rw`. This driver must report their stats, grow them online (xfs), unpublish
//! and unstage them, then stage the volume again without formatting it.
//! The real binary in node mode, real loop devices, mkfs and mount(8); needs root.

use crate::support::blockdev;

use std::path::Path;

use blockdev::{
    is_mounted, mount_cap, publish_req, run, stage_volume, unpublish_and_unstage, unpublish_req,
    unstage_volume, NodeEnv,
};
use cinder_csi::server::csi::pb::*;

const MIB: u64 = 1 << 20;

fn blkid(dev: &Path, tag: &str) -> String {
    run(
        "blkid",
        &["-p", "-o", "value", "-s", tag, dev.to_str().unwrap()],
    )
    .trim()
    .to_string()
}

fn total_bytes(path: &Path) -> u64 {
    let s = nix::sys::statvfs::statvfs(path).unwrap();
    s.blocks() * s.fragment_size()
}

async fn upstream_mounts_taken_over(fs: &str) {
    let mut env = NodeEnv::start();
    let id = format!("5f0e7d2c-upstream-{fs}-0123456789ab");
    let dev = env.volume(&id, 320 * MIB).dev.clone();
    let (staging, target) = (env.staging(&id), env.target(&id));
    let (d, s, t) = (
        dev.to_str().unwrap(),
        staging.to_str().unwrap(),
        target.to_str().unwrap(),
    );
    // Upstream's NodeStage (the kubelet made the staging dir) and NodePublish.
    std::fs::create_dir_all(&staging).unwrap();
    if fs == "xfs" {
        run("mkfs.xfs", &["-f", d]);
        run("mount", &["-t", "xfs", "-o", "nouuid", d, s]);
    } else {
        run("mkfs.ext4", &["-F", "-m0", d]);
        run("mount", &["-t", "ext4", d, s]);
    }
    std::fs::create_dir_all(&target).unwrap();
    run("mount", &["-t", fs, "-o", "bind", s, t]);
    run("mount", &["-t", fs, "-o", "bind,remount,rw", s, t]);
    std::fs::write(target.join("written-under-upstream"), &id).unwrap();
    let uuid = blkid(&dev, "UUID");
    assert!(!uuid.is_empty(), "{fs}: no UUID after upstream's mkfs");

    let mut c = env.client().await;
    let stats = c
        .node_get_volume_stats(NodeGetVolumeStatsRequest {
            volume_id: id.clone(),
            volume_path: t.into(),
            staging_target_path: s.into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(
        stats.usage.first().is_some_and(|u| u.total > 0),
        "{fs}: {stats:?}"
    );
    if fs == "xfs" {
        // Online expansion on upstream's mounts (ext4 grows at the next stage here).
        let before = total_bytes(&target);
        env.loops[0].grow(640 * MIB);
        let resp = c
            .node_expand_volume(NodeExpandVolumeRequest {
                volume_id: id.clone(),
                volume_path: t.into(),
                staging_target_path: s.into(),
                volume_capability: Some(mount_cap(fs)),
                capacity_range: Some(CapacityRange {
                    required_bytes: 640 * MIB as i64,
                    limit_bytes: 0,
                }),
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(resp.capacity_bytes, 640 * MIB as i64);
        assert!(
            total_bytes(&target) > before + 250 * MIB,
            "xfs not grown: {before} -> {}",
            total_bytes(&target)
        );
    }
    c.node_unpublish_volume(unpublish_req(&env, &id))
        .await
        .unwrap();
    assert!(
        !is_mounted(&target),
        "{fs}: upstream's publish still mounted"
    );
    unstage_volume(&mut c, &env, &id).await;
    assert!(
        !is_mounted(&staging),
        "{fs}: upstream's staging still mounted"
    );

    // The pod made again: staged and published by this driver, not formatted.
    stage_volume(&mut c, &env, &id, mount_cap(fs)).await;
    assert_eq!(blkid(&dev, "UUID"), uuid, "{fs}: formatted again");
    c.node_publish_volume(publish_req(&env, &id, mount_cap(fs), false))
        .await
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(target.join("written-under-upstream")).unwrap(),
        id
    );
    unpublish_and_unstage(&mut c, &env, &id).await;
    assert!(!is_mounted(&staging));
}

#[tokio::test]
async fn ext4_staged_by_upstream_is_taken_over() {
    upstream_mounts_taken_over("ext4").await;
}

#[tokio::test]
async fn xfs_staged_by_upstream_is_taken_over() {
    upstream_mounts_taken_over("xfs").await;
}
