//! The node service on real loop devices, for what must never happen to a disk: a read-only
//! stage that writes (journal/log replay), a stale superblock under a new partition table
//! mounted whole, a read-only publish that drops nosuid/nodev/noexec, an unstage under a
//! pod, a broken staging mount that stage can never get past. Needs root; cleaned up by the
//! RAII helpers in `blockdev`, also when a test fails.

use crate::support::blockdev;

use std::collections::hash_map::DefaultHasher;
use std::hash::Hasher;
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::Path;

use blockdev::{
    is_mounted, mount_cap, mount_cap_as, mount_cap_flags, publish_req, run, stage_and_publish,
    stage_req, stage_volume, unpublish_and_unstage, unstage_req, unstage_volume, NodeEnv,
};
use cinder_csi::server::csi::pb::volume_capability::access_mode::Mode;
use cinder_csi::server::csi::pb::*;
use tonic::Code;

const MIB: u64 = 1 << 20;

/// Hash of the whole backing file: what reached the "disk".
fn disk_hash(env: &NodeEnv, id: &str) -> u64 {
    let l = env
        .loops
        .iter()
        .find(|l| l.file.ends_with(format!("{id}.img")))
        .unwrap();
    let mut f = std::fs::File::open(&l.file).unwrap();
    let mut h = DefaultHasher::new();
    let mut buf = vec![0u8; 4 << 20];
    loop {
        let n = f.read(&mut buf).unwrap();
        if n == 0 {
            return h.finish();
        }
        h.write(&buf[..n]);
    }
}

/// The per-mount options (`ro,nosuid,…`) of the topmost mount at `path`, which must be one.
fn mount_options(path: &Path) -> String {
    blockdev::mount_options(path).unwrap_or_else(|| panic!("{path:?} is not mounted"))
}

/// Make `fs` on the volume's disk, write a file, then shut the filesystem down without
/// flushing its log (what a crashed node leaves) and unmount it: the journal/log now needs
/// recovery, which a mount would replay.
fn dirty_filesystem(env: &NodeEnv, dev: &Path, fs: &str) {
    let d = dev.to_str().unwrap();
    match fs {
        "xfs" => run("mkfs.xfs", &["-q", d]),
        _ => run(&format!("mkfs.{fs}"), &["-q", d]),
    };
    let scratch = env.root().join(format!("scratch-{fs}"));
    std::fs::create_dir(&scratch).unwrap();
    let s = scratch.to_str().unwrap();
    run("mount", &[d, s]);
    std::fs::write(scratch.join("before"), b"synced").unwrap();
    run("sync", &[]);
    std::fs::write(scratch.join("after"), b"in the journal only").unwrap();
    run("xfs_io", &["-x", "-c", "shutdown", s]);
    run("umount", &[s]);
    // Otherwise "the disk is unchanged" below would hold trivially.
    let dirty = match fs {
        // `state: <DIRTY>` (a cleanly unmounted log shows `<CLEAN>`).
        "xfs" => run("xfs_logprint", &["-t", d]).contains("<DIRTY>"),
        _ => run("dumpe2fs", &["-h", d])
            .lines()
            .any(|l| l.starts_with("Filesystem features:") && l.contains("needs_recovery")),
    };
    assert!(
        dirty,
        "{fs} on {d} does not need recovery: the test would prove nothing"
    );
}

