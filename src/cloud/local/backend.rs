//! The local backend's state: records in memory behind one lock, the ops mutex that serialises
//! mutations, and the open/reconcile at startup. The operations are in the files named for
//! them (volumes, sources, attach, copies, snapshots, backups, placement), each an `impl Inner`
//! block and the role's trait.

use std::collections::BTreeSet;
use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, RwLock, RwLockReadGuard, RwLockWriteGuard};

use std::time::Duration;

use nix::fcntl::{Flock, FlockArg};

use super::reconcile_report::ReconcileReport;
use super::records::valid_node_id;
use super::records::{CopyRecord, GroupRecord, VolumeRecord, ZONE};
use super::rules::refused;
use super::state::State;
use super::store::{Kind, Layout};
use crate::cloud::model;
use crate::cloud::poll::Pace;
use crate::cloud::{CloudError, CloudResult, GIB};

/// Operations finish before they return, so a wait is normally satisfied at its first look;
/// it looks again this often while a concurrent operation finishes.
pub(super) const PACE: Pace = Pace::every(Duration::from_millis(50));

/// How long a detach or a delete waits, by default, for the kernel to unbind a device someone
/// else has open: a probe (blkid, a scan of the loop devices) closes within milliseconds even
/// on a loaded machine; what is still there after this holds the device for good.
pub const RELEASE_WITHIN: Duration = Duration::from_secs(5);

/// How to open the backend.
#[derive(Debug, Clone)]
pub struct LocalOptions {
    /// State directory (created if missing).
    pub dir: PathBuf,
    /// Instance ids `get_server` knows besides the nodes registered under `DIR/nodes` (in
    /// the first zone unless registered).
    pub nodes: Vec<String>,
    /// The availability zones volumes can be created in; the first is the default. Empty means
    /// one zone, [`ZONE`].
    pub zones: Vec<String>,
    /// See [`RELEASE_WITHIN`], the default.
    pub release_within: Duration,
}

impl Default for LocalOptions {
    fn default() -> Self {
        Self {
            dir: PathBuf::new(),
            nodes: Vec::new(),
            zones: Vec::new(),
            release_within: RELEASE_WITHIN,
        }
    }
}

/// The adapter; cheap to clone. It plays every role of the port once this process holds DIR's
/// lock; before that (a standby, `standby.rs`) every call is `Unavailable`, saying what it waits
/// for, and changes nothing: one type, so a new port method is written once here.
#[derive(Clone)]
pub struct LocalCloud {
    pub(super) held: Arc<Held>,
}

/// DIR, its lock file, and the open backend once this process holds the lock.
pub(super) struct Held {
    pub(super) root: PathBuf,
    pub(super) lock: PathBuf,
    pub(super) inner: OnceLock<Arc<Inner>>,
}

pub(super) struct Inner {
    pub(super) layout: Layout,
    pub(super) nodes: BTreeSet<String>,
    /// [`LocalOptions::zones`], never empty.
    pub(super) zones: Vec<String>,
    pub(super) state: RwLock<State>,
    pub(super) ops: Mutex<()>,
    /// [`LocalOptions::release_within`].
    pub(super) release_within: Duration,
    /// Held for the adapter's lifetime: two processes must not own one DIR.
    pub(super) _lock: Flock<File>,
}

pub(crate) fn io_error(context: impl std::fmt::Display, e: impl std::fmt::Display) -> CloudError {
    CloudError::Internal(format!("{context}: {e}"))
}

pub(super) fn conflict(message: impl Into<String>) -> CloudError {
    CloudError::Conflict {
        message: message.into(),
        request_id: Default::default(),
    }
}

pub(super) fn bad_request(message: impl Into<String>) -> CloudError {
    CloudError::BadRequest {
        message: message.into(),
        request_id: Default::default(),
    }
}

/// DIR's lock is held: by another process, or by another open in this one.
pub(super) fn in_use(layout: &Layout, e: nix::errno::Errno) -> CloudError {
    CloudError::Unavailable {
        message: format!(
            "{} is in use by another cinder-csi process (lock {}): {e}",
            layout.root().display(),
            layout.lock_file().display()
        ),
        request_id: Default::default(),
    }
}

fn load<T: serde::de::DeserializeOwned>(layout: &Layout, kind: Kind) -> CloudResult<Vec<T>> {
    let dir = layout.dir(kind);
    super::store::load_records(&dir)
        .map_err(|e| io_error(format_args!("load {}", dir.display()), e))
}

