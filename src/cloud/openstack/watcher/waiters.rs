//! The watcher's face: reads, waits, and the registration that keeps a volume watched.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{watch, Notify};
use tokio::time::{timeout_at, Instant};

use super::pace::POLL_FIRST;
use super::state::{Entry, Inner, Known, Obs, State};
use crate::cloud::openstack::api::Api;
use crate::cloud::openstack::dto::VolumeDto;
use crate::cloud::{CloudError, CloudResult, Resource, Verdict, Volume, VolumeWait};

/// Remembered change times (for seeding new waits) are kept this many at most.
const SEEN_CAP: usize = 4096;

pub struct Watcher {
    pub(super) inner: Arc<Inner>,
}

impl Watcher {
    pub fn new(api: Arc<Api>) -> Self {
        Self {
            inner: Arc::new(Inner {
                api,
                state: Mutex::new(State::default()),
                wake: Notify::new(),
            }),
        }
    }

    /// Remember when Cinder last changed a volume we saw (create, get and list answers).
    pub fn note(&self, dto: &VolumeDto) {
        if let Some(t) = Known::of(dto) {
            let mut st = self.inner.lock();
            if st.seen.len() >= SEEN_CAP && !st.seen.contains_key(&dto.id) {
                st.seen.clear();
            }
            st.seen.insert(dto.id.clone(), t);
        }
    }

    /// Wait until `until` holds for volume `id`, an error state, or `deadline`. A volume that
    /// is gone ends every wait with `NotFound` (for [`VolumeWait::Deleted`], that is success).
    pub async fn wait(
        &self,
        id: &str,
        until: &VolumeWait,
        deadline: Instant,
    ) -> CloudResult<Volume> {
        let mut reg = Registration::new(&self.inner, id, POLL_FIRST);
        let started = Instant::now();
        let mut last: Option<Volume> = None;
        let mut last_error: Option<CloudError> = None;
        loop {
            match timeout_at(deadline, reg.rx.changed()).await {
                Ok(Ok(())) => {}
                Ok(Err(_)) => return Err(CloudError::Internal("status watcher stopped".into())),
                Err(_) => {
                    let last_status = match (&last, &last_error) {
                        (Some(v), _) => v.status.to_string(),
                        (None, Some(e)) => format!("unknown ({e})"),
                        (None, None) => "unknown (no answer yet)".to_string(),
                    };
                    return Err(CloudError::WaitTimeout {
                        resource: Resource::Volume,
                        id: id.to_string(),
                        wanted: until.wanted(),
                        last_status,
                    });
                }
            }
            let (_, obs) = reg.rx.borrow_and_update().clone();
            match obs {
                Obs::Pending => {}
                Obs::Seen(dto) => {
                    let vol = Volume::from((*dto).clone());
                    match until.verdict(&vol, started.elapsed()) {
                        Verdict::Done => return Ok(vol),
                        Verdict::Fail(e) => return Err(e),
                        Verdict::Continue => last = Some(vol),
                    }
                }
                Obs::Gone => return Err(CloudError::not_found(Resource::Volume, id)),
                Obs::Failed(e) => match e {
                    CloudError::Unavailable { .. } | CloudError::Internal(_) => {
                        last_error = Some(e)
                    }
                    fatal => return Err(fatal),
                },
            }
        }
    }

    /// The volume as Cinder shows it now: what a round that started after this call saw.
    /// Concurrent reads and waits share rounds, so a burst of N reads (a publish storm) costs
    /// one list instead of N GETs; a read alone is one GET, as without the watcher.
    pub async fn read(&self, id: &str) -> CloudResult<Volume> {
        let mut reg = Registration::new(&self.inner, id, Duration::ZERO);
        loop {
            if reg.rx.changed().await.is_err() {
                return Err(CloudError::Internal("status watcher stopped".into()));
            }
            let (round, obs) = reg.rx.borrow_and_update().clone();
            if round <= reg.after {
                continue;
            }
            return match obs {
                Obs::Pending => continue,
                Obs::Seen(dto) => Ok(Volume::from((*dto).clone())),
                Obs::Gone => Err(CloudError::not_found(Resource::Volume, id)),
                Obs::Failed(e) => Err(e),
            };
        }
    }
}

/// One waiting RPC; dropping it (also when the RPC is cancelled) stops watching the volume once
/// nobody else waits on it.
struct Registration {
    inner: Arc<Inner>,
    id: String,
    rx: watch::Receiver<(u64, Obs)>,
    /// Rounds started before this registration: a round numbered above it is fresh.
    after: u64,
}

impl Registration {
    /// Watch `id`, refreshed at the latest `first` from now.
    fn new(inner: &Arc<Inner>, id: &str, first: Duration) -> Self {
        let now = Instant::now();
        let (rx, after, spawn) = {
            let mut st = inner.lock();
            let seeded = st.seen.get(id).cloned();
            let rounds = st.rounds;
            let e = st.entries.entry(id.to_string()).or_insert_with(|| Entry {
                waiters: 0,
                known: seeded,
                interval: POLL_FIRST,
                due: now + first,
                asked_in: 0,
                tx: watch::channel((0, Obs::Pending)).0,
            });
            e.waiters += 1;
            e.asked_in = rounds;
            // A new waiter wants an answer soon, even on a volume watched for a while.
            e.interval = POLL_FIRST;
            e.due = e.due.min(now + first);
            let rx = e.tx.subscribe();
            let spawn = !st.running;
            st.running = true;
            (rx, st.rounds, spawn)
        };
        if spawn {
            tokio::spawn(inner.clone().run());
        } else {
            inner.wake.notify_one();
        }
        Self {
            inner: inner.clone(),
            id: id.to_string(),
            rx,
            after,
        }
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        let mut st = self.inner.lock();
        if let Some(e) = st.entries.get_mut(&self.id) {
            e.waiters -= 1;
            if e.waiters == 0 {
                st.entries.remove(&self.id);
            }
        }
    }
}
