//! The fake cloud itself: its state behind one mutex, what a test configures, and what a
//! test inspects without being counted.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::time::Instant;

use super::state::State;
use crate::cloud::poll::{poll, Look, Pace};
use crate::cloud::{
    Capacity, Cloud, CloudError, CloudResult, CopyKind, CopyStatus, GroupSnapshot, Op, Resource,
    Server, Volume, VolumeCopy, VolumeStatus, VolumeType,
};

/// How often a fake wait looks again. Tests run with a paused tokio clock, so this costs no
/// real time; it only bounds how many observations a wait makes per simulated second.
pub const FAKE_POLL_INTERVAL: Duration = Duration::from_millis(100);

/// The fake cloud. Cheap to clone through `Arc`; all state sits behind one mutex that is never
/// held across an `.await`.
#[derive(Default)]
pub struct FakeCloud {
    state: Mutex<State>,
}

impl FakeCloud {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// A port [`Cloud`] named `name` backed by this fake in every role.
    pub fn cloud(self: &Arc<Self>, name: &str) -> Cloud {
        Cloud::new(name, self.clone())
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Count a call of `op` and return the injected failure, if one is queued.
    pub(super) fn enter(&self, op: Op) -> CloudResult<()> {
        self.lock().enter(op)
    }

    /// Look with `look` at the fake's pace until it is done, fails, or `deadline` passes.
    pub(super) async fn wait_until<T>(
        &self,
        resource: Resource,
        id: &str,
        wanted: String,
        deadline: Instant,
        mut look: impl FnMut(&mut State) -> CloudResult<Look<T>>,
    ) -> CloudResult<T> {
        let pace = Pace::every(FAKE_POLL_INTERVAL);
        poll(resource, id, wanted, deadline, pace, || {
            let r = look(&mut self.lock());
            async move { r }
        })
        .await
    }

    // ---- configuration ------------------------------------------------------------------

    /// Observations an object stays transitional before it settles (0 = settles at the first).
    pub fn set_settle_after(&self, n: u32) {
        self.lock().settle_after = n;
    }

    pub fn add_server(&self, id: &str, availability_zone: &str) {
        self.lock().servers.insert(
            id.to_string(),
            Server {
                id: id.to_string(),
                name: format!("node-{id}"),
                status: "ACTIVE".into(),
                availability_zone: Some(availability_zone.to_string()),
            },
        );
    }

    pub fn remove_server(&self, id: &str) {
        self.lock().servers.remove(id);
    }

    /// Register a volume type; returns its id.
    pub fn add_volume_type(&self, name: &str, multiattach: bool) -> String {
        let mut s = self.lock();
        let id = s.new_id("type");
        s.types.insert(
            id.clone(),
            VolumeType {
                id: id.clone(),
                name: name.to_string(),
                multiattach,
            },
        );
        id
    }

    /// The next call of `op` fails with `err` (queued: several calls inject several failures).
    pub fn fail_next(&self, op: Op, err: CloudError) {
        self.lock().faults.entry(op).or_default().push_back(err);
    }

    /// The next volume created settles in `error` with this reason instead of `available`.
    pub fn fail_next_volume_creation(&self, reason: &str) {
        self.lock()
            .failing_volume_creations
            .push_back(reason.to_string());
    }

    /// The next snapshot created settles in `error`.
    pub fn fail_next_snapshot_creation(&self) {
        self.lock().failing_snapshot_creations += 1;
    }

    /// The next backup created settles in `error`.
    pub fn fail_next_backup_creation(&self) {
        self.lock().failing_backup_creations += 1;
    }

    /// Put a volume into `status` at once (e.g. `error`, `reserved`), dropping any transition.
    pub fn set_volume_status(&self, id: &str, status: VolumeStatus) {
        let mut s = self.lock();
        if let Some(v) = s.volumes.get_mut(id) {
            v.volume.status = status;
            v.pending = None;
        }
    }

    /// Forget a volume's `backup_id`, as clouds that do not report it show the volume.
    pub fn clear_backup_id(&self, id: &str) {
        if let Some(v) = self.lock().volumes.get_mut(id) {
            v.volume.backup_id = None;
        }
    }

    /// Put a backup into `status` at once, dropping any transition.
    pub fn set_backup_status(&self, id: &str, status: CopyStatus) {
        let mut s = self.lock();
        if let Some(b) = s.backups.get_mut(id) {
            b.copy.status = status;
            b.pending = None;
        }
    }

    /// Make a backup look older (its `created_at` moves back by `by`).
    pub fn backdate_backup(&self, id: &str, by: Duration) {
        let mut s = self.lock();
        if let Some(b) = s.backups.get_mut(id) {
            b.copy.created_at = b.copy.created_at.and_then(|t| t.checked_sub(by));
        }
    }

    /// Project quota on the total GiB of volumes; `None` = unlimited.
    pub fn set_quota_gib(&self, quota: Option<u64>) {
        self.lock().quota_gib = quota;
    }

    /// Capacity reported for one (AZ, type) combination; others use the quota headroom.
    pub fn set_capacity(&self, az: Option<&str>, volume_type: Option<&str>, cap: Capacity) {
        self.lock().capacity.insert(
            (az.map(str::to_string), volume_type.map(str::to_string)),
            cap,
        );
    }

    pub fn set_backups_supported(&self, yes: bool) {
        self.lock().backups_supported = yes;
    }

    /// Retype needs a migration: with policy `never` Cinder leaves the type unchanged.
    pub fn set_retype_needs_migration(&self, yes: bool) {
        self.lock().retype_needs_migration = yes;
    }

    /// The AZ new volumes get when the request names none.
    pub fn set_default_az(&self, az: &str) {
        self.lock().default_az = az.to_string();
    }

    /// Availability zones that exist (what `availability_zones` lists); creating in another is
    /// rejected (400).
    pub fn set_zones(&self, zones: &[&str]) {
        self.lock().zones = zones.iter().map(|z| z.to_string()).collect();
    }

    // ---- group snapshots ------------------------------------------------------------

    /// Register a group type; `consistent`: `consistent_group_snapshot_enabled`.
    pub fn add_group_type(&self, name: &str, consistent: bool) {
        self.lock()
            .groups
            .types
            .insert(name.to_string(), consistent);
    }

    /// The group type used when a request names none.
    pub fn set_default_group_type(&self, name: Option<&str>) {
        self.lock().groups.default_type = name.map(str::to_string);
    }

    /// The next group snapshot settles in `error` (its members too).
    pub fn fail_next_group_snapshot_creation(&self) {
        self.lock().groups.failing_creations += 1;
    }

    /// Put a volume into group `group_id` (one this driver did not make, unless it has the
    /// helper prefix).
    pub fn put_in_group(&self, volume_id: &str, group_id: &str) {
        if let Some(v) = self.lock().volumes.get_mut(volume_id) {
            v.volume.group_id = Some(group_id.to_string());
        }
    }

    pub fn group_snapshots(&self) -> Vec<GroupSnapshot> {
        let s = self.lock();
        let mut all: Vec<_> = s.groups.snapshots.values().collect();
        all.sort_by_key(|g| g.seq);
        all.into_iter().map(|g| s.peek_group_snapshot(g)).collect()
    }

    /// The helper groups still holding volumes: group id → its volumes.
    pub fn helper_groups(&self) -> BTreeMap<String, Vec<String>> {
        let s = self.lock();
        let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for v in s.volumes.values() {
            if let Some(g) = &v.volume.group_id {
                out.entry(g.clone()).or_default().push(v.volume.id.clone());
            }
        }
        out
    }

    // ---- inspection (no observation, not counted) ---------------------------------------

    pub fn calls(&self, op: Op) -> u64 {
        self.lock().calls.get(&op).copied().unwrap_or(0)
    }

    pub fn all_calls(&self) -> BTreeMap<Op, u64> {
        self.lock().calls.clone()
    }

    pub fn total_calls(&self) -> u64 {
        self.lock().calls.values().sum()
    }

    pub fn reset_calls(&self) {
        self.lock().calls.clear();
    }

    pub fn volume(&self, id: &str) -> Option<Volume> {
        self.lock().volumes.get(id).map(|v| v.volume.clone())
    }

    /// The scheduler hints volume `id` was created with (empty when it was not).
    pub fn hints(&self, id: &str) -> crate::cloud::SchedulerHints {
        self.lock().hints.get(id).cloned().unwrap_or_default()
    }

    pub fn volumes(&self) -> Vec<Volume> {
        self.lock().sorted_volumes().into_iter().cloned().collect()
    }

    pub fn snapshot(&self, id: &str) -> Option<VolumeCopy> {
        self.lock().snapshots.get(id).map(|s| s.copy.clone())
    }

    pub fn snapshots(&self) -> Vec<VolumeCopy> {
        self.copies(CopyKind::Snapshot)
    }

    pub fn backup(&self, id: &str) -> Option<VolumeCopy> {
        self.lock().backups.get(id).map(|b| b.copy.clone())
    }

    pub fn backups(&self) -> Vec<VolumeCopy> {
        self.copies(CopyKind::Backup)
    }

    fn copies(&self, kind: CopyKind) -> Vec<VolumeCopy> {
        self.lock()
            .sorted_copies(kind)
            .into_iter()
            .cloned()
            .collect()
    }

    /// Settle every pending transition at once (as if Cinder caught up).
    pub fn settle_all(&self) {
        self.lock().settle_all();
    }
}
