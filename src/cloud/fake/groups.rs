//! `GroupSnapshots` on the fake: Cinder's rules as the core can see them. Group types are
//! registered with their consistency; a group snapshot puts its volumes into the helper group
//! of their set (`group_id` on the volumes, moved from another helper group of ours, refused
//! from a foreign one), snapshots each (members `creating` until they settle, with
//! `group_snapshot_id`), refuses deletes while `creating`, and its delete frees the helper
//! group once no group snapshot uses it. Volumes in a group cannot be deleted or retyped, and
//! members cannot be deleted on their own, as in Cinder.

use std::collections::BTreeSet;
use std::time::SystemTime;

use async_trait::async_trait;
use tokio::time::Instant;

use super::group_state::{FakeGroupSnapshot, GroupAction, GroupPending, HELPER_GROUP_PREFIX};
use super::rules::{refused, PROFILE};
use super::state::{FakeCopy, ObjAction, State};
use super::FakeCloud;
use crate::cloud::model;
use crate::cloud::poll::Look;
use crate::cloud::{
    CloudError, CloudResult, CopyKind, CopyStatus, CopyWait, GroupRefusal, GroupSnapshot,
    GroupSnapshots, NewGroupSnapshot, Op, Resource, Volume, VolumeCopy,
};

/// The helper group of a set of volumes: one per set, so repeated group snapshots of the same
/// volumes share it.
fn helper_group(volume_ids: &[String]) -> String {
    format!("{HELPER_GROUP_PREFIX}{}", volume_ids.join("+"))
}

#[async_trait]
impl GroupSnapshots for FakeCloud {
    async fn create_group_snapshot(
        &self,
        req: &NewGroupSnapshot,
        _deadline: Instant,
    ) -> CloudResult<GroupSnapshot> {
        self.lock().create_group_snapshot(req)
    }

    async fn get_group_snapshot(&self, id: &str) -> CloudResult<GroupSnapshot> {
        let mut s = self.lock();
        s.enter(Op::GroupSnapshotGet)?;
        s.group_snapshot(id)
    }

    async fn group_snapshots_named(&self, name: &str) -> CloudResult<Vec<GroupSnapshot>> {
        let mut s = self.lock();
        s.enter(Op::GroupSnapshotList)?;
        let mut ids: Vec<(u64, String)> = s
            .groups
            .snapshots
            .values()
            .filter(|g| g.name == name)
            .map(|g| (g.seq, g.id.clone()))
            .collect();
        ids.sort();
        Ok(ids
            .into_iter()
            .filter_map(|(_, id)| s.observe_group_snapshot(&id))
            .collect())
    }

    async fn delete_group_snapshot(&self, id: &str, deadline: Instant) -> CloudResult<()> {
        self.lock().start_deleting_group_snapshot(id)?;
        let gone = self
            .wait_until(
                Resource::GroupSnapshot,
                id,
                "deleted".into(),
                deadline,
                |s| {
                    Ok(match s.observe_group_snapshot(id) {
                        None => Look::Done(()),
                        Some(g) => Look::Pending(g.status.to_string()),
                    })
                },
            )
            .await;
        gone?;
        self.lock().free_unused_helper_groups();
        Ok(())
    }

    async fn wait_group_snapshot(
        &self,
        id: &str,
        until: &CopyWait,
        deadline: Instant,
    ) -> CloudResult<GroupSnapshot> {
        self.enter(Op::GroupSnapshotGet)?;
        self.wait_until(Resource::GroupSnapshot, id, until.wanted(), deadline, |s| {
            let g = s.group_snapshot(id)?;
            let (verdict, status) = (until.group_verdict(id, &g.status), g.status.clone());
            Look::judged(verdict, g, status)
        })
        .await
    }

