//! The node's health (Probe, `/healthz`) and readiness (`/readyz`): both need the tools of the
//! default filesystem; readiness also needs the node's identity. See `driver::probe`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;

use super::node_core::NodeCore;
use super::params::DEFAULT_FS;
use crate::driver::probe::{NotReady, Readiness};
use crate::host::metadata::MetadataError;
use crate::host::Host;

/// The tools the node spawns to format and grow its default filesystem are on `PATH` (looked
/// up on a blocking thread).
async fn default_fs_tools(host: &Host) -> Result<(), NotReady> {
    let host = host.clone();
    let missing = tokio::task::spawn_blocking(move || host.filesystems.missing_tools(DEFAULT_FS))
        .await
        .unwrap_or_default();
    if missing.is_empty() {
        return Ok(());
    }
    Err(NotReady {
        reason: format!(
            "{} not installed in the plugin's image (needed to format and grow {DEFAULT_FS})",
            missing.join(", ")
        ),
        transient: false,
    })
}

/// How old the node's cached tool check may get before a Probe starts a refresh.
pub const NODE_TOOLS_REFRESH: Duration = Duration::from_secs(30);

/// Node health for Probe: the tools the node spawns for its default filesystem are installed
/// (a `PATH` lookup). The node's identity (metadata service or config drive) is not part of
/// it: a slow metadata service must not get the plugin restarted; `/readyz` and NodeGetInfo
/// report it. Probe is called every few seconds by the livenessprobe sidecar, so it answers
/// from the last lookup and refreshes a stale one in the background, off the request path:
/// it costs what NodeGetCapabilities costs.
pub struct NodeHealth {
    core: Arc<NodeCore>,
    refresh_after: Duration,
    last: Mutex<Option<(tokio::time::Instant, Result<(), NotReady>)>>,
    refreshing: std::sync::atomic::AtomicBool,
}

impl NodeHealth {
    pub fn new(core: Arc<NodeCore>, refresh_after: Duration) -> Arc<Self> {
        Arc::new(Self {
            core,
            refresh_after,
            last: Mutex::new(None),
            refreshing: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// Look the tools up now (blocking thread) and remember the answer.
    pub async fn refresh(&self) -> Result<(), NotReady> {
        let result = default_fs_tools(self.core.host()).await;
        *self.last.lock().unwrap_or_else(|e| e.into_inner()) =
            Some((tokio::time::Instant::now(), result.clone()));
        result
    }
}

#[async_trait]
impl Readiness for Arc<NodeHealth> {
    async fn check(&self) -> Result<(), NotReady> {
        let cached = self.last.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let Some((at, result)) = cached else {
            return self.refresh().await;
        };
        let stale = at.elapsed() >= self.refresh_after;
        if stale
            && !self
                .refreshing
                .swap(true, std::sync::atomic::Ordering::SeqCst)
        {
            let me = self.clone();
            tokio::spawn(async move {
                let _ = me.refresh().await;
                me.refreshing
                    .store(false, std::sync::atomic::Ordering::SeqCst);
            });
        }
        result
    }
}

/// The node is ready when its identity resolves and the tools for the default filesystem are
/// installed. Other filesystems' tools are checked when a volume needs them.
pub struct NodeReadiness {
    pub core: Arc<NodeCore>,
}

#[async_trait]
impl Readiness for NodeReadiness {
    async fn check(&self) -> Result<(), NotReady> {
        if let Err(e) = self.core.info().await {
            let transient = !matches!(e, crate::driver::Error::Metadata(MetadataError::Invalid(_)));
            return Err(NotReady {
                reason: format!("node identity unknown: {e}"),
                transient,
            });
        }
        default_fs_tools(self.core.host()).await
    }
}
