//! Mount options: capability flags split into MS_* flags and filesystem data, and the options
//! a read-only mount adds so that it replays no journal.

use nix::mount::MsFlags;

use crate::host::MountSpec;

use crate::host::options::split_options;
pub use crate::host::options::userspace_only;

/// Split capability mount options into MS_* flags and filesystem data. Commas inside double
/// quotes do not split: kubelet's SELinux `context="system_u:object_r:container_file_t:s0:c0,c1"`
/// (CSIDriver `seLinuxMount`) is one option.
pub fn parse_options(options: &[String]) -> (MsFlags, Vec<&str>) {
    let mut flags = MsFlags::empty();
    let mut data = Vec::new();
    for opt in options.iter().flat_map(|o| split_options(o)) {
        if userspace_only(opt) {
            continue;
        }
        let (set, clear) = match opt {
            "" | "async" | "suid" | "dev" | "exec" | "atime" | "diratime" | "nostrictatime"
            | "nolazytime" => (MsFlags::empty(), MsFlags::empty()),
            "rw" => (MsFlags::empty(), MsFlags::MS_RDONLY),
            "ro" => (MsFlags::MS_RDONLY, MsFlags::empty()),
            "nosuid" => (MsFlags::MS_NOSUID, MsFlags::empty()),
            "nodev" => (MsFlags::MS_NODEV, MsFlags::empty()),
            "noexec" => (MsFlags::MS_NOEXEC, MsFlags::empty()),
            "sync" => (MsFlags::MS_SYNCHRONOUS, MsFlags::empty()),
            "dirsync" => (MsFlags::MS_DIRSYNC, MsFlags::empty()),
            "noatime" => (MsFlags::MS_NOATIME, MsFlags::empty()),
            "nodiratime" => (MsFlags::MS_NODIRATIME, MsFlags::empty()),
            "relatime" => (MsFlags::MS_RELATIME, MsFlags::empty()),
            "norelatime" => (MsFlags::empty(), MsFlags::MS_RELATIME),
            "strictatime" => (MsFlags::MS_STRICTATIME, MsFlags::empty()),
            "lazytime" => (MsFlags::MS_LAZYTIME, MsFlags::empty()),
            "silent" => (MsFlags::MS_SILENT, MsFlags::empty()),
            other => {
                data.push(other);
                continue;
            }
        };
        flags.insert(set);
        flags.remove(clear);
    }
    (flags, data)
}

/// The flags and data `mount` passes to mount(2) for `spec`. A plain MS_RDONLY mount still
/// replays a journal or log left by an unclean shutdown (ext3/ext4, xfs, btrfs) — writes to
/// a disk that other nodes may have attached read-only too (MULTI_NODE_READER_ONLY), or that
/// must stay as it is: so a read-only mount gets the filesystem's options that replay none.
pub fn mount_args(spec: &MountSpec) -> (MsFlags, Vec<&str>) {
    let (mut flags, mut data) = parse_options(&spec.options);
    if spec.read_only {
        flags.insert(MsFlags::MS_RDONLY);
    }
    let ops = spec.fs.ops();
    if flags.contains(MsFlags::MS_RDONLY) {
        for o in ops.no_replay_options() {
            if !data.contains(o) {
                data.push(o);
            }
        }
    }
    for o in ops.always_options() {
        if !data.contains(o) {
            data.push(o);
        }
    }
    (flags, data)
}

/// `data` with each option the filesystem renamed given its old name, when there is one.
pub(super) fn old_names<'a>(spec: &MountSpec, data: &[&'a str]) -> Option<Vec<&'a str>> {
    let renamed = spec.fs.ops().renamed_options();
    let old = |o: &str| {
        renamed
            .iter()
            .find(|(new, _)| *new == o)
            .map(|(_, old)| *old)
    };
    data.iter()
        .any(|o| old(o).is_some())
        .then(|| data.iter().map(|&o| old(o).unwrap_or(o)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::FsKind;

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

    /// CSIDriver `seLinuxMount: true`: kubelet adds `context="…:c0,c1"` to the mount flags of
    /// NodeStage; it reaches mount(2)'s data whole, beside the flags around it.
    #[test]
    fn selinux_context_reaches_the_kernel_whole() {
        let ctx = "context=\"system_u:object_r:container_file_t:s0:c0,c1\"";
        let s = spec(FsKind::Ext4, &[&format!("noatime,{ctx},discard")], false);
        let (flags, data) = mount_args(&s);
        assert_eq!(flags, MsFlags::MS_NOATIME);
        assert_eq!(data, [ctx, "discard"]);
        let s = spec(FsKind::Xfs, &[ctx], true);
        let (flags, data) = mount_args(&s);
        assert!(flags.contains(MsFlags::MS_RDONLY));
        assert_eq!(data[0], ctx);
        assert!(!data.contains(&"c1\""), "{data:?}");
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
}
