//! A controller replica on a state directory another process holds: the local backend's
//! warm standby. One process owns DIR (its flock); a second controller on the same DIR waits
//! for that lock on a thread of its own and, meanwhile, answers every cloud call with
//! `Unavailable` naming the lock and DIR, changing nothing. When the owner dies the kernel
//! drops its lock; the standby takes it, loads and reconciles the state like a fresh start,
//! and from then on is the backend. Meanwhile the app passes the standby's controller calls
//! to the holder over gRPC (app/standby.rs): this adapter is what answers when it cannot.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use async_trait::async_trait;
use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};
use tokio::sync::oneshot;
use tokio::time::Instant;

use super::backend::{in_use, io_error};
use super::store::Layout;
use super::{LocalCloud, LocalOptions};
use crate::cloud::{
    Capacity, CloudError, CloudResult, Copies, CopyFilter, CopyKind, CopyWait, GroupSnapshot,
    GroupSnapshots, Health, MigrationPolicy, NewBackup, NewGroupSnapshot, NewSnapshot, NewVolume,
    Page, PageRequest, Placement, Server, ServerAttachment, Servers, Volume, VolumeCopy,
    VolumeFilter, VolumeType, VolumeWait, Volumes,
};

/// Resolves once the backend is open (at once when DIR was free), or with the error that
/// stopped a standby from opening DIR after it took the lock (the process should then exit,
/// as a failed start does: it holds nothing any more).
pub type Takeover = oneshot::Receiver<CloudResult<()>>;

/// The local backend, or a standby for it; every role of the port.
pub struct StandbyCloud {
    root: PathBuf,
    lock: PathBuf,
    opened: Arc<OnceLock<LocalCloud>>,
}

impl StandbyCloud {
    /// Open DIR when its lock is free (as [`LocalCloud::open`]; an error is returned here),
    /// else return a standby at once and wait for the lock in the background.
    pub async fn open(opts: LocalOptions) -> CloudResult<(Self, Takeover)> {
        tokio::task::spawn_blocking(move || Self::open_blocking(opts))
            .await
            .map_err(|e| io_error("open the local backend", e))?
    }

    fn open_blocking(opts: LocalOptions) -> CloudResult<(Self, Takeover)> {
        let (layout, file) = LocalCloud::lock_file(&opts.dir)?;
        let me = Self {
            root: layout.root().to_path_buf(),
            lock: layout.lock_file(),
            opened: Arc::default(),
        };
        let (tx, rx) = oneshot::channel();
        match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
            Ok(lock) => {
                let cloud = LocalCloud::open_locked(opts, layout, lock)?;
                let _ = me.opened.set(cloud);
                let _ = tx.send(Ok(()));
            }
            Err((file, Errno::EWOULDBLOCK)) => {
                tracing::warn!(
                    dir = %me.root.display(), lock = %me.lock.display(),
                    "standby: another cinder-csi process holds the local backend's state dir; \
                     this one takes it over when that process's lock is released"
                );
                let opened = me.opened.clone();
                // A thread of its own, not the blocking pool: the runtime waits for that
                // pool's tasks at shutdown, and this one may wait forever.
                std::thread::Builder::new()
                    .name("local-standby".into())
                    .spawn(move || {
                        let result = take_over(file, opts, layout).map(|cloud| {
                            let _ = opened.set(cloud);
                        });
                        let _ = tx.send(result);
                    })
                    .map_err(|e| io_error("start the standby thread", e))?;
            }
            Err((_, e)) => return Err(in_use(&layout, e)),
        }
        Ok((me, rx))
    }

    /// Whether this process holds DIR (is the backend, not its standby).
    pub fn holds(&self) -> bool {
        self.opened.get().is_some()
    }

    /// The canonical state directory.
    pub fn dir(&self) -> &Path {
        &self.root
    }

    /// What a standby waits for, for callers that say so.
    pub fn waiting_for(&self) -> String {
        format!(
            "standby controller: waiting for the lock {} on the local backend's state dir {}, \
             held by another cinder-csi process; this one serves once that process exits",
            self.lock.display(),
            self.root.display()
        )
    }

    /// The backend, once this process holds DIR.
    fn backend(&self) -> CloudResult<&LocalCloud> {
        self.opened.get().ok_or_else(|| CloudError::Unavailable {
            message: self.waiting_for(),
            request_id: Default::default(),
        })
    }
}