impl LocalCloud {
    /// Open (creating if needed) the state directory, take its lock, load the records and
    /// reconcile loop devices and links. Blocking: call from `spawn_blocking` or [`open`].
    ///
    /// [`open`]: Self::open
    pub fn open_blocking(opts: LocalOptions) -> CloudResult<Self> {
        let (layout, file) = Self::lock_file(&opts.dir)?;
        let lock = Flock::lock(file, FlockArg::LockExclusiveNonblock)
            .map_err(|(_, e)| in_use(&layout, e))?;
        Self::open_locked(opts, layout, lock)
    }

    /// The state directory (created if missing) and its lock file, opened but not locked.
    pub(super) fn lock_file(dir: &Path) -> CloudResult<(Layout, File)> {
        std::fs::create_dir_all(dir)
            .map_err(|e| io_error(format_args!("create {}", dir.display()), e))?;
        let root = dir
            .canonicalize()
            .map_err(|e| io_error(format_args!("resolve {}", dir.display()), e))?;
        let layout = Layout::new(root);
        layout
            .create_dirs()
            .map_err(|e| io_error(format_args!("create {}", layout.root().display()), e))?;
        let lock_path = layout.lock_file();
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&lock_path)
            .map_err(|e| io_error(format_args!("open {}", lock_path.display()), e))?;
        Ok((layout, file))
    }

    /// Load the records and reconcile, holding `lock` (DIR's, from [`Self::lock_file`]).
    pub(super) fn open_locked(
        opts: LocalOptions,
        layout: Layout,
        lock: Flock<File>,
    ) -> CloudResult<Self> {
        let me = Self::waiting(&layout);
        let _ = me.held.inner.set(Self::open_inner(opts, layout, lock)?);
        Ok(me)
    }

    /// DIR's backend, not open yet (a standby's, until it takes the lock).
    pub(super) fn waiting(layout: &Layout) -> Self {
        Self {
            held: Arc::new(Held {
                root: layout.root().to_path_buf(),
                lock: layout.lock_file(),
                inner: OnceLock::new(),
            }),
        }
    }

    /// The records loaded and reconciled, holding `lock`.
    pub(super) fn open_inner(
        opts: LocalOptions,
        layout: Layout,
        lock: Flock<File>,
    ) -> CloudResult<Arc<Inner>> {
        let volumes: Vec<VolumeRecord> = load(&layout, Kind::Volume)?;
        let snapshots: Vec<CopyRecord> = load(&layout, Kind::Snapshot)?;
        let backups: Vec<CopyRecord> = load(&layout, Kind::Backup)?;
        let groups: Vec<GroupRecord> = load(&layout, Kind::GroupSnapshot)?;
        let state = State {
            volumes: volumes.into_iter().map(|r| (r.id.clone(), r)).collect(),
            snapshots: snapshots.into_iter().map(|r| (r.id.clone(), r)).collect(),
            backups: backups.into_iter().map(|r| (r.id.clone(), r)).collect(),
            group_snapshots: groups.into_iter().map(|r| (r.id.clone(), r)).collect(),
        };
        let inner = Arc::new(Inner {
            layout,
            nodes: opts
                .nodes
                .into_iter()
                .filter(|n| valid_node_id(n))
                .collect(),
            zones: if opts.zones.is_empty() {
                vec![ZONE.to_string()]
            } else {
                opts.zones
            },
            state: RwLock::new(state),
            ops: Mutex::new(()),
            release_within: opts.release_within,
            _lock: lock,
        });
        let report = inner.reconcile()?;
        tracing::info!(dir = %inner.layout.root().display(), reconcile = %report, "local backend ready");
        Ok(inner)
    }

    pub async fn open(opts: LocalOptions) -> CloudResult<Self> {
        tokio::task::spawn_blocking(move || Self::open_blocking(opts))
            .await
            .map_err(|e| io_error("open the local backend", e))?
    }

    /// The canonical state directory.
    pub fn dir(&self) -> &Path {
        &self.held.root
    }

    /// Where the volumes attached to `server` have their links (that node's `--by-id-dir`).
    pub fn by_id_dir(&self, server: &str) -> PathBuf {
        Layout::new(self.held.root.clone()).by_id_dir(server)
    }

    /// Whether this process holds DIR (is the backend, not its standby).
    pub fn holds(&self) -> bool {
        self.held.inner.get().is_some()
    }

    /// What a standby waits for, for callers that say so.
    pub fn waiting_for(&self) -> String {
        format!(
            "standby controller: waiting for the lock {} on the local backend's state dir {}, \
             held by another cinder-csi process; this one serves once that process exits",
            self.held.lock.display(),
            self.held.root.display()
        )
    }

    /// The backend, once this process holds DIR; until then every call is `Unavailable`.
    pub(super) fn inner(&self) -> CloudResult<&Arc<Inner>> {
        self.held
            .inner
            .get()
            .ok_or_else(|| CloudError::Unavailable {
                message: self.waiting_for(),
                request_id: Default::default(),
            })
    }

    /// Run the startup reconcile again (tests; an operator tool).
    pub async fn reconcile(&self) -> CloudResult<ReconcileReport> {
        self.blocking(|inner| inner.reconcile()).await
    }

    pub(super) async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Inner) -> CloudResult<T> + Send + 'static,
    ) -> CloudResult<T> {
        let inner = self.inner()?.clone();
        tokio::task::spawn_blocking(move || f(&inner))
            .await
            .map_err(|e| io_error("local backend task", e))?
    }
}

