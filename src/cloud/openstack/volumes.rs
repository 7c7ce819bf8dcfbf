//! Cinder volumes: create (type, AZ, metadata, scheduler hints, from snapshot / volume /
//! backup), get, list (name and metadata filters, pagination), delete (optionally cascading
//! to snapshots), extend (online with 3.42), retype, metadata update, and waits through the
//! watcher; and the cloud's health check (a volume list).

use std::collections::BTreeMap;

use async_trait::async_trait;
use http::Method;
use serde_json::{json, Map, Value};
use tokio::time::Instant;

use super::api::{list_cinder, CallError, Request};
use super::dto::{has_next, MessageList, VolumeEnvelope, VolumeList};
use super::ids::segment;
use super::microversion::{CINDER_CREATE_FROM_BACKUP, CINDER_ONLINE_EXTEND};
use super::OpenStack;
use crate::cloud::{
    CloudError, CloudResult, Health, MigrationPolicy, NewVolume, Op, Page, PageRequest, Resource,
    Volume, VolumeFilter, VolumeSource, VolumeWait, Volumes,
};

/// Bound on the cloud check's one request, from when it is sent.
pub const CHECK_REQUEST_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(8);

#[async_trait]
impl Health for OpenStack {
    /// Credentials valid and Cinder answering: the cheapest authenticated call, one small
    /// list. Its timeout counts from when it is sent, so a burst of our own requests ahead of
    /// it (waiting for a slot on Cinder, see `http/limit.rs`) never makes a reachable cloud
    /// look down.
    async fn check(&self) -> CloudResult<()> {
        self.api
            .cinder(
                Request::get(Op::VolumeList, "volumes")
                    .query("limit", "1")
                    .timeout(CHECK_REQUEST_TIMEOUT),
            )
            .await
            .map(|_| ())
            .map_err(|e| e.into_cloud(Resource::Volume, "(list)"))
    }
}

#[async_trait]
impl Volumes for OpenStack {
    async fn create_volume(&self, req: &NewVolume) -> CloudResult<Volume> {
        let mut vol = Map::new();
        vol.insert("size".into(), json!(req.size_gib));
        vol.insert("name".into(), json!(req.name));
        if let Some(d) = &req.description {
            vol.insert("description".into(), json!(d));
        }
        if let Some(t) = &req.volume_type {
            vol.insert("volume_type".into(), json!(t));
        }
        if let Some(az) = &req.availability_zone {
            vol.insert("availability_zone".into(), json!(az));
        }
        if !req.metadata.is_empty() {
            vol.insert("metadata".into(), json!(req.metadata));
        }
        match &req.source {
            None => {}
            Some(VolumeSource::Snapshot(id)) => {
                vol.insert("snapshot_id".into(), json!(id));
            }
            Some(VolumeSource::Volume(id)) => {
                vol.insert("source_volid".into(), json!(id));
            }
            Some(VolumeSource::Backup(id)) => {
                self.api
                    .cinder_version()
                    .await?
                    .require(
                        CINDER_CREATE_FROM_BACKUP,
                        "restoring a backup into a new volume",
                    )
                    .map_err(CloudError::Unsupported)?;
                vol.insert("backup_id".into(), json!(id));
            }
        }
        let mut body = json!({ "volume": Value::Object(vol) });
        let hints = &req.scheduler_hints;
        if !hints.same_host.is_empty() || !hints.different_host.is_empty() {
            let mut h = Map::new();
            if !hints.same_host.is_empty() {
                h.insert("same_host".into(), json!(hints.same_host));
            }
            if !hints.different_host.is_empty() {
                h.insert("different_host".into(), json!(hints.different_host));
            }
            body["OS-SCH-HNT:scheduler_hints"] = Value::Object(h);
        }
        let ans = self
            .api
            .cinder(Request::new(Op::VolumeCreate, Method::POST, "volumes").json(body))
            .await
            .map_err(|e| create_error(e, req))?;
        let env: VolumeEnvelope = ans
            .json(Op::VolumeCreate)
            .map_err(|e| e.into_cloud(Resource::Volume, &req.name))?;
        self.watcher.note(&env.volume);
        Ok(env.volume.into())
    }

    async fn get_volume(&self, id: &str) -> CloudResult<Volume> {
        segment(Resource::Volume, id)?;
        self.watcher.read(id).await
    }

    async fn list_volumes(
        &self,
        filter: &VolumeFilter,
        page: &PageRequest,
    ) -> CloudResult<Page<Volume>> {
        let mut req =
            Request::get(Op::VolumeList, "volumes/detail").query_opt("name", filter.name.clone());
        if !filter.metadata.is_empty() {
            // Cinder reads the filter as a Python literal; JSON is one.
            req = req.query("metadata", json!(filter.metadata).to_string());
        }
        let page = list_cinder(
            &self.api,
            req,
            page,
            Resource::Volume,
            |l: VolumeList| {
                let more = has_next(&l.volumes_links);
                (l.volumes, more)
            },
            |v| v.id.clone(),
        )
        .await?;
        for v in &page.items {
            self.watcher.note(v);
        }
        Ok(Page {
            next_marker: page.next_marker,
            items: page.items.into_iter().map(Volume::from).collect(),
        })
    }

