//! The shared volume status watcher: every `wait_volume` and `get_volume` of a cloud goes
//! through it, and one background round refreshes all waited-on and read volumes at once
//! instead of each RPC polling or fetching its own.
//!
//! How a round refreshes N volumes with one request: Cinder's non-admin volume filters
//! (`resource_filters.json`: name, status, metadata, bootable, migration_status,
//! availability_zone, group_id, size, created_at, updated_at) cannot select by id, but since
//! microversion 3.60 they compare times: `updated_at=gte:<t>`, `created_at=gte:<t>`.
//! `updated_at` never goes backwards, so a list filtered on the oldest `updated_at` seen among
//! the waited-on volumes returns every one of them that still exists — changed or not — plus
//! only the project's other recently changed volumes. A volume never updated since its
//! creation has a null `updated_at` that no such filter matches; those are found by
//! `created_at=gte:<oldest creation among them>` instead (new volumes: a short list). So a
//! round is one list (two when both kinds wait and the first did not cover all). Times come
//! from Cinder's own answers (no clock skew), floored to the second minus one (the database may
//! round). A volume of our own project missing from a list that covered it is gone (lists show
//! the project's volumes, all pages); any other missing volume is checked with a GET. One volume,
//! an unknown time, or a cloud below 3.60 (or refusing the filters) fall back to GETs, one per
//! volume per round however many RPCs wait on it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, DurationRound, TimeDelta, Utc};
use futures::stream::{self, StreamExt};
use tokio::sync::{watch, Notify};
use tokio::time::{sleep_until, timeout_at, Instant};

use super::api::{Api, Request};
use super::dto::{has_next, ChangeMark, VolumeDto, VolumeEnvelope, VolumeList};
use super::microversion::CINDER_TIME_FILTERS;
use crate::cloud::poll::Pace;
use crate::cloud::{CloudError, CloudResult, Op, Resource, Verdict, Volume, VolumeWait};

/// First refresh after a wait starts: Cinder finishes most operations in 0.2–0.6 s.
pub const POLL_FIRST: Duration = Duration::from_millis(250);
/// Each round stretches every waiter's interval by this factor ...
pub const POLL_FACTOR: f64 = 1.5;
/// ... up to this ...
pub const POLL_MAX: Duration = Duration::from_secs(2);
/// The same pace for what is polled one object at a time (snapshots, backups).
pub const PACE: Pace = Pace {
    at_once: false,
    first: POLL_FIRST,
    factor: POLL_FACTOR,
    max: POLL_MAX,
};
/// ... or this, after a round that served several waiters with one list: a round costs the
/// same however many wait, so in a storm (two lists a second for all of it) the RPCs return
/// at most 0.5 s after Cinder is done instead of 2 s.
pub const POLL_MAX_SHARED: Duration = Duration::from_millis(500);
/// A volume last changed longer than this before the newest change the watcher has seen is
/// fetched with a GET, not listed: a list since its time would return every volume the
/// project changed since, which in a large, busy project is most of it.
const LIST_HORIZON: TimeDelta = TimeDelta::minutes(10);
/// Parallel GETs in a round that cannot batch.
pub const GET_CONCURRENCY: usize = 8;
/// Remembered change times (for seeding new waits) are kept this many at most.
const SEEN_CAP: usize = 4096;

/// What the last round saw of one volume.
#[derive(Debug, Clone)]
enum Obs {
    Pending,
    Seen(Arc<VolumeDto>),
    Gone,
    Failed(CloudError),
}

/// What the watcher knows of a volume to find it in a time-filtered list.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Known {
    mark: ChangeMark,
    project: Option<String>,
}

impl Known {
    fn of(dto: &VolumeDto) -> Option<Self> {
        Some(Self {
            mark: dto.change_mark()?,
            project: dto.project_id.clone(),
        })
    }
}

struct Entry {
    waiters: usize,
    known: Option<Known>,
    interval: Duration,
    due: Instant,
    /// Rounds started when a waiter or reader last registered.
    asked_in: u64,
    /// The last observation and the number of the round that made it.
    tx: watch::Sender<(u64, Obs)>,
}

