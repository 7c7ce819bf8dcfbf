//! The fake's timing defaults. (It counts and fails calls by the port's `Op`.)

use std::time::Duration;

/// How often a fake wait looks again. Tests run with a paused tokio clock, so this costs no
/// real time; it only bounds how many observations a wait makes per simulated second.
pub const FAKE_POLL_INTERVAL: Duration = Duration::from_millis(100);

/// Default number of observations an object stays in a transitional state.
pub const DEFAULT_SETTLE_AFTER: u32 = 2;