/// Wait for DIR's lock, then load and reconcile the state (blocking).
fn take_over(mut file: File, opts: LocalOptions, layout: Layout) -> CloudResult<LocalCloud> {
    let lock = loop {
        match Flock::lock(file, FlockArg::LockExclusive) {
            Ok(lock) => break lock,
            Err((f, Errno::EINTR)) => file = f,
            Err((_, e)) => return Err(in_use(&layout, e)),
        }
    };
    tracing::warn!(dir = %layout.root().display(), "standby: took the local backend's state dir over");
    LocalCloud::open_locked(opts, layout, lock).inspect_err(|e| {
        tracing::error!(error = %e, "standby: took the lock but could not open the state dir");
    })
}

#[async_trait]
impl Volumes for StandbyCloud {
    async fn create_volume(&self, req: &NewVolume) -> CloudResult<Volume> {
        self.backend()?.create_volume(req).await
    }
    async fn get_volume(&self, id: &str) -> CloudResult<Volume> {
        self.backend()?.get_volume(id).await
    }
    async fn list_volumes(
        &self,
        filter: &VolumeFilter,
        page: &PageRequest,
    ) -> CloudResult<Page<Volume>> {
        self.backend()?.list_volumes(filter, page).await
    }
    async fn delete_volume(&self, id: &str, cascade: bool) -> CloudResult<()> {
        self.backend()?.delete_volume(id, cascade).await
    }
    async fn extend_volume(&self, id: &str, new_size_gib: u64, online: bool) -> CloudResult<()> {
        self.backend()?
            .extend_volume(id, new_size_gib, online)
            .await
    }
    async fn retype_volume(
        &self,
        id: &str,
        new_type: &str,
        policy: MigrationPolicy,
    ) -> CloudResult<()> {
        self.backend()?.retype_volume(id, new_type, policy).await
    }
    async fn update_volume_metadata(
        &self,
        id: &str,
        pairs: &BTreeMap<String, String>,
    ) -> CloudResult<()> {
        self.backend()?.update_volume_metadata(id, pairs).await
    }
    async fn wait_volume(
        &self,
        id: &str,
        until: &VolumeWait,
        deadline: Instant,
    ) -> CloudResult<Volume> {
        self.backend()?.wait_volume(id, until, deadline).await
    }
}

#[async_trait]
impl Copies for StandbyCloud {
    async fn create_snapshot(&self, req: &NewSnapshot) -> CloudResult<VolumeCopy> {
        self.backend()?.create_snapshot(req).await
    }
    async fn backups_supported(&self) -> CloudResult<bool> {
        self.backend()?.backups_supported().await
    }
    async fn create_backup(&self, req: &NewBackup) -> CloudResult<VolumeCopy> {
        self.backend()?.create_backup(req).await
    }
    async fn get_copy(&self, kind: CopyKind, id: &str) -> CloudResult<VolumeCopy> {
        self.backend()?.get_copy(kind, id).await
    }
    async fn list_copies(
        &self,
        kind: CopyKind,
        filter: &CopyFilter,
        page: &PageRequest,
    ) -> CloudResult<Page<VolumeCopy>> {
        self.backend()?.list_copies(kind, filter, page).await
    }
    async fn delete_copy(&self, kind: CopyKind, id: &str) -> CloudResult<()> {
        self.backend()?.delete_copy(kind, id).await
    }
    async fn wait_copy(
        &self,
        kind: CopyKind,
        id: &str,
        until: &CopyWait,
        deadline: Instant,
    ) -> CloudResult<VolumeCopy> {
        self.backend()?.wait_copy(kind, id, until, deadline).await
    }
}

#[async_trait]
impl GroupSnapshots for StandbyCloud {
    async fn create_group_snapshot(
        &self,
        req: &NewGroupSnapshot,
        deadline: Instant,
    ) -> CloudResult<GroupSnapshot> {
        self.backend()?.create_group_snapshot(req, deadline).await
    }
    async fn get_group_snapshot(&self, id: &str) -> CloudResult<GroupSnapshot> {
        self.backend()?.get_group_snapshot(id).await
    }
    async fn group_snapshots_named(&self, name: &str) -> CloudResult<Vec<GroupSnapshot>> {
        self.backend()?.group_snapshots_named(name).await
    }
    async fn delete_group_snapshot(&self, id: &str, deadline: Instant) -> CloudResult<()> {
        self.backend()?.delete_group_snapshot(id, deadline).await
    }
    async fn wait_group_snapshot(
        &self,
        id: &str,
        until: &CopyWait,
        deadline: Instant,
    ) -> CloudResult<GroupSnapshot> {
        self.backend()?
            .wait_group_snapshot(id, until, deadline)
            .await
    }
    async fn release_volume(&self, volume: &Volume, deadline: Instant) -> CloudResult<()> {
        self.backend()?.release_volume(volume, deadline).await
    }
    async fn sweep(&self, deadline: Instant) -> CloudResult<()> {
        self.backend()?.sweep(deadline).await
    }
}

