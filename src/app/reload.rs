//! Credential rotation: the OpenStack controller rereads `--cloud-config` when it changes and
//! hands each cloud its section's new credentials (crate::cloud::openstack::rotate), so a
//! rotated application credential needs no restart.
//!
//! The kubelet updates a mounted Secret by writing a new timestamped directory and renaming
//! the `..data` symlink over the old one: the file's own inode never changes, so the watch is
//! on the directory (inotify), and any event there rereads every file, compared by content.
//! A Secret mounted with `subPath` is never updated by the kubelet; the chart mounts the
//! directory. When inotify is unavailable (its per-user instance limit is a common node
//! setting) the files are polled instead.

use std::collections::BTreeSet;
use std::os::fd::{AsFd, AsRawFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use nix::errno::Errno;
use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify};
use tokio::io::unix::AsyncFd;

use crate::cloud::openstack::OpenStack;
use crate::config::{self, GlobalConfig};

/// Quiet time after an event before rereading: the kubelet's swap and an editor's save are
/// several events each.
const SETTLE: Duration = Duration::from_millis(500);
/// How often the files are read when inotify cannot watch them.
const POLL: Duration = Duration::from_secs(30);

pub(super) struct Reloader {
    files: Vec<PathBuf>,
    names: Vec<String>,
    clouds: Vec<Arc<OpenStack>>,
    /// Contents last acted on, per file (`None`: unreadable).
    seen: Vec<Option<Vec<u8>>>,
}

impl Reloader {
    pub(super) fn new(
        files: Vec<PathBuf>,
        names: Vec<String>,
        clouds: Vec<Arc<OpenStack>>,
    ) -> Self {
        let seen = read_all(&files);
        Self {
            files,
            names,
            clouds,
            seen,
        }
    }

    /// Watch in the background for as long as the process serves.
    pub(super) fn spawn(self) {
        if self.clouds.is_empty() || self.files.is_empty() {
            return;
        }
        tokio::spawn(self.run());
    }

    async fn run(mut self) {
        let dirs: BTreeSet<PathBuf> = self.files.iter().map(|f| parent(f)).collect();
        let watch = match watch(&dirs) {
            Ok(w) => Some(w),
            Err(e) => {
                tracing::warn!(error = %e, poll_s = POLL.as_secs(),
                    "cannot watch the cloud.conf directories with inotify; polling the files instead");
                None
            }
        };
        if watch.is_some() {
            tracing::info!(dirs = ?dirs, "watching cloud.conf for rotated credentials");
        }
        loop {
            match &watch {
                Some(w) => {
                    if let Err(e) = next_event(w).await {
                        tracing::warn!(error = %e, poll_s = POLL.as_secs(),
                            "lost the inotify watch of cloud.conf; polling the files instead");
                        return self.poll().await;
                    }
                    tokio::time::sleep(SETTLE).await;
                    drain(w);
                }
                None => tokio::time::sleep(POLL).await,
            }
            self.check().await;
        }
    }

    async fn poll(mut self) {
        loop {
            tokio::time::sleep(POLL).await;
            self.check().await;
        }
    }

    /// Reread; act when a file's content differs from what was last acted on.
    pub(super) async fn check(&mut self) {
        let now = read_all(&self.files);
        if now == self.seen {
            return;
        }
        self.seen = now;
        let resolved = config::load(&self.files)
            .and_then(|c| c.resolve_clouds(&self.names, &config::ProcessEnv));
        let globals = match resolved {
            Ok(g) => g,
            Err(e) => {
                tracing::error!(error = %e,
                    "cloud.conf changed but cannot be used: the current credentials stay in use");
                return;
            }
        };
        for os in &self.clouds {
            match globals.get(os.name()) {
                Some(global) => rotate(os, global).await,
                None => tracing::error!(cloud = os.name(),
                    "cloud.conf changed and no longer defines this cloud: the current credentials stay in use"),
            }
        }
    }
}

