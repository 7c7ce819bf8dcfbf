//! Capacity from the project's Cinder quota headroom: `gigabytes` and, for a volume type,
//! `gigabytes_<type>` where that is limited; the smaller headroom wins, unlimited (-1) on both
//! means no limit. Cinder quotas are per project, not per availability zone, so the AZ does
//! not narrow the answer.

use super::api::Request;
use super::dto::QuotaSetEnvelope;
use super::OpenStack;
use crate::cloud::{Capacity, CloudResult, Op, Resource, GIB};

impl OpenStack {
    pub(super) async fn capacity_impl(
        &self,
        _availability_zone: Option<&str>,
        volume_type: Option<&str>,
    ) -> CloudResult<Capacity> {
        let project = self.api.project_id().await?;
        // Quota keys use the type's name; callers may hold its id.
        let type_name = match volume_type {
            Some(t) => Some(self.get_volume_type_impl(t).await?.name),
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
}
