//! `GroupSnapshots` on Cinder: a group snapshot of the volumes' helper group (group_helpers.rs)
//! of a group type with `consistent_group_snapshot_enabled`, which Cinder hands to a backend
//! that takes its members at one point in time (a type without it would make Cinder snapshot
//! them one by one: refused before). Cinder names each member snapshot after its group
//! snapshot and shows its `group_snapshot_id` (3.14), so the members are the snapshots of that
//! name with that id. Deleting the group snapshot deletes its members; then the helper group,
//! if no other group snapshot uses it, gives its volumes back and goes.

use async_trait::async_trait;
use http::Method;
use serde_json::json;
use tokio::time::Instant;

use super::api::Request;
use super::dto::{GroupSnapshotDto, GroupSnapshotEnvelope, GroupSnapshotList, IdOnly};
use super::group_helpers::HELPER_PREFIX;
use super::ids::segment;
use super::watcher::PACE;
use super::OpenStack;
use crate::cloud::poll::{poll, Look};
use crate::cloud::{
    CloudError, CloudResult, Copies, CopyFilter, CopyKind, CopyStatus, CopyWait, GroupSnapshot,
    GroupSnapshots, NewGroupSnapshot, Op, PageRequest, Resource, Verdict, Volume,
};

#[derive(serde::Deserialize)]
struct GroupSnapshotCreated {
    group_snapshot: IdOnly,
}

impl OpenStack {
    async fn group_snapshot_dto(&self, id: &str) -> CloudResult<GroupSnapshotDto> {
        let path = format!("group_snapshots/{}", segment(Resource::GroupSnapshot, id)?);
        Ok(self
            .api
            .cinder(Request::get(Op::GroupSnapshotGet, path))
            .await
            .map_err(|e| e.into_cloud(Resource::GroupSnapshot, id))?
            .json::<GroupSnapshotEnvelope>(Op::GroupSnapshotGet)
            .map_err(|e| e.into_cloud(Resource::GroupSnapshot, id))?
            .group_snapshot)
    }

    /// The group snapshot with its members: the snapshots Cinder named after it that carry its
    /// id.
    async fn with_members(&self, g: GroupSnapshotDto) -> CloudResult<GroupSnapshot> {
        let filter = CopyFilter {
            name: (!g.name.is_empty()).then(|| g.name.clone()),
            ..Default::default()
        };
        let members = self
            .list_copies(CopyKind::Snapshot, &filter, &PageRequest::default())
            .await?
            .items
            .into_iter()
            .filter(|c| c.group_snapshot_id.as_deref() == Some(g.id.as_str()))
            .collect();
        Ok(GroupSnapshot {
            status: g.status(),
            created_at: g.created_at(),
            id: g.id,
            name: g.name,
            members,
        })
    }
}

#[async_trait]
impl GroupSnapshots for OpenStack {
    async fn create_group_snapshot(
        &self,
        req: &NewGroupSnapshot,
        deadline: Instant,
    ) -> CloudResult<GroupSnapshot> {
        self.require_groups().await?;
        let group_type = self
            .consistent_group_type(req.group_type.as_deref())
            .await?;
        let volumes = self.group_volumes(&req.volume_ids).await?;
        let group = self.helper_group(&group_type, &volumes, deadline).await?;
        let body = json!({"group_snapshot": {
            "group_id": group.id,
            "name": req.name,
            "description": req.description,
        }});
        let created: GroupSnapshotCreated = self
            .api
            .cinder(
                Request::new(Op::GroupSnapshotCreate, Method::POST, "group_snapshots").json(body),
            )
            .await
            .map_err(|e| e.into_cloud(Resource::Group, &group.id))?
            .json(Op::GroupSnapshotCreate)
            .map_err(|e| e.into_cloud(Resource::GroupSnapshot, &req.name))?;
        self.get_group_snapshot(&created.group_snapshot.id).await
    }

