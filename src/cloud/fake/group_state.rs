//! The fake's group snapshot state, as data (the rules are in groups.rs): the group types, the
//! group snapshots and their pending transitions.

use std::collections::BTreeMap;
use std::time::SystemTime;

use crate::cloud::CopyStatus;

/// Prefix of the helper groups the fake makes (as the OpenStack adapter names its own).
pub const HELPER_GROUP_PREFIX: &str = "csi-group-";

/// What a group snapshot's pending transition does when it settles.
#[derive(Debug, Clone, Copy)]
pub(super) enum GroupAction {
    Created { error: bool },
    Deleted,
}

#[derive(Debug, Clone)]
pub(super) struct GroupPending {
    pub remaining: u32,
    pub action: GroupAction,
}

#[derive(Debug, Clone)]
pub(super) struct FakeGroupSnapshot {
    pub seq: u64,
    pub id: String,
    pub name: String,
    pub group_id: String,
    pub status: CopyStatus,
    pub created_at: SystemTime,
    pub member_ids: Vec<String>,
    pub pending: Option<GroupPending>,
}

#[derive(Debug, Default)]
pub(super) struct GroupState {
    /// Group type name → consistent snapshots.
    pub types: BTreeMap<String, bool>,
    pub default_type: Option<String>,
    pub snapshots: BTreeMap<String, FakeGroupSnapshot>,
    pub failing_creations: u32,
}
