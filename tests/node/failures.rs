//! Node faults on real loop devices (issue 14): kill -9 of the node plugin, with the tool it
//! was running, at fixed points of stage, publish and expand, then the same request again; a
//! "reboot" (mounts gone, directories left, the disk back on another loop device); the disk
//! vanishing while mounted; a full filesystem; a filesystem the kernel made read-only after
//! an I/O error. Each checks that data written before the fault reads back after recovery,
//! that no filesystem was ever formatted twice (shims of the filesystem tools, first on the
//! driver's PATH, log every completed run) and that nothing is left mounted or attached.
//! Needs root; everything is under one temp dir that `NodeEnv` cleans up, also on failure.

use crate::support::blockdev;
use crate::support::leaks::{self, settled};
use crate::support::payload::{pattern, write_durable};

use std::future::Future;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use blockdev::{
    is_mounted, mount_cap, mount_cap_flags, mounts_below, publish_req, run, stage_and_publish,
    stage_req, unpublish_req, unstage_volume, Client, Loop, NodeEnv,
};
use cinder_csi::cloud::local::loopdev;
use cinder_csi::server::csi::pb::volume_capability::access_mode::Mode;
use cinder_csi::server::csi::pb::*;

const MIB: u64 = 1 << 20;

/// The tools the shims stand in for.
const TOOLS: &[&str] = &["mkfs.ext4", "mkfs.xfs", "xfs_growfs", "resize2fs", "e2fsck"];

/// Where a shim waits (until its hold file is removed, or the test's dir is gone).
#[derive(Clone, Copy, Debug)]
enum Hold {
    /// Before the real tool runs.
    Before,
    /// While the real tool runs (it is the shim's child: killed with the tree).
    During,
    /// After the real tool succeeded, before the driver hears of it.
    After,
}

impl Hold {
    fn name(self) -> &'static str {
        match self {
            Hold::Before => "before",
            Hold::During => "during",
            Hold::After => "after",
        }
    }
}

fn real_tool(tool: &str) -> PathBuf {
    ["/usr/sbin", "/sbin", "/usr/bin", "/bin"]
        .iter()
        .map(|d| Path::new(d).join(tool))
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("{tool} is not installed"))
}

fn shims(env: &NodeEnv) -> PathBuf {
    env.root().join("shims")
}

