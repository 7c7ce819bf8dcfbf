//! What a group snapshot on Cinder is checked for before anything is made: Cinder's group
//! API (3.14), a group type whose snapshots are consistent, and volumes that can be grouped.
//!
//! The consistency check is Cinder's own (`volume_utils.is_group_a_cg_snapshot_type`: the spec
//! `consistent_group_snapshot_enabled` is exactly `<is> True`); without it Cinder's generic
//! path snapshots the members one by one, which CSI forbids calling a group snapshot.
//! Non-admins do not see a group type's specs (policy `group:access_group_types_specs`): then
//! only the operator's `[BlockStorage] group-type` is trusted.

use super::api::Request;
use super::dto::{GroupTypeDto, GroupTypeEnvelope, GroupTypeList};
use super::ids::{is_uuid, segment};
use super::microversion::CINDER_GROUP_SNAPSHOTS;
use super::OpenStack;
use crate::cloud::{
    CloudError, CloudResult, GroupRefusal, Op, Resource, Volume, VolumeStatus, Volumes,
};

fn refused(r: GroupRefusal) -> CloudError {
    CloudError::GroupRefused(r)
}

impl OpenStack {
    pub(super) async fn require_groups(&self) -> CloudResult<()> {
        self.api
            .cinder_version()
            .await?
            .require(CINDER_GROUP_SNAPSHOTS, "group snapshots")
            .map_err(CloudError::Unsupported)
    }

    /// The group type named (or Cinder's default), if its snapshots are consistent.
    pub(super) async fn consistent_group_type(
        &self,
        name: Option<&str>,
    ) -> CloudResult<GroupTypeDto> {
        let t = match name {
            None => match self
                .api
                .cinder(Request::get(Op::GroupTypeGet, "group_types/default"))
                .await
            {
                Ok(a) => {
                    a.json::<GroupTypeEnvelope>(Op::GroupTypeGet)
                        .map_err(|e| e.into_cloud(Resource::GroupType, "default"))?
                        .group_type
                }
                Err(e) if e.status() == Some(404) => {
                    return Err(refused(GroupRefusal::NoGroupType))
                }
                Err(e) => return Err(e.into_cloud(Resource::GroupType, "default")),
            },
            Some(id) if is_uuid(id) => {
                self.api
                    .cinder(Request::get(
                        Op::GroupTypeGet,
                        format!("group_types/{}", segment(Resource::GroupType, id)?),
                    ))
                    .await
                    .map_err(|e| e.into_cloud(Resource::GroupType, id))?
                    .json::<GroupTypeEnvelope>(Op::GroupTypeGet)
                    .map_err(|e| e.into_cloud(Resource::GroupType, id))?
                    .group_type
            }
            Some(name) => self
                .api
                .cinder(Request::get(Op::GroupTypeGet, "group_types"))
                .await
                .map_err(|e| e.into_cloud(Resource::GroupType, name))?
                .json::<GroupTypeList>(Op::GroupTypeGet)
                .map_err(|e| e.into_cloud(Resource::GroupType, name))?
                .group_types
                .into_iter()
                .find(|t| t.name == name)
                .ok_or_else(|| CloudError::not_found(Resource::GroupType, name))?,
        };
        let vouched = self
            .group_type
            .as_deref()
            .is_some_and(|g| g == t.name || g == t.id);
        match t.consistent() {
            Some(true) => Ok(t),
            Some(false) => Err(refused(GroupRefusal::NotConsistent { group_type: t.name })),
            None if vouched => Ok(t),
            None => Err(refused(GroupRefusal::Unverifiable { group_type: t.name })),
        }
    }

    /// The volumes, checked for a group: available or in use, with a volume type, in one AZ.
    pub(super) async fn group_volumes(&self, ids: &[String]) -> CloudResult<Vec<Volume>> {
        let mut out = Vec::new();
        for id in ids {
            let v = self.get_volume(id).await?;
            if !matches!(v.status, VolumeStatus::Available | VolumeStatus::InUse) {
                return Err(CloudError::Conflict {
                    message: format!(
                        "volume {id} must be available or in-use to join a group snapshot, it is {}",
                        v.status
                    ),
                    request_id: Default::default(),
                });
            }
            if v.volume_type.is_none() {
                return Err(refused(GroupRefusal::NoVolumeType { volume_id: v.id }));
            }
            out.push(v);
        }
        let mut zones: Vec<(String, Vec<String>)> = Vec::new();
        for v in &out {
            match zones.iter_mut().find(|(z, _)| *z == v.availability_zone) {
                Some((_, vols)) => vols.push(v.id.clone()),
                None => zones.push((v.availability_zone.clone(), vec![v.id.clone()])),
            }
        }
        if zones.len() > 1 {
            return Err(refused(GroupRefusal::Zones { zones }));
        }
        Ok(out)
    }
}
