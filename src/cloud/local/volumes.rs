//! Volumes: create (blank, or restored/cloned by a sparse copy), read, list, delete, extend,
//! retype, metadata update and wait, with Cinder's rules for states and dependent snapshots. Mutations run on
//! the blocking pool; reads and waits read the in-memory state directly.

use std::collections::BTreeMap;
use std::fs::OpenOptions;

use async_trait::async_trait;
use tokio::time::Instant;

use super::backend::{conflict, io_error, Inner, LocalCloud, PACE};
use super::data::{self, Source};
use super::loopdev::{release, LoopDevice};
use super::paging::paginate;
use super::records::{self, VolumeRecord, RECORD_VERSION};
use super::rules::{refused, PROFILE};
use super::store::Kind;
use crate::cloud::model::{self, VolumeUse};
use crate::cloud::poll::{poll, Look};
use crate::cloud::{
    CloudError, CloudResult, MigrationPolicy, NewVolume, Page, PageRequest, Resource, Volume,
    VolumeFilter, VolumeStatus, VolumeWait, Volumes, GIB,
};

#[async_trait]
impl Volumes for LocalCloud {
    async fn create_volume(&self, req: &NewVolume) -> CloudResult<Volume> {
        let req = req.clone();
        self.blocking(move |inner| inner.create_volume(&req)).await
    }

    async fn get_volume(&self, id: &str) -> CloudResult<Volume> {
        Ok(self.inner()?.read().volume(id)?.to_volume())
    }

    async fn list_volumes(
        &self,
        filter: &VolumeFilter,
        page: &PageRequest,
    ) -> CloudResult<Page<Volume>> {
        let items = self
            .inner()?
            .read()
            .volumes
            .values()
            .filter(|v| filter.name.as_ref().is_none_or(|n| &v.name == n))
            .filter(|v| {
                filter
                    .metadata
                    .iter()
                    .all(|(k, val)| v.metadata.get(k) == Some(val))
            })
            .map(|v| (v.created_at_ms, v.id.clone(), v.to_volume()))
            .collect();
        paginate(items, page)
    }

    async fn delete_volume(&self, id: &str, cascade: bool) -> CloudResult<()> {
        let id = id.to_string();
        self.blocking(move |inner| inner.delete_volume(&id, cascade))
            .await
    }

    async fn extend_volume(&self, id: &str, new_size_gib: u64, online: bool) -> CloudResult<()> {
        let id = id.to_string();
        self.blocking(move |inner| inner.extend_volume(&id, new_size_gib, online))
            .await
    }

    async fn retype_volume(
        &self,
        id: &str,
        new_type: &str,
        policy: MigrationPolicy,
    ) -> CloudResult<()> {
        let (id, new_type) = (id.to_string(), new_type.to_string());
        self.blocking(move |inner| inner.retype_volume(&id, &new_type, policy))
            .await
    }

    async fn update_volume_metadata(
        &self,
        id: &str,
        pairs: &BTreeMap<String, String>,
    ) -> CloudResult<()> {
        let (id, pairs) = (id.to_string(), pairs.clone());
        self.blocking(move |inner| inner.update_volume_metadata(&id, pairs))
            .await
    }

    /// Operations here finish before they return, so this is normally satisfied at once; it
    /// still looks again (for a concurrent operation to finish) until the deadline.
    async fn wait_volume(
        &self,
        id: &str,
        until: &VolumeWait,
        deadline: Instant,
    ) -> CloudResult<Volume> {
        let started = Instant::now();
        let inner = self.inner()?;
        poll(Resource::Volume, id, until.wanted(), deadline, PACE, || {
            // Gone: what a `Deleted` wait waits for, and the end of any other (the port's rule).
            let look = inner.read().volume(id).and_then(|rec| {
                let v = rec.to_volume();
                let (verdict, status) = (until.verdict(&v, started.elapsed()), v.status.clone());
                Look::judged(verdict, v, status).map_err(|e| e.or_reason(&rec.error_reason))
            });
            async move { look }
        })
        .await
    }
}

impl Inner {
    pub(super) fn create_volume(&self, req: &NewVolume) -> CloudResult<Volume> {
        model::new_volume_size(req.size_gib).map_err(refused)?;
        let vtype = match &req.volume_type {
            None => records::find_volume_type(records::TYPE_DEFAULT).expect("default type"),
            Some(t) => records::find_volume_type(t)
                .ok_or_else(|| CloudError::not_found(Resource::VolumeType, t))?,
        };
        let availability_zone = self.zone_for(req.availability_zone.as_deref(), None)?;
        // Names need not be unique, as in Cinder: the controller core decides what a second
        // volume with the same name means.
        let mut rec = VolumeRecord {
            version: RECORD_VERSION,
            id: uuid::Uuid::new_v4().to_string(),
            name: req.name.clone(),
            description: req.description.clone(),
            size_gib: req.size_gib,
            status: VolumeStatus::Creating.as_str().to_string(),
            error_reason: None,
            volume_type: vtype.name.clone(),
            multiattach: vtype.multiattach,
            metadata: req.metadata.clone(),
            attachments: Vec::new(),
            snapshot_id: None,
            source_volume_id: None,
            backup_id: None,
            created_at_ms: records::now_ms(),
            availability_zone,
        };
        self.check_fits(req.size_gib)?;
        let source = {
            let _ops = self.lock_ops();
            let source = self.resolve_source(req, &mut rec)?;
            self.put_volume(rec.clone())?;
            source
        };
        // The copy runs without the ops lock: `creating` keeps the source from being deleted.
        let result = data::create(
            &self.layout,
            Kind::Volume,
            &rec.id,
            source.as_ref().map(|(file, dev)| Source {
                file,
                device: dev.as_deref(),
            }),
            req.size_gib * GIB,
        );
        let _ops = self.lock_ops();
        let mut rec = self.read().volume(&rec.id)?.clone();
        match result {
            Ok(len) => {
                rec.size_gib = data::gib_of(len);
                rec.settle_status();
            }
            Err(e) => {
                tracing::warn!(volume_id = %rec.id, error = %e, "volume creation failed");
                rec.set_status(VolumeStatus::Error);
                rec.error_reason = Some(format!("cannot write the volume's data: {e}"));
            }
        }
        self.put_volume(rec.clone())?;
        Ok(rec.to_volume())
    }

