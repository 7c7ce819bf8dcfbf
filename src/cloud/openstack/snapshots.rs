//! Cinder snapshots: create (with `force` for in-use volumes), get, list (name / volume
//! filters, pagination), delete, and bounded waits.

use reqwest::Method;
use serde_json::{json, Map};
use tokio::time::Instant;

use super::api::{list_cinder, Request};
use super::dto::{has_next, SnapshotEnvelope, SnapshotList};
use super::ids::segment;
use super::watcher::PACE;
use super::OpenStack;
use crate::cloud::poll::{poll, Look};
use crate::cloud::{
    CloudError, CloudResult, NewSnapshot, Op, Page, PageRequest, Resource, Snapshot,
    SnapshotFilter, SnapshotStatus, SnapshotWait,
};

impl OpenStack {
    pub(super) async fn create_snapshot_impl(&self, req: &NewSnapshot) -> CloudResult<Snapshot> {
        let mut snap = Map::new();
        snap.insert("volume_id".into(), json!(req.volume_id));
        snap.insert("name".into(), json!(req.name));
        if let Some(d) = &req.description {
            snap.insert("description".into(), json!(d));
        }
        if !req.metadata.is_empty() {
            snap.insert("metadata".into(), json!(req.metadata));
        }
        // Only ever send `force: true`: from 3.66 on, `false` is rejected and `true` ignored.
        if req.force {
            snap.insert("force".into(), json!(true));
        }
        let ans = self
            .api
            .cinder(
                Request::new(Op::SnapshotCreate, Method::POST, "snapshots")
                    .json(json!({ "snapshot": snap })),
            )
            .await
            // The only thing a snapshot create names is its volume.
            .map_err(|e| e.into_cloud(Resource::Volume, &req.volume_id))?;
        let env: SnapshotEnvelope = ans
            .json(Op::SnapshotCreate)
            .map_err(|e| e.into_cloud(Resource::Snapshot, &req.name))?;
        Ok(env.snapshot.into())
    }

    pub(super) async fn get_snapshot_impl(&self, id: &str) -> CloudResult<Snapshot> {
        let ans = self
            .api
            .cinder(Request::get(
                Op::SnapshotGet,
                format!("snapshots/{}", segment(Resource::Snapshot, id)?),
            ))
            .await
            .map_err(|e| e.into_cloud(Resource::Snapshot, id))?;
        let env: SnapshotEnvelope = ans
            .json(Op::SnapshotGet)
            .map_err(|e| e.into_cloud(Resource::Snapshot, id))?;
        Ok(env.snapshot.into())
    }

    pub(super) async fn list_snapshots_impl(
        &self,
        filter: &SnapshotFilter,
        page: &PageRequest,
    ) -> CloudResult<Page<Snapshot>> {
        let req = Request::get(Op::SnapshotList, "snapshots/detail")
            .query_opt("name", filter.name.clone())
            .query_opt("volume_id", filter.volume_id.clone());
        let page = list_cinder(
            &self.api,
            req,
            page,
            Resource::Snapshot,
            |l: SnapshotList| {
                let more = has_next(&l.snapshots_links);
                (l.snapshots, more)
            },
            |s| s.id.clone(),
        )
        .await?;
        Ok(Page {
            next_marker: page.next_marker,
            items: page.items.into_iter().map(Snapshot::from).collect(),
        })
    }

    pub(super) async fn delete_snapshot_impl(&self, id: &str) -> CloudResult<()> {
        self.api
            .cinder(Request::new(
                Op::SnapshotDelete,
                Method::DELETE,
                format!("snapshots/{}", segment(Resource::Snapshot, id)?),
            ))
            .await
            .map(|_| ())
            .map_err(|e| e.into_cloud(Resource::Snapshot, id))
    }

    pub(super) async fn wait_snapshot_impl(
        &self,
        id: &str,
        until: &SnapshotWait,
        deadline: Instant,
    ) -> CloudResult<Snapshot> {
        let wanted = match until {
            SnapshotWait::Available => "available",
            SnapshotWait::Deleted => "deleted",
        };
        poll(
            Resource::Snapshot,
            id,
            wanted.into(),
            deadline,
            PACE,
            || async move {
                match (self.get_snapshot_impl(id).await, until) {
                    (Ok(s), _) if s.status.is_error() => Err(CloudError::ErrorState {
                        resource: Resource::Snapshot,
                        id: s.id.clone(),
                        status: s.status.to_string(),
                        reason: None,
                    }),
                    (Ok(s), SnapshotWait::Available) if s.status == SnapshotStatus::Available => {
                        Ok(Look::Done(s))
                    }
                    (Ok(s), _) => Ok(Look::Pending(s.status.to_string())),
                    (Err(e), _) => transient(e),
                }
            },
        )
        .await
    }
}

/// Transient failures keep a wait going; others end it, and `NotFound` is how a wait for
/// deletion succeeds.
pub(super) fn transient<T>(e: CloudError) -> CloudResult<Look<T>> {
    match e {
        CloudError::Unavailable { .. } => Ok(Look::Pending(format!("unknown (then: {e})"))),
        other => Err(other),
    }
}