/// A node environment whose driver finds the shims first on its PATH.
fn start() -> NodeEnv {
    let mut env = NodeEnv::stopped(false);
    let dir = shims(&env);
    std::fs::create_dir(&dir).unwrap();
    for tool in TOOLS {
        let script = format!(
            r#"#!/bin/sh
# Test shim of {tool} (tests/node/failures.rs): logs each completed run; a hold file makes it
# wait before, during or after the real tool.
d='{dir}'
t='{tool}'
wait_hold() {{ : > "$d/held-$t"; while [ -e "$d/hold-$1-$t" ]; do sleep 0.02; done; }}
if [ -e "$d/hold-before-$t" ]; then wait_hold before; exit 1; fi
'{real}' "$@" &
p=$!
if [ -e "$d/hold-during-$t" ]; then wait_hold during; fi
wait $p
rc=$?
for a; do last=$a; done
echo "$t rc=$rc $(readlink -f "$last") $*" >> "$d/ran"
if [ -e "$d/hold-after-$t" ]; then wait_hold after; fi
exit $rc
"#,
            dir = dir.display(),
            real = real_tool(tool).display(),
        );
        let path = dir.join(tool);
        std::fs::write(&path, script).unwrap();
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut dirs = vec![dir];
    dirs.extend(std::env::split_paths(&path));
    env.envs
        .push(("PATH".into(), std::env::join_paths(dirs).unwrap()));
    env.start_driver();
    env
}

/// Completed runs of `tool` (any exit code) whose last argument resolved to `dev`.
fn runs(env: &NodeEnv, tool: &str, dev: &Path) -> usize {
    let log = std::fs::read_to_string(shims(env).join("ran")).unwrap_or_default();
    let dev = dev.display().to_string();
    log.lines()
        .filter(|l| l.starts_with(&format!("{tool} ")))
        .filter(|l| l.split(' ').nth(2) == Some(dev.as_str()))
        .count()
}

/// mkfs runs (completed) on the volume's disk, whichever loop device it was on.
fn formats(env: &NodeEnv, devs: &[&Path]) -> usize {
    // The same device may be named twice (a disk back on the number it had).
    let devs: std::collections::BTreeSet<&Path> = devs.iter().copied().collect();
    devs.iter()
        .map(|d| runs(env, "mkfs.ext4", d) + runs(env, "mkfs.xfs", d))
        .sum()
}

/// Run `rpc` until the shim of `tool` waits at `hold`, then kill -9 the driver with its
/// process tree and start it again. The RPC must not have answered.
async fn kill_at<T, F>(env: &mut NodeEnv, tool: &str, hold: Hold, rpc: F)
where
    F: Future<Output = Result<T, tonic::Status>> + Send + 'static,
    T: Send + std::fmt::Debug + 'static,
{
    let dir = shims(env);
    let hold_file = dir.join(format!("hold-{}-{tool}", hold.name()));
    let held = dir.join(format!("held-{tool}"));
    std::fs::write(&hold_file, b"").unwrap();
    let task = tokio::spawn(rpc);
    // Bounded only so that a broken driver fails the test instead of hanging it.
    let until = Instant::now() + Duration::from_secs(120);
    while !held.exists() {
        assert!(
            !task.is_finished(),
            "the RPC ended before {tool} reached {hold:?}: {:?}",
            task.await
        );
        assert!(Instant::now() < until, "{tool} never reached {hold:?}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    env.kill9();
    std::fs::remove_file(&hold_file).unwrap();
    std::fs::remove_file(&held).unwrap();
    let answer = task.await.unwrap();
    assert!(
        answer.is_err(),
        "the RPC answered although the driver was killed: {answer:?}"
    );
    env.start_driver();
}

fn uuid(dev: &Path) -> String {
    run(
        "blkid",
        &["-p", "-o", "value", "-s", "UUID", dev.to_str().unwrap()],
    )
}

fn dev_of(env: &NodeEnv, id: &str) -> PathBuf {
    env.loops
        .iter()
        .find(|l| l.file.ends_with(format!("{id}.img")))
        .unwrap()
        .dev
        .clone()
}

/// Unpublish and unstage, each twice (the second is kubelet's retry after a lost answer).
async fn teardown(c: &mut Client, env: &NodeEnv, id: &str) {
    for _ in 0..2 {
        c.node_unpublish_volume(unpublish_req(env, id))
            .await
            .unwrap();
    }
    for _ in 0..2 {
        unstage_volume(c, env, id).await;
    }
    assert!(!is_mounted(&env.target(id)), "{id} still published");
    assert!(!is_mounted(&env.staging(id)), "{id} still staged");
}

/// Stats of the volume at `path`: (available bytes, abnormal, message).
async fn stats(
    c: &mut Client,
    id: &str,
    path: &Path,
) -> Result<(i64, bool, String), tonic::Status> {
    let r = c
        .node_get_volume_stats(NodeGetVolumeStatsRequest {
            volume_id: id.into(),
            volume_path: path.display().to_string(),
            staging_target_path: String::new(),
        })
        .await?
        .into_inner();
    let available = r
        .usage
        .iter()
        .find(|u| u.unit == volume_usage::Unit::Bytes as i32)
        .map_or(-1, |u| u.available);
    let cond = r.volume_condition.unwrap_or_default();
    Ok((available, cond.abnormal, cond.message))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_during_stage_and_publish_then_the_same_requests_succeed() {
    let mut env = start();
    let root = env.root().to_path_buf();
    let mut checked = 0;
    for fs in ["ext4", "xfs"] {
        for hold in [Hold::Before, Hold::During, Hold::After] {
            let id = format!("k9-{fs}-{}", hold.name());
            let dev = env.volume(&id, 320 * MIB).dev.clone();
            let c = env.client().await;
            let req = stage_req(&env, &id, mount_cap(fs));
            let mut c2 = c.clone();
            kill_at(&mut env, &format!("mkfs.{fs}"), hold, async move {
                c2.node_stage_volume(req).await
            })
            .await;
            let done_before = formats(&env, &[&dev]);
            let uuid_before = uuid_or_none(&dev);
            let mut c = env.client().await;
            // kubelet's retry: the same request.
            c.node_stage_volume(stage_req(&env, &id, mount_cap(fs)))
                .await
                .unwrap_or_else(|e| panic!("{id}: stage after kill -9 {hold:?} mkfs: {e}"));
            let uuid_after = uuid(&dev);
            match hold {
                // mkfs had finished: the retry found its filesystem and did not format again.
                Hold::After => {
                    assert_eq!(done_before, 1, "{id}");
                    assert_eq!(formats(&env, &[&dev]), 1, "{id} formatted twice");
                    assert_eq!(uuid_before.as_deref(), Some(uuid_after.as_str()), "{id}");
                }
                // mkfs never ran: the retry's is the one format.
                Hold::Before => {
                    assert_eq!(done_before, 0, "{id}");
                    assert_eq!(formats(&env, &[&dev]), 1, "{id}");
                }
                // mkfs was killed (its shim never logged it): the retry formatted again what
                // it left, or found it whole (mkfs had just finished) and kept it.
                Hold::During => {
                    assert_eq!(done_before, 0, "{id}");
                    assert!(formats(&env, &[&dev]) <= 1, "{id}");
                }
            }
            // Publish, killed right after it was sent (the answer lost, whether it ran or not).
            let data = pattern(checked + 1, 4 << 20);
            let mut c2 = c.clone();
            let req = publish_req(&env, &id, mount_cap(fs), false);
            let t = tokio::spawn(async move { c2.node_publish_volume(req).await });
            tokio::task::yield_now().await;
            env.kill9();
            let _ = t.await.unwrap();
            env.start_driver();
            let mut c = env.client().await;
            c.node_publish_volume(publish_req(&env, &id, mount_cap(fs), false))
                .await
                .unwrap();
            write_durable(&env.target(&id).join("data.bin"), &data);
            // Killed after both answered; kubelet (restarted too) repeats both.
            env.kill9();
            env.start_driver();
            let mut c = env.client().await;
            stage_and_publish(&mut c, &env, &id, mount_cap(fs), false).await;
            let read = std::fs::read(env.target(&id).join("data.bin")).unwrap();
            assert!(read == data, "{id}: data changed");
            assert!(formats(&env, &[&dev]) <= 1, "{id} formatted twice");
            assert_eq!(uuid(&dev), uuid_after, "{id}: another filesystem");
            teardown(&mut c, &env, &id).await;
            assert_consistent(fs, &dev);
            checked += 1;
        }
    }
    assert_eq!(checked, 6);
    drop(env);
    leaks::assert_none_below(&root);
}

/// A read-only check of the unmounted filesystem must pass (no half-made filesystem kept).
fn assert_consistent(fs: &str, dev: &Path) {
    let d = dev.to_str().unwrap();
    match fs {
        "xfs" => run("xfs_repair", &["-n", d]),
        _ => run("e2fsck", &["-f", "-n", d]),
    };
}

fn uuid_or_none(dev: &Path) -> Option<String> {
    let out = std::process::Command::new("blkid")
        .args(["-p", "-o", "value", "-s", "UUID"])
        .arg(dev)
        .output()
        .unwrap();
    let s = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (out.status.success() && !s.is_empty()).then_some(s)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_during_expand_then_the_same_request_grows_the_filesystem() {
    // xfs grows online; this kernel refuses ext4's online grow without CAP_SYS_RESOURCE, so
    // ext4 is grown at stage (below, the full-filesystem test).
    let mut env = start();
    let root = env.root().to_path_buf();
    let id = "k9-expand-xfs";
    env.volume(id, 320 * MIB);
    let dev = dev_of(&env, id);
    let mut c = env.client().await;
    stage_and_publish(&mut c, &env, id, mount_cap("xfs"), false).await;
    let data = pattern(11, 8 << 20);
    write_durable(&env.target(id).join("data.bin"), &data);
    let mut size = 320 * MIB;
    for hold in [Hold::Before, Hold::During, Hold::After] {
        let before = fs_total(&env.target(id));
        size += 64 * MIB;
        env.loops.iter().find(|l| l.dev == dev).unwrap().grow(size);
        let req = NodeExpandVolumeRequest {
            volume_id: id.into(),
            volume_path: env.target(id).display().to_string(),
            staging_target_path: env.staging(id).display().to_string(),
            capacity_range: Some(CapacityRange {
                required_bytes: size as i64,
                limit_bytes: 0,
            }),
            volume_capability: Some(mount_cap("xfs")),
            ..Default::default()
        };
        let mut c2 = c.clone();
        let r = req.clone();
        kill_at(&mut env, "xfs_growfs", hold, async move {
            c2.node_expand_volume(r).await
        })
        .await;
        c = env.client().await;
        // kubelet restages and republishes after a plugin restart, then repeats the expand.
        stage_and_publish(&mut c, &env, id, mount_cap("xfs"), false).await;
        c.node_expand_volume(req)
            .await
            .unwrap_or_else(|e| panic!("expand after kill -9 {hold:?} xfs_growfs: {e}"));
        // xfs counts its (internal, 64 MiB) log out of the total: compare with before.
        let total = fs_total(&env.target(id));
        assert!(
            total >= before + 60 * MIB,
            "{hold:?}: filesystem of {before} bytes now {total} on a {size}-byte disk"
        );
    }
    assert_eq!(
        std::fs::read(env.target(id).join("data.bin")).unwrap(),
        data
    );
    assert_eq!(formats(&env, &[&dev]), 1, "formatted twice");
    teardown(&mut c, &env, id).await;
    assert_consistent("xfs", &dev);
    drop(env);
    leaks::assert_none_below(&root);
}

fn fs_total(path: &Path) -> u64 {
    let s = nix::sys::statvfs::statvfs(path).unwrap();
    s.blocks() * s.fragment_size()
}

/// A loop device number that is not `old`'s: placeholders take the lowest free numbers until
/// `old` is one of them (returned, to be dropped after the volume's disk is attached).
fn occupy(root: &Path, old: &Path) -> Vec<Loop> {
    let mut held = Vec::new();
    let name = old.file_name().unwrap().to_string_lossy().to_string();
    for i in 0..16 {
        let l = Loop::new(root.join(format!("placeholder-{name}-{i}.img")), MIB);
        let hit = l.dev == old;
        held.push(l);
        if hit {
            return held;
        }
    }
    held
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reboot_clears_mounts_and_renumbers_the_disk_then_stage_and_publish_again() {
    let mut env = start();
    let root = env.root().to_path_buf();
    let mut c = env.client().await;
    let mut written = Vec::new();
    for (i, fs) in ["ext4", "xfs"].iter().enumerate() {
        let id = format!("reboot-{fs}");
        env.volume(&id, 320 * MIB);
        stage_and_publish(&mut c, &env, &id, mount_cap(fs), false).await;
        let data = pattern(20 + i as u64, 4 << 20);
        write_durable(&env.target(&id).join("data.bin"), &data);
        written.push((id, fs, data, uuid(&dev_of(&env, &format!("reboot-{fs}")))));
    }
    // The reboot: the plugin dies, every mount is gone (directories stay), and the disks come
    // back on other loop devices (by-id links follow them, as udev's do).
    env.kill9();
    for m in mounts_below(&root).into_iter().rev() {
        nix::mount::umount2(&m, nix::mount::MntFlags::empty()).unwrap();
    }
    let mut old_devs = Vec::new();
    let mut placeholders = Vec::new();
    for (id, ..) in &written {
        let i = env
            .loops
            .iter()
            .position(|l| l.file.ends_with(format!("{id}.img")))
            .unwrap();
        let old = env.loops.remove(i);
        run("losetup", &["-d", old.dev.to_str().unwrap()]);
        placeholders.extend(occupy(&root, &old.dev));
        let new = Loop::attach(old.file.clone());
        assert_ne!(new.dev, old.dev, "the disk kept its loop device number");
        let link = env
            .by_id
            .join(format!("virtio-{}", &id[..id.len().min(20)]));
        std::fs::remove_file(&link).unwrap();
        std::os::unix::fs::symlink(&new.dev, &link).unwrap();
        old_devs.push(old.dev.clone());
        drop(old);
        env.loops.push(new);
    }
    drop(placeholders);
    assert!(mounts_below(&root).is_empty());
    assert!(env.staging(&written[0].0).is_dir(), "directories are left");
    env.start_driver();
    let mut c = env.client().await;
    for (n, (id, fs, data, fs_uuid)) in written.iter().enumerate() {
        let dev = dev_of(&env, id);
        for _ in 0..2 {
            c.node_stage_volume(stage_req(&env, id, mount_cap(fs)))
                .await
                .unwrap_or_else(|e| panic!("{id}: stage after reboot: {e}"));
            c.node_publish_volume(publish_req(&env, id, mount_cap(fs), false))
                .await
                .unwrap();
        }
        assert_eq!(
            &std::fs::read(env.target(id).join("data.bin")).unwrap(),
            data,
            "{id}"
        );
        assert_eq!(&uuid(&dev), fs_uuid, "{id}: another filesystem");
        assert_eq!(
            formats(&env, &[&dev, &old_devs[n]]),
            1,
            "{id} formatted twice"
        );
        let (_, abnormal, msg) = stats(&mut c, id, &env.target(id)).await.unwrap();
        assert!(!abnormal, "{id}: {msg}");
        teardown(&mut c, &env, id).await;
    }
    drop(env);
    leaks::assert_none_below(&root);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_disk_vanishing_while_mounted_still_unpublishes_and_unstages() {
    let mut env = start();
    let root = env.root().to_path_buf();
    let mut c = env.client().await;
    for fs in ["ext4", "xfs"] {
        let id = format!("vanish-{fs}");
        env.volume(&id, 320 * MIB);
        let dev = dev_of(&env, &id);
        stage_and_publish(&mut c, &env, &id, mount_cap(fs), false).await;
        let data = pattern(30, 4 << 20);
        write_durable(&env.target(&id).join("data.bin"), &data);
        let fs_uuid = uuid(&dev);
        // Nova detaches the disk: its by-id link goes, the loop device is detached (the kernel
        // frees it once the last mount is gone: autoclear).
        let link = env.by_id.join(format!("virtio-{id}"));
        std::fs::remove_file(&link).unwrap();
        run("losetup", &["-d", dev.to_str().unwrap()]);
        // Stats may say anything but Internal (kubelet only logs it).
        if let Err(e) = stats(&mut c, &id, &env.target(&id)).await {
            assert_ne!(e.code(), tonic::Code::Internal, "{id}: {e}");
        }
        teardown(&mut c, &env, &id).await;
        // The number may already serve another test's file: ask whether it still serves ours.
        let file = root.join(format!("{id}.img"));
        let still = settled(|| {
            loopdev::backed_below(&root)
                .unwrap()
                .into_iter()
                .filter(|d| d.path() == dev && d.backing_file().is_some_and(|f| f == file))
                .collect()
        });
        assert!(still.is_empty(), "{id}: {} is still bound", dev.display());
        // The disk comes back (reattached elsewhere): staged again, the data is there.
        let i = env.loops.iter().position(|l| l.file == file).unwrap();
        drop(env.loops.remove(i));
        let again = Loop::attach(file);
        std::os::unix::fs::symlink(&again.dev, &link).unwrap();
        let new_dev = again.dev.clone();
        env.loops.push(again);
        stage_and_publish(&mut c, &env, &id, mount_cap(fs), false).await;
        assert_eq!(
            std::fs::read(env.target(&id).join("data.bin")).unwrap(),
            data
        );
        assert_eq!(uuid(&new_dev), fs_uuid, "{id}: another filesystem");
        assert_eq!(formats(&env, &[&dev, &new_dev]), 1, "{id} formatted twice");
        teardown(&mut c, &env, &id).await;
    }
    drop(env);
    leaks::assert_none_below(&root);
}

/// Fill the filesystem at `dir` until the kernel says ENOSPC; returns the bytes written.
fn fill(dir: &Path) -> u64 {
    let f = std::fs::File::create(dir.join("fill")).unwrap();
    let chunk = vec![0xa5u8; MIB as usize];
    let mut off = 0u64;
    loop {
        match f.write_at(&chunk, off) {
            Ok(n) => off += n as u64,
            Err(e) if e.raw_os_error() == Some(libc::ENOSPC) => break,
            Err(e) => panic!("filling {}: {e}", dir.display()),
        }
    }
    // What the page cache accepted may still hit ENOSPC at writeback (ext4 reserves it).
    let _ = f.sync_all();
    off
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_filesystem_restages_and_grows() {
    let mut env = start();
    let root = env.root().to_path_buf();
    let mut c = env.client().await;
    let id = "full-ext4";
    env.volume(id, 64 * MIB);
    let dev = dev_of(&env, id);
    stage_and_publish(&mut c, &env, id, mount_cap("ext4"), false).await;
    let data = pattern(40, 2 << 20);
    write_durable(&env.target(id).join("data.bin"), &data);
    let filled = fill(&env.target(id));
    assert!(filled > 32 * MIB, "only {filled} bytes fitted");
    let (available, abnormal, msg) = stats(&mut c, id, &env.target(id)).await.unwrap();
    assert!(
        available < 4 * MIB as i64,
        "{available} bytes still available"
    );
    assert!(!abnormal, "a full filesystem is not abnormal: {msg}");
    // kubelet restarts the pod: unpublish, unstage, stage, publish of the full filesystem.
    teardown(&mut c, &env, id).await;
    stage_and_publish(&mut c, &env, id, mount_cap("ext4"), false).await;
    assert_eq!(
        std::fs::read(env.target(id).join("data.bin")).unwrap(),
        data
    );
    // The operator expands the volume: the controller grew the disk, the node grows ext4
    // offline at the next stage (volume_context resizeRequired).
    teardown(&mut c, &env, id).await;
    env.loops
        .iter()
        .find(|l| l.dev == dev)
        .unwrap()
        .grow(128 * MIB);
    let mut req = stage_req(&env, id, mount_cap("ext4"));
    req.volume_context.insert(
        "cinder.csi.openstack.org/resizeRequired".into(),
        "true".into(),
    );
    c.node_stage_volume(req).await.unwrap();
    c.node_publish_volume(publish_req(&env, id, mount_cap("ext4"), false))
        .await
        .unwrap();
    let (available, abnormal, _) = stats(&mut c, id, &env.target(id)).await.unwrap();
    assert!(!abnormal);
    assert!(
        available > 48 * MIB as i64,
        "grown: {available} bytes available"
    );
    write_durable(&env.target(id).join("after.bin"), &data);
    assert_eq!(
        std::fs::read(env.target(id).join("data.bin")).unwrap(),
        data
    );
    assert_eq!(runs(&env, "resize2fs", &dev), 1);
    assert_eq!(formats(&env, &[&dev]), 1, "formatted twice");
    teardown(&mut c, &env, id).await;
    drop(env);
    leaks::assert_none_below(&root);
}

/// A tmpfs of `size` at `dir`, unmounted (lazily, as a loop device may still hold a file on
/// it) on drop.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn new(dir: PathBuf, size: &str) -> Tmpfs {
        std::fs::create_dir_all(&dir).unwrap();
        run(
            "mount",
            &[
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size}"),
                "tmpfs",
                dir.to_str().unwrap(),
            ],
        );
        Tmpfs(dir)
    }

    fn resize(&self, size: &str) {
        run(
            "mount",
            &[
                "-o",
                &format!("remount,size={size}"),
                self.0.to_str().unwrap(),
            ],
        );
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = nix::mount::umount2(&self.0, nix::mount::MntFlags::MNT_DETACH);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_filesystem_the_kernel_made_read_only_is_reported_and_recovers() {
    let env = start();
    let root = env.root().to_path_buf();
    let mut c = env.client().await;
    let id = "eio-ext4";
    // The disk's backing file lives on a 48 MiB tmpfs: writes past that fail with an I/O
    // error below ext4, which then (errors=remount-ro) stops writing.
    let small = Tmpfs::new(root.join("small"), "48m");
    let disk = Loop::new(small.0.join(format!("{id}.img")), 256 * MIB);
    std::os::unix::fs::symlink(&disk.dev, env.by_id.join(format!("virtio-{id}"))).unwrap();
    let dev = disk.dev.clone();
    let cap = mount_cap_flags("ext4", Mode::SingleNodeWriter, &["errors=remount-ro"]);
    stage_and_publish(&mut c, &env, id, cap.clone(), false).await;
    let data = pattern(50, 2 << 20);
    write_durable(&env.target(id).join("data.bin"), &data);
    let target = env.target(id);
    let (_, abnormal, msg) = stats(&mut c, id, &target).await.unwrap();
    assert!(!abnormal, "{msg}");
    // Data first (its errors only lose that data), then metadata in new block groups, whose
    // write errors make ext4 stop writing altogether.
    let _ = fill(&target);
    let mut went_ro = false;
    for i in 0..400 {
        let d = target.join(format!("d{i}"));
        if std::fs::create_dir(&d)
            .and_then(|_| std::fs::write(d.join("f"), b"x"))
            .is_err()
        {
            went_ro = true;
            break;
        }
        if i % 20 == 19 {
            nix::unistd::sync();
        }
    }
    assert!(went_ro, "ext4 kept accepting writes on a failing disk");
    let err = std::fs::write(target.join("late"), b"x").unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::EROFS), "{err}");
    let (_, abnormal, msg) = stats(&mut c, id, &target).await.unwrap();
    assert!(abnormal, "the read-only filesystem is reported as healthy");
    assert!(msg.contains("read-only"), "{msg}");
    // Data written before the fault is still readable where it is.
    assert_eq!(std::fs::read(target.join("data.bin")).unwrap(), data);
    // Recovery: the operator frees space under the disk, kubelet moves the pod (unpublish,
    // unstage) and starts it again (stage, publish): the filesystem mounts read-write.
    small.resize("512m");
    teardown(&mut c, &env, id).await;
    stage_and_publish(&mut c, &env, id, cap.clone(), false).await;
    assert_eq!(std::fs::read(target.join("data.bin")).unwrap(), data);
    write_durable(&target.join("after.bin"), b"writable again");
    let (_, abnormal, msg) = stats(&mut c, id, &target).await.unwrap();
    assert!(!abnormal, "{msg}");
    assert_eq!(formats(&env, &[&dev]), 1, "formatted twice");
    teardown(&mut c, &env, id).await;
    drop(disk);
    drop(small);
    drop(env);
    leaks::assert_none_below(&root);
}