    async fn release_volume(&self, volume: &Volume, _deadline: Instant) -> CloudResult<()> {
        let mut s = self.lock();
        let Some(v) = s.volumes.get(&volume.id) else {
            return Err(CloudError::not_found(Resource::Volume, &volume.id));
        };
        if !v
            .volume
            .group_id
            .as_deref()
            .is_some_and(|g| g.starts_with(HELPER_GROUP_PREFIX))
        {
            return Ok(());
        }
        s.enter(Op::GroupUpdate)?;
        if let Some(v) = s.volumes.get_mut(&volume.id) {
            v.volume.group_id = None;
        }
        Ok(())
    }

    async fn sweep(&self, _deadline: Instant) -> CloudResult<()> {
        let mut s = self.lock();
        s.enter(Op::GroupList)?;
        s.free_unused_helper_groups();
        Ok(())
    }
}

impl State {
    fn create_group_snapshot(&mut self, req: &NewGroupSnapshot) -> CloudResult<GroupSnapshot> {
        let group_type = match req
            .group_type
            .clone()
            .or_else(|| self.groups.default_type.clone())
        {
            Some(t) => t,
            None => return Err(CloudError::GroupRefused(GroupRefusal::NoGroupType)),
        };
        self.enter(Op::GroupTypeGet)?;
        match self.groups.types.get(&group_type) {
            None => return Err(CloudError::not_found(Resource::GroupType, &group_type)),
            Some(false) => {
                return Err(CloudError::GroupRefused(GroupRefusal::NotConsistent {
                    group_type,
                }))
            }
            Some(true) => {}
        }
        let mut volumes = Vec::new();
        for id in &req.volume_ids {
            let v = self.volume(id)?;
            if let Some(g) = &v.group_id {
                if !g.starts_with(HELPER_GROUP_PREFIX) {
                    return Err(CloudError::GroupRefused(GroupRefusal::ForeignGroup {
                        volume_id: id.clone(),
                        group_id: g.clone(),
                    }));
                }
            }
            model::group_member(&v).map_err(refused)?;
            volumes.push(v);
        }
        let group_id = helper_group(&req.volume_ids);
        self.enter(Op::GroupUpdate)?;
        for v in &volumes {
            if let Some(f) = self.volumes.get_mut(&v.id) {
                f.volume.group_id = Some(group_id.clone());
            }
        }
        self.enter(Op::GroupSnapshotCreate)?;
        let error = if self.groups.failing_creations > 0 {
            self.groups.failing_creations -= 1;
            true
        } else {
            false
        };
        let gs_id = self.new_id("group-snapshot");
        let mut member_ids = Vec::new();
        for v in &volumes {
            let id = self.new_id("snapshot");
            let copy = VolumeCopy {
                kind: CopyKind::Snapshot,
                id: id.clone(),
                // Cinder names the members after their group snapshot.
                name: req.name.clone(),
                volume_id: v.id.clone(),
                snapshot_id: None,
                size_gib: v.size_gib,
                status: CopyStatus::Creating,
                availability_zone: None,
                created_at: Some(SystemTime::now()),
                metadata: Default::default(),
                fail_reason: None,
                group_snapshot_id: Some(gs_id.clone()),
            };
            let pending = self.pending(ObjAction::Created { error });
            let seq = self.seq;
            self.snapshots
                .insert(id.clone(), FakeCopy { seq, copy, pending });
            member_ids.push(id);
        }
        let pending = Some(GroupPending {
            remaining: self.settle_after,
            action: GroupAction::Created { error },
        });
        let g = FakeGroupSnapshot {
            seq: self.seq,
            id: gs_id.clone(),
            name: req.name.clone(),
            group_id,
            status: CopyStatus::Creating,
            created_at: SystemTime::now(),
            member_ids,
            pending,
        };
        let out = self.peek_group_snapshot(&g);
        self.groups.snapshots.insert(gs_id, g);
        Ok(out)
    }

