//! `GroupSnapshots` on the local backend: a group snapshot is a record under
//! `group-snapshots/` naming one ordinary snapshot per volume (their records carry
//! `group_snapshot_id`). Making one (group_create.rs) freezes the attached members'
//! filesystems while it copies every member, so the copies are one point in time; what
//! cannot be frozen is refused. Its members are deleted with it, never alone, as in Cinder.
//! There is one group type, `local`, and no helper group: a volume is never "in a group".

use async_trait::async_trait;
use tokio::time::Instant;

use super::backend::{Inner, LocalCloud, PACE};
use super::records::{time_of, GroupRecord};
use super::rules::{refused, PROFILE};
use super::store::Kind;
use crate::cloud::model;
use crate::cloud::poll::{poll, Look};
use crate::cloud::{
    CloudError, CloudResult, CopyKind, CopyStatus, CopyWait, GroupSnapshot, GroupSnapshots,
    NewGroupSnapshot, Resource, Volume,
};

/// The group type of this backend: its group snapshots are write-order consistent.
pub const GROUP_TYPE: &str = "local";

impl Inner {
    pub(super) fn group_snapshot(&self, id: &str) -> CloudResult<GroupSnapshot> {
        let st = self.read();
        let g = st
            .group_snapshots
            .get(id)
            .ok_or_else(|| CloudError::not_found(Resource::GroupSnapshot, id))?;
        Ok(GroupSnapshot {
            id: g.id.clone(),
            name: g.name.clone(),
            status: CopyStatus::parse(&g.status),
            created_at: Some(time_of(g.created_at_ms)),
            members: g
                .member_ids
                .iter()
                .filter_map(|m| st.snapshots.get(m))
                .map(|r| r.to_copy(CopyKind::Snapshot))
                .collect(),
        })
    }

    pub(super) fn put_group(&self, rec: &GroupRecord) -> CloudResult<()> {
        let path = self.layout.record(Kind::GroupSnapshot, &rec.id);
        super::store::write_record(&path, rec)
            .map_err(|e| super::backend::io_error(format_args!("write {}", path.display()), e))?;
        self.write()
            .group_snapshots
            .insert(rec.id.clone(), rec.clone());
        Ok(())
    }

    /// Delete a group snapshot and its members. Call with `ops` held.
    pub(super) fn drop_group(&self, id: &str) -> CloudResult<()> {
        let Some(mut g) = self.read().group_snapshots.get(id).cloned() else {
            return Ok(());
        };
        if g.status != "deleting" {
            g.status = "deleting".into();
            self.put_group(&g)?;
        }
        for m in &g.member_ids {
            self.drop_object(Kind::Snapshot, m)?;
        }
        self.drop_object(Kind::GroupSnapshot, id)
    }

    fn delete_group_snapshot(&self, id: &str) -> CloudResult<()> {
        let _ops = self.lock_ops();
        let status = self
            .read()
            .group_snapshots
            .get(id)
            .map(|g| g.status.clone())
            .ok_or_else(|| CloudError::not_found(Resource::GroupSnapshot, id))?;
        let restoring = {
            let st = self.read();
            let members = &st.group_snapshots[id].member_ids;
            let members: Vec<&str> = members.iter().map(String::as_str).collect();
            st.restoring(CopyKind::Snapshot, &members)
        };
        let status = CopyStatus::parse(&status);
        model::delete_group_snapshot(&PROFILE, id, &status, restoring).map_err(refused)?;
        self.drop_group(id)
    }
}

#[async_trait]
impl GroupSnapshots for LocalCloud {
    async fn create_group_snapshot(
        &self,
        req: &NewGroupSnapshot,
        _deadline: Instant,
    ) -> CloudResult<GroupSnapshot> {
        if let Some(t) = req.group_type.as_deref() {
            if t != GROUP_TYPE {
                return Err(CloudError::not_found(Resource::GroupType, t));
            }
        }
        let req = req.clone();
        self.blocking(move |inner| inner.create_group_snapshot(&req))
            .await
    }

    async fn get_group_snapshot(&self, id: &str) -> CloudResult<GroupSnapshot> {
        self.inner()?.group_snapshot(id)
    }

    async fn group_snapshots_named(&self, name: &str) -> CloudResult<Vec<GroupSnapshot>> {
        let inner = self.inner()?;
        let mut ids: Vec<(u64, String)> = inner
            .read()
            .group_snapshots
            .values()
            .filter(|g| g.name == name)
            .map(|g| (g.created_at_ms, g.id.clone()))
            .collect();
        ids.sort();
        Ok(ids
            .iter()
            .filter_map(|(_, id)| inner.group_snapshot(id).ok())
            .collect())
    }

    async fn delete_group_snapshot(&self, id: &str, _deadline: Instant) -> CloudResult<()> {
        let id = id.to_string();
        self.blocking(move |inner| inner.delete_group_snapshot(&id))
            .await
    }

    async fn wait_group_snapshot(
        &self,
        id: &str,
        until: &CopyWait,
        deadline: Instant,
    ) -> CloudResult<GroupSnapshot> {
        poll(
            Resource::GroupSnapshot,
            id,
            until.wanted(),
            deadline,
            PACE,
            || async move {
                let g = self.inner()?.group_snapshot(id)?;
                let (verdict, status) = (until.group_verdict(id, &g.status), g.status.clone());
                Look::judged(verdict, g, status)
            },
        )
        .await
    }

    /// Local volumes are never in a group.
    async fn release_volume(&self, _volume: &Volume, _deadline: Instant) -> CloudResult<()> {
        self.inner()?;
        Ok(())
    }

    /// Nothing is made besides the group snapshot (a crash's leftovers go at startup).
    async fn sweep(&self, _deadline: Instant) -> CloudResult<()> {
        self.inner()?;
        Ok(())
    }
}
