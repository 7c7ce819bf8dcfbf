//! The node service end to end: the real `cinder-csi` binary in node mode on a temp Unix
//! socket, real loop devices, real mkfs and mount(2). Needs root; everything is cleaned up by
//! the RAII helpers in `blockdev`, also when a test fails.

use crate::support::blockdev;

use std::collections::HashMap;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::Path;
use std::time::Duration;

use blockdev::{
    block_cap, is_mounted, mount_cap, mount_cap_as, mount_options, publish_req, run, stage_req,
    stage_volume, unpublish_req, unstage_volume, Client, NodeEnv,
};
use cinder_csi::server::csi::pb::volume_capability::access_mode::Mode;
use cinder_csi::server::csi::pb::*;
use tonic::Code;

const MIB: u64 = 1 << 20;

/// Stage and publish, each twice (idempotency).
async fn stage_publish(c: &mut Client, env: &NodeEnv, id: &str, cap: VolumeCapability, ro: bool) {
    for _ in 0..2 {
        stage_volume(c, env, id, cap.clone()).await;
    }
    for _ in 0..2 {
        c.node_publish_volume(publish_req(env, id, cap.clone(), ro))
            .await
            .unwrap();
    }
}

/// Unpublish and unstage, each twice (idempotency). The target is gone afterwards (the SP
/// created it); the staging directory stays, unmounted and empty (the CO owns it).
async fn unpublish_unstage(c: &mut Client, env: &NodeEnv, id: &str) {
    for _ in 0..2 {
        c.node_unpublish_volume(unpublish_req(env, id))
            .await
            .unwrap();
    }
    assert!(!env.target(id).exists(), "target left behind");
    for _ in 0..2 {
        unstage_volume(c, env, id).await;
    }
    let staging = env.staging(id);
    assert!(staging.is_dir(), "the CO's staging dir was removed");
    assert!(
        blockdev::mounts_below(&staging).is_empty(),
        "still mounted: {:?}",
        blockdev::mounts_below(&staging)
    );
    let left: Vec<_> = std::fs::read_dir(&staging).unwrap().flatten().collect();
    assert!(left.is_empty(), "left in the staging dir: {left:?}");
}

fn stats_req(id: &str, path: &Path) -> NodeGetVolumeStatsRequest {
    NodeGetVolumeStatsRequest {
        volume_id: id.into(),
        volume_path: path.display().to_string(),
        staging_target_path: String::new(),
    }
}

