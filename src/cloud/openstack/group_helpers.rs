//! What a Cinder group snapshot needs first: a consistent group type, and a group of that type
//! holding exactly the volumes (a group snapshot snapshots its group's volumes).
//!
//! Cinder's rules shape it: a volume is in one group at most; a group holds volumes of its
//! volume types on its backend; a volume in a group cannot be deleted or retyped; a group with
//! group snapshots cannot be deleted. So the adapter keeps one *helper group* per set of
//! volumes, named `csi-group-<uuid v5 of the sorted volume ids and their types>`: repeated
//! group snapshots of the same volumes share it (one group counts against `quota_groups`), a
//! lost response or a restart finds it again by name, and it is deleted once no group snapshot
//! uses it. A volume in another helper group of ours moves; one in a group we did not make is
//! refused.

use http::Method;
use serde_json::json;
use tokio::time::Instant;

use super::api::Request;
use super::dto::{GroupCreated, GroupDto, GroupEnvelope, GroupList, GroupTypeDto};

use super::ids::segment;
use super::watcher::PACE;
use super::OpenStack;
use crate::cloud::poll::{poll, Look};
use crate::cloud::{CloudError, CloudResult, GroupRefusal, Op, Resource, Volume, Volumes};

/// Prefix of the helper groups (never of a group a user made).
pub const HELPER_PREFIX: &str = "csi-group-";
/// A helper group whose last group snapshot is being deleted is renamed so: no create takes
/// it any more, and once it has no group snapshot it can go at any time.
pub const RETIRING_PREFIX: &str = "csi-group-retiring-";
/// A helper group no group snapshot uses, older than this, was left behind (by a failure
/// between a group snapshot's deletion and its group's): younger ones may be a create's that
/// has not taken its group snapshot yet.
pub const LEFT_BEHIND_AFTER: std::time::Duration = std::time::Duration::from_secs(600);
/// Namespace of the helper groups' name UUIDs.
const HELPER_NAMESPACE: uuid::Uuid =
    uuid::Uuid::from_u128(0x6d1f_3c2a_9e4b_4a7c_8f60_c51d_2b7e_a913);

/// The helper group of `volumes`: one per set of volumes (and their types).
pub fn helper_name(volumes: &[Volume]) -> String {
    let mut keys: Vec<String> = volumes
        .iter()
        .map(|v| format!("{}:{}", v.id, v.volume_type.as_deref().unwrap_or_default()))
        .collect();
    keys.sort();
    let id = uuid::Uuid::new_v5(&HELPER_NAMESPACE, keys.join(",").as_bytes());
    format!("{HELPER_PREFIX}{id}")
}

pub(super) fn is_helper(g: &GroupDto) -> bool {
    g.name.starts_with(HELPER_PREFIX)
}

fn refused(r: GroupRefusal) -> CloudError {
    CloudError::GroupRefused(r)
}

impl OpenStack {
    pub(super) async fn get_group(&self, id: &str) -> CloudResult<GroupDto> {
        let path = format!("groups/{}", segment(Resource::Group, id)?);
        Ok(self
            .api
            .cinder(Request::get(Op::GroupGet, path))
            .await
            .map_err(|e| e.into_cloud(Resource::Group, id))?
            .json::<GroupEnvelope>(Op::GroupGet)
            .map_err(|e| e.into_cloud(Resource::Group, id))?
            .group)
    }

    async fn groups_named(&self, name: &str) -> CloudResult<Vec<GroupDto>> {
        Ok(self
            .api
            .cinder(Request::get(Op::GroupList, "groups/detail").query("name", name))
            .await
            .map_err(|e| e.into_cloud(Resource::Group, name))?
            .json::<GroupList>(Op::GroupList)
            .map_err(|e| e.into_cloud(Resource::Group, name))?
            .groups
            .into_iter()
            .filter(|g| g.name == name)
            .collect())
    }

    /// Wait until group `id` is `available` (created, or done adding or removing volumes).
    pub(super) async fn group_available(
        &self,
        id: &str,
        deadline: Instant,
    ) -> CloudResult<GroupDto> {
        poll(
            Resource::Group,
            id,
            "available".into(),
            deadline,
            PACE,
            || async move {
                let g = self.get_group(id).await?;
                match g.status.as_str() {
                    "available" => Ok(Look::Done(g)),
                    s if s.starts_with("error") => Err(CloudError::ErrorState {
                        resource: Resource::Group,
                        id: id.to_string(),
                        status: g.status.clone(),
                        reason: None,
                    }),
                    s => Ok(Look::Pending(s.to_string())),
                }
            },
        )
        .await
    }