#[tokio::test]
async fn read_only_stage_never_replays_a_journal() {
    let mut env = NodeEnv::start();
    let mut c = env.client().await;
    for fs in ["ext4", "ext3", "xfs"] {
        let id = format!("dirty-{fs}");
        let dev = env.volume(&id, 320 * MIB).dev.clone();
        dirty_filesystem(&env, &dev, fs);
        let before = disk_hash(&env, &id);
        // A plain read-only mount here would replay the journal and change the disk (checked
        // by hand: ext4 and xfs both do); the stage must not.
        let ro = mount_cap_as(fs, Mode::MultiNodeReaderOnly);
        stage_volume(&mut c, &env, &id, ro.clone()).await;
        assert!(is_mounted(&env.staging(&id)), "{fs}");
        assert!(mount_options(&env.staging(&id)).starts_with("ro"), "{fs}");
        // Readable; without the replay it shows the filesystem as of its last checkpoint
        // (xfs keeps even synced metadata only in the log until then).
        std::fs::read_dir(env.staging(&id)).unwrap();
        c.node_publish_volume(publish_req(&env, &id, ro, true))
            .await
            .unwrap();
        unpublish_and_unstage(&mut c, &env, &id).await;
        assert_eq!(
            disk_hash(&env, &id),
            before,
            "read-only stage of {fs} wrote to the disk"
        );
    }
    // btrfs: the log-replay option must be one this kernel accepts.
    let dev = env.volume("ro-btrfs", 320 * MIB).dev.clone();
    run("mkfs.btrfs", &["-q", dev.to_str().unwrap()]);
    let before = disk_hash(&env, "ro-btrfs");
    stage_volume(
        &mut c,
        &env,
        "ro-btrfs",
        mount_cap_as("btrfs", Mode::SingleNodeReaderOnly),
    )
    .await;
    unstage_volume(&mut c, &env, "ro-btrfs").await;
    assert_eq!(disk_hash(&env, "ro-btrfs"), before);
}

/// Write an MBR partition entry (Linux, from sector 2048) and the boot signature, leaving the
/// rest of the first sector as it is: what sfdisk writes over a whole-disk filesystem.
fn write_mbr(dev: &Path, kind: u8) {
    let mut e = [0u8; 16];
    e[4] = kind;
    e[8..12].copy_from_slice(&2048u32.to_le_bytes());
    e[12..16].copy_from_slice(&65536u32.to_le_bytes());
    let f = std::fs::OpenOptions::new().write(true).open(dev).unwrap();
    f.write_all_at(&e, 446).unwrap();
    f.write_all_at(&[0x55, 0xaa], 510).unwrap();
    f.sync_all().unwrap();
}

#[tokio::test]
async fn stale_superblock_under_a_partition_table_is_refused() {
    let mut env = NodeEnv::start();
    let mut c = env.client().await;
    // ext4 on the whole disk, then a dos label with one partition (sfdisk keeps the old
    // superblock at 1 KiB); xfs, then a GPT (parted keeps sector 0's boot code area, and
    // with it "XFSB").
    let ext = env.volume("repart-ext4", 64 * MIB).dev.clone();
    run("mkfs.ext4", &["-q", ext.to_str().unwrap()]);
    write_mbr(&ext, 0x83);
    let xfs = env.volume("repart-xfs", 320 * MIB).dev.clone();
    run("mkfs.xfs", &["-q", xfs.to_str().unwrap()]);
    write_mbr(&xfs, 0xee);
    std::fs::OpenOptions::new()
        .write(true)
        .open(&xfs)
        .unwrap()
        .write_all_at(b"EFI PART", 512)
        .unwrap();
    for (id, fs, table) in [("repart-ext4", "ext4", "dos"), ("repart-xfs", "xfs", "gpt")] {
        let before = disk_hash(&env, id);
        for want in ["ext4", "xfs"] {
            let err = c
                .node_stage_volume(stage_req(&env, id, mount_cap(want)))
                .await
                .unwrap_err();
            assert_eq!(err.code(), Code::FailedPrecondition, "{id}: {err:?}");
            let m = err.message();
            assert!(
                m.contains(&format!("{fs} filesystem"))
                    && m.contains(&format!("{table} partition table"))
                    && m.contains("refusing to format or mount"),
                "{m}"
            );
        }
        assert!(!is_mounted(&env.staging(id)));
        assert_eq!(disk_hash(&env, id), before, "{id} was written to");
    }
}

