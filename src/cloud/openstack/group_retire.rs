//! Taking helper groups apart: volumes out (`remove_volumes`), then the group deleted, once no
//! group snapshot uses it. A helper group whose last group snapshot is being deleted is first
//! renamed `csi-group-retiring-…`, so no create takes it again and a sweep can remove it even
//! when the delete that started it was interrupted and its group snapshot is gone; other
//! helper groups without group snapshots are swept only when older than
//! [`LEFT_BEHIND_AFTER`] (a younger one may be a create's that has not taken its group
//! snapshot yet).

use http::Method;
use serde_json::json;
use tokio::time::Instant;

use super::api::Request;
use super::dto::{GroupList, GroupSnapshotList, VolumeList};
use super::group_helpers::{is_helper, HELPER_PREFIX, LEFT_BEHIND_AFTER, RETIRING_PREFIX};
use super::ids::segment;
use super::watcher::PACE;
use super::OpenStack;
use crate::cloud::poll::{poll, Look};
use crate::cloud::{CloudError, CloudResult, Op, Resource};

impl OpenStack {
    pub(super) async fn remove_from_group(
        &self,
        id: &str,
        volumes: &[String],
        deadline: Instant,
    ) -> CloudResult<()> {
        self.group_available(id, deadline).await?;
        self.update_group(id, "remove_volumes", volumes).await?;
        self.group_available(id, deadline).await.map(|_| ())
    }

    /// Delete group `id` (it holds no volumes) and wait until it is gone.
    pub(super) async fn delete_group(&self, id: &str, deadline: Instant) -> CloudResult<()> {
        let path = format!("groups/{}/action", segment(Resource::Group, id)?);
        match self
            .api
            .cinder(
                Request::new(Op::GroupDelete, Method::POST, path)
                    .json(json!({"delete": {"delete-volumes": false}})),
            )
            .await
        {
            Ok(_) => {}
            Err(e) if e.status() == Some(404) => return Ok(()),
            Err(e) => return Err(e.into_cloud(Resource::Group, id)),
        }
        let gone = poll(
            Resource::Group,
            id,
            "deleted".into(),
            deadline,
            PACE,
            || async move {
                match self.get_group(id).await {
                    Ok(g) => Ok(Look::Pending(g.status)),
                    Err(CloudError::NotFound { .. }) => Ok(Look::Done(())),
                    Err(e) => Err(e),
                }
            },
        )
        .await;
        gone
    }

    /// Whether group `id` has group snapshots.
    async fn has_group_snapshots(&self, id: &str) -> CloudResult<bool> {
        Ok(!self
            .api
            .cinder(
                Request::get(Op::GroupSnapshotList, "group_snapshots/detail").query("group_id", id),
            )
            .await
            .map_err(|e| e.into_cloud(Resource::Group, id))?
            .json::<GroupSnapshotList>(Op::GroupSnapshotList)
            .map_err(|e| e.into_cloud(Resource::Group, id))?
            .group_snapshots
            .is_empty())
    }

    /// Before the last group snapshot of helper group `id` is deleted: rename it
    /// [`RETIRING_PREFIX`], so a retry or a sweep can remove it even when the group snapshot
    /// that named it is gone. A group still used by other group snapshots is left alone.
    pub(super) async fn mark_retiring(&self, id: &str, group_snapshot: &str) -> CloudResult<()> {
        let g = match self.get_group(id).await {
            Ok(g) => g,
            Err(CloudError::NotFound { .. }) => return Ok(()),
            Err(e) => return Err(e),
        };
        if !is_helper(&g) || g.name.starts_with(RETIRING_PREFIX) || g.status != "available" {
            return Ok(());
        }
        let others = self
            .api
            .cinder(
                Request::get(Op::GroupSnapshotList, "group_snapshots/detail").query("group_id", id),
            )
            .await
            .map_err(|e| e.into_cloud(Resource::Group, id))?
            .json::<GroupSnapshotList>(Op::GroupSnapshotList)
            .map_err(|e| e.into_cloud(Resource::Group, id))?
            .group_snapshots
            .into_iter()
            .any(|s| s.id != group_snapshot);
        if others {
            return Ok(());
        }
        let name = format!("{RETIRING_PREFIX}{}", &g.name[HELPER_PREFIX.len()..]);
        let path = format!("groups/{}", segment(Resource::Group, id)?);
        self.api
            .cinder(
                Request::new(Op::GroupUpdate, Method::PUT, path)
                    .json(json!({"group": {"name": name}})),
            )
            .await
            .map(|_| ())
            .map_err(|e| e.into_cloud(Resource::Group, id))
    }

    /// Retire helper groups left behind: retiring ones without group snapshots, and other
    /// helper groups without group snapshots older than [`LEFT_BEHIND_AFTER`].
    pub(super) async fn sweep_helper_groups(&self, deadline: Instant) -> CloudResult<()> {
        let all = self
            .api
            .cinder(Request::get(Op::GroupList, "groups/detail"))
            .await
            .map_err(|e| e.into_cloud(Resource::Group, "(list)"))?
            .json::<GroupList>(Op::GroupList)
            .map_err(|e| e.into_cloud(Resource::Group, "(list)"))?
            .groups;
        let now = std::time::SystemTime::now();
        for g in all.into_iter().filter(is_helper) {
            let old = g
                .created_at()
                .and_then(|t| now.duration_since(t).ok())
                .is_some_and(|age| age > LEFT_BEHIND_AFTER);
            if (old || g.name.starts_with(RETIRING_PREFIX)) && g.status == "available" {
                self.retire_helper_group(&g.id, deadline).await?;
            }
        }
        Ok(())
    }

    /// A helper group no group snapshot uses any more gives its volumes back and goes. Groups
    /// we did not make, and ones still in use, stay.
    pub(super) async fn retire_helper_group(&self, id: &str, deadline: Instant) -> CloudResult<()> {
        let g = match self.get_group(id).await {
            Ok(g) => g,
            Err(CloudError::NotFound { .. }) => return Ok(()),
            Err(e) => return Err(e),
        };
        if !is_helper(&g) {
            return Ok(());
        }
        let used = self.has_group_snapshots(id).await?;
        if used {
            return Ok(());
        }
        let members: Vec<String> = self
            .api
            .cinder(Request::get(Op::VolumeList, "volumes/detail").query("group_id", id))
            .await
            .map_err(|e| e.into_cloud(Resource::Group, id))?
            .json::<VolumeList>(Op::VolumeList)
            .map_err(|e| e.into_cloud(Resource::Group, id))?
            .volumes
            .into_iter()
            .filter(|v| v.group_id.as_deref() == Some(id))
            .map(|v| v.id)
            .collect();
        if !members.is_empty() {
            self.remove_from_group(id, &members, deadline).await?;
        }
        self.delete_group(id, deadline).await
    }
}