    pub(super) fn delete_volume(&self, id: &str, cascade: bool) -> CloudResult<()> {
        let _ops = self.lock_ops();
        let (mut rec, snapshots) = {
            let st = self.read();
            let v = st.volume(id)?;
            let snapshots: Vec<String> = st
                .snapshots
                .values()
                .filter(|s| s.volume_id == id)
                .map(|s| s.id.clone())
                .collect();
            let uses = VolumeUse {
                snapshots: snapshots.len(),
                copying: st.copying(id),
            };
            model::delete_volume(&PROFILE, &v.to_volume(), uses, cascade).map_err(refused)?;
            (v.clone(), snapshots)
        };
        self.unbound_before_delete(id)?;
        rec.set_status(VolumeStatus::Deleting);
        self.put_volume(rec)?;
        for s in &snapshots {
            self.drop_object(Kind::Snapshot, s)?;
        }
        self.drop_object(Kind::Volume, id)
    }

    /// No loop device may still serve a volume's file when it is deleted: its data would
    /// stay reachable through the device, and the device bound, after a delete reported done.
    /// A detached volume normally has none (a detach waits for the kernel); one left by a
    /// restart's reconcile, or bound by someone else, is unbound here, a holder waited out as
    /// a detach does; one that stays makes the delete fail.
    fn unbound_before_delete(&self, id: &str) -> CloudResult<()> {
        let file = self.layout.data(Kind::Volume, id);
        if !file.exists() {
            return Ok(());
        }
        let devices = release::serving(&file).map_err(|e| io_error("list loop devices", e))?;
        for device in devices {
            let path = device.path();
            let released = device
                .release(&file, self.release_within)
                .map_err(|e| io_error(format_args!("unbind {}", path.display()), e))?;
            if !released {
                return Err(conflict(format!(
                    "volume {id} is still open through {}: something holds the device (a \
                     mount of it in another mount namespace, or a process); not deleted",
                    path.display()
                )));
            }
        }
        Ok(())
    }

    pub(super) fn extend_volume(
        &self,
        id: &str,
        new_size_gib: u64,
        online: bool,
    ) -> CloudResult<()> {
        let _ops = self.lock_ops();
        let mut rec = self.read().volume(id)?.clone();
        model::extend(&rec.to_volume(), new_size_gib, online).map_err(refused)?;
        self.check_fits(new_size_gib)?;
        let path = self.layout.data(Kind::Volume, id);
        let file = OpenOptions::new()
            .write(true)
            .open(&path)
            .map_err(|e| io_error(format_args!("open {}", path.display()), e))?;
        file.set_len(new_size_gib * GIB)
            .and_then(|()| file.sync_all())
            .map_err(|e| io_error(format_args!("grow {}", path.display()), e))?;
        // The loop device keeps its old size until told to re-read the file's.
        let mut devices: Vec<&str> = rec.attachments.iter().map(|a| a.device.as_str()).collect();
        devices.dedup();
        for dev in devices {
            let loopdev = LoopDevice::from_path(dev.as_ref())
                .ok_or_else(|| io_error("attachment", format!("{dev} is not a loop device")))?;
            loopdev
                .set_capacity()
                .map_err(|e| io_error(format_args!("resize {dev}"), e))?;
        }
        rec.size_gib = new_size_gib;
        self.put_volume(rec)
    }

    pub(super) fn retype_volume(
        &self,
        id: &str,
        new_type: &str,
        _policy: MigrationPolicy,
    ) -> CloudResult<()> {
        // Every type lives in the same directory: no data ever moves, whatever the policy.
        let _ops = self.lock_ops();
        let t = records::find_volume_type(new_type)
            .ok_or_else(|| CloudError::not_found(Resource::VolumeType, new_type))?;
        let mut rec = self.read().volume(id)?.clone();
        model::retype(&rec.to_volume(), &t).map_err(refused)?;
        rec.volume_type = t.name;
        rec.multiattach = t.multiattach;
        self.put_volume(rec)
    }

    pub(super) fn update_volume_metadata(
        &self,
        id: &str,
        pairs: BTreeMap<String, String>,
    ) -> CloudResult<()> {
        let _ops = self.lock_ops();
        let mut rec = self.read().volume(id)?.clone();
        rec.metadata.extend(pairs);
        self.put_volume(rec)
    }
}
