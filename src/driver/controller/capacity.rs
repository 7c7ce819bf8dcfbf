//! GetCapacity from the port's `capacity` (quota headroom on OpenStack, free disk locally),
//! per AZ (from `accessible_topology`) and per volume type (from `parameters`).

use super::capabilities::{unsupported_capability, wants_multi_node};
use super::{CapacityInfo, Controller, GetCapacity};
use crate::cloud::{Cloud, GIB};
use crate::driver::types::topology_value;
use crate::driver::{Refusal, Result};

/// Cinder's smallest volume: the `minimum_volume_size` we report.
pub const MINIMUM_VOLUME_BYTES: u64 = GIB;

impl Controller {
    /// GetCapacity carries no secrets, so it answers for the default cloud (or the only one).
    fn capacity_cloud(&self) -> Result<&Cloud> {
        if let Some(c) = self.clouds.get("") {
            return Ok(c);
        }
        let mut all = self.clouds.iter();
        match (all.next(), all.next()) {
            (Some(only), None) => Ok(only),
            _ => Err(Refusal::NoCapacityCloud.into()),
        }
    }

    pub async fn get_capacity(&self, req: GetCapacity) -> Result<CapacityInfo> {
        let cloud = self.capacity_cloud()?;
        let none = CapacityInfo {
            available_bytes: 0,
            maximum_volume_bytes: None,
            minimum_volume_bytes: Some(MINIMUM_VOLUME_BYTES),
        };
        let volume_type = req.params.volume_type.as_deref();
        if !req.capabilities.is_empty() {
            let multiattach = match (wants_multi_node(&req.capabilities), volume_type) {
                (true, Some(t)) => self.resolve_type(cloud, t).await?.multiattach,
                _ => false,
            };
            // CSI: capacity for volumes that satisfy ALL capabilities; none can → 0.
            if req
                .capabilities
                .iter()
                .any(|c| unsupported_capability(c, multiattach).is_some())
            {
                return Ok(none);
            }
        }
        // Topology zones are Cinder AZs in label form, unless ignore-volume-az says they are
        // not AZs at all.
        let zone = req
            .zone
            .as_deref()
            .filter(|_| self.opts.with_topology && !self.opts.block_storage.ignore_volume_az);
        let az = match (req.params.availability.as_deref(), zone) {
            // `availability` pins the AZ; volumes of this class never land in another zone.
            (Some(a), Some(z)) if topology_value(a) != z => return Ok(none),
            (Some(a), _) => Some(a.to_string()),
            (None, Some(z)) => Some(self.cinder_zone(cloud, z).await?),
            (None, None) => None,
        };
        let cap = cloud.placement.capacity(az.as_deref(), volume_type).await?;
        Ok(CapacityInfo {
            available_bytes: cap.available_bytes.unwrap_or(i64::MAX as u64),
            maximum_volume_bytes: cap.maximum_volume_bytes,
            minimum_volume_bytes: Some(MINIMUM_VOLUME_BYTES),
        })
    }
}