    /// The helper group of `volumes`, of `group_type`, holding all of them: found by name or
    /// created, members moved in from other helper groups of ours.
    pub(super) async fn helper_group(
        &self,
        group_type: &GroupTypeDto,
        volumes: &[Volume],
        deadline: Instant,
    ) -> CloudResult<GroupDto> {
        let name = helper_name(volumes);
        let mut group = None;
        for g in self.groups_named(&name).await? {
            if g.status.starts_with("error") {
                // Never got a volume (it failed on creation): out of the way.
                self.delete_group(&g.id, deadline).await?;
            } else if group.is_none() {
                group = Some(g);
            }
        }
        for v in volumes {
            let Some(gid) = &v.group_id else {
                continue;
            };
            if group.as_ref().is_some_and(|g| g.id == *gid) {
                continue;
            }
            let other = match self.get_group(gid).await {
                Ok(g) => g,
                Err(CloudError::NotFound { .. }) => continue,
                Err(e) => return Err(e),
            };
            if !is_helper(&other) {
                return Err(refused(GroupRefusal::ForeignGroup {
                    volume_id: v.id.clone(),
                    group_id: gid.clone(),
                }));
            }
            tracing::info!(volume = %v.id, from = %other.id, "moving a volume out of another \
                helper group (a volume is in one group at most)");
            self.remove_from_group(&other.id, std::slice::from_ref(&v.id), deadline)
                .await?;
            self.retire_helper_group(&other.id, deadline).await?;
        }
        let group = match group {
            Some(g) if g.status == "available" => g,
            Some(g) => self.group_available(&g.id, deadline).await?,
            None => {
                self.create_group(&name, group_type, volumes, deadline)
                    .await?
            }
        };
        // Read again once the group is settled: an add whose answer was lost may have put
        // them in already (Cinder refuses an add of nothing but members).
        let mut missing = Vec::new();
        for v in volumes {
            if v.group_id.as_deref() == Some(group.id.as_str()) {
                continue;
            }
            let now = self.get_volume(&v.id).await?;
            if now.group_id.as_deref() != Some(group.id.as_str()) {
                missing.push(v.id.clone());
            }
        }
        if missing.is_empty() {
            return Ok(group);
        }
        let added = self.update_group(&group.id, "add_volumes", &missing).await;
        let group = self.group_available(&group.id, deadline).await?;
        for id in &missing {
            let v = self.get_volume(id).await?;
            if v.group_id.as_deref() == Some(group.id.as_str()) {
                continue;
            }
            return Err(match added {
                Err(
                    CloudError::BadRequest { message, .. } | CloudError::Conflict { message, .. },
                ) => refused(GroupRefusal::NotGroupable { message }),
                Err(other) => other,
                Ok(()) => refused(GroupRefusal::NotGroupable {
                    message: format!(
                        "volume {id} is not in group {} after add_volumes (its group: {:?})",
                        group.id, v.group_id
                    ),
                }),
            });
        }
        Ok(group)
    }

    async fn create_group(
        &self,
        name: &str,
        group_type: &GroupTypeDto,
        volumes: &[Volume],
        deadline: Instant,
    ) -> CloudResult<GroupDto> {
        let mut types: Vec<String> = volumes
            .iter()
            .filter_map(|v| v.volume_type.clone())
            .collect();
        types.sort();
        types.dedup();
        let ids: Vec<&str> = volumes.iter().map(|v| v.id.as_str()).collect();
        let body = json!({"group": {
            "name": name,
            "description": format!(
                "Created by OpenStack Cinder CSI driver for group snapshots of volumes {}",
                ids.join(", ")
            ),
            "group_type": group_type.id,
            "volume_types": types,
            "availability_zone": volumes.first().map(|v| v.availability_zone.clone()),
        }});
        let created: GroupCreated = self
            .api
            .cinder(Request::new(Op::GroupCreate, Method::POST, "groups").json(body))
            .await
            .map_err(|e| e.into_cloud(Resource::GroupType, &group_type.name))?
            .json(Op::GroupCreate)
            .map_err(|e| e.into_cloud(Resource::Group, name))?;
        match self.group_available(&created.group.id, deadline).await {
            Ok(g) => Ok(g),
            Err(CloudError::ErrorState { .. }) => {
                // The scheduler found no backend for the group type and volume types.
                let reason = self.error_reason(&created.group.id).await;
                self.delete_group(&created.group.id, deadline).await?;
                Err(refused(GroupRefusal::NoBackend {
                    group_type: group_type.name.clone(),
                    volume_types: types,
                    reason,
                }))
            }
            Err(e) => Err(e),
        }
    }

    /// `add_volumes` / `remove_volumes` of `ids` (comma-separated, as Cinder takes them).
    pub(super) async fn update_group(
        &self,
        id: &str,
        what: &str,
        ids: &[String],
    ) -> CloudResult<()> {
        let path = format!("groups/{}", segment(Resource::Group, id)?);
        self.api
            .cinder(
                Request::new(Op::GroupUpdate, Method::PUT, path)
                    .json(json!({"group": {what: ids.join(",")}})),
            )
            .await
            .map(|_| ())
            .map_err(|e| e.into_cloud(Resource::Group, id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vol(id: &str, t: &str) -> Volume {
        Volume {
            volume_type: Some(t.into()),
            ..Volume::sample(id)
        }
    }

    #[test]
    fn one_helper_group_per_set_of_volumes_and_types() {
        let (a, b) = (vol("a", "x"), vol("b", "x"));
        let name = helper_name(&[a.clone(), b.clone()]);
        assert!(name.starts_with(HELPER_PREFIX) && name.len() == HELPER_PREFIX.len() + 36);
        assert_eq!(
            helper_name(&[b.clone(), a.clone()]),
            name,
            "a set: order does not count"
        );
        assert_ne!(helper_name(std::slice::from_ref(&a)), name);
        assert_ne!(
            helper_name(&[a, vol("b", "y")]),
            name,
            "a retyped member: another group"
        );
    }
}
