//! The shared volume status watcher: every `wait_volume` and `get_volume` of a cloud goes
//! through it, and one background round refreshes all waited-on and read volumes at once
//! instead of each RPC polling or fetching its own.
//!
//! How a round refreshes N volumes with one request: Cinder's non-admin volume filters
//! (`resource_filters.json`: name, status, metadata, bootable, migration_status,
//! availability_zone, group_id, size, created_at, updated_at) cannot select by id, but since
//! microversion 3.60 they compare times: `updated_at=gte:<t>`, `created_at=gte:<t>`.
//! `updated_at` never goes backwards, so a list filtered on the oldest `updated_at` seen among
//! the waited-on volumes returns every one of them that still exists — changed or not — plus
//! only the project's other recently changed volumes. A volume never updated since its
//! creation has a null `updated_at` that no such filter matches; those are found by
//! `created_at=gte:<oldest creation among them>` instead (new volumes: a short list). So a
//! round is one list (two when both kinds wait and the first did not cover all). Times come
//! from Cinder's own answers (no clock skew), floored to the second minus one (the database may
//! round). A volume of our own project missing from a list that covered it is gone (lists show
//! the project's volumes, all pages); any other missing volume is checked with a GET. One volume,
//! an unknown time, or a cloud below 3.60 (or refusing the filters) fall back to GETs, one per
//! volume per round however many RPCs wait on it.
//!
//! `waiters.rs` is the watcher's face (reads, waits, and the registration that keeps a volume
//! watched); `pace.rs` says when rounds come, `state.rs` what they share, `round.rs` what one
//! does.

mod pace;
mod round;
mod state;
mod waiters;

pub use pace::PACE;
pub use waiters::Watcher;

#[cfg(test)]
mod tests;
