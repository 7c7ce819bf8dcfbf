//! Readiness and the background cloud monitor behind /readyz and cinder_csi_cloud_up.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;

use crate::cloud::{Cloud, Clouds};

/// Why a check failed; `transient` failures map to Unavailable, the others to
/// FailedPrecondition (an operator has to fix something).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotReady {
    pub reason: String,
    pub transient: bool,
}

/// One health or readiness check. Health checks (Probe, `/healthz`) must be local and answer
/// in milliseconds; readiness checks (`/readyz`) may wait on the network.
#[async_trait]
pub trait Readiness: Send + Sync {
    async fn check(&self) -> Result<(), NotReady>;
}

/// How often each cloud is checked: one `GET /volumes?limit=1` per cloud per interval.
pub const CLOUD_CHECK_INTERVAL: Duration = Duration::from_secs(30);
/// After a failure the next check comes sooner, so recovery is seen quickly.
pub const CLOUD_RETRY_INTERVAL: Duration = Duration::from_secs(10);
/// Outer bound on one check. A backend bounds its own request from when it is sent (the
/// OpenStack adapter: 8 s); this one also covers a token request and waiting behind the
/// driver's own requests in flight, which must not make a reachable cloud look down.
pub const CLOUD_CHECK_TIMEOUT: Duration = Duration::from_secs(90);

/// Receives every check result, e.g. to set a gauge per cloud.
pub trait CloudHealthObserver: Send + Sync {
    fn observe(&self, cloud: &str, up: bool);
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum CloudState {
    NotChecked,
    Up,
    Down(String),
}

/// Checks every configured cloud in the background and remembers the last answer; reading it
/// (`/readyz`) never makes a request.
pub struct CloudMonitor {
    pub(super) clouds: Clouds,
    pub(super) observer: Option<Arc<dyn CloudHealthObserver>>,
    pub(super) state: Mutex<BTreeMap<String, CloudState>>,
}

pub(super) fn label(name: &str) -> String {
    if name.is_empty() {
        "the default cloud ([Global])".to_string()
    } else {
        format!("cloud {name:?}")
    }
}

impl CloudMonitor {
    pub fn new(clouds: Clouds, observer: Option<Arc<dyn CloudHealthObserver>>) -> Arc<Self> {
        let state = clouds
            .names()
            .map(|n| (n.to_string(), CloudState::NotChecked))
            .collect();
        Arc::new(Self {
            clouds,
            observer,
            state: Mutex::new(state),
        })
    }

    /// Check now, then keep checking until the process ends.
    pub fn spawn(self: &Arc<Self>) {
        let me = self.clone();
        tokio::spawn(async move {
            loop {
                let all_up = me.check_all().await;
                let next = if all_up {
                    CLOUD_CHECK_INTERVAL
                } else {
                    CLOUD_RETRY_INTERVAL
                };
                tokio::time::sleep(next).await;
            }
        });
    }

    /// One round: every cloud checked concurrently (one slow region delays no other).
    /// Returns whether all answered.
    pub async fn check_all(&self) -> bool {
        let checks = self.clouds.iter().map(|c| self.check_one(c));
        futures::future::join_all(checks)
            .await
            .into_iter()
            .all(|up| up)
    }

    pub(super) async fn check_one(&self, cloud: &Cloud) -> bool {
        let result = match tokio::time::timeout(CLOUD_CHECK_TIMEOUT, cloud.health.check()).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(e.to_string()),
            Err(_) => Err(format!(
                "no answer within {}s",
                CLOUD_CHECK_TIMEOUT.as_secs()
            )),
        };
        let new = match &result {
            Ok(()) => CloudState::Up,
            Err(e) => CloudState::Down(e.clone()),
        };
        let old = {
            let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
            state.insert(cloud.name.clone(), new.clone())
        };
        match (&result, old) {
            // Every failure is logged: an operator must see an outage while it lasts.
            (Err(e), _) => tracing::warn!(
                cloud = %cloud.name,
                error = %e,
                "{} is not reachable; CSI calls that need it will fail until it is",
                label(&cloud.name)
            ),
            (Ok(()), Some(CloudState::Down(_))) => {
                tracing::info!(cloud = %cloud.name, "{} is reachable again", label(&cloud.name))
            }
            _ => {}
        }
        if let Some(o) = &self.observer {
            o.observe(&cloud.name, result.is_ok());
        }
        result.is_ok()
    }
}

#[async_trait]
impl Readiness for CloudMonitor {
    /// Ready when every cloud answered its last check.
    async fn check(&self) -> Result<(), NotReady> {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let mut problems = Vec::new();
        for (name, s) in state.iter() {
            match s {
                CloudState::Up => {}
                CloudState::NotChecked => problems.push(format!("{} not checked yet", label(name))),
                CloudState::Down(e) => {
                    problems.push(format!("{} is not reachable: {e}", label(name)))
                }
            }
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(NotReady {
                reason: problems.join("; "),
                transient: true,
            })
        }
    }
}

/// Runs `checks` in order; the first failure wins.
pub async fn check_all(checks: &[Arc<dyn Readiness>]) -> Result<(), NotReady> {
    for c in checks {
        c.check().await?;
    }
    Ok(())
}
