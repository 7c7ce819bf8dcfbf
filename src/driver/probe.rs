//! Readiness for the Identity Probe RPC: the controller is ready when its clouds answered
//! recently, the node when its metadata resolved and its host tools are present.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::Mutex;
use tokio::time::Instant;

use crate::cloud::Clouds;

/// Why a service is not ready; `transient` failures map to Unavailable, the others to
/// FailedPrecondition (an operator has to fix something).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotReady {
    pub reason: String,
    pub transient: bool,
}

#[async_trait]
pub trait Readiness: Send + Sync {
    async fn check(&self) -> Result<(), NotReady>;
}

/// A successful cloud check is trusted for this long: liveness probes call Probe often and
/// must not cost an API call each time.
pub const CLOUD_CHECK_TTL: Duration = Duration::from_secs(30);
/// A failed check is retried no sooner than this, so a dead cloud is not hammered.
pub const CLOUD_FAILURE_TTL: Duration = Duration::from_secs(5);
/// Bound on one check so Probe answers within the liveness probe's timeout.
pub const CLOUD_CHECK_TIMEOUT: Duration = Duration::from_secs(8);

/// Controller readiness: every configured cloud answered within [`CLOUD_CHECK_TTL`].
pub struct CloudReadiness {
    clouds: Clouds,
    last: Mutex<Option<(Instant, Result<(), NotReady>)>>,
}

impl CloudReadiness {
    pub fn new(clouds: Clouds) -> Arc<Self> {
        Arc::new(Self {
            clouds,
            last: Mutex::new(None),
        })
    }

    async fn check_now(&self) -> Result<(), NotReady> {
        for cloud in self.clouds.iter() {
            let label = if cloud.name.is_empty() {
                "default cloud".to_string()
            } else {
                format!("cloud {:?}", cloud.name)
            };
            match tokio::time::timeout(CLOUD_CHECK_TIMEOUT, cloud.storage.check()).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    return Err(NotReady {
                        reason: format!("{label} is not answering: {e}"),
                        transient: true,
                    })
                }
                Err(_) => {
                    return Err(NotReady {
                        reason: format!(
                            "{label} did not answer within {}s",
                            CLOUD_CHECK_TIMEOUT.as_secs()
                        ),
                        transient: true,
                    })
                }
            }
        }
        Ok(())
    }
}

#[async_trait]
impl Readiness for CloudReadiness {
    async fn check(&self) -> Result<(), NotReady> {
        // Holding the lock across the check collapses concurrent probes into one API call.
        let mut last = self.last.lock().await;
        if let Some((at, result)) = last.as_ref() {
            let ttl = if result.is_ok() {
                CLOUD_CHECK_TTL
            } else {
                CLOUD_FAILURE_TTL
            };
            if at.elapsed() < ttl {
                return result.clone();
            }
        }
        let result = self.check_now().await;
        *last = Some((Instant::now(), result.clone()));
        result
    }
}
