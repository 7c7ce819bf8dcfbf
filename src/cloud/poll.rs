//! The one way an adapter waits for an object: look at it, then again at its pace, until a
//! look is done or fails or the deadline passes (then `WaitTimeout` with the last status
//! seen). The OpenStack adapter's volume waits go through its watcher instead, which serves
//! the looks of every waiter with one request per round.

use std::fmt::Display;
use std::future::Future;
use std::time::Duration;

use tokio::time::{sleep_until, timeout_at, Instant};

use super::{CloudError, CloudResult, Resource, Verdict};

/// When a wait looks.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pace {
    /// Look at once (a local answer costs nothing), or only after `first` (a cloud seldom
    /// finishes within one request's time).
    pub at_once: bool,
    /// The first interval; each next one is `factor` times longer, up to `max`.
    pub first: Duration,
    pub factor: f64,
    pub max: Duration,
}

impl Pace {
    /// Look at once, then every `interval`.
    pub const fn every(interval: Duration) -> Self {
        Self {
            at_once: true,
            first: interval,
            factor: 1.0,
            max: interval,
        }
    }
}

/// What one look at the object says.
pub enum Look<T> {
    Done(T),
    /// Not yet: the status seen, for the timeout's message.
    Pending(String),
}

impl<T> Look<T> {
    /// What `verdict` on `item` (in `status`) means for the wait.
    pub fn judged(verdict: Verdict, item: T, status: impl Display) -> CloudResult<Self> {
        match verdict {
            Verdict::Done => Ok(Self::Done(item)),
            Verdict::Continue => Ok(Self::Pending(status.to_string())),
            Verdict::Fail(e) => Err(e),
        }
    }
}

/// Wait for `resource` `id` to become `wanted`. A look never starts once the deadline has
/// passed, except the first of a wait that looks at once; a slow look ends at the deadline.
pub async fn poll<T, Fut>(
    resource: Resource,
    id: &str,
    wanted: String,
    deadline: Instant,
    pace: Pace,
    mut look: impl FnMut() -> Fut,
) -> CloudResult<T>
where
    Fut: Future<Output = CloudResult<Look<T>>>,
{
    let mut interval = pace.first;
    let mut sleep_first = !pace.at_once;
    let mut last = "unknown (no answer yet)".to_string();
    loop {
        if sleep_first {
            sleep_until((Instant::now() + interval).min(deadline)).await;
            if Instant::now() >= deadline {
                break;
            }
            interval = interval.mul_f64(pace.factor).min(pace.max);
        }
        sleep_first = true;
        match timeout_at(deadline, look()).await {
            Ok(Ok(Look::Done(t))) => return Ok(t),
            Ok(Ok(Look::Pending(status))) => last = status,
            Ok(Err(e)) => return Err(e),
            Err(_) => break,
        }
        if Instant::now() >= deadline {
            break;
        }
    }
    Err(CloudError::WaitTimeout {
        resource,
        id: id.to_string(),
        wanted,
        last_status: last,
    })
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};

    use super::*;

    const CLOUD: Pace = Pace {
        at_once: false,
        first: Duration::from_millis(250),
        factor: 1.5,
        max: Duration::from_secs(2),
    };

    /// Looks until the deadline: their times (ms after the start) and the result.
    async fn looks(pace: Pace, deadline_ms: u64, done_at: u32) -> (Vec<u64>, CloudResult<u32>) {
        let start = Instant::now();
        let n = AtomicU32::new(0);
        let times = std::sync::Mutex::new(Vec::new());
        let deadline = start + Duration::from_millis(deadline_ms);
        let r = poll(
            Resource::Volume,
            "v",
            "ready".into(),
            deadline,
            pace,
            || {
                times
                    .lock()
                    .unwrap()
                    .push(start.elapsed().as_millis() as u64);
                let k = n.fetch_add(1, Ordering::SeqCst) + 1;
                async move {
                    Ok(if k == done_at {
                        Look::Done(k)
                    } else {
                        Look::Pending(format!("look {k}"))
                    })
                }
            },
        )
        .await;
        (times.into_inner().unwrap(), r)
    }

    #[tokio::test(start_paused = true)]
    async fn a_cloud_is_asked_after_a_growing_interval() {
        let (times, r) = looks(CLOUD, 1500, 0).await;
        assert_eq!(times, vec![250, 625, 1188]); // the timer wheel rounds up to the ms
        assert_eq!(
            r.unwrap_err(),
            CloudError::WaitTimeout {
                resource: Resource::Volume,
                id: "v".into(),
                wanted: "ready".into(),
                last_status: "look 3".into()
            }
        );
        let (times, r) = looks(CLOUD, 1500, 2).await;
        assert_eq!((times, r.unwrap()), (vec![250, 625], 2));
    }

    #[tokio::test(start_paused = true)]
    async fn a_local_answer_is_asked_at_once_then_at_its_interval() {
        let pace = Pace::every(Duration::from_millis(100));
        let (times, r) = looks(pace, 250, 0).await;
        assert_eq!(times, vec![0, 100, 200]);
        assert!(
            matches!(r, Err(CloudError::WaitTimeout { last_status, .. }) if last_status == "look 3")
        );
        // Even with the deadline already passed, it looks once.
        let (times, r) = looks(pace, 0, 1).await;
        assert_eq!((times, r.unwrap()), (vec![0], 1));
    }

    #[tokio::test(start_paused = true)]
    async fn no_answer_before_the_deadline_says_so() {
        let (times, r) = looks(CLOUD, 100, 1).await;
        assert!(times.is_empty());
        assert!(matches!(r, Err(CloudError::WaitTimeout { last_status, .. })
            if last_status == "unknown (no answer yet)"));
    }
}
