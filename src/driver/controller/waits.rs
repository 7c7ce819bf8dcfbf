//! Deadlines of the core's waits. The polling itself (backoff, batching) belongs to each
//! adapter's `wait_*`; the core only decides how long it may wait.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::named_volume;
use crate::cloud::{Volume, Volumes};
use crate::driver::{Change, Error, Refusal};

/// Time kept back from the RPC deadline so our Aborted (with the last status seen) reaches
/// the caller before its own timeout fires and the answer is lost.
pub const DEADLINE_MARGIN: Duration = Duration::from_millis(500);

/// How many times an operation refused for a transient state (409 while Cinder moves
/// between states) is retried within one RPC after waiting the state out.
pub const MAX_STATE_RETRIES: u32 = 3;

/// A refusal (Cinder/Nova 400 "Invalid volume", mapped to `Conflict`) that leaves the volume
/// exactly as it was this many times in a row is permanent (e.g. a backend that cannot extend
/// a volume with snapshots): FailedPrecondition with the cloud's message, not a retry loop
/// that ends Aborted. One repeat tells it from a race with a state change we did not see.
pub const PERMANENT_REFUSALS: u32 = 2;

/// Whether a re-read volume is in the same, stable state as before a refused operation.
pub fn unchanged(before: &Volume, after: &Volume) -> bool {
    let servers =
        |v: &Volume| -> Vec<String> { v.attachments.iter().map(|a| a.server_id.clone()).collect() };
    !after.status.is_transitional()
        && before.status == after.status
        && before.size_gib == after.size_gib
        && before.volume_type == after.volume_type
        && servers(before) == servers(after)
}

/// Counts refusals of one operation that left the volume unchanged.
#[derive(Debug, Default)]
pub struct Refusals(u32);

impl Refusals {
    /// Record a refusal; true once it is [`PERMANENT_REFUSALS`] in a row of unchanged state.
    pub fn permanent(&mut self, before: &Volume, after: &Volume) -> bool {
        if unchanged(before, after) {
            self.0 += 1;
        } else {
            self.0 = 0;
        }
        self.0 >= PERMANENT_REFUSALS
    }

    /// After the cloud refused `change` (a `Conflict` with `message`) and the volume was read
    /// again as `after`: the fresh volume to try again with, or, once the refusal is
    /// permanent, FailedPrecondition carrying the cloud's reason.
    pub fn judge(
        &mut self,
        before: &Volume,
        after: Volume,
        change: Change,
        message: String,
    ) -> Result<Volume, Refusal> {
        if self.permanent(before, &after) {
            return Err(Refusal::ChangeRefused {
                id: after.id,
                status: after.status,
                change,
                message,
            });
        }
        Ok(after)
    }

    /// After the cloud refused `change` to volume `id` (last seen as `before`) with a
    /// `Conflict` carrying `message`: read the volume again and [`judge`](Self::judge) it.
    pub async fn reread(
        &mut self,
        volumes: &Arc<dyn Volumes>,
        id: &str,
        before: &Volume,
        change: Change,
        message: String,
    ) -> Result<Volume, Error> {
        let after = named_volume(volumes, id).await?;
        Ok(self.judge(before, after, change, message)?)
    }
}

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
