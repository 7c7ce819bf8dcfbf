//! Bounded polling of one snapshot or backup (volumes go through the shared watcher), with the
//! watcher's backoff constants. Ends at the deadline with `WaitTimeout` carrying the last status.

use std::future::Future;

use tokio::time::{sleep_until, timeout_at, Instant};

use super::watcher::{POLL_FACTOR, POLL_FIRST, POLL_MAX};
use crate::cloud::{CloudError, CloudResult, Resource};

/// What one look at the object says.
pub enum Step<T> {
    Done(T),
    /// Not yet; the status seen.
    Continue(String),
    Fail(CloudError),
}

pub async fn poll<T, Fut>(
    resource: Resource,
    id: &str,
    wanted: &str,
    deadline: Instant,
    mut step: impl FnMut() -> Fut,
) -> CloudResult<T>
where
    Fut: Future<Output = Step<T>>,
{
    let mut interval = POLL_FIRST;
    let mut last = "unknown (no answer yet)".to_string();
    loop {
        sleep_until((Instant::now() + interval).min(deadline)).await;
        if Instant::now() >= deadline {
            break;
        }
        match timeout_at(deadline, step()).await {
            Ok(Step::Done(t)) => return Ok(t),
            Ok(Step::Fail(e)) => return Err(e),
            Ok(Step::Continue(status)) => last = status,
            Err(_) => break,
        }
        interval = interval.mul_f64(POLL_FACTOR).min(POLL_MAX);
    }
    Err(CloudError::WaitTimeout {
        resource,
        id: id.to_string(),
        wanted: wanted.to_string(),
        last_status: last,
    })
}

/// Transient failures keep a wait going (the status stays what it was); others end it, and
/// `NotFound` is how a wait for deletion succeeds.
pub fn on_error<T>(e: CloudError, last: &str) -> Step<T> {
    match e {
        CloudError::Unavailable { .. } => Step::Continue(format!("{last} (then: {e})")),
        other => Step::Fail(other),
    }
}

/// The mutex around a wait's last seen state is never held across an await; a poisoned one
/// still holds valid data.
pub fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
