//! The words for a cloud object in a state that refuses the request (FailedPrecondition) and
//! for an operation that failed (Internal): each says what an operator or the caller can do.

use std::fmt::{self, Display, Formatter};

use super::words::{joined, quoted, reason};
use crate::cloud::MigrationPolicy;
use crate::driver::controller::params::BACKUP_BASE_SECONDS;
use crate::driver::{Change, Cleanup, Failure, Named, Refusal};

impl Display for Refusal {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoCapacityCloud => f.write_str(
                "GetCapacity has no secrets to choose among several clouds and no default \
                 cloud ([Global]) is configured",
            ),
            Self::SourceVolumeFailed { id, status } => write!(
                f,
                "source volume {id} is in status {status}; it cannot be cloned"
            ),
            Self::SourceCopyFailed { kind, id, status } => write!(
                f,
                "source {} {id} is in status {status}; it cannot be restored",
                kind.as_str()
            ),
            Self::MayHoldData {
                id,
                name,
                status,
                reason: why,
            } => write!(
                f,
                "volume {id} ({name:?}) is in status {status}{}; it may hold data, so it is not \
                 deleted automatically: inspect it, then delete it (or reset its state) and \
                 retry",
                reason(why)
            ),
            Self::SameName { what, name, ids } => {
                let (what, tail) = match what {
                    Named::Volume => ("volume", " so the name identifies one volume"),
                    Named::Snapshot => ("snapshot", ""),
                    Named::Backup => ("backup", ""),
                    Named::TemporarySnapshot => ("temporary snapshot", ""),
                    Named::GroupSnapshot => ("group snapshot", ""),
                };
                write!(
                    f,
                    "{} {what}s are named {name:?} ({}); delete the extra ones{tail}",
                    ids.len(),
                    joined(ids)
                )
            }
            Self::Attached { id, nodes } => write!(
                f,
                "volume {id} is attached to node(s) {}; it must be unpublished \
                 (ControllerUnpublishVolume) before it can be deleted",
                joined(nodes)
            ),
            Self::HasSnapshots { id, snapshots } => write!(
                f,
                "volume {id} has snapshots ({}); delete them first, or set [BlockStorage] \
                 cascade-delete = true to delete them with the volume",
                joined(snapshots)
            ),
            Self::DeleteRefused { id, message } => {
                write!(f, "Cinder refused to delete volume {id}: {message}")
            }
            Self::ChangeRefused {
                id,
                status,
                change,
                message,
            } => {
                let (who, verb, to) = match change {
                    Change::Extend { gib } => ("Cinder", "extend", format!("to {gib} GiB")),
                    Change::Retype { to } => ("Cinder", "retype", format!("to {to:?}")),
                    Change::Attach { node } => ("Nova", "attach", format!("to node {node}")),
                    Change::Detach { node } => ("Nova", "detach", format!("from node {node}")),
                };
                write!(
                    f,
                    "{who} refused to {verb} volume {id} (status {status}) {to}: {message}"
                )
            }
            Self::CannotExtend { id, status } => write!(
                f,
                "volume {id} is in status {status}; Cinder extends only available or in-use \
                 volumes{}",
                if status.is_error() {
                    " (an operator must reset its state)"
                } else {
                    ""
                }
            ),
            Self::OnlineExtendUnsupported { id, why } => write!(
                f,
                "volume {id} is in use and this cloud cannot extend attached volumes ({why}); \
                 unpublish it first"
            ),
            Self::CannotRetype { id, status } => write!(
                f,
                "volume {id} is in status {status}; Cinder retypes only available or in-use \
                 volumes"
            ),
            Self::NotRetyped { id, to, policy } => write!(
                f,
                "Cinder did not retype volume {id} to {to:?}{}",
                match policy {
                    MigrationPolicy::Never => {
                        "; the change needs a data migration, which [BlockStorage] \
                         retype-migration-policy = never forbids"
                    }
                    MigrationPolicy::OnDemand => "; see the Cinder volume's messages",
                }
            ),
            Self::CannotAttach {
                id,
                status,
                reason: why,
            } => write!(
                f,
                "volume {id} is in status {status}{}; it cannot be attached",
                reason(why)
            ),
            Self::PublishedNoMultiattach { id, nodes } => write!(
                f,
                "volume {id} is published to node(s) {} and its volume type has no \
                 multiattach; unpublish it there first",
                joined(nodes)
            ),
            Self::PublishedSingleNode { id, nodes, mode } => write!(
                f,
                "volume {id} is published to node(s) {} and access mode {} is single-node; \
                 unpublish it there first, or use a MULTI_NODE access mode",
                joined(nodes),
                mode.as_str()
            ),
            Self::SnapshotNeedsForce { message } => write!(
                f,
                "{message}; to snapshot an attached volume set the VolumeSnapshotClass \
                 parameter force-create: \"true\""
            ),
            Self::NoBackupService => f.write_str(
                "this cloud has no Cinder backup service; use a VolumeSnapshotClass with type: \
                 snapshot",
            ),
            Self::BackupsUnsupported { why } => write!(
                f,
                "this cloud cannot make backups ({why}); use type: snapshot"
            ),
            Self::CopyDeleteRefused {
                kind,
                id,
                status,
                message,
            } => write!(
                f,
                "{} {id} (status {status}) cannot be deleted: {message}",
                kind.as_str()
            ),
            Self::GroupMember {
                id,
                group_snapshot_id,
            } => write!(
                f,
                "snapshot {id} is a member of group snapshot {group_snapshot_id} and is deleted \
                 with it (DeleteVolumeGroupSnapshot), not on its own"
            ),
            Self::GroupSnapshotDeleteRefused {
                id,
                status,
                message,
            } => write!(
                f,
                "group snapshot {id} (status {status}) cannot be deleted: {message}"
            ),
            Self::AmbiguousZone { value, zones } => write!(
                f,
                "topology zone {value:?} is the label form of several Cinder availability \
                 zones ({}), so it does not say which one is meant; rename the zones so their \
                 label forms differ, or pin the zone with the StorageClass parameter \
                 \"availability\"",
                quoted(zones)
            ),
        }
    }
}

