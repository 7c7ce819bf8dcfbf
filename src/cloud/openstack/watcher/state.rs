//! What the watcher holds: per watched volume its last observation and schedule, the change
//! times seen in any answer, and the shared state behind one mutex.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{watch, Notify};
use tokio::time::Instant;

use super::pace::{next_interval, POLL_AFTER_PROGRESS, POLL_FIRST};
use crate::cloud::openstack::api::Api;
use crate::cloud::openstack::dto::{ChangeMark, VolumeDto};
use crate::cloud::CloudError;

/// What the last round saw of one volume.
#[derive(Debug, Clone)]
pub(super) enum Obs {
    Pending,
    Seen(Arc<VolumeDto>),
    Gone,
    Failed(CloudError),
}

/// What the watcher knows of a volume to find it in a time-filtered list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Known {
    pub(super) mark: ChangeMark,
    pub(super) project: Option<String>,
}

impl Known {
    pub(super) fn of(dto: &VolumeDto) -> Option<Self> {
        Some(Self {
            mark: dto.change_mark()?,
            project: dto.project_id.clone(),
        })
    }
}

/// One watched volume: how many wait on it, what is known of it, when it is next due.
pub(super) struct Entry {
    pub(super) waiters: usize,
    pub(super) known: Option<Known>,
    pub(super) interval: Duration,
    pub(super) due: Instant,
    /// Rounds started when a waiter or reader last registered.
    pub(super) asked_in: u64,
    /// The last observation and the number of the round that made it.
    pub(super) tx: watch::Sender<(u64, Obs)>,
}

impl Entry {
    /// After round number `round` ended at `now`; `progress`: it saw a volume move on.
    pub(super) fn reschedule(&mut self, round: u64, listed: bool, progress: bool, now: Instant) {
        // Asked for while the round ran: its answer is still owed, when it was asked.
        if self.asked_in >= round {
            return;
        }
        // Cinder finishes a burst of operations close together (one cinder-volume works
        // through them): once some are done, look again soon for the rest.
        self.interval = if progress && listed {
            POLL_AFTER_PROGRESS
        } else if progress {
            POLL_FIRST
        } else {
            next_interval(self.interval, listed)
        };
        self.due = now + self.interval;
    }
}

/// Whether a volume moved on between two observations (a status or its attachments changed,
/// or it is gone); a first observation is not a move.
pub(super) fn moved(before: &Obs, after: &Obs) -> bool {
    match (before, after) {
        (Obs::Seen(a), Obs::Seen(b)) => {
            a.status != b.status || a.attachments.len() != b.attachments.len()
        }
        (Obs::Seen(_), Obs::Gone) => true,
        _ => false,
    }
}

#[derive(Default)]
pub(super) struct State {
    pub(super) entries: HashMap<String, Entry>,
    /// The round task runs (it ends when nobody waits).
    pub(super) running: bool,
    /// What was seen of volumes in any answer, to seed waits that start right after.
    pub(super) seen: HashMap<String, Known>,
    /// The cloud refused the `updated_at` filter once: stop trying.
    pub(super) no_time_filter: bool,
    /// Rounds started so far; a round's number is this count when it took its batch.
    pub(super) rounds: u64,
}

/// What the watcher's handle, its registrations and its round task share.
pub(super) struct Inner {
    pub(super) api: Arc<Api>,
    pub(super) state: Mutex<State>,
    /// Wakes the round task when a waiter wants an answer sooner than it planned.
    pub(super) wake: Notify,
}

impl Inner {
    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}