impl Inner {
    pub(super) fn read(&self) -> RwLockReadGuard<'_, State> {
        self.state.read().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn write(&self) -> RwLockWriteGuard<'_, State> {
        self.state.write().unwrap_or_else(|p| p.into_inner())
    }

    /// Serialises mutations; held across their record writes.
    pub(super) fn lock_ops(&self) -> MutexGuard<'_, ()> {
        self.ops.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Persist a volume record, then publish it in memory. Call with `ops` held.
    pub(super) fn put_volume(&self, rec: VolumeRecord) -> CloudResult<()> {
        let path = self.layout.record(Kind::Volume, &rec.id);
        super::store::write_record(&path, &rec)
            .map_err(|e| io_error(format_args!("write {}", path.display()), e))?;
        self.write().volumes.insert(rec.id.clone(), rec);
        Ok(())
    }

    pub(super) fn put_copy(&self, kind: Kind, rec: CopyRecord) -> CloudResult<()> {
        let path = self.layout.record(kind, &rec.id);
        super::store::write_record(&path, &rec)
            .map_err(|e| io_error(format_args!("write {}", path.display()), e))?;
        let mut st = self.write();
        match kind {
            Kind::Snapshot => st.snapshots.insert(rec.id.clone(), rec),
            Kind::Backup => st.backups.insert(rec.id.clone(), rec),
            Kind::Volume | Kind::GroupSnapshot => unreachable!("not a copy: {kind:?}"),
        };
        Ok(())
    }

    /// Remove an object's data file, then its record (so a crash in between leaves a record
    /// in `deleting`, which the reconcile finishes). Call with `ops` held.
    pub(super) fn drop_object(&self, kind: Kind, id: &str) -> CloudResult<()> {
        for path in [self.layout.data(kind, id), self.layout.record(kind, id)] {
            super::store::remove_durable(&path)
                .map_err(|e| io_error(format_args!("remove {}", path.display()), e))?;
        }
        let mut st = self.write();
        match kind {
            Kind::Volume => st.volumes.remove(id).map(|_| ()),
            Kind::Snapshot => st.snapshots.remove(id).map(|_| ()),
            Kind::Backup => st.backups.remove(id).map(|_| ()),
            Kind::GroupSnapshot => st.group_snapshots.remove(id).map(|_| ()),
        };
        Ok(())
    }

    /// The zone a new volume or backup goes to: the one asked for, which must be configured,
    /// else `inherited` (a source's zone), else the first.
    pub(super) fn zone_for(
        &self,
        asked: Option<&str>,
        inherited: Option<&str>,
    ) -> CloudResult<String> {
        match asked {
            Some(az) => {
                model::zone(az, &self.zones).map_err(refused)?;
                Ok(az.to_string())
            }
            None => Ok(inherited.unwrap_or(&self.zones[0]).to_string()),
        }
    }

    /// Free and total bytes of DIR's filesystem.
    pub(super) fn space(&self) -> CloudResult<(u64, u64)> {
        let st = nix::sys::statvfs::statvfs(self.layout.root())
            .map_err(|e| io_error(format_args!("statvfs {}", self.layout.root().display()), e))?;
        let frag = st.fragment_size() as u64;
        Ok((
            st.blocks_available() as u64 * frag,
            st.blocks() as u64 * frag,
        ))
    }

    /// Volumes are thin (sparse), but one larger than the whole filesystem holding DIR could
    /// never be filled: refuse it as over the limit, before anything is written.
    pub(super) fn check_fits(&self, size_gib: u64) -> CloudResult<()> {
        let (_, total) = self.space()?;
        let want = size_gib.saturating_mul(GIB);
        if want > total {
            return Err(CloudError::OverLimit {
                message: format!(
                    "{size_gib} GiB is larger than the filesystem holding {} ({} GiB)",
                    self.layout.root().display(),
                    total / GIB
                ),
                request_id: Default::default(),
            });
        }
        Ok(())
    }
}
