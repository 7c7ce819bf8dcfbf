//! `Placement` and `Health` on the fake: types, zones, capacity (per-(AZ, type) answers set by
//! a test, else the quota headroom), and the cloud check.

use async_trait::async_trait;

use super::FakeCloud;
use crate::cloud::{
    Capacity, CloudError, CloudResult, Health, Op, Placement, Resource, VolumeType,
};

#[async_trait]
impl Placement for FakeCloud {
    async fn get_volume_type(&self, name_or_id: &str) -> CloudResult<VolumeType> {
        let t = {
            let mut s = self.lock();
            s.enter(Op::VolumeTypeGet)?;
            s.find_type(name_or_id).cloned()
        };
        t.ok_or_else(|| CloudError::not_found(Resource::VolumeType, name_or_id))
    }

    async fn availability_zones(&self) -> CloudResult<Vec<String>> {
        let mut s = self.lock();
        s.enter(Op::AvailabilityZoneList)?;
        Ok(s.zones.clone())
    }

    async fn capacity(
        &self,
        availability_zone: Option<&str>,
        volume_type: Option<&str>,
    ) -> CloudResult<Capacity> {
        let mut s = self.lock();
        s.enter(Op::QuotaGet)?;
        let az = availability_zone.map(str::to_string);
        let ty = volume_type.map(str::to_string);
        for key in [
            (az.clone(), ty.clone()),
            (az.clone(), None),
            (None, ty.clone()),
            (None, None),
        ] {
            if let Some(c) = s.capacity.get(&key) {
                return Ok(*c);
            }
        }
        Ok(s.default_capacity())
    }
}

#[async_trait]
impl Health for FakeCloud {
    /// Counted as the `volume_list` the OpenStack adapter sends for it.
    async fn check(&self) -> CloudResult<()> {
        self.enter(Op::VolumeList)
    }
}
