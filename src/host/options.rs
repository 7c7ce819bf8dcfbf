//! The mount options the driver passes on, by kind: what a volume capability's `mount_flags`
//! may hold. Anything else is refused at NodeStage and NodePublish alike (InvalidArgument)
//! instead of reaching the kernel (EINVAL at stage) or being ignored (by publish's bind).
//! The lists are the options documented in mount(8) (filesystem-independent), each
//! filesystem's own (its file in `host/fs`, from its manual page), and the LSM context
//! options kubelet adds for SELinux (`context=` when the CSIDriver has `seLinuxMount`).

use super::FsKind;

/// Split a mount flag at commas, except inside double quotes (an SELinux `context="a,b"`
/// holds commas); the pieces are trimmed, empty ones dropped.
pub fn split_options(s: &str) -> impl Iterator<Item = &str> {
    let mut parts = Vec::new();
    let (mut start, mut quoted) = (0, false);
    for (i, c) in s.char_indices() {
        match c {
            '"' => quoted = !quoted,
            ',' if !quoted => {
                parts.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&s[start..]);
    parts.into_iter().map(str::trim).filter(|p| !p.is_empty())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OptionKind {
    /// A filesystem-independent flag (an MS_* bit: `ro`, `noatime`, `nosuid`, …).
    Generic,
    /// Understood by mount(8) and fstab readers only; dropped before mount(2).
    Userspace,
    /// An LSM option (`context=`, `fscontext=`, `defcontext=`, `rootcontext=`, `seclabel`).
    Security,
    /// An option of the filesystem itself, passed to it as data.
    Filesystem,
    /// Known, but changes what the driver does itself (bind, propagation, loop setup).
    NotAllowed,
    /// Not a mount option of this filesystem that the driver knows.
    Unknown,
}

/// Flags mount(2) takes as MS_* bits (the Linux adapter maps each of them).
pub const GENERIC: &[&str] = &[
    "async",
    "sync",
    "dirsync",
    "ro",
    "rw",
    "suid",
    "nosuid",
    "dev",
    "nodev",
    "exec",
    "noexec",
    "atime",
    "noatime",
    "diratime",
    "nodiratime",
    "relatime",
    "norelatime",
    "strictatime",
    "nostrictatime",
    "lazytime",
    "nolazytime",
    "silent",
];

const USERSPACE: &[&str] = &[
    "defaults", "auto", "noauto", "nofail", "_netdev", "_rnetdev", "user", "nouser", "users",
    "owner", "noowner", "group", "nogroup",
];

const SECURITY: &[&str] = &[
    "context",
    "fscontext",
    "defcontext",
    "rootcontext",
    "seclabel",
];

/// Binds, moves, remounts and propagation are how the driver stages and publishes; loop
/// options would make mount(8) set up a loop device over a file.
const NOT_ALLOWED: &[&str] = &[
    "bind",
    "rbind",
    "remount",
    "move",
    "shared",
    "rshared",
    "slave",
    "rslave",
    "private",
    "rprivate",
    "unbindable",
    "runbindable",
    "loop",
    "offset",
    "sizelimit",
    "encryption",
];

/// Options only mount(8) and fstab readers understand; the kernel answers EINVAL to them.
pub fn userspace_only(opt: &str) -> bool {
    USERSPACE.contains(&opt)
        || opt.starts_with("x-")
        || opt.starts_with("X-")
        || opt.starts_with("comment=")
}

/// The kind of one option (`key` or `key=value`, already split at commas and trimmed).
pub fn classify(fs: FsKind, opt: &str) -> OptionKind {
    if userspace_only(opt) {
        return OptionKind::Userspace;
    }
    let key = opt.split_once('=').map_or(opt, |(k, _)| k);
    let key = key.strip_prefix("make-").unwrap_or(key);
    if NOT_ALLOWED.contains(&key) {
        return OptionKind::NotAllowed;
    }
    if !opt.contains('=') && GENERIC.contains(&opt) {
        return OptionKind::Generic;
    }
    if SECURITY.contains(&key) {
        return OptionKind::Security;
    }
    if fs.ops().mount_options().contains(&key) {
        OptionKind::Filesystem
    } else {
        OptionKind::Unknown
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_kubelet_and_storage_classes_send_is_known() {
        let selinux = "context=\"system_u:object_r:container_file_t:s0:c0,c1\"";
        for (fs, opt) in [
            (FsKind::Ext4, "noatime"),
            (FsKind::Ext4, "ro"),
            (FsKind::Ext4, "discard"),
            (FsKind::Ext4, "data=ordered"),
            (FsKind::Ext4, "errors=remount-ro"),
            (FsKind::Ext4, selinux),
            (FsKind::Xfs, "nouuid"),
            (FsKind::Xfs, "logbsize=256k"),
            (FsKind::Btrfs, "compress=zstd:3"),
            (FsKind::Btrfs, "subvol=/data"),
        ] {
            let k = classify(fs, opt);
            assert!(
                !matches!(k, OptionKind::Unknown | OptionKind::NotAllowed),
                "{fs} {opt}: {k:?}"
            );
        }
        assert_eq!(classify(FsKind::Ext4, selinux), OptionKind::Security);
        assert_eq!(classify(FsKind::Ext4, "nofail"), OptionKind::Userspace);
        assert_eq!(
            classify(FsKind::Ext4, "x-systemd.automount"),
            OptionKind::Userspace
        );
    }

    #[test]
    fn unknown_and_not_allowed() {
        assert_eq!(classify(FsKind::Ext4, "notaflag"), OptionKind::Unknown);
        assert_eq!(classify(FsKind::Ext4, "nouuid"), OptionKind::Unknown);
        assert_eq!(classify(FsKind::Xfs, "data=ordered"), OptionKind::Unknown);
        assert_eq!(classify(FsKind::Ext4, "noatime=1"), OptionKind::Unknown);
        for o in [
            "bind",
            "rbind",
            "remount",
            "move",
            "rshared",
            "make-private",
            "loop",
            "offset=4096",
        ] {
            assert_eq!(classify(FsKind::Ext4, o), OptionKind::NotAllowed, "{o}");
        }
    }
}
