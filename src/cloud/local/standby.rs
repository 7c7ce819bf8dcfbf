//! A controller replica on a state directory another process holds: the local backend's
//! warm standby. One process owns DIR (its flock); a second controller on the same DIR waits
//! for that lock on a thread of its own and, meanwhile, answers every cloud call with
//! `Unavailable` naming the lock and DIR, changing nothing. When the owner dies the kernel
//! drops its lock; the standby takes it, loads and reconciles the state like a fresh start,
//! and from then on is the backend. Meanwhile the app passes the standby's controller calls
//! to the holder over gRPC (app/standby.rs): this adapter is what answers when it cannot. A
//! standby is a [`LocalCloud`] whose backend is not open yet, so no role is forwarded by hand.

use std::fs::File;
use std::sync::Arc;

use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};
use tokio::sync::oneshot;

use super::backend::{in_use, io_error, Inner};
use super::store::Layout;
use super::{LocalCloud, LocalOptions};
use crate::cloud::CloudResult;

/// Resolves once the backend is open (at once when DIR was free), or with the error that
/// stopped a standby from opening DIR after it took the lock (the process should then exit,
/// as a failed start does: it holds nothing any more).
pub type Takeover = oneshot::Receiver<CloudResult<()>>;

impl LocalCloud {
    /// Open DIR when its lock is free (as [`LocalCloud::open`]; an error is returned here),
    /// else return a standby at once and wait for the lock in the background.
    pub async fn open_or_stand_by(opts: LocalOptions) -> CloudResult<(Self, Takeover)> {
        tokio::task::spawn_blocking(move || Self::open_or_stand_by_blocking(opts))
            .await
            .map_err(|e| io_error("open the local backend", e))?
    }

    fn open_or_stand_by_blocking(opts: LocalOptions) -> CloudResult<(Self, Takeover)> {
        let (layout, file) = Self::lock_file(&opts.dir)?;
        let me = Self::waiting(&layout);
        let (tx, rx) = oneshot::channel();
        match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
            Ok(lock) => {
                let _ = me.held.inner.set(Self::open_inner(opts, layout, lock)?);
                let _ = tx.send(Ok(()));
            }
            Err((file, Errno::EWOULDBLOCK)) => {
                tracing::warn!(
                    dir = %me.held.root.display(), lock = %me.held.lock.display(),
                    "standby: another cinder-csi process holds the local backend's state dir; \
                     this one takes it over when that process's lock is released"
                );
                let held = me.held.clone();
                // A thread of its own, not the blocking pool: the runtime waits for that
                // pool's tasks at shutdown, and this one may wait forever.
                std::thread::Builder::new()
                    .name("local-standby".into())
                    .spawn(move || {
                        let result = take_over(file, opts, layout).map(|inner| {
                            let _ = held.inner.set(inner);
                        });
                        let _ = tx.send(result);
                    })
                    .map_err(|e| io_error("start the standby thread", e))?;
            }
            Err((_, e)) => return Err(in_use(&layout, e)),
        }
        Ok((me, rx))
    }
}

/// Wait for DIR's lock, then load and reconcile the state (blocking).
fn take_over(mut file: File, opts: LocalOptions, layout: Layout) -> CloudResult<Arc<Inner>> {
    let lock = loop {
        match Flock::lock(file, FlockArg::LockExclusive) {
            Ok(lock) => break lock,
            Err((f, Errno::EINTR)) => file = f,
            Err((_, e)) => return Err(in_use(&layout, e)),
        }
    };
    tracing::warn!(dir = %layout.root().display(), "standby: took the local backend's state dir over");
    LocalCloud::open_inner(opts, layout, lock).inspect_err(|e| {
        tracing::error!(error = %e, "standby: took the lock but could not open the state dir");
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cloud::{
        CloudError, Health, NewVolume, PageRequest, Placement, VolumeFilter, Volumes,
    };

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
        let (cloud, takeover) = LocalCloud::open_or_stand_by(opts(dir.path()))
            .await
            .unwrap();
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

        let (standby, mut takeover) = LocalCloud::open_or_stand_by(opts(dir.path()))
            .await
            .unwrap();
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
