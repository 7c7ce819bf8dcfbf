//! Each cloud's availability zones as last listed (see zones.rs for how they are used).

use std::collections::HashMap;

use tokio::sync::Mutex;
use tokio::time::Instant;

use crate::cloud::Clouds;

/// The zones of one cloud as last listed.
#[derive(Default)]
pub(super) struct Known {
    pub(super) zones: Vec<String>,
    /// When the list was last asked for (also when that failed); `None` = never.
    pub(super) listed_at: Option<Instant>,
    /// The last request for the list failed, so `zones` may be stale or empty.
    pub(super) list_failed: bool,
}

/// Per cloud, behind an async lock so concurrent RPCs that need the list wait for one
/// request instead of each making their own.
pub(super) struct ZoneCache {
    pub(super) by_cloud: HashMap<String, Mutex<Known>>,
}

impl ZoneCache {
    pub(super) fn new(clouds: &Clouds) -> Self {
        Self {
            by_cloud: clouds
                .names()
                .map(|n| (n.to_string(), Mutex::default()))
                .collect(),
        }
    }
}