/// One blkid tag of `dev` ("" when blkid finds nothing, its exit status 2).
fn blkid(dev: &Path, tag: &str) -> String {
    let out = std::process::Command::new("blkid")
        .args(["-p", "-o", "value", "-s", tag])
        .arg(dev)
        .output()
        .unwrap();
    assert!(
        matches!(out.status.code(), Some(0 | 2)),
        "blkid {dev:?}: {out:?}"
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn uuid_of(dev: &Path) -> String {
    blkid(dev, "UUID")
}

async fn lifecycle(fs: &str) {
    let mut env = NodeEnv::start();
    let id = format!("lifecycle-{fs}-0123456789abcdef");
    let dev = env.volume(&id, 320 * MIB).dev.clone();
    let mut c = env.client().await;
    let cap = mount_cap(fs);

    stage_publish(&mut c, &env, &id, cap.clone(), false).await;
    assert_eq!(blkid(&dev, "TYPE"), fs);
    let uuid = uuid_of(&dev);
    let file = env.target(&id).join("data.txt");
    std::fs::write(&file, b"precious bytes").unwrap();
    let stats = c
        .node_get_volume_stats(NodeGetVolumeStatsRequest {
            volume_id: id.clone(),
            volume_path: env.target(&id).display().to_string(),
            staging_target_path: String::new(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(!stats.volume_condition.unwrap().abnormal);
    assert_eq!(stats.usage.len(), 2, "bytes and inodes: {:?}", stats.usage);
    assert!(stats.usage[0].total > 200 * MIB as i64, "{:?}", stats.usage);
    unpublish_unstage(&mut c, &env, &id).await;
    assert!(!is_mounted(&env.staging(&id)));

    stage_publish(&mut c, &env, &id, cap, false).await;
    assert_eq!(
        std::fs::read(env.target(&id).join("data.txt")).unwrap(),
        b"precious bytes"
    );
    assert_eq!(uuid_of(&dev), uuid, "the filesystem was recreated");
    unpublish_unstage(&mut c, &env, &id).await;
}

#[tokio::test]
async fn ext4_lifecycle_keeps_data() {
    lifecycle("ext4").await;
}

/// mkfs.ext3/ext4 run without -F: formatting a blank whole-disk device must still work.
#[tokio::test]
async fn ext3_lifecycle_keeps_data() {
    lifecycle("ext3").await;
}

#[tokio::test]
async fn xfs_lifecycle_keeps_data() {
    lifecycle("xfs").await;
}

#[tokio::test]
async fn btrfs_lifecycle_keeps_data() {
    lifecycle("btrfs").await;
}

#[tokio::test]
async fn devices_with_data_are_never_formatted() {
    let mut env = NodeEnv::start();
    let mut c = env.client().await;

    // An ext4 filesystem holding a file, staged with fsType xfs: mounted as ext4, intact.
    let dev = env.volume("hasdata", 64 * MIB).dev.clone();
    run("mkfs.ext4", &["-q", "-F", dev.to_str().unwrap()]);
    let scratch = env.root().join("scratch");
    std::fs::create_dir(&scratch).unwrap();
    run("mount", &[dev.to_str().unwrap(), scratch.to_str().unwrap()]);
    std::fs::write(scratch.join("keep"), b"mine").unwrap();
    run("umount", &[scratch.to_str().unwrap()]);
    let uuid = uuid_of(&dev);
    let cap = mount_cap("xfs");
    stage_publish(&mut c, &env, "hasdata", cap, false).await;
    assert_eq!(
        std::fs::read(env.target("hasdata").join("keep")).unwrap(),
        b"mine"
    );
    assert_eq!(uuid_of(&dev), uuid);
    unpublish_unstage(&mut c, &env, "hasdata").await;

    // A partition table (an MBR with one Linux partition, as fdisk writes it) and unknown
    // non-zero data: refused, left byte-for-byte alone.
    let parted = env.volume("parted", 64 * MIB).dev.clone();
    let mut mbr = [0u8; 512];
    mbr[446 + 4] = 0x83; // Linux
    mbr[446 + 8..446 + 12].copy_from_slice(&2048u32.to_le_bytes());
    mbr[446 + 12..446 + 16].copy_from_slice(&65536u32.to_le_bytes());
    mbr[510] = 0x55;
    mbr[511] = 0xaa;
    std::fs::OpenOptions::new()
        .write(true)
        .open(&parted)
        .unwrap()
        .write_all_at(&mbr, 0)
        .unwrap();
    assert_eq!(blkid(&parted, "PTTYPE"), "dos");
    let junk = env.volume("junk", 64 * MIB);
    std::fs::OpenOptions::new()
        .write(true)
        .open(&junk.dev)
        .unwrap()
        .write_all_at(b"not a filesystem, but somebody's data", 200_000)
        .unwrap();
    for id in ["parted", "junk"] {
        let l = env
            .loops
            .iter()
            .find(|l| l.file.ends_with(format!("{id}.img")))
            .unwrap();
        let before = l.read_backing(0, MIB as usize);
        for fs in ["ext4", "xfs"] {
            let err = c
                .node_stage_volume(stage_req(&env, id, mount_cap(fs)))
                .await
                .unwrap_err();
            assert_eq!(err.code(), Code::FailedPrecondition, "{id}: {err:?}");
            assert!(err.message().contains("refusing to format"), "{err:?}");
        }
        assert_eq!(
            l.read_backing(0, MIB as usize),
            before,
            "{id} was written to"
        );
        assert!(!is_mounted(&env.staging(id)));
    }
}

#[tokio::test]
async fn read_only_publish_refuses_writes_with_erofs() {
    let (env, mut c) = NodeEnv::with_volume("rovol", 64 * MIB).await;
    stage_publish(&mut c, &env, "rovol", mount_cap("ext4"), true).await;
    let err = std::fs::write(env.target("rovol").join("x"), b"x").unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::EROFS), "{err}");
    // The staging mount stays writable; only the published view is read-only.
    std::fs::write(env.staging("rovol").join("x"), b"x").unwrap();
    unpublish_unstage(&mut c, &env, "rovol").await;
}

/// The kubelet sees the node plugin's publish through mount propagation (the kubelet dir is
/// shared between their mount namespaces): a read-only publish must be read-only in the copy
/// that propagates too, not only in the plugin's own mount table. Here the copy is a peer
/// bind of the kubelet dir in this namespace.
#[tokio::test]
async fn read_only_publish_is_read_only_in_propagated_copies() {
    let mut env = NodeEnv::stopped(false);
    let kubelet = env.root().join("kubelet");
    let peer = env.root().join("peer");
    std::fs::create_dir(&peer).unwrap();
    let (k, p) = (kubelet.to_str().unwrap(), peer.to_str().unwrap());
    run("mount", &["--bind", k, k]);
    run("mount", &["--make-shared", k]);
    run("mount", &["--bind", k, p]);
    env.start_driver();
    env.volume("ropeer", 64 * MIB);
    let mut c = env.client().await;
    stage_publish(&mut c, &env, "ropeer", mount_cap("ext4"), true).await;
    let copy = peer.join(env.target("ropeer").strip_prefix(&kubelet).unwrap());
    assert_eq!(
        mount_options(&copy).as_deref().map(|o| o.split(',').next()),
        Some(Some("ro")),
        "the propagated copy {copy:?}"
    );
    let err = std::fs::write(copy.join("x"), b"x").unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::EROFS), "{err}");
    unpublish_unstage(&mut c, &env, "ropeer").await;
    assert!(!copy.exists(), "the copy outlived the unpublish");
}

#[tokio::test]
async fn block_publish_is_the_device_and_writes_reach_it() {
    let mut env = NodeEnv::start();
    let rdev = env.volume("blockvol", 64 * MIB).rdev();
    let mut c = env.client().await;
    stage_publish(
        &mut c,
        &env,
        "blockvol",
        block_cap(Mode::SingleNodeWriter),
        false,
    )
    .await;
    // Staging binds the device onto a file in the staging dir.
    let staged = env
        .staging("blockvol")
        .join(cinder_csi::driver::node::STAGED_DEVICE);
    assert_eq!(std::fs::metadata(&staged).unwrap().rdev(), rdev);
    assert!(is_mounted(&staged), "the staged device is not a bind mount");
    let target = env.target("blockvol");
    let meta = std::fs::metadata(&target).unwrap();
    assert_eq!(meta.rdev(), rdev, "target is not the volume's device");
    {
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(&target)
            .unwrap();
        f.write_all_at(b"block payload", 3 * MIB).unwrap();
        f.sync_all().unwrap();
    }
    let stats = c
        .node_get_volume_stats(NodeGetVolumeStatsRequest {
            volume_id: "blockvol".into(),
            volume_path: target.display().to_string(),
            staging_target_path: String::new(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(stats.usage[0].total, 64 * MIB as i64);
    let stats = c
        .node_get_volume_stats(stats_req("blockvol", &env.staging("blockvol")))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(stats.usage[0].total, 64 * MIB as i64, "at the staging path");
    // Block expand: rescan only, report the new size.
    env.loops[0].grow(96 * MIB);
    let resp = c
        .node_expand_volume(NodeExpandVolumeRequest {
            volume_id: "blockvol".into(),
            volume_path: target.display().to_string(),
            volume_capability: Some(block_cap(Mode::SingleNodeWriter)),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(resp.capacity_bytes, 96 * MIB as i64);
    unpublish_unstage(&mut c, &env, "blockvol").await;
    let l = &env.loops[0];
    assert_eq!(l.read_backing(3 * MIB, 13), b"block payload");
}

async fn online_expand(fs: &str) {
    let mut env = NodeEnv::start();
    let id = format!("grow-{fs}");
    env.volume(&id, 320 * MIB);
    let mut c = env.client().await;
    stage_publish(&mut c, &env, &id, mount_cap(fs), false).await;
    let before = nix::sys::statvfs::statvfs(&env.target(&id)).unwrap();
    env.loops[0].grow(640 * MIB);
    let req = NodeExpandVolumeRequest {
        volume_id: id.clone(),
        volume_path: env.target(&id).display().to_string(),
        capacity_range: Some(CapacityRange {
            required_bytes: 640 * MIB as i64,
            limit_bytes: 0,
        }),
        ..Default::default()
    };
    for _ in 0..2 {
        let resp = c
            .node_expand_volume(req.clone())
            .await
            .unwrap()
            .into_inner();
        assert_eq!(resp.capacity_bytes, 640 * MIB as i64);
    }
    let after = nix::sys::statvfs::statvfs(&env.target(&id)).unwrap();
    let total = |s: &nix::sys::statvfs::Statvfs| s.blocks() * s.fragment_size();
    assert!(
        total(&after) > total(&before) + 250 * MIB,
        "{fs}: {} -> {}",
        total(&before),
        total(&after)
    );
    unpublish_unstage(&mut c, &env, &id).await;
}

#[tokio::test]
async fn xfs_grows_online() {
    online_expand("xfs").await;
}

#[tokio::test]
async fn btrfs_grows_online() {
    online_expand("btrfs").await;
}

fn has_cap_sys_resource() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let eff = status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .unwrap()
        .trim();
    u64::from_str_radix(eff, 16).unwrap() & (1 << 24) != 0
}

#[tokio::test]
async fn ext4_grows_at_stage_and_online_refusal_is_clear() {
    let (env, mut c) = NodeEnv::with_volume("ext4grow", 128 * MIB).await;
    let cap = mount_cap("ext4");
    stage_volume(&mut c, &env, "ext4grow", cap.clone()).await;
    unstage_volume(&mut c, &env, "ext4grow").await;
    env.loops[0].grow(256 * MIB);

    // Restored-from-snapshot style: resizeRequired grows it while staging (offline for ext4).
    let mut req = stage_req(&env, "ext4grow", cap.clone());
    req.volume_context = HashMap::from([(
        "cinder.csi.openstack.org/resizeRequired".to_string(),
        "true".to_string(),
    )]);
    c.node_stage_volume(req).await.unwrap();
    let s = nix::sys::statvfs::statvfs(&env.staging("ext4grow")).unwrap();
    assert!(
        s.blocks() * s.fragment_size() > 200 * MIB,
        "not grown at stage"
    );

    // Online: the kernel needs CAP_SYS_RESOURCE.
    env.loops[0].grow(384 * MIB);
    let res = c
        .node_expand_volume(NodeExpandVolumeRequest {
            volume_id: "ext4grow".into(),
            volume_path: env.staging("ext4grow").display().to_string(),
            ..Default::default()
        })
        .await;
    if has_cap_sys_resource() {
        assert_eq!(res.unwrap().into_inner().capacity_bytes, 384 * MIB as i64);
    } else {
        let err = res.unwrap_err();
        assert_eq!(err.code(), Code::FailedPrecondition, "{err:?}");
        assert!(err.message().contains("CAP_SYS_RESOURCE"), "{err:?}");
    }
    unstage_volume(&mut c, &env, "ext4grow").await;
}

#[tokio::test]
async fn corrupted_mounts_are_cleaned_up() {
    // A shut-down xfs (what a failing disk leads to) answers every stat with EIO.
    let (env, mut c) = NodeEnv::with_volume("broken", 320 * MIB).await;
    stage_publish(&mut c, &env, "broken", mount_cap("xfs"), false).await;
    run(
        "xfs_io",
        &[
            "-x",
            "-c",
            "shutdown",
            env.staging("broken").to_str().unwrap(),
        ],
    );
    let err = std::fs::metadata(env.target("broken")).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::EIO), "{err}");
    let stats = c
        .node_get_volume_stats(NodeGetVolumeStatsRequest {
            volume_id: "broken".into(),
            volume_path: env.target("broken").display().to_string(),
            staging_target_path: String::new(),
        })
        .await
        .unwrap()
        .into_inner();
    let cond = stats.volume_condition.unwrap();
    assert!(cond.abnormal, "{cond:?}");
    unpublish_unstage(&mut c, &env, "broken").await;
    assert!(blockdev::mounts_below(env.root()).is_empty());
}

#[tokio::test]
async fn read_only_after_errors_is_an_abnormal_condition() {
    let (env, mut c) = NodeEnv::with_volume("roerr", 64 * MIB).await;
    stage_publish(&mut c, &env, "roerr", mount_cap("ext4"), false).await;
    // What ext4 errors=remount-ro does: the superblock turns read-only under rw mounts.
    run(
        "mount",
        &["-o", "remount,ro", env.staging("roerr").to_str().unwrap()],
    );
    let stats = c
        .node_get_volume_stats(NodeGetVolumeStatsRequest {
            volume_id: "roerr".into(),
            volume_path: env.target("roerr").display().to_string(),
            staging_target_path: String::new(),
        })
        .await
        .unwrap()
        .into_inner();
    let cond = stats.volume_condition.unwrap();
    assert!(
        cond.abnormal && cond.message.contains("read-only"),
        "{cond:?}"
    );
    unpublish_unstage(&mut c, &env, "roerr").await;
}

#[tokio::test]
async fn concurrent_stage_of_one_volume_gives_exactly_one_aborted() {
    let mut env = NodeEnv::start();
    env.volume("racer", 1024 * MIB);
    let mut a = env.client().await;
    let mut b = env.client().await;
    let cap = mount_cap("ext4");
    let (ra, rb) = tokio::join!(
        a.node_stage_volume(stage_req(&env, "racer", cap.clone())),
        b.node_stage_volume(stage_req(&env, "racer", cap.clone())),
    );
    let codes: Vec<Code> = [ra, rb]
        .into_iter()
        .map(|r| r.map_or_else(|e| e.code(), |_| Code::Ok))
        .collect();
    assert!(
        codes.contains(&Code::Ok) && codes.contains(&Code::Aborted),
        "{codes:?}"
    );
    unstage_volume(&mut a, &env, "racer").await;
}

#[tokio::test]
async fn bad_paths_and_missing_devices_are_rejected() {
    let (env, mut c) = NodeEnv::with_volume("pathvol", 64 * MIB).await;
    let cap = mount_cap("ext4");
    let kubelet = env.kubelet.display().to_string();
    for bad in [
        "/etc/cinder-csi-test".to_string(),
        "relative/globalmount".to_string(),
        format!("{kubelet}/../escape"),
        kubelet.clone(),
    ] {
        let mut req = stage_req(&env, "pathvol", cap.clone());
        req.staging_target_path = bad.clone();
        let err = c.node_stage_volume(req).await.unwrap_err();
        assert_eq!(err.code(), Code::InvalidArgument, "{bad}: {err:?}");
        let mut req = publish_req(&env, "pathvol", cap.clone(), false);
        req.target_path = bad.clone();
        let err = c.node_publish_volume(req).await.unwrap_err();
        assert_eq!(err.code(), Code::InvalidArgument, "{bad}: {err:?}");
    }
    assert!(!Path::new("/etc/cinder-csi-test").exists());
    let err = c
        .node_stage_volume(stage_req(&env, "pathvol", mount_cap("zfs")))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument, "{err:?}");
    assert_eq!(
        blkid(&env.loops[0].dev, "TYPE"),
        "",
        "nothing was formatted"
    );
    // A disk that never shows up: NotFound, answered before the caller's deadline, saying
    // what to check.
    let mut req = tonic::Request::new(stage_req(&env, "not-attached", cap));
    req.set_timeout(Duration::from_secs(2));
    let err = c.node_stage_volume(req).await.unwrap_err();
    assert_eq!(err.code(), Code::NotFound, "{err:?}");
    assert!(
        err.message()
            .contains("is volume not-attached attached to this node?"),
        "{err:?}"
    );
}

/// The seconds in "… after waiting N s: …".
fn waited_secs(msg: &str) -> f64 {
    let rest = msg.split("after waiting ").nth(1).expect(msg);
    rest.split(' ').next().unwrap().parse().expect(msg)
}

#[tokio::test]
async fn unknown_volume_is_not_found_after_the_bounded_wait() {
    let env = NodeEnv::start();
    let mut c = env.client().await;
    let wait = cinder_csi::driver::node::DEVICE_WAIT.as_secs_f64();
    for (id, cap, publish_code) in [
        (
            "unknown-mount",
            mount_cap("ext4"),
            Code::FailedPrecondition, // not staged; mount publish does not look for the disk
        ),
        (
            "unknown-block",
            block_cap(Mode::SingleNodeWriter),
            Code::NotFound,
        ),
    ] {
        // The caller allows far longer than the device wait: the wait, not the deadline, ends it.
        let mut req = tonic::Request::new(stage_req(&env, id, cap.clone()));
        req.set_timeout(Duration::from_secs(120));
        let err = c.node_stage_volume(req).await.unwrap_err();
        assert_eq!(err.code(), Code::NotFound, "{err:?}");
        let msg = err.message();
        assert!(
            msg.contains(&format!("no disk with serial {id}"))
                && msg.contains(&env.by_id.display().to_string())
                && msg.contains(&format!("is volume {id} attached to this node?")),
            "{msg}"
        );
        let waited = waited_secs(msg);
        assert!(
            waited >= wait - 0.5 && waited < wait + 5.0,
            "waited {waited} s, DEVICE_WAIT is {wait} s: {msg}"
        );
        assert!(!is_mounted(&env.staging(id)));
        // Publish never waits for a disk.
        let err = c
            .node_publish_volume(publish_req(&env, id, cap, false))
            .await
            .unwrap_err();
        assert_eq!(err.code(), publish_code, "{err:?}");
        assert!(!env.target(id).exists());
    }
}

#[tokio::test]
async fn restage_with_the_other_access_type_is_already_exists() {
    let mut env = NodeEnv::start();
    let bdev = env.volume("rawvol", 64 * MIB).dev.clone();
    env.volume("fsvol", 64 * MIB);
    let mut c = env.client().await;
    let ext4 = mount_cap("ext4");
    stage_volume(&mut c, &env, "rawvol", block_cap(Mode::SingleNodeWriter)).await;
    stage_volume(&mut c, &env, "fsvol", ext4.clone()).await;
    // Block-staged, asked for a filesystem: refused before anything probes or formats it.
    let err = c
        .node_stage_volume(stage_req(&env, "rawvol", ext4.clone()))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::AlreadyExists, "{err:?}");
    assert_eq!(blkid(&bdev, "TYPE"), "", "the raw volume was formatted");
    assert!(!is_mounted(&env.staging("rawvol")));
    // Mount-staged, asked for block.
    let err = c
        .node_stage_volume(stage_req(&env, "fsvol", block_cap(Mode::SingleNodeWriter)))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::AlreadyExists, "{err:?}");
    assert!(!env
        .staging("fsvol")
        .join(cinder_csi::driver::node::STAGED_DEVICE)
        .exists());
    // Another volume's staging path: FailedPrecondition either way.
    for (id, at, cap) in [
        ("rawvol", "fsvol", block_cap(Mode::SingleNodeWriter)),
        ("fsvol", "rawvol", block_cap(Mode::SingleNodeWriter)),
        ("fsvol", "rawvol", ext4.clone()),
    ] {
        let mut req = stage_req(&env, id, cap);
        req.staging_target_path = env.staging(at).display().to_string();
        let err = c.node_stage_volume(req).await.unwrap_err();
        assert_eq!(
            err.code(),
            Code::FailedPrecondition,
            "{id} at {at}: {err:?}"
        );
    }
    for id in ["rawvol", "fsvol"] {
        unstage_volume(&mut c, &env, id).await;
        assert!(blockdev::mounts_below(&env.staging(id)).is_empty());
        assert_eq!(std::fs::read_dir(env.staging(id)).unwrap().count(), 0);
    }
}

