//! The clouds the controller serves: each a name and its adapter's ports.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::{Copies, GroupSnapshots, Health, Placement, Servers, Volumes};

/// One configured cloud (a `[Global "name"]` section, or the local backend): a name and
/// the adapter behind each role.
#[derive(Clone)]
pub struct Cloud {
    pub name: String,
    pub volumes: Arc<dyn Volumes>,
    pub copies: Arc<dyn Copies>,
    pub groups: Arc<dyn GroupSnapshots>,
    pub servers: Arc<dyn Servers>,
    pub placement: Arc<dyn Placement>,
    pub health: Arc<dyn Health>,
}

impl Cloud {
    /// A cloud whose one adapter plays every role.
    pub fn new<A>(name: impl Into<String>, adapter: Arc<A>) -> Self
    where
        A: Volumes + Copies + GroupSnapshots + Servers + Placement + Health + 'static,
    {
        Self {
            name: name.into(),
            volumes: adapter.clone(),
            copies: adapter.clone(),
            groups: adapter.clone(),
            servers: adapter.clone(),
            placement: adapter.clone(),
            health: adapter,
        }
    }
}

/// Every cloud the controller serves, by name. The default cloud is `""` (`[Global]`), used
/// when a request carries no `cloud` secret — migrated in-tree volumes never do.
#[derive(Clone, Default)]
pub struct Clouds {
    by_name: BTreeMap<String, Cloud>,
}

impl Clouds {
    pub fn new(clouds: impl IntoIterator<Item = Cloud>) -> Self {
        Self {
            by_name: clouds.into_iter().map(|c| (c.name.clone(), c)).collect(),
        }
    }

    pub fn get(&self, name: &str) -> Option<&Cloud> {
        self.by_name.get(name)
    }

    /// In sorted name order (ListVolumes walks clouds in this order).
    pub fn iter(&self) -> impl Iterator<Item = &Cloud> {
        self.by_name.values()
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.by_name.keys().map(String::as_str)
    }

    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }

    pub fn len(&self) -> usize {
        self.by_name.len()
    }
}
