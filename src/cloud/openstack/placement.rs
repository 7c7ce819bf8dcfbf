//! Where volumes can go, as Cinder says: volume types by name or id (with the `multiattach`
//! extra spec, cached briefly), the availability zones (`GET os-availability-zone`), and the
//! capacity left from the project's quota headroom: `gigabytes` and, for a volume type,
//! `gigabytes_<type>` where that is limited; the smaller headroom wins, unlimited (-1) on
//! both means no limit.

use async_trait::async_trait;

use super::api::Request;
use super::dto::{AvailabilityZoneList, QuotaSetEnvelope, VolumeTypeEnvelope, VolumeTypeList};
use super::OpenStack;
use crate::cloud::{Capacity, CloudError, CloudResult, Op, Placement, Resource, VolumeType, GIB};

#[async_trait]
impl Placement for OpenStack {
    /// Types change rarely and a storm of CreateVolume calls asks for the same one, so
    /// answers are cached briefly.
    async fn get_volume_type(&self, name_or_id: &str) -> CloudResult<VolumeType> {
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

    /// The controller caches the answer, so this is called rarely.
    async fn availability_zones(&self) -> CloudResult<Vec<String>> {
        let op = Op::AvailabilityZoneList;
        let ans = self
            .api
            .cinder(Request::get(op, "os-availability-zone"))
            .await
            .map_err(|e| e.into_cloud(Resource::AvailabilityZone, "(list)"))?;
        let list: AvailabilityZoneList = ans
            .json(op)
            .map_err(|e| e.into_cloud(Resource::AvailabilityZone, "(list)"))?;
        Ok(zone_names(list))
    }

    /// Cinder quotas are per project, not per availability zone, so the AZ does not narrow
    /// the answer.
    async fn capacity(
        &self,
        _availability_zone: Option<&str>,
        volume_type: Option<&str>,
    ) -> CloudResult<Capacity> {
        let project = self.api.project_id().await?;
        // Quota keys use the type's name; callers may hold its id.
        let type_name = match volume_type {
            Some(t) => Some(self.get_volume_type(t).await?.name),
            None => None,
        };
        let ans = self
            .api
            .cinder(
                Request::get(Op::QuotaGet, format!("os-quota-sets/{project}"))
                    .query("usage", "true"),
            )
            .await
            .map_err(|e| e.into_cloud(Resource::Volume, &format!("quota of project {project}")))?;
        let set: QuotaSetEnvelope = ans
            .json(Op::QuotaGet)
            .map_err(|e| e.into_cloud(Resource::Volume, &project))?;
        Ok(capacity_from(&set, type_name.as_deref()))
    }
}

/// The distinct zone names, sorted (Cinder lists a zone once per answer, but a cloud that
/// repeats one must not make it look ambiguous).
fn zone_names(list: AvailabilityZoneList) -> Vec<String> {
    let mut names: Vec<String> = list.zones.into_iter().map(|z| z.name).collect();
    names.sort();
    names.dedup();
    names
}

fn capacity_from(set: &QuotaSetEnvelope, type_name: Option<&str>) -> Capacity {
    let total = set.usage("gigabytes").and_then(|u| u.headroom());
    let per_type = type_name
        .and_then(|t| set.usage(&format!("gigabytes_{t}")))
        .and_then(|u| u.headroom());
    let gib = match (total, per_type) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    let max_volume = set
        .usage("per_volume_gigabytes")
        .filter(|u| u.limit >= 0)
        .map(|u| u.limit as u64 * GIB);
    Capacity {
        available_bytes: gib.map(|g| g * GIB),
        maximum_volume_bytes: max_volume,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(json: serde_json::Value) -> QuotaSetEnvelope {
        serde_json::from_value(json).unwrap()
    }

    /// From the Block Storage API reference (quotas-show-usage-response.json).
    fn reference() -> QuotaSetEnvelope {
        set(serde_json::json!({"quota_set": {
            "id": "a7090a26bc554d93aa845a4d41808251",
            "volumes": {"reserved": 0, "allocated": 0, "limit": 10, "in_use": 0},
            "volumes_lvmdriver-1": {"reserved": 0, "allocated": 0, "limit": -1, "in_use": 0},
            "snapshots": {"reserved": 0, "allocated": 0, "limit": 10, "in_use": 0},
            "backups": {"reserved": 0, "allocated": 0, "limit": 10, "in_use": 0},
            "groups": {"reserved": 0, "allocated": 0, "limit": 10, "in_use": 0},
            "per_volume_gigabytes": {"reserved": 0, "allocated": 0, "limit": -1, "in_use": 0},
            "gigabytes": {"reserved": 0, "allocated": 0, "limit": 1000, "in_use": 0},
            "gigabytes_lvmdriver-1": {"reserved": 0, "allocated": 0, "limit": 1000, "in_use": 0},
            "backup_gigabytes": {"reserved": 0, "allocated": 0, "limit": 1000, "in_use": 0}
        }}))
    }

    #[test]
    fn headroom_of_the_project_and_the_type() {
        let c = capacity_from(&reference(), None);
        assert_eq!(c.available_bytes, Some(1000 * GIB));
        assert_eq!(c.maximum_volume_bytes, None);
        let c = capacity_from(&reference(), Some("lvmdriver-1"));
        assert_eq!(c.available_bytes, Some(1000 * GIB));
    }

    #[test]
    fn smaller_headroom_wins_and_usage_counts() {
        let s = set(serde_json::json!({"quota_set": {
            "id": "p",
            "gigabytes": {"limit": 100, "in_use": 30, "reserved": 5},
            "gigabytes_fast": {"limit": 50, "in_use": 40, "reserved": 0},
            "gigabytes_slow": {"limit": -1, "in_use": 70, "reserved": 0},
            "per_volume_gigabytes": {"limit": 20, "in_use": 0, "reserved": 0}
        }}));
        assert_eq!(capacity_from(&s, None).available_bytes, Some(65 * GIB));
        assert_eq!(
            capacity_from(&s, Some("fast")).available_bytes,
            Some(10 * GIB)
        );
        assert_eq!(
            capacity_from(&s, Some("slow")).available_bytes,
            Some(65 * GIB)
        );
        assert_eq!(
            capacity_from(&s, Some("unknown")).available_bytes,
            Some(65 * GIB)
        );
        assert_eq!(capacity_from(&s, None).maximum_volume_bytes, Some(20 * GIB));
    }

    #[test]
    fn unlimited_is_none_and_overuse_is_zero() {
        let s = set(serde_json::json!({"quota_set": {
            "id": "p", "gigabytes": {"limit": -1, "in_use": 5, "reserved": 0}
        }}));
        assert_eq!(capacity_from(&s, None).available_bytes, None);
        let s = set(serde_json::json!({"quota_set": {
            "id": "p", "gigabytes": {"limit": 10, "in_use": 12, "reserved": 0}
        }}));
        assert_eq!(capacity_from(&s, None).available_bytes, Some(0));
    }

    #[test]
    fn names_from_the_reference_answer() {
        // Block Storage API reference, availability-zone-list-response.json, with a second
        // zone that is down and one listed twice.
        let list: AvailabilityZoneList = serde_json::from_str(
            r#"{"availabilityZoneInfo": [
                {"zoneState": {"available": true}, "zoneName": "nova"},
                {"zoneState": {"available": false}, "zoneName": "dc1:rack 2"},
                {"zoneState": {"available": true}, "zoneName": "nova"}
            ]}"#,
        )
        .unwrap();
        assert_eq!(zone_names(list), vec!["dc1:rack 2", "nova"]);
    }

    #[tokio::test]
    async fn one_cinder_request_counted_under_its_own_label() {
        use std::sync::Arc;

        use crate::cloud::openstack::testserver::Fake;
        use crate::cloud::openstack::ApiMetrics;

        let fake = Fake::start().await;
        let m = Arc::new(ApiMetrics::new());
        let os = OpenStack::new("", &fake.options(), m.clone())
            .await
            .unwrap();
        assert_eq!(
            os.availability_zones().await.unwrap(),
            vec!["nova", "zone 1"]
        );
        assert_eq!(fake.count("GET /cinder/v3/os-availability-zone"), 1);
        assert_eq!(m.snapshot().get(Op::AvailabilityZoneList).requests, 1);

        fake.fail_next(
            "GET /cinder/v3/os-availability-zone",
            503,
            serde_json::json!({"error": "down"}),
        );
        assert!(matches!(
            os.availability_zones().await,
            Err(crate::cloud::CloudError::Unavailable { .. })
        ));
    }
}