#[tokio::test]
async fn publish_without_staging_path_is_failed_precondition() {
    let (env, mut c) = NodeEnv::with_volume("nostage", 64 * MIB).await;
    for cap in [mount_cap("ext4"), block_cap(Mode::SingleNodeWriter)] {
        stage_volume(&mut c, &env, "nostage", cap.clone()).await;
        let mut req = publish_req(&env, "nostage", cap, false);
        req.staging_target_path.clear();
        let err = c.node_publish_volume(req).await.unwrap_err();
        assert_eq!(err.code(), Code::FailedPrecondition, "{err:?}");
        assert!(err.message().contains("staging_target_path"), "{err:?}");
        assert!(!env.target("nostage").exists(), "publish changed something");
        unstage_volume(&mut c, &env, "nostage").await;
    }
}

#[tokio::test]
async fn stats_are_not_found_where_the_volume_is_not() {
    let mut env = NodeEnv::start();
    env.volume("ext4vol", 128 * MIB);
    env.volume("btrfsvol", 320 * MIB);
    env.volume("rawvol", 64 * MIB);
    let mut c = env.client().await;
    stage_publish(&mut c, &env, "ext4vol", mount_cap("ext4"), false).await;
    stage_publish(&mut c, &env, "btrfsvol", mount_cap("btrfs"), false).await;
    stage_publish(
        &mut c,
        &env,
        "rawvol",
        block_cap(Mode::SingleNodeWriter),
        false,
    )
    .await;
    let ids = ["ext4vol", "btrfsvol", "rawvol"];
    for at in ids {
        for path in [env.staging(at), env.target(at)] {
            for id in ids {
                let res = c.node_get_volume_stats(stats_req(id, &path)).await;
                if id == at {
                    let s = res.unwrap().into_inner();
                    assert!(!s.volume_condition.unwrap().abnormal, "{id} at {path:?}");
                } else {
                    let err = res.unwrap_err();
                    assert_eq!(err.code(), Code::NotFound, "{id} at {path:?}: {err:?}");
                    assert!(err.message().contains(id), "{err:?}");
                }
            }
        }
    }
    // A plain directory, and a volume whose disk is not on this node.
    let plain = env.kubelet.join("pods/plain");
    std::fs::create_dir_all(&plain).unwrap();
    let err = c
        .node_get_volume_stats(stats_req("ext4vol", &plain))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::NotFound, "{err:?}");
    let err = c
        .node_get_volume_stats(stats_req("elsewhere", &env.target("ext4vol")))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::NotFound, "{err:?}");
    for id in ids {
        unpublish_unstage(&mut c, &env, id).await;
    }
}

