//! Making a local group snapshot: the records first (the group snapshot, then one `creating`
//! snapshot per volume), then, with the attached members' filesystems frozen, one sparse copy
//! per volume, then the thaw and the final statuses. A member that is attached but whose
//! filesystem this process cannot see mounted (a raw block volume, a mount in another mount
//! namespace), or cannot freeze (ext2), is refused before anything is written: its copy would
//! not be a point in time. Unattached members have no writers.
//!
//! The ops mutex is held from the checks to the thaw, so no attach or detach changes what was
//! checked; the copies are sparse (reflinks where DIR's filesystem shares extents), so the
//! freeze lasts as long as copying the volumes' data. A crash leaves the group snapshot
//! `creating`, which the startup reconcile deletes, and `frozen.json`, which it thaws.

use std::path::PathBuf;

use super::backend::{io_error, Inner};
use super::data::{self, Source};
use super::freeze::{self, FreezeError, Frozen, Target};
use super::records::{self, CopyRecord, GroupRecord, RECORD_VERSION};
use super::rules::refused;
use super::store::Kind;
use crate::cloud::model;
use crate::cloud::{
    CloudError, CloudResult, CopyKind, CopyStatus, GroupRefusal, GroupSnapshot, NewGroupSnapshot,
    Unfreezable,
};

/// One member to copy.
struct Member {
    snapshot_id: String,
    volume_id: String,
    device: Option<PathBuf>,
}

fn unfreezable(volume_id: &str, why: Unfreezable) -> CloudError {
    CloudError::GroupRefused(GroupRefusal::Unfreezable {
        volume_id: volume_id.to_string(),
        why,
    })
}

impl Inner {
    pub(super) fn create_group_snapshot(
        &self,
        req: &NewGroupSnapshot,
    ) -> CloudResult<GroupSnapshot> {
        let _ops = self.lock_ops();
        let members = self.group_members(&req.volume_ids)?;
        let targets = freeze_targets(&members)?;
        let group = GroupRecord {
            version: RECORD_VERSION,
            id: uuid::Uuid::new_v4().to_string(),
            name: req.name.clone(),
            description: req.description.clone(),
            status: CopyStatus::Creating.as_str().into(),
            member_ids: members.iter().map(|m| m.snapshot_id.clone()).collect(),
            created_at_ms: records::now_ms(),
        };
        // The group first: the reconcile deletes a `creating` group with its members.
        self.put_group(&group)?;
        for m in &members {
            let size_gib = self
                .read()
                .volumes
                .get(&m.volume_id)
                .map(|v| v.size_gib)
                .unwrap_or_default();
            self.put_copy(
                Kind::Snapshot,
                CopyRecord {
                    created_at_ms: group.created_at_ms,
                    group_snapshot_id: Some(group.id.clone()),
                    ..CopyRecord::creating(
                        m.snapshot_id.clone(),
                        &req.name,
                        &req.description,
                        &m.volume_id,
                        size_gib,
                    )
                },
            )?;
        }
        let results = match self.copy_frozen(&targets, &members) {
            Ok(results) => results,
            Err(e) => {
                self.drop_group(&group.id)?;
                return Err(e);
            }
        };
        let mut failed = false;
        for (m, result) in members.iter().zip(results) {
            failed |= result.is_err();
            self.finish_member(&m.snapshot_id, result)?;
        }
        let mut group = group;
        group.status = if failed { "error" } else { "available" }.into();
        self.put_group(&group)?;
        self.group_snapshot(&group.id)
    }

    /// The volumes, checked: they exist and are available or in use.
    fn group_members(&self, volume_ids: &[String]) -> CloudResult<Vec<Member>> {
        let st = self.read();
        volume_ids
            .iter()
            .map(|id| {
                let v = st.volume(id)?;
                model::group_member(&v.to_volume()).map_err(refused)?;
                Ok(Member {
                    snapshot_id: uuid::Uuid::new_v4().to_string(),
                    volume_id: id.clone(),
                    device: v.attachments.first().map(|a| PathBuf::from(&a.device)),
                })
            })
            .collect()
    }

    /// Freeze the targets, copy every member, thaw (also when a copy fails or panics).
    fn copy_frozen(
        &self,
        targets: &[Target],
        members: &[Member],
    ) -> CloudResult<Vec<std::io::Result<u64>>> {
        let frozen = match Frozen::freeze(&self.layout.frozen_record(), targets) {
            Ok(f) => f,
            Err(FreezeError::Unfreezable { volume_id, why }) => {
                return Err(unfreezable(&volume_id, why))
            }
            Err(FreezeError::Io(e)) => return Err(io_error("freeze the members", e)),
        };
        tracing::info!(
            frozen = frozen.len(),
            members = members.len(),
            "copying the members of a group snapshot"
        );
        let results = members
            .iter()
            .map(|m| {
                data::create(
                    &self.layout,
                    Kind::Snapshot,
                    &m.snapshot_id,
                    Some(Source {
                        file: &self.layout.data(Kind::Volume, &m.volume_id),
                        device: m.device.as_deref(),
                    }),
                    0,
                )
            })
            .collect();
        drop(frozen);
        Ok(results)
    }

    /// A member's copy done: `available` with its size, or `error`. Call with `ops` held.
    fn finish_member(&self, id: &str, result: std::io::Result<u64>) -> CloudResult<()> {
        let Some(mut rec) = self.read().snapshots.get(id).cloned() else {
            return Ok(());
        };
        match result {
            Ok(len) => {
                rec.size_gib = data::gib_of(len);
                rec.status = "available".into();
            }
            Err(e) => {
                tracing::warn!(id, error = %e, "group snapshot member copy failed");
                rec.status = "error".into();
                rec.error_reason = Some(format!("cannot copy the volume's data: {e}"));
            }
        }
        self.put_copy(Kind::from(CopyKind::Snapshot), rec)
    }
}

/// The mount to freeze each attached member through; a member attached without a visible
/// mount is refused.
fn freeze_targets(members: &[Member]) -> CloudResult<Vec<Target>> {
    if members.iter().all(|m| m.device.is_none()) {
        return Ok(Vec::new());
    }
    let text = std::fs::read_to_string("/proc/self/mountinfo")
        .map_err(|e| io_error("read /proc/self/mountinfo", e))?;
    let mounts = freeze::parse_mountinfo(&text);
    let mut targets = Vec::new();
    for m in members {
        let Some(device) = &m.device else {
            continue;
        };
        let found = freeze::mounts_of(device, &mounts)
            .map_err(|e| io_error(format_args!("look up {}", device.display()), e))?;
        // The mount point must still show that mount (not one below or above it), or a
        // freeze would hit another filesystem.
        let mount = found.into_iter().find(|mnt| {
            std::fs::File::open(&mnt.mount_point)
                .and_then(|f| freeze::mount_id(&f))
                .is_ok_and(|id| id == mnt.id)
        });
        let Some(mount) = mount else {
            return Err(unfreezable(
                &m.volume_id,
                Unfreezable::NoVisibleMount {
                    device: device.display().to_string(),
                },
            ));
        };
        targets.push(Target {
            volume_id: m.volume_id.clone(),
            mount,
        });
    }
    Ok(targets)
}