    async fn get_group_snapshot(&self, id: &str) -> CloudResult<GroupSnapshot> {
        let g = self.group_snapshot_dto(id).await?;
        self.with_members(g).await
    }

    async fn group_snapshots_named(&self, name: &str) -> CloudResult<Vec<GroupSnapshot>> {
        self.require_groups().await?;
        let list = self
            .api
            .cinder(
                Request::get(Op::GroupSnapshotList, "group_snapshots/detail").query("name", name),
            )
            .await
            .map_err(|e| e.into_cloud(Resource::GroupSnapshot, name))?
            .json::<GroupSnapshotList>(Op::GroupSnapshotList)
            .map_err(|e| e.into_cloud(Resource::GroupSnapshot, name))?;
        let mut out = Vec::new();
        for g in list.group_snapshots.into_iter().filter(|g| g.name == name) {
            out.push(self.with_members(g).await?);
        }
        Ok(out)
    }

    async fn delete_group_snapshot(&self, id: &str, deadline: Instant) -> CloudResult<()> {
        let g = self.group_snapshot_dto(id).await?;
        if let Some(group) = &g.group_id {
            self.mark_retiring(group, id).await?;
        }
        if g.status() != CopyStatus::Deleting {
            let path = format!("group_snapshots/{}", segment(Resource::GroupSnapshot, id)?);
            self.api
                .cinder(Request::new(Op::GroupSnapshotDelete, Method::DELETE, path))
                .await
                .map_err(|e| e.into_cloud(Resource::GroupSnapshot, id))?;
        }
        poll(
            Resource::GroupSnapshot,
            id,
            "deleted".into(),
            deadline,
            PACE,
            || async move {
                match self.group_snapshot_dto(id).await {
                    Ok(g) if g.status().is_error() => Err(CloudError::ErrorState {
                        resource: Resource::GroupSnapshot,
                        id: id.to_string(),
                        status: g.status,
                        reason: None,
                    }),
                    Ok(g) => Ok(Look::Pending(g.status)),
                    Err(CloudError::NotFound { .. }) => Ok(Look::Done(())),
                    Err(e) => Err(e),
                }
            },
        )
        .await?;
        if let Some(group) = &g.group_id {
            self.retire_helper_group(group, deadline).await?;
        }
        // Best effort: a group another delete left behind goes too.
        if let Err(e) = self.sweep_helper_groups(deadline).await {
            tracing::warn!(error = %e, "cannot sweep helper groups left behind");
        }
        Ok(())
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
                let g = match self.group_snapshot_dto(id).await {
                    Ok(g) => g,
                    Err(e @ CloudError::Unavailable { .. }) => {
                        return Ok(Look::Pending(format!("unknown (then: {e})")))
                    }
                    Err(e) => return Err(e),
                };
                let verdict = until.group_verdict(id, &g.status());
                let status = g.status.clone();
                match verdict {
                    Verdict::Done => Ok(Look::Done(self.with_members(g).await?)),
                    Verdict::Continue => Ok(Look::Pending(status)),
                    Verdict::Fail(e) => Err(e),
                }
            },
        )
        .await
    }

    async fn release_volume(&self, volume: &Volume, deadline: Instant) -> CloudResult<()> {
        let Some(gid) = &volume.group_id else {
            return Ok(());
        };
        let g = match self.get_group(gid).await {
            Ok(g) => g,
            Err(CloudError::NotFound { .. }) => return Ok(()),
            Err(e) => return Err(e),
        };
        if !g.name.starts_with(HELPER_PREFIX) {
            return Ok(());
        }
        tracing::info!(volume = %volume.id, group = %g.id, "taking the volume out of its \
            helper group");
        self.remove_from_group(&g.id, std::slice::from_ref(&volume.id), deadline)
            .await?;
        self.retire_helper_group(&g.id, deadline).await
    }

    async fn sweep(&self, deadline: Instant) -> CloudResult<()> {
        if self.require_groups().await.is_err() {
            return Ok(());
        }
        self.sweep_helper_groups(deadline).await
    }
}