impl Display for Failure {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Self::Creation {
                id,
                name,
                status,
                reason: why,
                cleanup,
            } => {
                write!(
                    f,
                    "volume {id} ({name:?}) went into status {status}{}; ",
                    reason(why)
                )?;
                match cleanup {
                    Cleanup::Deleted => f.write_str("it was deleted; a retry creates a new one"),
                    Cleanup::DeleteFailed(e) => {
                        write!(f, "deleting it failed too ({e}); a retry deletes it again")
                    }
                }
            }
            Self::Copy {
                kind,
                id,
                name,
                volume_id,
                status,
                cleanup,
            } => {
                write!(
                    f,
                    "{} {id} ({name:?}) of volume {volume_id} went into status {status}; ",
                    kind.as_str()
                )?;
                match cleanup {
                    Cleanup::Deleted => f.write_str("it was deleted; a retry takes a new one"),
                    Cleanup::DeleteFailed(e) => write!(f, "deleting it failed too ({e})"),
                }
            }
            Self::BackupStuck {
                id,
                status,
                age_secs,
                bound_secs,
                secs_per_gib,
                size_gib,
            } => write!(
                f,
                "backup {id} has been {status} for {age_secs}s, longer than the {bound_secs}s \
                 allowed by backup-max-duration-seconds-per-gb ({secs_per_gib} s/GiB × \
                 {size_gib} GiB + {BACKUP_BASE_SECONDS}s)"
            ),
            Self::SnapshotUnusable { id, status } => write!(
                f,
                "snapshot {id} is in status {status}; it cannot be used, delete it"
            ),
            Self::GroupSnapshot {
                id,
                name,
                volume_ids,
                status,
                cleanup,
            } => {
                write!(
                    f,
                    "group snapshot {id} ({name:?}) of volumes {} went into status {status}; ",
                    joined(volume_ids)
                )?;
                match cleanup {
                    Cleanup::Deleted => f.write_str("it was deleted; a retry takes a new one"),
                    Cleanup::DeleteFailed(e) => {
                        write!(f, "deleting it failed too ({e}); a retry deletes it again")
                    }
                }
            }
        }
    }
}
