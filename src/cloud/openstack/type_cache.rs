//! Volume types looked up recently, by id and by name (see placement.rs).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

use crate::cloud::VolumeType;

/// How long a looked-up type is trusted (a retyped extra spec shows up after this).
pub const TYPE_CACHE_TTL: Duration = Duration::from_secs(60);

/// Types by id and by name.
#[derive(Default)]
pub struct TypeCache {
    by_key: Mutex<HashMap<String, (VolumeType, Instant)>>,
}

/// The map is never held across an await; a poisoned one still holds valid entries.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl TypeCache {
    pub(super) fn get(&self, key: &str) -> Option<VolumeType> {
        let map = lock(&self.by_key);
        let (t, at) = map.get(key)?;
        (at.elapsed() < TYPE_CACHE_TTL).then(|| t.clone())
    }

    pub(super) fn put(&self, t: &VolumeType) {
        let now = Instant::now();
        let mut map = lock(&self.by_key);
        map.retain(|_, (_, at)| at.elapsed() < TYPE_CACHE_TTL);
        map.insert(t.id.clone(), (t.clone(), now));
        map.insert(t.name.clone(), (t.clone(), now));
    }
}
