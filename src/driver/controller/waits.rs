//! Deadlines of the core's waits. The polling itself (backoff, batching) belongs to each
//! adapter's `wait_*`; the core only decides how long it may wait.

use std::time::Duration;

use tokio::time::Instant;

/// Time kept back from the RPC deadline so our Aborted (with the last status seen) reaches
/// the caller before its own timeout fires and the answer is lost.
pub const DEADLINE_MARGIN: Duration = Duration::from_millis(500);

/// How many times an operation refused for a transient state (409 while Cinder moves
/// between states) is retried within one RPC after waiting the state out.
pub const MAX_STATE_RETRIES: u32 = 3;

/// The deadline waits use: the RPC deadline minus [`DEADLINE_MARGIN`] (at most a tenth of
/// the time left, so short deadlines still get to wait).
pub fn wait_deadline(rpc_deadline: Instant) -> Instant {
    let now = Instant::now();
    let left = rpc_deadline.saturating_duration_since(now);
    now + left.saturating_sub(DEADLINE_MARGIN.min(left / 10))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn margin_is_bounded() {
        let now = Instant::now();
        assert_eq!(
            wait_deadline(now + Duration::from_secs(60)),
            now + Duration::from_millis(59_500)
        );
        assert_eq!(
            wait_deadline(now + Duration::from_secs(1)),
            now + Duration::from_millis(900)
        );
        assert_eq!(wait_deadline(now), now);
    }
}
