//! Everything a case created, so it can be undone in reverse order when the case ends, whether
//! it passed or not: volumes are node-unpublished, node-unstaged, controller-unpublished and
//! deleted; snapshots are deleted.

/// A volume and how far it got on this node.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrackedVolume {
    pub id: String,
    pub nodes: Vec<String>,
    pub staging: Option<String>,
    pub targets: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resource {
    Volume(TrackedVolume),
    Snapshot(String),
}

#[derive(Debug, Default)]
pub struct Tracker {
    items: Vec<Resource>,
}

impl Tracker {
    fn volume(&mut self, id: &str) -> &mut TrackedVolume {
        let pos = self
            .items
            .iter()
            .position(|r| matches!(r, Resource::Volume(v) if v.id == id));
        let pos = pos.unwrap_or_else(|| {
            self.items.push(Resource::Volume(TrackedVolume {
                id: id.to_string(),
                ..Default::default()
            }));
            self.items.len() - 1
        });
        match &mut self.items[pos] {
            Resource::Volume(v) => v,
            Resource::Snapshot(_) => unreachable!("position matched a volume"),
        }
    }

    pub fn add_volume(&mut self, id: &str) {
        if !id.is_empty() {
            self.volume(id);
        }
    }

    pub fn add_snapshot(&mut self, id: &str) {
        if !id.is_empty() && !self.items.contains(&Resource::Snapshot(id.to_string())) {
            self.items.push(Resource::Snapshot(id.to_string()));
        }
    }

    pub fn remove(&mut self, id: &str) {
        self.items.retain(|r| match r {
            Resource::Volume(v) => v.id != id,
            Resource::Snapshot(s) => s != id,
        });
    }

    /// Record an attempt to publish a tracked volume to a node: even a failed call may have
    /// attached it. Volumes this case did not create are not tracked.
    pub fn published(&mut self, id: &str, node: &str) {
        if node.is_empty() {
            return;
        }
        if let Some(Resource::Volume(v)) = self.find(id) {
            if !v.nodes.iter().any(|n| n == node) {
                v.nodes.push(node.to_string());
            }
        }
    }

    pub fn unpublished(&mut self, id: &str, node: &str) {
        if let Some(Resource::Volume(v)) = self.find(id) {
            v.nodes.retain(|n| n != node && !node.is_empty());
        }
    }

    pub fn staged(&mut self, id: &str, path: &str) {
        if path.is_empty() {
            return;
        }
        if let Some(Resource::Volume(v)) = self.find(id) {
            v.staging = Some(path.to_string());
        }
    }

    pub fn unstaged(&mut self, id: &str, path: &str) {
        if let Some(Resource::Volume(v)) = self.find(id) {
            if v.staging.as_deref() == Some(path) {
                v.staging = None;
            }
        }
    }

    pub fn node_published(&mut self, id: &str, target: &str) {
        if target.is_empty() {
            return;
        }
        if let Some(Resource::Volume(v)) = self.find(id) {
            if !v.targets.iter().any(|t| t == target) {
                v.targets.push(target.to_string());
            }
        }
    }

    pub fn node_unpublished(&mut self, id: &str, target: &str) {
        if let Some(Resource::Volume(v)) = self.find(id) {
            v.targets.retain(|t| t != target);
        }
    }

    fn find(&mut self, id: &str) -> Option<&mut Resource> {
        self.items.iter_mut().find(|r| match r {
            Resource::Volume(v) => v.id == id,
            Resource::Snapshot(s) => s == id,
        })
    }

    /// Take everything, newest first (the order to undo it in).
    pub fn drain_lifo(&mut self) -> Vec<Resource> {
        let mut items = std::mem::take(&mut self.items);
        items.reverse();
        items
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tracks_node_state_and_drains_newest_first() {
        let mut t = Tracker::default();
        t.add_volume("v1");
        t.published("v1", "n1");
        t.staged("v1", "/s");
        t.node_published("v1", "/t");
        t.add_snapshot("s1");
        t.add_volume("v2");
        t.published("unknown", "n1");
        t.node_unpublished("v1", "/t");
        t.remove("v2");
        let items = t.drain_lifo();
        assert_eq!(items[0], Resource::Snapshot("s1".into()));
        assert_eq!(
            items[1],
            Resource::Volume(TrackedVolume {
                id: "v1".into(),
                nodes: vec!["n1".into()],
                staging: Some("/s".into()),
                targets: vec![],
            })
        );
        assert!(t.is_empty());
    }
}