#[tokio::test]
async fn read_only_publish_keeps_the_mount_flags() {
    let (env, mut c) = NodeEnv::with_volume("flags", 64 * MIB).await;
    // Userspace-only options (fstab habits) are accepted and never reach the kernel.
    let rw = mount_cap_flags(
        "ext4",
        Mode::SingleNodeWriter,
        &[
            "nosuid,nodev",
            "noexec",
            "nofail",
            "_netdev",
            "x-systemd.requires=foo",
            "defaults",
        ],
    );
    stage_volume(&mut c, &env, "flags", rw.clone()).await;
    for _ in 0..2 {
        c.node_publish_volume(publish_req(&env, "flags", rw.clone(), true))
            .await
            .unwrap();
    }
    let opts = mount_options(&env.target("flags"));
    for want in ["ro", "nosuid", "nodev", "noexec"] {
        assert!(opts.split(',').any(|o| o == want), "{want} missing: {opts}");
    }
    unpublish_and_unstage(&mut c, &env, "flags").await;

    // `ro` among the flags: a read-only stage, and publishing it (readonly=false) twice is
    // not a mismatch.
    let ro = mount_cap_flags("ext4", Mode::SingleNodeWriter, &["ro"]);
    stage_volume(&mut c, &env, "flags", ro.clone()).await;
    for _ in 0..2 {
        c.node_publish_volume(publish_req(&env, "flags", ro.clone(), false))
            .await
            .unwrap();
    }
    assert!(mount_options(&env.target("flags")).starts_with("ro"));
    unpublish_and_unstage(&mut c, &env, "flags").await;
}

#[tokio::test]
async fn unstage_under_a_pod_is_refused_and_changes_nothing() {
    unstage_under_a_pod(NodeEnv::start()).await;
}

#[tokio::test]
async fn unstage_under_a_pod_is_refused_with_the_kubelet_dir_behind_a_symlink() {
    // The mount table shows resolved paths; the check must still see the pod's mount.
    unstage_under_a_pod(NodeEnv::start_with(true)).await;
}

async fn unstage_under_a_pod(mut env: NodeEnv) {
    env.volume("inuse", 64 * MIB);
    let mut c = env.client().await;
    let rw = mount_cap("ext4");
    stage_and_publish(&mut c, &env, "inuse", rw, false).await;
    let err = c
        .node_unstage_volume(unstage_req(&env, "inuse"))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::FailedPrecondition, "{err:?}");
    assert!(
        err.message().contains(
            &std::fs::canonicalize(env.target("inuse"))
                .unwrap()
                .display()
                .to_string()
        ),
        "{err:?}"
    );
    assert!(is_mounted(&env.staging("inuse")));
    unpublish_and_unstage(&mut c, &env, "inuse").await;
    assert!(!is_mounted(&env.staging("inuse")));
}

#[tokio::test]
async fn stage_recovers_a_broken_staging_mount() {
    // A shut-down xfs answers every stat with EIO; kubelet will not unstage a volume whose
    // stage failed, so stage itself must clean it up.
    let (env, mut c) = NodeEnv::with_volume("eio", 320 * MIB).await;
    let rw = mount_cap("xfs");
    stage_volume(&mut c, &env, "eio", rw.clone()).await;
    std::fs::write(env.staging("eio").join("keep"), b"kept").unwrap();
    run("sync", &[]);
    let s = env.staging("eio");
    run("xfs_io", &["-x", "-c", "shutdown", s.to_str().unwrap()]);
    let err = std::fs::metadata(s.join("keep")).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::EIO), "{err}");
    stage_volume(&mut c, &env, "eio", rw.clone()).await;
    assert_eq!(std::fs::read(s.join("keep")).unwrap(), b"kept");
    assert_eq!(blockdev::mounts_below(&s).len(), 1, "stacked mounts left");
    // Expand of a path where the volume is not: NotFound (kubelet retries), nothing grown.
    let plain = env.kubelet.join("pods/plain");
    std::fs::create_dir_all(&plain).unwrap();
    let err = c
        .node_expand_volume(NodeExpandVolumeRequest {
            volume_id: "eio".into(),
            volume_path: plain.display().to_string(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::NotFound, "{err:?}");
    unstage_volume(&mut c, &env, "eio").await;
}
