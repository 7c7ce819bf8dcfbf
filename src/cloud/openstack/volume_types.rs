//! Volume types by name or id, with the `multiattach` extra spec. Types change rarely and a
//! storm of CreateVolume calls asks for the same one, so answers are cached briefly.

use super::api::Request;
use super::dto::{VolumeTypeEnvelope, VolumeTypeList};
use super::OpenStack;
use crate::cloud::{CloudError, CloudResult, Op, Resource, VolumeType};

impl OpenStack {
    pub(super) async fn get_volume_type_impl(&self, name_or_id: &str) -> CloudResult<VolumeType> {
        if let Some(t) = self.types.get(name_or_id) {
            return Ok(t);
        }
        if super::ids::is_uuid(name_or_id) {
            match self
                .api
                .cinder(Request::get(
                    Op::VolumeTypeGet,
                    format!("types/{name_or_id}"),
                ))
                .await
            {
                Ok(ans) => {
                    let env: VolumeTypeEnvelope = ans
                        .json(Op::VolumeTypeGet)
                        .map_err(|e| e.into_cloud(Resource::VolumeType, name_or_id))?;
                    let t = VolumeType::from(env.volume_type);
                    self.types.put(&t);
                    return Ok(t);
                }
                // A type may be *named* like a UUID: fall through to the name lookup.
                Err(e) if e.status() == Some(404) => {}
                Err(e) => return Err(e.into_cloud(Resource::VolumeType, name_or_id)),
            }
        }
        // Cinder's GET /types/{x} takes ids only; names need the list (public types and the
        // private ones this project may use).
        let ans = self
            .api
            .cinder(Request::get(Op::VolumeTypeList, "types"))
            .await
            .map_err(|e| e.into_cloud(Resource::VolumeType, name_or_id))?;
        let list: VolumeTypeList = ans
            .json(Op::VolumeTypeList)
            .map_err(|e| e.into_cloud(Resource::VolumeType, name_or_id))?;
        let mut found = None;
        for dto in list.volume_types {
            let t = VolumeType::from(dto);
            self.types.put(&t);
            if t.name == name_or_id || t.id == name_or_id {
                found = Some(t);
            }
        }
        found.ok_or_else(|| CloudError::not_found(Resource::VolumeType, name_or_id))
    }
}
