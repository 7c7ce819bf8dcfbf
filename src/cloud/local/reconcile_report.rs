//! What a startup reconcile pass changed (see reconcile.rs).

/// What a reconcile pass changed (logged at startup; checked by tests).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReconcileReport {
    /// Interrupted creations: completed / marked as error.
    pub creates_completed: usize,
    pub creates_failed: usize,
    /// Interrupted deletions finished.
    pub deletes_finished: usize,
    /// Records that took their data file's larger size.
    pub sizes_adopted: usize,
    /// Attached volumes whose bound loop device was kept.
    pub devices_kept: usize,
    /// Attached volumes that needed a new loop device.
    pub devices_created: usize,
    /// Loop devices unbound because nothing claims them.
    pub devices_released: usize,
    pub links_written: usize,
    pub links_removed: usize,
    /// Filesystems a group snapshot left frozen.
    pub filesystems_thawed: usize,
}

impl std::fmt::Display for ReconcileReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts: Vec<String> = [
            (self.creates_completed, "interrupted creates completed"),
            (self.creates_failed, "interrupted creates marked error"),
            (self.deletes_finished, "interrupted deletes finished"),
            (self.sizes_adopted, "extends adopted"),
            (self.devices_kept, "loop devices kept"),
            (self.devices_created, "loop devices re-created"),
            (self.devices_released, "stray loop devices released"),
            (self.links_written, "links written"),
            (self.links_removed, "stale links removed"),
            (self.filesystems_thawed, "frozen filesystems thawed"),
        ]
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, what)| format!("{n} {what}"))
        .collect();
        if parts.is_empty() {
            f.write_str("nothing to repair")
        } else {
            f.write_str(&parts.join(", "))
        }
    }
}
