//! Cinder's availability zones (`GET os-availability-zone`, Block Storage API v3). The
//! controller caches the answer, so this is called rarely.

use super::api::Request;
use super::dto::AvailabilityZoneList;
use super::OpenStack;
use crate::cloud::{CloudResult, Op, Resource};

impl OpenStack {
    pub(super) async fn availability_zones_impl(&self) -> CloudResult<Vec<String>> {
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
}

/// The distinct zone names, sorted (Cinder lists a zone once per answer, but a cloud that
/// repeats one must not make it look ambiguous).
fn zone_names(list: AvailabilityZoneList) -> Vec<String> {
    let mut names: Vec<String> = list.zones.into_iter().map(|z| z.name).collect();
    names.sort();
    names.dedup();
    names
}

#[cfg(test)]
mod tests {
    use super::*;

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
        use crate::cloud::BlockStorage;

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