#[tokio::test]
async fn read_only_block_publish_is_a_read_only_bind() {
    let (env, mut c) = NodeEnv::with_volume("roblock", 64 * MIB).await;
    let cap = || block_cap(Mode::SingleNodeWriter);
    // Read-only, then the other way round; each time the same target with the opposite
    // `readonly` is incompatible.
    for (ro, want) in [(true, "ro"), (false, "rw")] {
        stage_publish(&mut c, &env, "roblock", cap(), ro).await;
        let opts = mount_options(&env.target("roblock")).unwrap();
        assert!(opts.split(',').any(|o| o == want), "{opts}");
        let err = c
            .node_publish_volume(publish_req(&env, "roblock", cap(), !ro))
            .await
            .unwrap_err();
        assert_eq!(err.code(), Code::AlreadyExists, "readonly={ro}: {err:?}");
        unpublish_unstage(&mut c, &env, "roblock").await;
    }
}

#[tokio::test]
async fn info_and_capabilities() {
    let env = NodeEnv::start();
    let mut c = env.client().await;
    let info = c
        .node_get_info(NodeGetInfoRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(info.node_id, "n1");
    assert_eq!(info.max_volumes_per_node, 256);
    use node_service_capability::{rpc::Type as T, Type};
    let caps: Vec<T> = c
        .node_get_capabilities(NodeGetCapabilitiesRequest {})
        .await
        .unwrap()
        .into_inner()
        .capabilities
        .into_iter()
        .filter_map(|c| match c.r#type {
            Some(Type::Rpc(r)) => T::try_from(r.r#type).ok(),
            None => None,
        })
        .collect();
    for want in [
        T::StageUnstageVolume,
        T::ExpandVolume,
        T::GetVolumeStats,
        T::VolumeCondition,
        T::SingleNodeMultiWriter,
    ] {
        assert!(caps.contains(&want), "{want:?} missing from {caps:?}");
    }
    let err = c
        .node_get_volume_stats(NodeGetVolumeStatsRequest {
            volume_id: "v".into(),
            volume_path: env.kubelet.join("nothing/here").display().to_string(),
            staging_target_path: String::new(),
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::NotFound, "{err:?}");
}

/// What the kubelet sends for an in-tree `kubernetes.io/cinder` volume after CSI migration
/// (csi-translation-lib: volumeHandle = spec.cinder.volumeID, fsType as given, volumeAttributes
/// `{}`; a ReadWriteOnce PV or inline volume is SINGLE_NODE_MULTI_WRITER; the publish context is
/// the VolumeAttachment's; podInfoOnMount adds the pod's names and `ephemeral: "false"`, also
/// for an inline `cinder:` volume, which the kubelet treats as a persistent one). `readonly`
/// comes from the pod's `persistentVolumeClaim.readOnly` (the PV's `spec.cinder.readOnly` is
/// never passed to the node). An in-tree PV without fsType was ext4 in-tree; it is here too.
#[tokio::test]
async fn in_tree_migration_request_shapes() {
    let mut env = NodeEnv::start();
    let mut c = env.client().await;
    let pod_info = |uid: &str| -> HashMap<String, String> {
        [
            ("csi.storage.k8s.io/pod.name", "ro-1"),
            ("csi.storage.k8s.io/pod.namespace", "cinder-csi-intree"),
            ("csi.storage.k8s.io/pod.uid", uid),
            ("csi.storage.k8s.io/serviceAccount.name", "default"),
            ("csi.storage.k8s.io/ephemeral", "false"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
    };
    for (id, fs, want) in [
        ("b4759440-a7f0-4bf1-a35b-d2f589606532", "ext4", "ext4"),
        ("64b73483-792d-4688-a02b-5780fcda58e6", "xfs", "xfs"),
        ("0c0a1b2c-3d4e-4f50-8a6b-7c8d9e0f1a2b", "", "ext4"),
    ] {
        let dev = env.volume(id, 320 * MIB).dev.clone();
        let cap = mount_cap_as(fs, Mode::SingleNodeMultiWriter);
        let publish_context = HashMap::from([("DevicePath".to_string(), "/dev/vdb".to_string())]);
        let stage = NodeStageVolumeRequest {
            publish_context: publish_context.clone(),
            volume_context: HashMap::new(),
            ..stage_req(&env, id, cap.clone())
        };
        c.node_stage_volume(stage).await.unwrap();
        assert_eq!(blkid(&dev, "TYPE"), want, "{id}: fs_type [{fs}]");
        let publish = |ro: bool, uid: &str| NodePublishVolumeRequest {
            publish_context: publish_context.clone(),
            volume_context: pod_info(uid),
            ..publish_req(&env, id, cap.clone(), ro)
        };
        c.node_publish_volume(publish(false, "3f1cf9f9"))
            .await
            .unwrap();
        std::fs::write(env.target(id).join("keep"), id).unwrap();
        c.node_unpublish_volume(unpublish_req(&env, id))
            .await
            .unwrap();
        // The readOnly claim: the same volume again, read-only.
        for _ in 0..2 {
            c.node_publish_volume(publish(true, "64885218"))
                .await
                .unwrap();
        }
        assert_eq!(
            mount_options(&env.target(id))
                .as_deref()
                .map(|o| o.split(',').next()),
            Some(Some("ro"))
        );
        assert_eq!(
            std::fs::read_to_string(env.target(id).join("keep")).unwrap(),
            id
        );
        let err = std::fs::write(env.target(id).join("new"), b"x").unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::EROFS), "{err}");
        unpublish_unstage(&mut c, &env, id).await;
    }
}
