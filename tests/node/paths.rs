//! Paths the CO sends cannot lead the node service out of the kubelet dir: a symlink as the
//! target, as its parent, as the staging path, swapped in while a publish runs, and an
//! unpublish of a symlink to a mount outside. Each is InvalidArgument with nothing mounted,
//! created, unmounted or removed outside. The real binary in node mode on loop devices;
//! needs root; cleaned up by the RAII helpers in `blockdev`, also when a test fails.

use crate::support::blockdev;

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use blockdev::{
    is_mounted, mount_cap, mounts_below, publish_req, stage_req, stage_volume, unpublish_req,
    Client, NodeEnv,
};
use tonic::Code;

const MIB: u64 = 1 << 20;

/// A directory outside the kubelet dir (inside the test's root, so the guard cleans it).
fn outside(env: &NodeEnv) -> PathBuf {
    let o = env.root().join("outside");
    std::fs::create_dir_all(&o).unwrap();
    o
}

/// Nothing mounted at or below `dir`, and nothing created in it but `keep`.
fn untouched(dir: &Path, keep: &[&str]) {
    assert!(
        mounts_below(dir).is_empty(),
        "mounted outside the kubelet dir: {:?}",
        mounts_below(dir)
    );
    let names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !keep.contains(&n.as_str()))
        .collect();
    assert!(
        names.is_empty(),
        "created outside the kubelet dir: {names:?}"
    );
}

fn invalid<T: std::fmt::Debug>(res: Result<T, tonic::Status>, what: &str) {
    let err = res.expect_err(what);
    assert_eq!(err.code(), Code::InvalidArgument, "{what}: {err:?}");
    assert!(
        err.message().contains("symlink") || err.message().contains("outside"),
        "{what}: the message must say what is wrong: {}",
        err.message()
    );
}

/// Stage `id` normally; returns the client.
async fn staged(env: &mut NodeEnv, id: &str) -> Client {
    env.volume(id, 64 * MIB);
    let mut c = env.client().await;
    stage_volume(&mut c, env, id, mount_cap("ext4")).await;
    c
}

#[tokio::test]
async fn publish_to_a_target_that_is_a_symlink_is_refused() {
    let mut env = NodeEnv::start();
    let mut c = staged(&mut env, "linktarget").await;
    let out = outside(&env);
    let target = env.target("linktarget");
    std::fs::create_dir_all(target.parent().unwrap()).unwrap();
    symlink(&out, &target).unwrap();
    invalid(
        c.node_publish_volume(publish_req(&env, "linktarget", mount_cap("ext4"), false))
            .await,
        "publish onto a symlink",
    );
    untouched(&out, &[]);
    assert!(target.is_symlink(), "the symlink was changed");
}

#[tokio::test]
async fn publish_below_a_parent_that_is_a_symlink_is_refused() {
    let mut env = NodeEnv::start();
    let mut c = staged(&mut env, "linkparent").await;
    let out = outside(&env);
    let target = env.target("linkparent");
    let parent = target.parent().unwrap();
    std::fs::create_dir_all(parent.parent().unwrap()).unwrap();
    symlink(&out, parent).unwrap();
    invalid(
        c.node_publish_volume(publish_req(&env, "linkparent", mount_cap("ext4"), false))
            .await,
        "publish below a symlinked parent",
    );
    untouched(&out, &[]);
}

#[tokio::test]
async fn stage_through_a_symlink_is_refused_and_the_disk_stays_blank() {
    let mut env = NodeEnv::start();
    let id = "linkstage";
    let dev = env.volume(id, 64 * MIB).dev.clone();
    let mut c = env.client().await;
    let out = outside(&env);
    let staging = env.staging(id);
    // The staging path itself, then its parent, as a symlink to outside.
    std::fs::create_dir_all(staging.parent().unwrap()).unwrap();
    symlink(&out, &staging).unwrap();
    invalid(
        c.node_stage_volume(stage_req(&env, id, mount_cap("ext4")))
            .await,
        "stage onto a symlink",
    );
    std::fs::remove_file(&staging).unwrap();
    let parent = staging.parent().unwrap();
    std::fs::remove_dir(parent).unwrap();
    symlink(&out, parent).unwrap();
    invalid(
        c.node_stage_volume(stage_req(&env, id, mount_cap("ext4")))
            .await,
        "stage below a symlinked parent",
    );
    untouched(&out, &[]);
    // Refused before the device was probed or formatted.
    let mut head = vec![0u8; 1 << 20];
    std::os::unix::fs::FileExt::read_exact_at(&std::fs::File::open(&dev).unwrap(), &mut head, 0)
        .unwrap();
    assert!(head.iter().all(|&b| b == 0), "the disk was written");
}

/// A mount outside the kubelet dir that an unpublish must not touch.
struct OutsideMount(PathBuf);

impl OutsideMount {
    fn new(dir: &Path) -> Self {
        std::fs::create_dir_all(dir).unwrap();
        blockdev::run(
            "mount",
            &[
                "-t",
                "tmpfs",
                "-o",
                "size=1m",
                "tmpfs",
                dir.to_str().unwrap(),
            ],
        );
        std::fs::write(dir.join("precious"), b"x").unwrap();
        Self(dir.to_path_buf())
    }
}

