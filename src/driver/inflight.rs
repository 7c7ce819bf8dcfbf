//! Per-volume in-flight guard: a second operation on a busy volume gets `Aborted` at once
//! instead of racing the first (CSI: "the Plugin SHOULD return ABORTED").

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use super::Error;

#[derive(Clone, Default)]
pub struct InFlight {
    busy: Arc<Mutex<HashSet<String>>>,
}

impl InFlight {
    pub fn new() -> Self {
        Self::default()
    }

    /// Take the guard for `key` (a volume id, or `name:<volume name>` for creates), or fail
    /// with [`Error::Busy`] when another operation holds it.
    pub fn try_lock(&self, key: impl Into<String>) -> Result<InFlightGuard, Error> {
        let key = key.into();
        let mut busy = self.busy.lock().unwrap_or_else(|e| e.into_inner());
        if !busy.insert(key.clone()) {
            return Err(Error::Busy { key });
        }
        Ok(InFlightGuard {
            busy: self.busy.clone(),
            key,
        })
    }

    pub fn is_busy(&self, key: &str) -> bool {
        self.busy
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(key)
    }
}

/// Releases the key when dropped, also when the operation's future is cancelled.
#[must_use = "the guard releases the volume when dropped"]
pub struct InFlightGuard {
    busy: Arc<Mutex<HashSet<String>>>,
    key: String,
}

impl Drop for InFlightGuard {
    fn drop(&mut self) {
        self.busy
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_lock_is_busy_until_first_drops() {
        let f = InFlight::new();
        let g = f.try_lock("v1").unwrap();
        assert!(matches!(f.try_lock("v1"), Err(Error::Busy { .. })));
        assert!(f.try_lock("v2").is_ok());
        drop(g);
        assert!(f.try_lock("v1").is_ok());
    }
}