impl Entry {
    /// After round number `round` ended at `now`; `progress`: it saw a volume move on.
    fn reschedule(&mut self, round: u64, listed: bool, progress: bool, now: Instant) {
        // Asked for while the round ran: its answer is still owed, when it was asked.
        if self.asked_in >= round {
            return;
        }
        // Cinder finishes a burst of operations close together (one cinder-volume works
        // through them): once some are done, look again soon for the rest.
        self.interval = if progress {
            POLL_FIRST
        } else {
            next_interval(self.interval, listed)
        };
        self.due = now + self.interval;
    }
}

/// Whether a volume moved on between two observations (a status or its attachments changed,
/// or it is gone); a first observation is not a move.
fn moved(before: &Obs, after: &Obs) -> bool {
    match (before, after) {
        (Obs::Seen(a), Obs::Seen(b)) => {
            a.status != b.status || a.attachments.len() != b.attachments.len()
        }
        (Obs::Seen(_), Obs::Gone) => true,
        _ => false,
    }
}

#[derive(Default)]
struct State {
    entries: HashMap<String, Entry>,
    running: bool,
    /// What was seen of volumes in any answer, to seed waits that start right after.
    seen: HashMap<String, Known>,
    /// The cloud refused the `updated_at` filter once: stop trying.
    no_time_filter: bool,
    /// Rounds started so far; a round's number is this count when it took its batch.
    rounds: u64,
}

pub struct Watcher {
    inner: Arc<Inner>,
}

struct Inner {
    api: Arc<Api>,
    state: Mutex<State>,
    wake: Notify,
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

impl Inner {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The single polling task: runs while anyone waits.
    async fn run(self: Arc<Self>) {
        loop {
            let notified = self.wake.notified();
            let next_due = {
                let mut st = self.lock();
                if st.entries.is_empty() {
                    st.running = false;
                    return;
                }
                st.entries.values().map(|e| e.due).min()
            };
            if let Some(due) = next_due.filter(|d| *d > Instant::now()) {
                tokio::select! {
                    _ = sleep_until(due) => {}
                    _ = notified => {}
                }
                continue;
            }
            let (round, batch, time_filter_off) = {
                let mut st = self.lock();
                st.rounds += 1;
                let newest = st.seen.values().map(|k| k.mark.time()).max();
                let recent = |k: &Known| newest.is_none_or(|n| k.mark.time() >= n - LIST_HORIZON);
                let batch: Vec<(String, Option<Known>)> = st
                    .entries
                    .iter()
                    .map(|(id, e)| (id.clone(), e.known.clone().filter(recent)))
                    .collect();
                (st.rounds, batch, st.no_time_filter)
            };
            let (results, listed) = self.refresh(batch, time_filter_off).await;
            let now = Instant::now();
            let mut st = self.lock();
            let mut progress = false;
            for (id, obs) in results {
                let known = match &obs {
                    Obs::Seen(dto) => Known::of(dto),
                    _ => None,
                };
                if let Some(k) = &known {
                    st.seen.insert(id.clone(), k.clone());
                }
                if let Some(e) = st.entries.get_mut(&id) {
                    if known.is_some() {
                        e.known = known;
                    }
                    progress |= moved(&e.tx.borrow().1, &obs);
                    e.tx.send_replace((round, obs));
                }
            }
            for e in st.entries.values_mut() {
                e.reschedule(round, listed, progress, now);
            }
        }
    }

