//! `Placement` and `Health` on the local backend: its two volume types, the configured zones,
//! the free space of DIR's filesystem; the state directory still there.

use async_trait::async_trait;

use super::backend::{io_error, Inner, LocalCloud};
use super::records;
use crate::cloud::{Capacity, CloudError, CloudResult, Health, Placement, Resource, VolumeType};

impl Inner {
    pub(super) fn capacity(
        &self,
        az: Option<&str>,
        volume_type: Option<&str>,
    ) -> CloudResult<Capacity> {
        if let Some(t) = volume_type {
            if records::find_volume_type(t).is_none() {
                return Err(CloudError::not_found(Resource::VolumeType, t));
            }
        }
        if az.is_some_and(|z| !self.zones.iter().any(|c| c == z)) {
            return Ok(Capacity {
                available_bytes: Some(0),
                maximum_volume_bytes: None,
            });
        }
        let (free, total) = self.space()?;
        Ok(Capacity {
            available_bytes: Some(free),
            maximum_volume_bytes: Some(total),
        })
    }
}

#[async_trait]
impl Placement for LocalCloud {
    async fn get_volume_type(&self, name_or_id: &str) -> CloudResult<VolumeType> {
        self.inner()?;
        records::find_volume_type(name_or_id)
            .ok_or_else(|| CloudError::not_found(Resource::VolumeType, name_or_id))
    }

    async fn availability_zones(&self) -> CloudResult<Vec<String>> {
        Ok(self.inner()?.zones.clone())
    }

    async fn capacity(
        &self,
        availability_zone: Option<&str>,
        volume_type: Option<&str>,
    ) -> CloudResult<Capacity> {
        let (az, vt) = (
            availability_zone.map(str::to_string),
            volume_type.map(str::to_string),
        );
        self.blocking(move |inner| inner.capacity(az.as_deref(), vt.as_deref()))
            .await
    }
}

#[async_trait]
impl Health for LocalCloud {
    /// The state directory is still there. A standby checks the one it waits for (what the
    /// owner checks): being second is its role, not a fault (`cinder_csi_cloud_up` stays 1,
    /// /readyz ready).
    async fn check(&self) -> CloudResult<()> {
        let root = self.held.root.clone();
        tokio::fs::metadata(root.join("volumes"))
            .await
            .map(|_| ())
            .map_err(|e| io_error(format_args!("state directory {}", root.display()), e))
    }
}