    fn start_deleting_group_snapshot(&mut self, id: &str) -> CloudResult<()> {
        self.enter(Op::GroupSnapshotDelete)?;
        let g = self.group_snapshot(id)?;
        let members: Vec<&str> = g.members.iter().map(|m| m.id.as_str()).collect();
        let restoring = self.restoring(CopyKind::Snapshot, &members);
        model::delete_group_snapshot(&PROFILE, id, &g.status, restoring).map_err(refused)?;
        let pending = self.pending(ObjAction::Deleted);
        for m in &g.members {
            if let Some(f) = self.snapshots.get_mut(&m.id) {
                f.copy.status = CopyStatus::Deleting;
                f.pending = pending.clone();
            }
        }
        let remaining = self.settle_after;
        if let Some(f) = self.groups.snapshots.get_mut(id) {
            f.status = CopyStatus::Deleting;
            f.pending = Some(GroupPending {
                remaining,
                action: GroupAction::Deleted,
            });
        }
        Ok(())
    }

    /// Observe group snapshot `id`, or NotFound.
    fn group_snapshot(&mut self, id: &str) -> CloudResult<GroupSnapshot> {
        self.observe_group_snapshot(id)
            .ok_or_else(|| CloudError::not_found(Resource::GroupSnapshot, id))
    }

    /// Observe a group snapshot: settle or advance its transition (and its members').
    pub(super) fn observe_group_snapshot(&mut self, id: &str) -> Option<GroupSnapshot> {
        let g = self.groups.snapshots.get_mut(id)?;
        let mut gone = false;
        if let Some(p) = g.pending.as_mut() {
            if p.remaining == 0 {
                match g.pending.take().map(|p| p.action) {
                    Some(GroupAction::Created { error }) => {
                        g.status = if error {
                            CopyStatus::Error
                        } else {
                            CopyStatus::Available
                        }
                    }
                    Some(GroupAction::Deleted) => gone = true,
                    None => {}
                }
            } else {
                p.remaining -= 1;
            }
        }
        let members = g.member_ids.clone();
        for m in &members {
            self.observe_copy(CopyKind::Snapshot, m);
        }
        if gone {
            self.groups.snapshots.remove(id);
            for m in &members {
                self.snapshots.remove(m);
            }
            return None;
        }
        let g = self.groups.snapshots.get(id)?;
        Some(self.peek_group_snapshot(g))
    }

    /// Settle every group snapshot's pending transition; whether there was one.
    pub(super) fn settle_group_snapshots(&mut self) -> bool {
        let pending: Vec<String> = self
            .groups
            .snapshots
            .values()
            .filter(|g| g.pending.is_some())
            .map(|g| g.id.clone())
            .collect();
        for id in &pending {
            if let Some(p) = self
                .groups
                .snapshots
                .get_mut(id)
                .and_then(|g| g.pending.as_mut())
            {
                p.remaining = 0;
            }
            self.observe_group_snapshot(id);
        }
        !pending.is_empty()
    }

    /// The group snapshot as it stands, without observing it.
    pub(super) fn peek_group_snapshot(&self, g: &FakeGroupSnapshot) -> GroupSnapshot {
        GroupSnapshot {
            id: g.id.clone(),
            name: g.name.clone(),
            status: g.status.clone(),
            created_at: Some(g.created_at),
            members: g
                .member_ids
                .iter()
                .filter_map(|m| self.snapshots.get(m).map(|f| f.copy.clone()))
                .collect(),
        }
    }

    /// Helper groups no group snapshot uses any more give their volumes back, as the
    /// OpenStack adapter removes the volumes and deletes the group.
    fn free_unused_helper_groups(&mut self) {
        let used: BTreeSet<String> = self
            .groups
            .snapshots
            .values()
            .map(|g| g.group_id.clone())
            .collect();
        for v in self.volumes.values_mut() {
            if let Some(g) = &v.volume.group_id {
                if g.starts_with(HELPER_GROUP_PREFIX) && !used.contains(g) {
                    v.volume.group_id = None;
                }
            }
        }
    }
}
