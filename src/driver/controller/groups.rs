//! CreateVolumeGroupSnapshot and GetVolumeGroupSnapshot.
//!
//! A group snapshot MUST be write-order consistent or fail (CSI); the cloud port's
//! `GroupSnapshots` gives that guarantee or refuses (FailedPrecondition saying why), so the
//! core never snapshots the volumes one by one. Idempotency is by name: the same name of the
//! same volumes is the same group snapshot (CSI: "the group snapshot MUST only be created
//! once"), of other volumes AlreadyExists. Create waits a bounded while ([`GROUP_SETTLE`])
//! for the group snapshot and its members to become available, then answers with what it
//! has: `ready_to_use` false until it and every member are available; the snapshotter calls
//! again (or GetVolumeGroupSnapshot) until then. The wait is there because csi-snapshotter
//! v8.7.0 keeps each member's `readyToUse` from the first successful answer
//! (VolumeGroupSnapshotContent `volumeSnapshotInfoList` is filled once), and the
//! snapshot-controller copies it onto every member VolumeSnapshotContent while the group is
//! not yet ready — which turns members the sidecar had already found ready back to false,
//! and the sidecar ignores status-only changes (so they stay false until its resync). One
//! that went into an error state is deleted and the RPC fails, so a retry takes a new one
//! and nothing is left behind.

use std::collections::BTreeSet;
use std::time::{Duration, SystemTime};

use super::snapshots::{copy_info, SNAPSHOT_DESCRIPTION};
use super::waits::wait_deadline;
use super::{Controller, CreateGroupSnapshot, GroupSnapshotInfo, GroupSnapshotRef};
use crate::cloud::{
    Cloud, CloudError, CopyKind, CopyStatus, CopyWait, GroupSnapshot, NewGroupSnapshot, Resource,
};
use crate::driver::{
    Cleanup, Error, Failure, InFlightGuard, Invalid, Mismatch, Named, Refusal, Result,
};

/// How long a create waits for a group snapshot being cut to become available before it
/// answers `ready_to_use` false (also bounded by the RPC deadline). Cinder cuts one in
/// seconds; see the module doc for why the first answer should be the ready one.
pub const GROUP_SETTLE: Duration = Duration::from_secs(60);

/// CSI `VolumeGroupSnapshot` of a cloud's group snapshot: members in volume id order.
pub(super) fn group_info(g: &GroupSnapshot) -> GroupSnapshotInfo {
    let mut snapshots: Vec<_> = g
        .members
        .iter()
        .map(|m| {
            let mut info = copy_info(m);
            info.group_snapshot_id = Some(g.id.clone());
            info
        })
        .collect();
    snapshots.sort_by(|a, b| a.source_volume_id.cmp(&b.source_volume_id));
    let created_at = g
        .created_at
        .or_else(|| g.members.iter().filter_map(|m| m.created_at).min())
        .unwrap_or(SystemTime::UNIX_EPOCH);
    GroupSnapshotInfo {
        id: g.id.clone(),
        snapshots,
        created_at,
        ready_to_use: g.ready(),
    }
}

/// What a refused or failed group snapshot create means for the caller.
fn create_error(e: CloudError) -> Error {
    match e {
        CloudError::NotFound {
            resource: Resource::Volume,
            id,
        } => Error::VolumeNotFound { id },
        CloudError::NotFound {
            resource: Resource::GroupType,
            id,
        } => Invalid::UnknownGroupType { name: id }.into(),
        other => Error::Cloud(other),
    }
}

impl Controller {
    pub fn lock_group_snapshot_name(&self, name: &str) -> Result<InFlightGuard> {
        self.inflight
            .try_lock(format!("group-snapshot-name:{name}"))
    }

    pub fn lock_group_snapshot(&self, id: &str) -> Result<InFlightGuard> {
        self.inflight.try_lock(format!("group-snapshot:{id}"))
    }