async fn rotate(os: &OpenStack, global: &GlobalConfig) {
    let reloaded = match os.reload_credentials(global).await {
        Ok(r) => r,
        Err(e) => {
            tracing::error!(error = %e,
                "cloud.conf changed but its credentials cannot be used: the current ones stay in use");
            return;
        }
    };
    if !reloaded.needs_restart.is_empty() {
        tracing::warn!(cloud = os.name(), keys = %reloaded.needs_restart.join(", "),
            "cloud.conf changed keys that take effect only when the controller restarts");
    }
    if !reloaded.rotated {
        return;
    }
    tracing::info!(cloud = os.name(), auth = %reloaded.auth,
        "cloud.conf changed: new credentials; requesting a token with them");
    match os.verify_credentials().await {
        Ok(()) => tracing::info!(cloud = os.name(), auth = %reloaded.auth,
            "Keystone accepted the new credentials: every request now uses them"),
        Err(e) => tracing::error!(error = %e, "rotated credentials not in use yet"),
    }
}

fn parent(file: &Path) -> PathBuf {
    match file.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

fn read_all(files: &[PathBuf]) -> Vec<Option<Vec<u8>>> {
    files.iter().map(|f| std::fs::read(f).ok()).collect()
}

/// inotify's descriptor, for tokio's readiness.
struct Watch(Inotify);

impl AsRawFd for Watch {
    fn as_raw_fd(&self) -> RawFd {
        self.0.as_fd().as_raw_fd()
    }
}

fn watch(dirs: &BTreeSet<PathBuf>) -> Result<AsyncFd<Watch>, String> {
    let inotify = Inotify::init(InitFlags::IN_NONBLOCK | InitFlags::IN_CLOEXEC)
        .map_err(|e| format!("inotify_init: {e}"))?;
    // Every way a file in the directory gets new content: written in place, created, renamed
    // over (the kubelet's `..data` swap, editors), removed.
    let mask = AddWatchFlags::IN_CLOSE_WRITE
        | AddWatchFlags::IN_MODIFY
        | AddWatchFlags::IN_CREATE
        | AddWatchFlags::IN_MOVED_TO
        | AddWatchFlags::IN_MOVED_FROM
        | AddWatchFlags::IN_DELETE
        | AddWatchFlags::IN_ATTRIB;
    for dir in dirs {
        inotify
            .add_watch(dir.as_path(), mask)
            .map_err(|e| format!("watch {}: {e}", dir.display()))?;
    }
    register(Watch(inotify))
}

/// One documented exception to `deny(unsafe_code)`: tokio's registration of a descriptor.
#[allow(unsafe_code)]
fn register(watch: Watch) -> Result<AsyncFd<Watch>, String> {
    // SAFETY: the descriptor is owned by `watch`, which the AsyncFd owns: it stays open for as
    // long as it is registered and is deregistered before it is closed (AsyncFd's drop).
    unsafe { AsyncFd::register_with_interest(watch, tokio::io::Interest::READABLE) }
        .map_err(|e| e.to_string())
}

/// Wait for at least one event. A watched directory that goes away ends the watch (its
/// `IN_IGNORED`), which is reported as an error.
async fn next_event(w: &AsyncFd<Watch>) -> Result<(), String> {
    loop {
        let mut guard = w.readable().await.map_err(|e| e.to_string())?;
        match guard.get_inner().0.read_events() {
            Ok(events) => {
                if events
                    .iter()
                    .any(|e| e.mask.contains(AddWatchFlags::IN_IGNORED))
                {
                    return Err("a watched directory was removed".into());
                }
                return Ok(());
            }
            Err(Errno::EAGAIN) => guard.clear_ready(),
            Err(e) => return Err(format!("reading inotify events: {e}")),
        }
    }
}

/// Discard the events that came while settling.
fn drain(w: &AsyncFd<Watch>) {
    while w.get_ref().0.read_events().is_ok() {}
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;
    use std::os::unix::fs::symlink;
    use std::time::Instant;

    use super::*;
    use crate::cloud::openstack::testserver::Fake;
    use crate::cloud::openstack::{ApiMetrics, OpenStackOptions};
    use crate::cloud::Health;

    fn conf(fake: &Fake, password: &str) -> String {
        format!(
            "[Global]\nauth-url = {}/identity\nusername = demo\npassword = {password}\n\
             user-domain-id = default\ntenant-name = demo\ntenant-domain-id = default\n",
            fake.base
        )
    }

    /// What the kubelet's atomic writer does to a Secret volume: the data in a timestamped
    /// directory, `..data` renamed over to point at it, the file a link through `..data`.
    fn publish(dir: &Path, version: u32, text: &str) {
        let data = dir.join(format!("..2026_12_04_{version}"));
        std::fs::create_dir(&data).unwrap();
        std::fs::write(data.join("cloud.conf"), text).unwrap();
        let tmp = dir.join("..data_tmp");
        symlink(data.file_name().unwrap(), &tmp).unwrap();
        std::fs::rename(&tmp, dir.join("..data")).unwrap();
        if !dir.join("cloud.conf").exists() {
            symlink("..data/cloud.conf", dir.join("cloud.conf")).unwrap();
        }
    }

    fn last_password(fake: &Fake) -> Option<String> {
        fake.with(|s| {
            s.auth_bodies.last().and_then(|b| {
                b["auth"]["identity"]["password"]["user"]["password"]
                    .as_str()
                    .map(str::to_string)
            })
        })
    }

    async fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
        let start = Instant::now();
        while !done() {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "timed out waiting for {what}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    #[tokio::test]
    async fn a_secret_swapped_by_the_kubelet_rotates_the_credentials() {
        let fake = Fake::start().await;
        fake.with(|s| {
            s.passwords = Some(HashSet::from(["first".to_string(), "second".to_string()]))
        });
        let dir = tempfile::tempdir().unwrap();
        publish(dir.path(), 1, &conf(&fake, "first"));
        let file = dir.path().join("cloud.conf");
        let cfg = config::load(std::slice::from_ref(&file)).unwrap();
        let global = cfg.resolve_clouds(&[], &config::ProcessEnv).unwrap()[""].clone();
        let opts = OpenStackOptions::from_config(global, cfg.block_storage.clone());
        let os = Arc::new(
            OpenStack::new("", &opts, Arc::new(ApiMetrics::new()))
                .await
                .unwrap(),
        );
        os.check().await.unwrap();
        assert_eq!(last_password(&fake).as_deref(), Some("first"));
        Reloader::new(vec![file.clone()], vec![], vec![os.clone()]).spawn();
        // Give the watch time to be set up before the swap.
        tokio::time::sleep(Duration::from_millis(200)).await;

        // A broken Secret first: logged, the current credentials stay.
        publish(dir.path(), 2, "[Global]\nauth-url = \n");
        tokio::time::sleep(SETTLE * 3).await;
        os.check().await.unwrap();
        assert_eq!(fake.with(|s| s.tokens_issued), 1);

        publish(dir.path(), 3, &conf(&fake, "second"));
        wait_for("a token with the new password", || {
            last_password(&fake).as_deref() == Some("second")
        })
        .await;
        // The old credential deleted: its tokens revoked, calls go on with the new one.
        fake.with(|s| s.passwords = Some(HashSet::from(["second".to_string()])));
        fake.revoke_tokens();
        os.check().await.unwrap();
        assert_eq!(last_password(&fake).as_deref(), Some("second"));
    }

    /// Without a change of content (a touch, an unrelated file) nothing is reread into the
    /// clouds; the polling fallback compares the same way.
    #[tokio::test]
    async fn unchanged_content_does_nothing() {
        let fake = Fake::start().await;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("cloud.conf");
        std::fs::write(&file, conf(&fake, "first")).unwrap();
        let cfg = config::load(std::slice::from_ref(&file)).unwrap();
        let global = cfg.resolve_clouds(&[], &config::ProcessEnv).unwrap()[""].clone();
        let opts = OpenStackOptions::from_config(global, cfg.block_storage.clone());
        let os = Arc::new(
            OpenStack::new("", &opts, Arc::new(ApiMetrics::new()))
                .await
                .unwrap(),
        );
        let mut r = Reloader::new(vec![file.clone()], vec![], vec![os.clone()]);
        std::fs::write(dir.path().join("other"), "x").unwrap();
        r.check().await;
        assert_eq!(fake.with(|s| s.tokens_issued), 0);
        std::fs::write(&file, conf(&fake, "second")).unwrap();
        r.check().await;
        // The reread took the new password and asked for a token with it.
        assert_eq!(last_password(&fake).as_deref(), Some("second"));
    }
}
