//! When the watcher looks: the first look soon after a wait starts, then intervals that grow
//! per round, capped lower while one list serves several waiters.

use std::time::Duration;

use chrono::TimeDelta;

use crate::cloud::poll::Pace;

/// First refresh after a wait starts: Cinder finishes most operations in 0.2–0.6 s.
pub const POLL_FIRST: Duration = Duration::from_millis(250);
/// Each round stretches every waiter's interval by this factor ...
pub const POLL_FACTOR: f64 = 1.5;
/// ... up to this ...
pub const POLL_MAX: Duration = Duration::from_secs(2);
/// ... or this, after a round that served several waiters with one list: a round costs the
/// same however many wait, so in a storm (two lists a second for all of it) the RPCs return
/// at most 0.5 s after Cinder is done instead of 2 s.
pub const POLL_MAX_SHARED: Duration = Duration::from_millis(500);
/// Next look after a round whose one list served several waiters and saw some of them move
/// on: one cinder-volume works through a burst and finishes it close together, so the rest
/// are most likely done within a few hundred ms. One list per 100 ms while a burst completes
/// (5-10 more lists per 20 volumes than at 250 ms) brings each RPC back within 100 ms of
/// Cinder, as a client polling every volume itself every 100 ms would see it.
pub const POLL_AFTER_PROGRESS: Duration = Duration::from_millis(100);
/// The same pace for what is polled one object at a time (snapshots, backups).
pub const PACE: Pace = Pace {
    at_once: false,
    first: POLL_FIRST,
    factor: POLL_FACTOR,
    max: POLL_MAX,
};
/// A volume last changed longer than this before the newest change the watcher has seen is
/// fetched with a GET, not listed: a list since its time would return every volume the
/// project changed since, which in a large, busy project is most of it.
pub const LIST_HORIZON: TimeDelta = TimeDelta::minutes(10);
/// Parallel GETs in a round that cannot batch.
pub const GET_CONCURRENCY: usize = 8;

/// A waiter's next interval after a round; `shared`: one list served several waiters.
pub fn next_interval(interval: Duration, shared: bool) -> Duration {
    let cap = if shared { POLL_MAX_SHARED } else { POLL_MAX };
    interval.mul_f64(POLL_FACTOR).min(cap)
}