#[async_trait]
impl Servers for StandbyCloud {
    async fn get_server(&self, id: &str) -> CloudResult<Server> {
        self.backend()?.get_server(id).await
    }
    async fn attach_volume(
        &self,
        server_id: &str,
        volume_id: &str,
        multiattach: bool,
    ) -> CloudResult<ServerAttachment> {
        self.backend()?
            .attach_volume(server_id, volume_id, multiattach)
            .await
    }
    async fn detach_volume(&self, server_id: &str, volume_id: &str) -> CloudResult<()> {
        self.backend()?.detach_volume(server_id, volume_id).await
    }
    async fn list_attachments(&self, server_id: &str) -> CloudResult<Vec<ServerAttachment>> {
        self.backend()?.list_attachments(server_id).await
    }
}

#[async_trait]
impl Placement for StandbyCloud {
    async fn get_volume_type(&self, name_or_id: &str) -> CloudResult<VolumeType> {
        self.backend()?.get_volume_type(name_or_id).await
    }
    async fn availability_zones(&self) -> CloudResult<Vec<String>> {
        self.backend()?.availability_zones().await
    }
    async fn capacity(
        &self,
        availability_zone: Option<&str>,
        volume_type: Option<&str>,
    ) -> CloudResult<Capacity> {
        self.backend()?
            .capacity(availability_zone, volume_type)
            .await
    }
}

#[async_trait]
impl Health for StandbyCloud {
    /// A standby is healthy when the state dir it waits for is there (what the owner checks):
    /// being second is its role, not a fault (`cinder_csi_cloud_up` stays 1, /readyz ready).
    async fn check(&self) -> CloudResult<()> {
        match self.opened.get() {
            Some(cloud) => cloud.check().await,
            None => {
                let volumes = self.root.join("volumes");
                tokio::fs::metadata(&volumes)
                    .await
                    .map(|_| ())
                    .map_err(|e| {
                        io_error(format_args!("state directory {}", self.root.display()), e)
                    })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(dir: &std::path::Path) -> LocalOptions {
        LocalOptions {
            dir: dir.to_path_buf(),
            nodes: vec!["n1".into()],
            ..Default::default()
        }
    }

    #[tokio::test]
    async fn a_free_dir_is_opened_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let (cloud, takeover) = StandbyCloud::open(opts(dir.path())).await.unwrap();
        takeover.await.unwrap().unwrap();
        assert_eq!(cloud.availability_zones().await.unwrap(), ["local"]);
        // It holds DIR now: a plain open is refused.
        let err = LocalCloud::open(opts(dir.path())).await.err().unwrap();
        assert!(err.to_string().contains("in use by another"), "{err}");
    }

    #[tokio::test]
    async fn a_standby_changes_nothing_then_takes_over_when_the_owner_goes() {
        let dir = tempfile::tempdir().unwrap();
        let owner = LocalCloud::open(opts(dir.path())).await.unwrap();
        let new = NewVolume {
            name: "pvc-1".into(),
            size_gib: 1,
            ..Default::default()
        };
        let v = owner.create_volume(&new).await.unwrap();

        let (standby, mut takeover) = StandbyCloud::open(opts(dir.path())).await.unwrap();
        let err = standby.create_volume(&new).await.unwrap_err();
        let CloudError::Unavailable { message, .. } = &err else {
            panic!("{err:?}");
        };
        let root = dir.path().canonicalize().unwrap();
        for says in [
            root.join(".lock").display().to_string(),
            root.display().to_string(),
        ] {
            assert!(message.contains(&says), "{message}");
        }
        assert!(standby.get_volume(&v.id).await.is_err());
        // Healthy meanwhile, and still waiting.
        standby.check().await.unwrap();
        assert!(takeover.try_recv().is_err());
        let listed = owner
            .list_volumes(&VolumeFilter::default(), &PageRequest::default())
            .await
            .unwrap();
        assert_eq!(listed.items.len(), 1, "the standby created nothing");

        drop(owner);
        takeover.await.unwrap().unwrap();
        assert_eq!(standby.get_volume(&v.id).await.unwrap().id, v.id);
        assert_eq!(standby.create_volume(&new).await.unwrap().name, "pvc-1");
    }
}
