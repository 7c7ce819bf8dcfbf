use super::*;
use crate::host::FsKind;

/// A tmpfs mounted on a fresh directory, detached when dropped (a failed test too).
struct Tmpfs(tempfile::TempDir);

impl Tmpfs {
    /// Root only: `None` otherwise.
    fn new() -> Option<Self> {
        if !nix::unistd::geteuid().is_root() {
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let none: Option<&str> = None;
        nix::mount::mount(
            Some("tmpfs"),
            dir.path(),
            Some("tmpfs"),
            MsFlags::empty(),
            none,
        )
        .unwrap();
        Some(Self(dir))
    }

    fn path(&self) -> &Path {
        self.0.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = nix::mount::umount2(self.0.path(), MntFlags::MNT_DETACH);
    }
}

#[test]
fn a_mount_held_for_a_moment_is_unmounted() {
    let Some(dir) = Tmpfs::new() else { return };
    let file = std::fs::File::create(dir.path().join("held")).unwrap();
    // Released while unmount retries, as a spawned tool's copy of a descriptor is at its exec.
    let release = std::thread::spawn(move || {
        std::thread::sleep(BUSY_PAUSE * 2);
        drop(file);
    });
    let r = unmount(&Beneath::none(), dir.path(), false);
    release.join().unwrap();
    r.unwrap();
    assert!(mountinfo::find(dir.path()).unwrap().is_none());
}

#[test]
fn a_mount_in_use_is_busy_and_stays_mounted() {
    let Some(dir) = Tmpfs::new() else { return };
    let file = std::fs::File::create(dir.path().join("held")).unwrap();
    let r = unmount(&Beneath::none(), dir.path(), false);
    assert!(matches!(r, Err(HostError::Busy { .. })), "{r:?}");
    assert!(mountinfo::find(dir.path()).unwrap().is_some());
    drop(file);
    unmount(&Beneath::none(), dir.path(), false).unwrap();
}

#[test]
fn read_only_after_errors_in_both_forms() {
    // Seen on Linux 6.18 after a journal write failed (tests/node_faults.rs).
    assert!(stopped_after_errors(
        "rw,relatime",
        "rw,errors=remount-ro,emergency_ro"
    ));
    assert!(stopped_after_errors("rw,relatime", "ro,errors=remount-ro"));
    assert!(!stopped_after_errors("rw,relatime", "rw,errors=remount-ro"));
    // Mounted read-only on purpose.
    assert!(!stopped_after_errors("ro,relatime", "ro"));
}

fn spec(fs: FsKind, options: &[&str], read_only: bool) -> MountSpec {
    MountSpec {
        fs,
        options: options.iter().map(|s| s.to_string()).collect(),
        read_only,
    }
}

#[test]
fn userspace_only_options_never_reach_the_kernel() {
    let opts = [
        "nofail,_netdev,x-systemd.automount,comment=foo".to_string(),
        "defaults,noauto,user,nouser,owner,discard".to_string(),
    ];
    let (flags, data) = parse_options(&opts);
    assert_eq!(flags, MsFlags::empty());
    assert_eq!(data, ["discard"]);
}

#[test]
fn every_generic_option_is_an_ms_flag() {
    for o in crate::host::options::GENERIC {
        assert!(
            parse_options(&[o.to_string()]).1.is_empty(),
            "{o} went to data"
        );
    }
}

#[test]
fn read_only_mounts_never_replay_a_journal() {
    for (fs, want) in [
        (FsKind::Ext4, "noload"),
        (FsKind::Ext3, "noload"),
        (FsKind::Xfs, "norecovery"),
        (FsKind::Btrfs, "rescue=nologreplay"),
    ] {
        let s = spec(fs, &[], true);
        let (flags, data) = mount_args(&s);
        assert!(flags.contains(MsFlags::MS_RDONLY));
        assert!(data.contains(&want), "{fs}: {data:?}");
        // `ro` among the capability's flags is the same as read_only.
        let s = spec(fs, &["noatime,ro"], false);
        assert!(mount_args(&s).1.contains(&want), "{fs} with ro flag");
        // Read-write mounts replay as they must.
        let s = spec(fs, &[], false);
        assert!(!mount_args(&s).1.contains(&want), "{fs} rw");
    }
    assert_eq!(
        mount_args(&spec(FsKind::Ext2, &[], true)).1,
        Vec::<&str>::new()
    );
    assert_eq!(
        mount_args(&spec(FsKind::Xfs, &["ro", "rw"], false)).1,
        ["nouuid"]
    );
}

#[test]
fn a_refused_option_is_retried_by_its_old_name_only_where_renamed() {
    let s = spec(FsKind::Btrfs, &[], true);
    let data = mount_args(&s).1;
    assert_eq!(old_names(&s, &data), Some(vec!["nologreplay"]));
    let s = spec(FsKind::Btrfs, &["compress=zstd"], false);
    assert_eq!(old_names(&s, &mount_args(&s).1), None);
    let s = spec(FsKind::Xfs, &[], true);
    assert_eq!(old_names(&s, &mount_args(&s).1), None);
}
