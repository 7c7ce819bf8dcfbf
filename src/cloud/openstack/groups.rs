//! `GroupSnapshots` on this backend: not there yet (the GroupController service is not
//! served until it is).

use async_trait::async_trait;
use tokio::time::Instant;

use super::OpenStack;
use crate::cloud::{
    CloudError, CloudResult, CopyWait, GroupSnapshot, GroupSnapshots, NewGroupSnapshot, Volume,
};

fn unsupported() -> CloudError {
    CloudError::Unsupported("group snapshots are not implemented yet on this backend".into())
}

#[async_trait]
impl GroupSnapshots for OpenStack {
    async fn create_group_snapshot(
        &self,
        _req: &NewGroupSnapshot,
        _deadline: Instant,
    ) -> CloudResult<GroupSnapshot> {
        Err(unsupported())
    }

    async fn get_group_snapshot(&self, _id: &str) -> CloudResult<GroupSnapshot> {
        Err(unsupported())
    }

    async fn group_snapshots_named(&self, _name: &str) -> CloudResult<Vec<GroupSnapshot>> {
        Err(unsupported())
    }

    async fn delete_group_snapshot(&self, _id: &str, _deadline: Instant) -> CloudResult<()> {
        Err(unsupported())
    }

    async fn wait_group_snapshot(
        &self,
        _id: &str,
        _until: &CopyWait,
        _deadline: Instant,
    ) -> CloudResult<GroupSnapshot> {
        Err(unsupported())
    }

    async fn release_volume(&self, _volume: &Volume, _deadline: Instant) -> CloudResult<()> {
        Ok(())
    }
}