    async fn delete_volume(&self, id: &str, cascade: bool) -> CloudResult<()> {
        let path = format!("volumes/{}", segment(Resource::Volume, id)?);
        let mut req = Request::new(Op::VolumeDelete, Method::DELETE, path);
        if cascade {
            req = req.query("cascade", "true");
        }
        self.api
            .cinder(req)
            .await
            .map(|_| ())
            .map_err(|e| e.into_cloud(Resource::Volume, id))
    }

    async fn extend_volume(&self, id: &str, new_size_gib: u64, online: bool) -> CloudResult<()> {
        if online {
            self.api
                .cinder_version()
                .await?
                .require(CINDER_ONLINE_EXTEND, "extending an attached volume")
                .map_err(CloudError::Unsupported)?;
        }
        self.action(
            Op::VolumeExtend,
            id,
            json!({ "os-extend": { "new_size": new_size_gib } }),
        )
        .await
    }

    async fn retype_volume(
        &self,
        id: &str,
        new_type: &str,
        policy: MigrationPolicy,
    ) -> CloudResult<()> {
        let body =
            json!({ "os-retype": { "new_type": new_type, "migration_policy": policy.as_str() } });
        match self
            .api
            .cinder(
                Request::new(
                    Op::VolumeRetype,
                    Method::POST,
                    format!("volumes/{}/action", segment(Resource::Volume, id)?),
                )
                .json(body),
            )
            .await
        {
            Ok(_) => Ok(()),
            // "Volume type with name x could not be found." vs the volume itself.
            Err(e) if e.status() == Some(404) && e.message().to_lowercase().contains("type") => {
                Err(CloudError::not_found(Resource::VolumeType, new_type))
            }
            Err(e) => Err(e.into_cloud(Resource::Volume, id)),
        }
    }

    async fn update_volume_metadata(
        &self,
        id: &str,
        pairs: &BTreeMap<String, String>,
    ) -> CloudResult<()> {
        let path = format!("volumes/{}/metadata", segment(Resource::Volume, id)?);
        let req = Request::new(Op::VolumeMetadataUpdate, Method::POST, path);
        match self
            .api
            .cinder(req.json(json!({ "metadata": pairs })))
            .await
        {
            Ok(_) => Ok(()),
            Err(e) => Err(e.into_cloud(Resource::Volume, id)),
        }
    }

    async fn wait_volume(
        &self,
        id: &str,
        until: &VolumeWait,
        deadline: Instant,
    ) -> CloudResult<Volume> {
        match self.watcher.wait(id, until, deadline).await {
            Err(CloudError::ErrorState {
                resource,
                id,
                status,
                reason: None,
            }) => Err(CloudError::ErrorState {
                reason: self.error_reason(&id).await,
                resource,
                id,
                status,
            }),
            other => other,
        }
    }
}

impl OpenStack {
    /// Cinder's user message about a failed volume ("No valid backend was found", ...), when
    /// the cloud keeps one. Best effort: no message is not an error.
    pub(super) async fn error_reason(&self, id: &str) -> Option<String> {
        let ans = self
            .api
            .cinder(Request::get(Op::MessageList, "messages").query("resource_uuid", id))
            .await
            .ok()?;
        let list: MessageList = ans.json(Op::MessageList).ok()?;
        list.messages
            .into_iter()
            .filter(|m| m.user_message.is_some())
            .max_by(|a, b| a.created_at.cmp(&b.created_at))
            .and_then(|m| m.user_message)
    }

    async fn action(&self, op: Op, id: &str, body: Value) -> CloudResult<()> {
        self.api
            .cinder(
                Request::new(
                    op,
                    Method::POST,
                    format!("volumes/{}/action", segment(Resource::Volume, id)?),
                )
                .json(body),
            )
            .await
            .map(|_| ())
            .map_err(|e| e.into_cloud(Resource::Volume, id))
    }
}

/// A 404 on create is about something the request names: the source or the type.
fn create_error(e: CallError, req: &NewVolume) -> CloudError {
    if e.status() != Some(404) {
        return e.into_cloud(Resource::Volume, &req.name);
    }
    let msg = e.message().to_lowercase();
    match &req.source {
        Some(VolumeSource::Snapshot(id)) if msg.contains("snapshot") => {
            CloudError::not_found(Resource::Snapshot, id)
        }
        Some(VolumeSource::Backup(id)) if msg.contains("backup") => {
            CloudError::not_found(Resource::Backup, id)
        }
        _ if msg.contains("type") => CloudError::not_found(
            Resource::VolumeType,
            req.volume_type.as_deref().unwrap_or_default(),
        ),
        _ if msg.contains("availability zone") || msg.contains("availability_zone") => {
            CloudError::not_found(
                Resource::AvailabilityZone,
                req.availability_zone.as_deref().unwrap_or_default(),
            )
        }
        Some(VolumeSource::Volume(id)) => CloudError::not_found(Resource::Volume, id),
        Some(VolumeSource::Snapshot(id)) => CloudError::not_found(Resource::Snapshot, id),
        Some(VolumeSource::Backup(id)) => CloudError::not_found(Resource::Backup, id),
        None => e.into_cloud(Resource::Volume, &req.name),
    }
}