    /// Fresh observations of every volume in `batch` (id, what is known of it), and whether a
    /// list served several of them.
    async fn refresh(
        &self,
        batch: Vec<(String, Option<Known>)>,
        time_filter_off: bool,
    ) -> (Vec<(String, Obs)>, bool) {
        let mut out = Vec::with_capacity(batch.len());
        let mut pending: HashMap<String, Option<Known>> = batch.into_iter().collect();
        let can_list = pending.len() > 1
            && !time_filter_off
            && self
                .api
                .cinder_version()
                .await
                .is_ok_and(|v| v.supports(CINDER_TIME_FILTERS));
        // Which kinds of mark a successful list covered (every pending volume of that kind).
        let mut covered: Vec<bool> = Vec::new();
        if can_list {
            // New volumes by creation time first: that list is short and may cover the rest.
            for created in [true, false] {
                let since = pending
                    .values()
                    .filter_map(|k| match k.as_ref().map(|k| k.mark) {
                        Some(ChangeMark::Created(t)) if created => Some(t),
                        Some(ChangeMark::Updated(t)) if !created => Some(t),
                        _ => None,
                    })
                    .min();
                let listable = pending.values().filter(|k| k.is_some()).count();
                // One volume left is cheaper as a GET.
                let (Some(since), true) = (since, listable > 1) else {
                    continue;
                };
                match self.list_since(created, since).await {
                    Ok(mut found) => {
                        covered.push(created);
                        pending.retain(|id, _| match found.remove(id) {
                            Some(dto) => {
                                out.push((id.clone(), Obs::Seen(Arc::new(dto))));
                                false
                            }
                            None => true,
                        });
                    }
                    Err(e) => {
                        if matches!(e, CloudError::BadRequest { .. }) {
                            tracing::warn!(error = %e, "Cinder refused a time filter on the volume list; the status watcher falls back to one GET per volume");
                            self.lock().no_time_filter = true;
                        } else {
                            tracing::debug!(error = %e, "status watcher list failed; trying GETs");
                        }
                        break;
                    }
                }
            }
        }
        // Our project's volumes missing from a list that covered them are gone.
        if !covered.is_empty() {
            let project = self.api.project_id().await.ok();
            pending.retain(|id, k| {
                let gone = k.as_ref().is_some_and(|k| {
                    k.project.is_some()
                        && k.project == project
                        && covered.contains(&matches!(k.mark, ChangeMark::Created(_)))
                });
                if gone {
                    out.push((id.clone(), Obs::Gone));
                }
                !gone
            });
        }
        let gets = stream::iter(pending.into_keys())
            .map(|id| async move {
                let obs = self.get(&id).await;
                (id, obs)
            })
            .buffer_unordered(GET_CONCURRENCY)
            .collect::<Vec<_>>()
            .await;
        let listed = !covered.is_empty();
        out.extend(gets);
        (out, listed)
    }

    async fn get(&self, id: &str) -> Obs {
        match self
            .api
            // Waits follow IDs the core already looked up (so validated): encode only.
            .cinder(Request::get(
                Op::VolumeGet,
                format!("volumes/{}", super::ids::encode_segment(id)),
            ))
            .await
        {
            Ok(ans) => match ans.json::<VolumeEnvelope>(Op::VolumeGet) {
                Ok(env) => Obs::Seen(Arc::new(env.volume)),
                Err(e) => Obs::Failed(e.into_cloud(Resource::Volume, id)),
            },
            Err(e) => match e.into_cloud(Resource::Volume, id) {
                CloudError::NotFound { .. } => Obs::Gone,
                other => Obs::Failed(other),
            },
        }
    }

    /// Every volume of the project created (`created`) or last updated at or after `since`
    /// (all pages), by id.
    async fn list_since(
        &self,
        created: bool,
        since: DateTime<Utc>,
    ) -> CloudResult<HashMap<String, VolumeDto>> {
        let filter = if created { "created_at" } else { "updated_at" };
        let floor =
            since.duration_trunc(TimeDelta::seconds(1)).unwrap_or(since) - TimeDelta::seconds(1);
        let value = format!("gte:{}", floor.format("%Y-%m-%dT%H:%M:%S"));
        let mut found = HashMap::new();
        let mut marker: Option<String> = None;
        loop {
            let req = Request::get(Op::VolumeWatch, "volumes/detail")
                .query(filter, value.clone())
                .query_opt("marker", marker.take());
            let ans = self
                .api
                .cinder(req)
                .await
                .map_err(|e| e.into_cloud(Resource::Volume, "(list)"))?;
            let page: VolumeList = ans
                .json(Op::VolumeWatch)
                .map_err(|e| e.into_cloud(Resource::Volume, "(list)"))?;
            let more = has_next(&page.volumes_links) && !page.volumes.is_empty();
            marker = page.volumes.last().map(|v| v.id.clone());
            found.extend(page.volumes.into_iter().map(|v| (v.id.clone(), v)));
            if !more {
                return Ok(found);
            }
        }
    }
}

/// A waiter's next interval after a round; `shared`: one list served several waiters.
fn next_interval(interval: Duration, shared: bool) -> Duration {
    let cap = if shared { POLL_MAX_SHARED } else { POLL_MAX };
    interval.mul_f64(POLL_FACTOR).min(cap)
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

#[cfg(test)]
mod tests;
