//! Codes and words of driver errors. The texts are spelled out in full: they are what users,
//! docs and the CO's events see, so a change to one must be deliberate.

use std::path::PathBuf;

use super::*;
use tonic::Code;

use crate::cloud::CloudError;
use crate::cloud::{CopyKind, CopyStatus, MigrationPolicy, RequestId, Resource, VolumeStatus};
use crate::driver::types::{AccessMode, CapacityRange};
use crate::driver::{
    Change, Cleanup, Failure, Invalid, Mismatch, Named, NodeRefusal, NotAtPath, ParamClass,
    PathRole, Range, Refusal, Unsupported, VolumeDiff,
};
use crate::driver::{Error, TokenProblem};
use crate::host::HostError;
use crate::host::{Content, DevId, FsKind};

fn says(e: impl Into<Error>, want: &str) {
    let e = e.into();
    assert_eq!(message_of(&e), want, "{e:?}");
}

fn p(s: &str) -> PathBuf {
    PathBuf::from(s)
}

fn dev(major: u32, minor: u32) -> DevId {
    DevId { major, minor }
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

#[test]
fn codes() {
    assert_eq!(code_of(&Error::Busy { key: "v".into() }), Code::Aborted);
    assert_eq!(
        code_of(&Error::Cloud(CloudError::OverLimit {
            message: "q".into(),
            request_id: RequestId::default()
        })),
        Code::ResourceExhausted
    );
    assert_eq!(
        code_of(&Error::Cloud(CloudError::not_found(Resource::Volume, "x"))),
        Code::NotFound
    );
    assert_eq!(
        code_of(&Error::Cloud(CloudError::WaitTimeout {
            resource: Resource::Volume,
            id: "x".into(),
            wanted: "available".into(),
            last_status: "creating".into()
        })),
        Code::Aborted
    );
    let cases: Vec<(Error, Code)> = vec![
        (Invalid::SamePaths.into(), Code::InvalidArgument),
        (
            Mismatch::Volume {
                name: "n".into(),
                id: "v".into(),
                diff: VolumeDiff::Source,
            }
            .into(),
            Code::AlreadyExists,
        ),
        (Refusal::NoBackupService.into(), Code::FailedPrecondition),
        (NodeRefusal::NoStagingPath.into(), Code::FailedPrecondition),
        (Range::TooLarge { gib: 1 << 40 }.into(), Code::OutOfRange),
        (
            Error::NoZone {
                asked: vec![],
                known: vec![],
            },
            Code::ResourceExhausted,
        ),
        (
            Error::KeptChanging {
                id: "v".into(),
                status: VolumeStatus::Attaching,
            },
            Code::Aborted,
        ),
        (
            Error::BadToken {
                token: "t".into(),
                why: TokenProblem::NotIssued,
            },
            Code::Aborted,
        ),
        (
            Error::ResizePending {
                id: "v".into(),
                device: p("/d"),
                size: 1,
                required: 2,
            },
            Code::Unavailable,
        ),
        (
            Error::GrowFailed {
                id: "v".into(),
                staging: p("/s"),
                source: Box::new(Refusal::NoBackupService.into()),
            },
            Code::Unavailable,
        ),
        (
            Failure::SnapshotUnusable {
                id: "s".into(),
                status: CopyStatus::Error,
            }
            .into(),
            Code::Internal,
        ),
        (
            Error::VolumeNotAtPath {
                id: "v".into(),
                path: p("/p"),
                why: NotAtPath::NothingMounted,
            },
            Code::NotFound,
        ),
    ];
    for (e, code) in cases {
        assert_eq!(code_of(&e), code, "{e:?}");
    }
}

#[test]
fn message_has_cause_chain() {
    let err = Error::Host(HostError::Io {
        op: "mkdir",
        path: "/x".into(),
        source: std::io::Error::from_raw_os_error(13),
    });
    let msg = message_of(&err);
    assert!(msg.starts_with("mkdir /x: "), "{msg}");
    assert!(msg.contains("ermission denied"), "{msg}");
    // A wrapped error's own causes come once, after it.
    let grown = Error::GrowFailed {
        id: "v".into(),
        staging: p("/s"),
        source: Box::new(err),
    };
    let msg = message_of(&grown);
    assert!(
        msg.starts_with("volume v is staged at /s but growing its filesystem failed: mkdir /x: "),
        "{msg}"
    );
    assert_eq!(msg.matches("ermission denied").count(), 1, "{msg}");
}

#[test]
fn top_level_words() {
    says(
        Error::VolumeNotFound { id: "v1".into() },
        "volume v1 not found",
    );
    says(
        Error::SnapshotNotFound { id: "s1".into() },
        "snapshot s1 not found",
    );
    says(Error::NodeNotFound { id: "n1".into() }, "node n1 not found");
    says(
        Error::PathNotFound { path: p("/k/x") },
        "path /k/x not found",
    );
    says(
        Error::VolumeNotAtPath {
            id: "v1".into(),
            path: p("/k/t"),
            why: NotAtPath::OtherDevice {
                found: dev(8, 1),
                device: p("/dev/sdb"),
                disk: dev(8, 16),
            },
        },
        "volume v1 is not staged or published at /k/t: it holds device 8:1, and the volume's \
         disk is /dev/sdb (8:16)",
    );
    says(
        Error::VolumeNotAtPath {
            id: "v1".into(),
            path: p("/k/t"),
            why: NotAtPath::NothingMounted,
        },
        "volume v1 is not staged or published at /k/t: nothing is mounted there",
    );
    says(
        Error::VolumeNotAtPath {
            id: "v1".into(),
            path: p("some/path"),
            why: NotAtPath::OutsideKubelet {
                kubelet_dir: p("/var/lib/kubelet"),
            },
        },
        "volume v1 is not staged or published at some/path: volumes are staged and published \
         only at absolute paths under the kubelet directory /var/lib/kubelet",
    );
    says(
        Error::NoZone {
            asked: strings(&["mars", "venus"]),
            known: vec![],
        },
        "no Cinder availability zone satisfies accessibility_requirements.requisite: it allows \
         zones \"mars\", \"venus\" and Cinder's zones are (none); schedule the volume to nodes in \
         one of Cinder's zones, or add the zone to Cinder",
    );
    says(
        Error::NoZone {
            asked: strings(&["mars"]),
            known: strings(&["a", "b"]),
        },
        "no Cinder availability zone satisfies accessibility_requirements.requisite: it allows \
         zone \"mars\" and Cinder's zones are \"a\", \"b\"; schedule the volume to nodes in one \
         of Cinder's zones, or add the zone to Cinder",
    );
    says(
        Error::Busy {
            key: "name:pvc-1".into(),
        },
        "an operation on name:pvc-1 is already in progress; retry later",
    );
    says(
        Error::KeptChanging {
            id: "v1".into(),
            status: VolumeStatus::Attaching,
        },
        "volume v1 kept changing state (now attaching); retry later",
    );
    for (why, says_why) in [
        (TokenProblem::NotIssued, "not issued by this driver"),
        (
            TokenProblem::OtherListing,
            "issued by a different List call",
        ),
        (TokenProblem::DamagedCloud, "damaged cloud name"),
        (
            TokenProblem::UnknownCloud("r2".into()),
            "cloud \"r2\" is not configured",
        ),
    ] {
        says(
            Error::BadToken {
                token: "x".into(),
                why,
            },
            &format!(
                "starting_token \"x\" is not valid ({says_why}); start the listing again without \
                 a token"
            ),
        );
    }
    says(
        Error::ResizePending {
            id: "v1".into(),
            device: p("/dev/sdb"),
            size: 1024,
            required: 2048,
        },
        "device /dev/sdb of volume v1 is 1024 bytes, less than the 2048 bytes requested: the \
         resize has not reached this node yet; retry",
    );
}

#[test]
fn request_words() {
    let cases: Vec<(Invalid, &str)> = vec![
        (Invalid::Required { field: "volume_id" }, "volume_id is required"),
        (Invalid::NoAccessType, "volume capability access_type is missing; set block or mount"),
        (Invalid::NoAccessMode, "volume capability access_mode is missing"),
        (Invalid::UnknownAccessMode { mode: 42 }, "volume capability access_mode 42 is unknown; set one of the CSI access modes"),
        (Invalid::NoCapabilities, "volume_capabilities is empty; at least one is required"),
        (Invalid::NegativeCapacity, "capacity_range bytes must not be negative"),
        (Invalid::NoExpandSize, "capacity_range.required_bytes is required: the size to expand to"),
        (Invalid::EmptyContentSource, "volume_content_source is set but names neither a snapshot nor a volume"),
        (Invalid::NegativeMaxEntries { n: -1 }, "max_entries -1 is negative; use 0 for no limit or a positive page size"),
        (Invalid::NoDefaultCloud { known: strings(&["east", "west"]) }, "the request has no \"cloud\" secret and no default cloud ([Global]) is configured; set the secret to one of \"east\", \"west\""),
        (Invalid::UnknownCloud { name: "r9".into(), known: strings(&["", "east"]) }, "secret \"cloud\" = \"r9\" names no configured cloud; configured: \"\", \"east\""),
        (Invalid::NameTooLong { what: Resource::Volume, len: 300, max: 255 }, "volume name is 300 bytes long; Cinder stores at most 255: use a shorter name"),
        (Invalid::NameControlChar { what: Resource::Snapshot, name: "a\0b".into(), found: '\0' }, "snapshot name \"a\\0b\" contains the control character '\\0', which CSI bans in names; use printable characters (tab, LF and CR are allowed)"),
        (Invalid::UnknownVolumeType { name: "nope".into() }, "volume type \"nope\" does not exist in Cinder; fix the \"type\" parameter"),
        (Invalid::TypeParamUnknown { class: ParamClass::StorageClass, name: "platinum".into() }, "StorageClass parameter \"type\" names volume type \"platinum\", which does not exist"),
        (Invalid::ReadOnlyPublish, "readonly publish is not supported (no PUBLISH_READONLY capability): Nova attachments are read-write; the node mounts read-only from NodePublishVolume's readonly flag"),
        (Invalid::UnknownParameters { class: ParamClass::StorageClass, keys: strings(&["typo", "zzz"]), accepted: "type, availability" }, "unknown StorageClass parameters \"typo\", \"zzz\"; accepted keys: type, availability (and any under csi.storage.k8s.io/)"),
        (Invalid::UnknownParameters { class: ParamClass::VolumeAttributesClass, keys: strings(&["iops"]), accepted: "type" }, "unknown VolumeAttributesClass parameter \"iops\"; accepted keys: type (and any under csi.storage.k8s.io/)"),
        (Invalid::ParameterTwice { key: "Type".into() }, "parameter \"Type\" is given twice (keys are case-insensitive); keep one"),
        (Invalid::FormatOptionTwice { key: "blockSize" }, "StorageClass parameter blockSize is given twice"),
        (Invalid::NotPositive { class: ParamClass::StorageClass, key: "blocksize".into(), value: "0".into() }, "StorageClass parameter blocksize=\"0\" must be a positive whole number"),
        (Invalid::NotPositive { class: ParamClass::VolumeContext, key: "inodeSize".into(), value: "x".into() }, "volume_context inodeSize=\"x\" must be a positive whole number"),
        (Invalid::FsTypeParameter { key: "fsType".into() }, "StorageClass parameter \"fsType\" is not read by CSI drivers; use csi.storage.k8s.io/fstype (in-tree migration rewrites it that way)"),
        (Invalid::EmptyMutableType, "mutable parameter \"type\" is empty; name a Cinder volume type"),
        (Invalid::NotBoolean { key: "force-create".into(), value: "maybe".into() }, "parameter \"force-create\" = \"maybe\" is not a boolean; use true or false"),
        (Invalid::UnknownSnapshotType { value: "clone".into() }, "VolumeSnapshotClass parameter \"type\" = \"clone\" is not supported; use \"snapshot\" or \"backup\""),
        (Invalid::NotSeconds { key: "backup-max-duration-seconds-per-gb".into(), value: "-1".into() }, "parameter \"backup-max-duration-seconds-per-gb\" = \"-1\" is not a whole number of seconds"),
        (Invalid::PathTooLong { field: "target_path", len: 5000, longest: 300 }, "target_path is 5000 bytes long with a name of 300 bytes: Linux paths are at most 4095 bytes and each name in them at most 255; use a shorter path"),
        (Invalid::PathNotAbsolute { field: "target_path", path: p("a/b") }, "target_path \"a/b\" must be an absolute path"),
        (Invalid::PathDots { field: "staging_target_path", path: p("/k/../x") }, "staging_target_path \"/k/../x\" must not contain `.` or `..` components"),
        (Invalid::PathOutsideKubelet { field: "target_path", path: p("/mnt/x"), kubelet_dir: p("/var/lib/kubelet") }, "target_path \"/mnt/x\" is outside the kubelet directory /var/lib/kubelet; set --kubelet-dir if kubelet runs with a different root"),
        (Invalid::BadVolumeId { id: "a/b".into() }, "volume_id \"a/b\" is not a valid Cinder volume id (no `/` or control characters, at most 255 bytes)"),
        (Invalid::MountMultiWriter { mode: AccessMode::MultiNodeMultiWriter }, "access mode MULTI_NODE_MULTI_WRITER cannot be used with a mounted filesystem: ext4/xfs/btrfs must be written by one node only; use block access for multi-attach"),
        (Invalid::MountFlagChars { flag: "a b".into() }, "mount flag \"a b\" in volume_capability.mount.mount_flags contains whitespace or control characters; give each option as key or key=value"),
        (Invalid::MountFlagNotAllowed { flag: "bind".into() }, "mount flag \"bind\" is not allowed in volume_capability.mount.mount_flags: binds, moves, remounts, propagation and loop setup are done by the driver itself; remove it from the StorageClass or PV mountOptions"),
        (Invalid::MountFlagUnknown { flag: "commit=soon".into(), fs: FsKind::Xfs }, "mount flag \"commit=soon\" in volume_capability.mount.mount_flags is not a mount option of xfs (see mount(8) and xfs's own options) nor an SELinux context option; fix or remove it in the StorageClass or PV mountOptions"),
        (Invalid::UnsupportedFsType { fs_type: "vfat".into() }, "fsType \"vfat\" is not supported; use ext4 (default), ext2, ext3, xfs or btrfs"),
        (Invalid::NotTrueOrFalse { key: "resizeRequired".into(), value: "yes".into() }, "volume_context resizeRequired=\"yes\" must be \"true\" or \"false\""),
        (Invalid::NotPowerOfTwo { key: "blockSize", value: 3000, range: (1024, 65536), fs: FsKind::Ext4 }, "volume_context blockSize=3000 is invalid for ext4: use a power of two from 1024 to 65536"),
        (Invalid::FormatOptionNotFor { key: "inodeSize", fs: FsKind::Btrfs, applies_to: vec![FsKind::Ext2, FsKind::Ext3, FsKind::Ext4, FsKind::Xfs] }, "volume_context inodeSize is not supported for btrfs; it applies to ext2/ext3/ext4/xfs only"),
        (Invalid::FormatOptionRange { key: "bytesPerInode", value: 1, range: (1024, 67108864) }, "volume_context bytesPerInode=1 is invalid: use 1024 to 67108864"),
        (Invalid::SamePaths, "target_path and staging_target_path must differ"),
        (Invalid::Capability(Unsupported::FsType { fs_type: "notafs".into() }), "volume capability fs_type \"notafs\" is not a filesystem this driver supports; use one of ext2, ext3, ext4, xfs, btrfs (empty means ext4)"),
        (Invalid::VolumeCapability { id: "v1".into(), why: Unsupported::MultiWriterMount { mode: AccessMode::MultiNodeSingleWriter } }, "volume v1: access mode MULTI_NODE_SINGLE_WRITER needs volumeMode: Block; a filesystem mounted on several nodes while one writes is corrupted (use ReadWriteOnce for a filesystem, or ReadOnlyMany to share it read-only)"),
        (Invalid::Capability(Unsupported::NoMultiattach { mode: AccessMode::MultiNodeReaderOnly }), "access mode MULTI_NODE_READER_ONLY needs a Cinder volume type with multiattach (extra spec multiattach=\"<is> True\"); set the StorageClass parameter \"type\" to such a type"),
    ];
    for (e, want) in cases {
        says(e, want);
    }
}

#[test]
fn range_words() {
    says(Range::TooLarge { gib: 4 << 30 }, "4294967296 GiB is larger than Cinder's largest volume (2147483647 GiB, 2305843008139952128 bytes); ask for less");
    says(
        Range::SourceOverLimit {
            gib: 5,
            limit_bytes: 1 << 30,
        },
        "the source is 5 GiB, larger than capacity_range limit_bytes 1073741824",
    );
    says(Range::OverLimit { gib: 2, limit_bytes: 1 << 30 }, "Cinder sizes are whole GiB: 2 GiB exceeds capacity_range limit_bytes 1073741824; raise the limit to at least 2147483648");
    says(
        Range::RequiredOverLimit(CapacityRange {
            required_bytes: 10,
            limit_bytes: 5,
        }),
        "capacity_range required_bytes 10 exceeds limit_bytes 5",
    );
}

#[test]
fn mismatch_words() {
    says(Mismatch::ForeignVolume { name: "pvc-1".into(), id: "v1".into(), cluster: "k1".into(), tag: None }, "a volume named \"pvc-1\" already exists (v1) but was not created by this driver for cluster \"k1\" (its metadata cinder.csi.openstack.org/cluster is missing); it is not adopted: rename or delete it");
    says(Mismatch::ForeignVolume { name: "pvc-1".into(), id: "v1".into(), cluster: "k1".into(), tag: Some("k2".into()) }, "a volume named \"pvc-1\" already exists (v1) but was not created by this driver for cluster \"k1\" (its metadata cinder.csi.openstack.org/cluster is \"k2\"); it is not adopted: rename or delete it");
    let vol = |diff| Mismatch::Volume {
        name: "pvc-1".into(),
        id: "v1".into(),
        diff,
    };
    says(vol(VolumeDiff::Size { size_gib: 2, capacity: CapacityRange { required_bytes: 10, limit_bytes: 20 } }), "volume \"pvc-1\" already exists as v1 but its size 2 GiB does not fit capacity_range (required 10, limit 20); use another name or delete it");
    says(vol(VolumeDiff::Source), "volume \"pvc-1\" already exists as v1 but its content source differs; use another name or delete it");
    says(vol(VolumeDiff::Capability(Unsupported::NoMultiattach { mode: AccessMode::MultiNodeReaderOnly })), "volume \"pvc-1\" already exists as v1 but it cannot serve the capability: access mode MULTI_NODE_READER_ONLY needs a Cinder volume type with multiattach (extra spec multiattach=\"<is> True\"); set the StorageClass parameter \"type\" to such a type; use another name or delete it");
    says(vol(VolumeDiff::Type { have: "".into(), want: "gold".into() }), "volume \"pvc-1\" already exists as v1 but its volume type is \"\", not \"gold\"; use another name or delete it");
    says(vol(VolumeDiff::Zone { zone: "zone 1".into(), topology: "zone-1".into(), requisite: strings(&["az2"]) }), "volume \"pvc-1\" already exists as v1 but its availability zone \"zone 1\" (topology \"zone-1\") is not among the requisite zones [\"az2\"]; use another name or delete it");
    says(
        Mismatch::CopyOfOther {
            kind: CopyKind::Snapshot,
            name: "s".into(),
            id: "s1".into(),
            of: "v1".into(),
            wanted: "v2".into(),
        },
        "snapshot \"s\" already exists as s1 of volume v1, not of v2",
    );
    says(
        Mismatch::CopyOfOther {
            kind: CopyKind::Backup,
            name: "b".into(),
            id: "b1".into(),
            of: "v1".into(),
            wanted: "v2".into(),
        },
        "backup \"b\" already exists as b1 of volume v1, not of v2",
    );
    says(
        Mismatch::BackupOfOther {
            name: "b".into(),
            of: "v1".into(),
            wanted: "v2".into(),
        },
        "a backup named \"b\" is being taken of volume v1, not of v2",
    );
    says(Mismatch::StagedForBlock { id: "v1".into(), staging: p("/k/s") }, "volume v1 is staged at /k/s for block access; call NodeUnstageVolume before staging it with mount access");
    says(Mismatch::StagedWithMount { id: "v1".into(), staging: p("/k/s") }, "volume v1 is staged at /k/s with mount access (its filesystem is mounted there); call NodeUnstageVolume before staging it for block access");
    says(Mismatch::PublishedOtherwise { id: "v1".into(), target: p("/k/t"), read_only: true }, "volume v1 is already published at /k/t read-write; unpublish it before publishing it read-only");
}

#[test]
fn refusal_words() {
    let cases: Vec<(Refusal, &str)> = vec![
        (Refusal::NoCapacityCloud, "GetCapacity has no secrets to choose among several clouds and no default cloud ([Global]) is configured"),
        (Refusal::SourceVolumeFailed { id: "v1".into(), status: VolumeStatus::Error }, "source volume v1 is in status error; it cannot be cloned"),
        (Refusal::SourceCopyFailed { kind: CopyKind::Backup, id: "b1".into(), status: CopyStatus::Error }, "source backup b1 is in status error; it cannot be restored"),
        (Refusal::MayHoldData { id: "v1".into(), name: "pvc-1".into(), status: VolumeStatus::ErrorExtending, reason: Some("disk full".into()) }, "volume v1 (\"pvc-1\") is in status error_extending: disk full; it may hold data, so it is not deleted automatically: inspect it, then delete it (or reset its state) and retry"),
        (Refusal::SameName { what: Named::Volume, name: "pvc-1".into(), ids: strings(&["v1", "v2"]) }, "2 volumes are named \"pvc-1\" (v1, v2); delete the extra ones so the name identifies one volume"),
        (Refusal::SameName { what: Named::TemporarySnapshot, name: "b".into(), ids: strings(&["s1", "s2"]) }, "2 temporary snapshots are named \"b\" (s1, s2); delete the extra ones"),
        (Refusal::Attached { id: "v1".into(), nodes: strings(&["node-1", "node-2"]) }, "volume v1 is attached to node(s) node-1, node-2; it must be unpublished (ControllerUnpublishVolume) before it can be deleted"),
        (Refusal::HasSnapshots { id: "v1".into(), snapshots: strings(&["s1"]) }, "volume v1 has snapshots (s1); delete them first, or set [BlockStorage] cascade-delete = true to delete them with the volume"),
        (Refusal::DeleteRefused { id: "v1".into(), message: "busy".into() }, "Cinder refused to delete volume v1: busy"),
        (Refusal::ChangeRefused { id: "v1".into(), status: VolumeStatus::Available, change: Change::Extend { gib: 3 }, message: "m".into() }, "Cinder refused to extend volume v1 (status available) to 3 GiB: m"),
        (Refusal::ChangeRefused { id: "v1".into(), status: VolumeStatus::InUse, change: Change::Retype { to: "gold".into() }, message: "m".into() }, "Cinder refused to retype volume v1 (status in-use) to \"gold\": m"),
        (Refusal::ChangeRefused { id: "v1".into(), status: VolumeStatus::Available, change: Change::Attach { node: "n1".into() }, message: "m".into() }, "Nova refused to attach volume v1 (status available) to node n1: m"),
        (Refusal::ChangeRefused { id: "v1".into(), status: VolumeStatus::InUse, change: Change::Detach { node: "n1".into() }, message: "m".into() }, "Nova refused to detach volume v1 (status in-use) from node n1: m"),
        (Refusal::CannotExtend { id: "v1".into(), status: VolumeStatus::ErrorExtending }, "volume v1 is in status error_extending; Cinder extends only available or in-use volumes (an operator must reset its state)"),
        (Refusal::CannotExtend { id: "v1".into(), status: VolumeStatus::Maintenance }, "volume v1 is in status maintenance; Cinder extends only available or in-use volumes"),
        (Refusal::OnlineExtendUnsupported { id: "v1".into(), why: "needs 3.42".into() }, "volume v1 is in use and this cloud cannot extend attached volumes (needs 3.42); unpublish it first"),
        (Refusal::CannotRetype { id: "v1".into(), status: VolumeStatus::Error }, "volume v1 is in status error; Cinder retypes only available or in-use volumes"),
        (Refusal::NotRetyped { id: "v1".into(), to: "gold".into(), policy: MigrationPolicy::Never }, "Cinder did not retype volume v1 to \"gold\"; the change needs a data migration, which [BlockStorage] retype-migration-policy = never forbids"),
        (Refusal::NotRetyped { id: "v1".into(), to: "gold".into(), policy: MigrationPolicy::OnDemand }, "Cinder did not retype volume v1 to \"gold\"; see the Cinder volume's messages"),
        (Refusal::CannotAttach { id: "v1".into(), status: VolumeStatus::Error, reason: None }, "volume v1 is in status error; it cannot be attached"),
        (Refusal::PublishedNoMultiattach { id: "v1".into(), nodes: strings(&["node-1"]) }, "volume v1 is published to node(s) node-1 and its volume type has no multiattach; unpublish it there first"),
        (Refusal::PublishedSingleNode { id: "v1".into(), nodes: strings(&["node-1"]), mode: AccessMode::SingleNodeWriter }, "volume v1 is published to node(s) node-1 and access mode SINGLE_NODE_WRITER is single-node; unpublish it there first, or use a MULTI_NODE access mode"),
        (Refusal::SnapshotNeedsForce { message: "volume is in-use".into() }, "volume is in-use; to snapshot an attached volume set the VolumeSnapshotClass parameter force-create: \"true\""),
        (Refusal::NoBackupService, "this cloud has no Cinder backup service; use a VolumeSnapshotClass with type: snapshot"),
        (Refusal::BackupsUnsupported { why: "no service".into() }, "this cloud cannot make backups (no service); use type: snapshot"),
        (Refusal::CopyDeleteRefused { kind: CopyKind::Snapshot, id: "s1".into(), status: CopyStatus::Available, message: "m".into() }, "snapshot s1 (status available) cannot be deleted: m"),
        (Refusal::AmbiguousZone { value: "zone-1".into(), zones: strings(&["zone 1", "zone:1"]) }, "topology zone \"zone-1\" is the label form of several Cinder availability zones (\"zone 1\", \"zone:1\"), so it does not say which one is meant; rename the zones so their label forms differ, or pin the zone with the StorageClass parameter \"availability\""),
    ];
    for (e, want) in cases {
        says(e, want);
    }
}

#[test]
fn failure_words() {
    let gone = CloudError::Unavailable {
        message: "503".into(),
        request_id: RequestId::default(),
    };
    says(Failure::Creation { id: "v1".into(), name: "pvc-1".into(), status: VolumeStatus::Error, reason: Some("No valid backend".into()), cleanup: Cleanup::Deleted }, "volume v1 (\"pvc-1\") went into status error: No valid backend; it was deleted; a retry creates a new one");
    says(Failure::Creation { id: "v1".into(), name: "pvc-1".into(), status: VolumeStatus::Error, reason: None, cleanup: Cleanup::DeleteFailed(Box::new(gone.clone())) }, "volume v1 (\"pvc-1\") went into status error; deleting it failed too (cloud unavailable: 503); a retry deletes it again");
    says(Failure::Copy { kind: CopyKind::Snapshot, id: "s1".into(), name: "s".into(), volume_id: "v1".into(), status: CopyStatus::Error, cleanup: Cleanup::Deleted }, "snapshot s1 (\"s\") of volume v1 went into status error; it was deleted; a retry takes a new one");
    says(Failure::Copy { kind: CopyKind::Backup, id: "b1".into(), name: "b".into(), volume_id: "v1".into(), status: CopyStatus::Error, cleanup: Cleanup::DeleteFailed(Box::new(gone)) }, "backup b1 (\"b\") of volume v1 went into status error; deleting it failed too (cloud unavailable: 503)");
    says(Failure::BackupStuck { id: "b1".into(), status: CopyStatus::Creating, age_secs: 100, bound_secs: 50, secs_per_gib: 20, size_gib: 1 }, "backup b1 has been creating for 100s, longer than the 50s allowed by backup-max-duration-seconds-per-gb (20 s/GiB × 1 GiB + 30s)");
    says(
        Failure::SnapshotUnusable {
            id: "s1".into(),
            status: CopyStatus::Error,
        },
        "snapshot s1 is in status error; it cannot be used, delete it",
    );
}

#[test]
fn node_words() {
    let cases: Vec<(NodeRefusal, &str)> = vec![
        (NodeRefusal::NotBlockDevice { path: p("/dev/x") }, "/dev/x is not a block device"),
        (NodeRefusal::StagingHoldsDevice { staging: p("/k/s"), device: dev(7, 1), id: "v1".into() }, "staging path /k/s already holds device 7:1 for block access; volume v1 was not staged"),
        (NodeRefusal::StagingHoldsOther { staging: p("/k/s"), id: "v1".into(), device: Some(p("/dev/sdb")) }, "staging path /k/s already holds another device; volume v1 (/dev/sdb) was not staged"),
        (NodeRefusal::StagingHoldsOther { staging: p("/k/s"), id: "v1".into(), device: None }, "staging path /k/s already holds another device; volume v1 was not staged"),
        (NodeRefusal::StagingHoldsOtherAt { staging: p("/k/s"), device: dev(7, 2), file: p("/k/s/block"), id: "v1".into() }, "staging path /k/s already holds another device (7:2 at /k/s/block); volume v1 was not staged"),
        (NodeRefusal::NotDirectory { role: PathRole::Staging, path: p("/k/s") }, "staging path /k/s exists and is not a directory"),
        (NodeRefusal::NotDirectory { role: PathRole::Target, path: p("/k/t") }, "target path /k/t exists and is not a directory"),
        (NodeRefusal::NotRegularFile { path: p("/k/t") }, "target path /k/t exists and is not a regular file"),
        (NodeRefusal::CannotBindOnto { path: p("/k/s/block") }, "/k/s/block exists and is not a file this driver can bind the device onto; remove it"),
        (NodeRefusal::NotOurFile { path: p("/k/s/block") }, "/k/s/block is not a file this driver created; remove it by hand"),
        (NodeRefusal::TooManyMounts { path: p("/k/t"), limit: 8 }, "more than 8 mounts are stacked at /k/t; clean them up by hand"),
        (NodeRefusal::BlankReadOnly { id: "v1".into() }, "volume v1 is blank and its access mode is read-only: there is no filesystem to mount and formatting would write to it"),
        (NodeRefusal::MissingTools { id: "v1".into(), fs: FsKind::Xfs, tools: strings(&["mkfs.xfs", "xfs_growfs"]) }, "cannot format volume v1 as xfs: mkfs.xfs, xfs_growfs not installed on this node"),
        (NodeRefusal::DeviceHoldsData { device: p("/dev/sdb"), id: "v1".into(), content: Content::PartitionTable("gpt") }, "device /dev/sdb of volume v1 holds a gpt partition table; refusing to format or mount it (wipe it deliberately if it is really unused)"),
        (NodeRefusal::DeviceHoldsData { device: p("/dev/sdb"), id: "v1".into(), content: Content::Other("swap") }, "device /dev/sdb of volume v1 holds swap data; refusing to format or mount it (wipe it deliberately if it is really unused)"),
        (NodeRefusal::DeviceHoldsData { device: p("/dev/sdb"), id: "v1".into(), content: Content::Several(strings(&["ext4 filesystem", "dos partition table"])) }, "device /dev/sdb of volume v1 holds more than one signature (ext4 filesystem, dos partition table), so which is current cannot be told; refusing to format or mount it (wipe it deliberately if it is really unused)"),
        (NodeRefusal::DeviceHoldsData { device: p("/dev/sdb"), id: "v1".into(), content: Content::Unrecognised }, "device /dev/sdb of volume v1 holds data without a filesystem signature this driver knows; refusing to format or mount it (wipe it deliberately if it is really unused)"),
        (NodeRefusal::StillMounted { staging: p("/k/s"), at: vec![p("/k/p1"), p("/k/p2")] }, "the volume staged at /k/s is still mounted at /k/p1, /k/p2; call NodeUnpublishVolume for it first (nothing was unmounted)"),
        (NodeRefusal::NoStagingPath, "staging_target_path is required: this plugin stages volumes (STAGE_UNSTAGE_VOLUME); call NodeStageVolume first and pass its path"),
        (NodeRefusal::NotStaged { id: "v1".into(), staging: p("/k/s"), block: false }, "volume v1 is not staged at /k/s; call NodeStageVolume first"),
        (NodeRefusal::NotStaged { id: "v1".into(), staging: p("/k/s"), block: true }, "volume v1 is not staged at /k/s for block access; call NodeStageVolume first"),
        (NodeRefusal::TargetHoldsOther { target: p("/k/t") }, "target path /k/t already holds another mount; unpublish it first"),
        (NodeRefusal::SingleWriterElsewhere { id: "v1".into(), at: vec![p("/k/t1")], target: p("/k/t2") }, "volume v1 has access mode SINGLE_NODE_SINGLE_WRITER and is already published at /k/t1; unpublish it there before publishing it at /k/t2"),
        (NodeRefusal::StagedOtherDevice { staging: p("/k/s"), staged: dev(7, 1), id: "v1".into(), disk: dev(7, 2), device: p("/dev/loop2") }, "staging path /k/s holds device 7:1, not volume v1's disk 7:2 (/dev/loop2)"),
        (NodeRefusal::NothingToGrow { device: p("/dev/sdb"), path: p("/k/s"), content: Content::Blank }, "device /dev/sdb mounted at /k/s holds no filesystem this driver can grow (Blank)"),
    ];
    for (e, want) in cases {
        says(e, want);
    }
    // Errnos are worded as the kernel's errors.
    let eio = std::io::Error::from_raw_os_error(5).to_string();
    says(NodeRefusal::StillBroken { path: p("/k/s"), errno: 5 }, &format!("/k/s is still a broken mount ({eio}) after unmounting one; several are stacked there: call NodeUnstageVolume to clean them up"));
    says(
        NodeRefusal::BrokenMount {
            path: p("/k/t"),
            errno: 5,
        },
        &format!("/k/t is a broken mount ({eio}); call NodeUnpublishVolume to clean it up"),
    );
    says(NodeRefusal::BrokenAfterMount { id: "v1".into(), errno: 5 }, &format!("the filesystem of volume v1 still fails after a fresh mount ({eio}); a mount of it elsewhere (a pod's bind) may hold the broken instance: unpublish it first"));
    says(
        NodeRefusal::BrokenCannotGrow {
            path: p("/k/s"),
            errno: 5,
        },
        &format!("the mount at /k/s does not answer ({eio}); it cannot be grown"),
    );
}

#[test]
fn pvc_annotations_codes_and_words() {
    use crate::net::kube::KubeError;
    let down = Error::Kube(KubeError::Unavailable(
        "connecting for https://k:6443/…".into(),
    ));
    assert_eq!(code_of(&down), Code::Unavailable);
    let denied = Error::Kube(KubeError::Refused {
        claim: "ns/data".into(),
        why: "HTTP 403 Forbidden: no".into(),
    });
    assert_eq!(code_of(&denied), Code::FailedPrecondition);
    let none = Invalid::AffinityVolume {
        claim: "ns/data".into(),
        annotation: "cinder.csi.openstack.org/anti-affinity",
        entry: "pvc-1".into(),
        matches: vec![],
    };
    assert_eq!(code_of(&none.clone().into()), Code::InvalidArgument);
    says(
        none,
        "PVC ns/data annotation cinder.csi.openstack.org/anti-affinity names \"pvc-1\", which is \
         no Cinder volume (neither a volume UUID nor a volume name); list existing volumes by \
         name or UUID, comma-separated",
    );
    says(
        Invalid::AffinityVolume {
            claim: "ns/data".into(),
            annotation: "cinder.csi.openstack.org/affinity",
            entry: "db".into(),
            matches: strings(&["v1", "v2"]),
        },
        "PVC ns/data annotation cinder.csi.openstack.org/affinity names \"db\", which is the \
         name of 2 Cinder volumes (v1, v2); name the one meant by its UUID",
    );
}