    /// The guards of all `ids`, or none: one busy volume makes the whole request Aborted.
    pub fn lock_volumes<'a>(
        &self,
        ids: impl IntoIterator<Item = &'a str>,
    ) -> Result<Vec<InFlightGuard>> {
        ids.into_iter().map(|id| self.lock_volume(id)).collect()
    }

    pub async fn create_group_snapshot(
        &self,
        req: CreateGroupSnapshot,
    ) -> Result<GroupSnapshotInfo> {
        super::validate::name(Resource::GroupSnapshot, &req.name)?;
        let volume_ids = super::validate::source_volumes(&req.source_volume_ids)?;
        let cloud = self.cloud(&req.cloud)?;
        if let Some(g) = self.group_snapshot_named(cloud, &req.name).await? {
            return self
                .existing_group_snapshot(cloud, g, &volume_ids, req.deadline)
                .await;
        }
        let new = NewGroupSnapshot {
            name: req.name.clone(),
            volume_ids,
            group_type: req
                .params
                .group_type
                .clone()
                .or_else(|| self.opts.block_storage.group_type.clone()),
            description: Some(SNAPSHOT_DESCRIPTION.to_string()),
        };
        let g = cloud
            .groups
            .create_group_snapshot(&new, wait_deadline(req.deadline))
            .await
            .map_err(create_error)?;
        let g = settle(cloud, g, req.deadline).await?;
        self.answer(cloud, g, req.deadline).await
    }

    /// The group snapshot named `name` that is not being deleted, if any.
    async fn group_snapshot_named(
        &self,
        cloud: &Cloud,
        name: &str,
    ) -> Result<Option<GroupSnapshot>> {
        let mut found: Vec<GroupSnapshot> = cloud
            .groups
            .group_snapshots_named(name)
            .await?
            .into_iter()
            .filter(|g| g.name == name && g.status != CopyStatus::Deleting)
            .collect();
        match found.len() {
            0 => Ok(None),
            1 => Ok(found.pop()),
            _ => Err(Refusal::SameName {
                what: Named::GroupSnapshot,
                name: name.to_string(),
                ids: found.into_iter().map(|g| g.id).collect(),
            }
            .into()),
        }
    }

    /// A retried create: the same volumes → its state; others → AlreadyExists; failed →
    /// deleted, and the RPC fails so the next call starts afresh.
    async fn existing_group_snapshot(
        &self,
        cloud: &Cloud,
        g: GroupSnapshot,
        volume_ids: &[String],
        deadline: tokio::time::Instant,
    ) -> Result<GroupSnapshotInfo> {
        let have: Vec<String> = g.volume_ids().into_iter().map(str::to_string).collect();
        if have != volume_ids {
            return Err(Mismatch::GroupOfOther {
                name: g.name.clone(),
                id: g.id.clone(),
                of: have,
                wanted: volume_ids.to_vec(),
            }
            .into());
        }
        let g = settle(cloud, g, deadline).await?;
        self.answer(cloud, g, deadline).await
    }

    /// The answer to a create: its state, or, for one in an error state, deleted and failed.
    async fn answer(
        &self,
        cloud: &Cloud,
        g: GroupSnapshot,
        deadline: tokio::time::Instant,
    ) -> Result<GroupSnapshotInfo> {
        // A member in error while the group is still `creating` fails with it once it settles.
        let failed = g.status.is_error()
            || (g.status == CopyStatus::Available && g.members.iter().any(|m| m.status.is_error()));
        if failed {
            let deadline = wait_deadline(deadline);
            let cleanup = match cloud.groups.delete_group_snapshot(&g.id, deadline).await {
                Ok(()) | Err(CloudError::NotFound { .. }) => Cleanup::Deleted,
                Err(e) => Cleanup::DeleteFailed(Box::new(e)),
            };
            return Err(Failure::GroupSnapshot {
                volume_ids: g.volume_ids().into_iter().map(str::to_string).collect(),
                id: g.id.clone(),
                name: g.name.clone(),
                status: g.status.clone(),
                cleanup,
            }
            .into());
        }
        Ok(group_info(&g))
    }

    /// The group snapshot `id` and its cloud: the `cloud` secret's, else the first cloud that
    /// has it. `None` when none has it.
    pub(super) async fn find_group_snapshot(
        &self,
        req: &GroupSnapshotRef,
    ) -> Result<Option<(&Cloud, GroupSnapshot)>> {
        for c in self.list_clouds(req.cloud.as_deref())? {
            match c.groups.get_group_snapshot(&req.group_snapshot_id).await {
                Ok(g) => return Ok(Some((c, g))),
                Err(CloudError::NotFound { .. }) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(None)
    }

    /// CSI GetVolumeGroupSnapshot: NotFound when it does not exist (any more).
    pub async fn get_group_snapshot(&self, req: GroupSnapshotRef) -> Result<GroupSnapshotInfo> {
        let Some((cloud, g)) = self.find_group_snapshot(&req).await? else {
            return Err(Error::GroupSnapshotNotFound {
                id: req.group_snapshot_id,
            });
        };
        check_members(cloud, &g, &req.snapshot_ids).await?;
        Ok(group_info(&g))
    }
}

/// `g` once available, or as it is when [`GROUP_SETTLE`] (or the RPC deadline) passes first
/// or it goes into an error state (the caller's answer deals with that).
async fn settle(
    cloud: &Cloud,
    g: GroupSnapshot,
    deadline: tokio::time::Instant,
) -> Result<GroupSnapshot> {
    if g.ready() || g.status.is_error() {
        return Ok(g);
    }
    let until = wait_deadline(deadline).min(tokio::time::Instant::now() + GROUP_SETTLE);
    match cloud
        .groups
        .wait_group_snapshot(&g.id, &CopyWait::Available, until)
        .await
    {
        Ok(settled) => Ok(settled),
        Err(CloudError::WaitTimeout { .. } | CloudError::ErrorState { .. }) => {
            Ok(cloud.groups.get_group_snapshot(&g.id).await?)
        }
        Err(e) => Err(e.into()),
    }
}

/// The `snapshot_ids` the CO sent must be the members (CSI: "report an error if it has the
/// ability to detect a mismatch"). Ids the cloud no longer has at all are members deleted on
/// their own: not a mismatch (the spec's "artifacts ... do not exist anymore").
pub(super) async fn check_members(
    cloud: &Cloud,
    g: &GroupSnapshot,
    given: &[String],
) -> Result<()> {
    if given.is_empty() {
        return Ok(());
    }
    let members: BTreeSet<&str> = g.members.iter().map(|m| m.id.as_str()).collect();
    let given_set: BTreeSet<&str> = given.iter().map(String::as_str).collect();
    let mut not_members = Vec::new();
    for id in given_set.difference(&members) {
        match cloud.copies.get_copy(CopyKind::Snapshot, id).await {
            Err(CloudError::NotFound { .. }) => {}
            Ok(_) => not_members.push(id.to_string()),
            Err(e) => return Err(e.into()),
        }
    }
    let missing: Vec<String> = members
        .difference(&given_set)
        .map(|s| s.to_string())
        .collect();
    if not_members.is_empty() && missing.is_empty() {
        return Ok(());
    }
    Err(Invalid::GroupMembersMismatch {
        group_snapshot_id: g.id.clone(),
        not_members,
        missing,
    }
    .into())
}