impl Drop for OutsideMount {
    fn drop(&mut self) {
        let _ = nix::mount::umount2(&self.0, nix::mount::MntFlags::MNT_DETACH);
    }
}

#[tokio::test]
async fn unpublish_of_a_symlink_to_outside_changes_nothing() {
    let env = NodeEnv::start();
    let mut c = env.client().await;
    let out = outside(&env);
    let mnt = OutsideMount::new(&out.join("mnt"));
    let id = "linkunpub";
    let target = env.target(id);
    std::fs::create_dir_all(target.parent().unwrap()).unwrap();
    // The target itself a symlink to the outside mount.
    symlink(&mnt.0, &target).unwrap();
    invalid(
        c.node_unpublish_volume(unpublish_req(&env, id)).await,
        "unpublish of a symlink",
    );
    assert!(is_mounted(&mnt.0), "the mount outside was unmounted");
    assert!(target.is_symlink(), "the symlink was removed");
    // Its parent a symlink to the directory holding the outside mount as `mount`.
    std::fs::remove_file(&target).unwrap();
    let parent = target.parent().unwrap();
    std::fs::remove_dir(parent).unwrap();
    let holder = out.join("holder");
    let inner = OutsideMount::new(&holder.join("mount"));
    symlink(&holder, parent).unwrap();
    invalid(
        c.node_unpublish_volume(unpublish_req(&env, id)).await,
        "unpublish below a symlinked parent",
    );
    assert!(is_mounted(&inner.0), "the mount outside was unmounted");
    assert!(inner.0.join("precious").exists());
    assert!(is_mounted(&mnt.0));
}

/// Swap `dir` with `link` (a symlink to outside) until `stop`: renameat2(RENAME_EXCHANGE), so
/// at every instant the path is either the real directory or the symlink.
fn swapper(dir: PathBuf, link: PathBuf, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<u64> {
    std::thread::spawn(move || {
        let swap = || {
            nix::fcntl::renameat2(
                nix::fcntl::AT_FDCWD,
                &dir,
                nix::fcntl::AT_FDCWD,
                &link,
                nix::fcntl::RenameFlags::RENAME_EXCHANGE,
            )
            .unwrap()
        };
        let mut swaps = 0u64;
        while !stop.load(Ordering::Relaxed) {
            swap();
            swaps += 1;
        }
        // Leave the real directory at `dir` (an even number of swaps).
        if swaps % 2 == 1 {
            swap();
        }
        swaps
    })
}

#[tokio::test]
async fn a_symlink_swapped_in_during_publish_never_leads_outside() {
    let mut env = NodeEnv::start();
    let id = "linkrace";
    let mut c = staged(&mut env, id).await;
    let out = outside(&env);
    let target = env.target(id);
    let parent = target.parent().unwrap().to_path_buf();
    std::fs::create_dir_all(&parent).unwrap();
    let link = parent.with_extension("swap");
    symlink(&out, &link).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let swaps = swapper(parent.clone(), link.clone(), stop.clone());
    let (mut ok, mut refused) = (0, 0);
    for _ in 0..150 {
        match c
            .node_publish_volume(publish_req(&env, id, mount_cap("ext4"), false))
            .await
        {
            Ok(_) => ok += 1,
            Err(e) => {
                assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");
                refused += 1;
            }
        }
        untouched(&out, &[]);
        // An unpublish racing the same swaps: it may be refused too, never act outside.
        match c.node_unpublish_volume(unpublish_req(&env, id)).await {
            Ok(_) => {}
            Err(e) => assert_eq!(e.code(), Code::InvalidArgument, "{e:?}"),
        }
        untouched(&out, &[]);
    }
    stop.store(true, Ordering::Relaxed);
    let n = swaps.join().unwrap();
    eprintln!("{ok} publishes succeeded, {refused} were refused, {n} swaps");
    assert!(refused > 0, "the swaps never raced a publish ({n} swaps)");
    c.node_unpublish_volume(unpublish_req(&env, id))
        .await
        .unwrap();
    untouched(&out, &[]);
    assert!(!target.exists());
}

/// The kubelet dir itself behind a symlink still works (resolved once at startup), and a
/// symlink below it is still refused.
#[tokio::test]
async fn a_kubelet_dir_behind_a_symlink_still_works() {
    let mut env = NodeEnv::start_with(true);
    let id = "kubeletlink";
    let mut c = staged(&mut env, id).await;
    c.node_publish_volume(publish_req(&env, id, mount_cap("ext4"), false))
        .await
        .unwrap();
    assert!(is_mounted(&env.target(id)));
    c.node_unpublish_volume(unpublish_req(&env, id))
        .await
        .unwrap();
    assert!(!env.target(id).exists());
    let out = outside(&env);
    let target = env.target(id);
    std::fs::create_dir_all(target.parent().unwrap()).unwrap();
    symlink(&out, &target).unwrap();
    invalid(
        c.node_publish_volume(publish_req(&env, id, mount_cap("ext4"), false))
            .await,
        "publish onto a symlink below a linked kubelet dir",
    );
    untouched(&out, &[]);
    std::fs::remove_file(&target).unwrap();
    c.node_unstage_volume(blockdev::unstage_req(&env, id))
        .await
        .unwrap();
}
