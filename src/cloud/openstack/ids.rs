//! IDs from CSI requests become URL path segments (`volumes/<id>`, `servers/<id>/…`). Cinder
//! and Nova IDs are always UUIDs, so anything else cannot name an object: NotFound without a
//! request. A `../snapshots/x`, `detail` or `x?cascade=true` can then never reach another
//! resource, a collection or a query; the spec's answer for an unknown ID is what the core
//! makes of NotFound (OK for deletes, NotFound otherwise). Segments are percent-encoded as
//! well, where they are built, so a path never depends on the check alone.

use crate::cloud::{CloudError, CloudResult, Resource};

/// Canonical UUID text (8-4-4-4-12 hex digits, either case), the form Cinder and Nova use.
pub fn is_uuid(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 36
        && b.iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_hexdigit(),
        })
}

/// Percent-encode everything but RFC 3986 unreserved characters.
pub fn encode_segment(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The path segment for the ID of a `resource`; NotFound when it cannot be one.
pub fn segment(resource: Resource, id: &str) -> CloudResult<String> {
    if is_uuid(id) {
        Ok(encode_segment(id))
    } else {
        Err(CloudError::not_found(resource, id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_uuids_become_segments() {
        let id = "cb49b381-9012-40CB-b8ee-80c19a4801b5";
        assert_eq!(segment(Resource::Volume, id).unwrap(), id);
        for bad in [
            "",
            ".",
            "..",
            "detail",
            "../snapshots/cb49b381-9012-40cb-b8ee-80c19a4801b5",
            "cb49b381-9012-40cb-b8ee-80c19a4801b5?cascade=true",
            "cb49b381-9012-40cb-b8ee-80c19a4801b5/action",
            "cb49b381901240cbb8ee80c19a4801b5",
            "urn:uuid:cb49b381-9012-40cb-b8ee-80c19a4801b5",
            "{cb49b381-9012-40cb-b8ee-80c19a4801b5}",
            "cb49b381-9012-40cb-b8ee-80c19a4801bz",
            "cb49b381-9012-40cb-b8ee_80c19a4801b5",
        ] {
            assert_eq!(
                segment(Resource::Snapshot, bad),
                Err(CloudError::not_found(Resource::Snapshot, bad)),
                "{bad:?}"
            );
        }
    }

    /// Through the adapter: such IDs send nothing to Cinder or Nova and answer NotFound,
    /// which the core turns into the spec's answer for an unknown ID.
    #[tokio::test]
    async fn the_adapter_sends_nothing_for_an_impossible_id() {
        use std::sync::Arc;

        use crate::cloud::openstack::testserver::Fake;
        use crate::cloud::openstack::{ApiMetrics, OpenStack};
        use crate::cloud::{Copies, CopyKind, Servers, Volumes};

        let fake = Fake::start().await;
        let os = OpenStack::new("", &fake.options(), Arc::new(ApiMetrics::new()))
            .await
            .unwrap();
        let uuid = "cb49b381-9012-40cb-b8ee-80c19a4801b5";
        let escape = format!("../volumes/{uuid}");
        let cascade = format!("{uuid}?cascade=true");
        let before = (
            fake.count("GET /cinder"),
            fake.count("DELETE"),
            fake.count("POST /cinder"),
        );
        assert!(os
            .delete_copy(CopyKind::Snapshot, &escape)
            .await
            .unwrap_err()
            .is_not_found());
        assert!(os
            .delete_volume(&cascade, false)
            .await
            .unwrap_err()
            .is_not_found());
        assert!(os.get_volume("detail").await.unwrap_err().is_not_found());
        assert!(os
            .get_copy(CopyKind::Backup, "..")
            .await
            .unwrap_err()
            .is_not_found());
        assert!(os
            .extend_volume(&escape, 2, false)
            .await
            .unwrap_err()
            .is_not_found());
        assert!(os
            .get_server("../os-hypervisors")
            .await
            .unwrap_err()
            .is_not_found());
        assert!(os
            .detach_volume(uuid, &escape)
            .await
            .unwrap_err()
            .is_not_found());
        assert_eq!(
            (
                fake.count("GET /cinder"),
                fake.count("DELETE"),
                fake.count("POST /cinder")
            ),
            before,
            "no request reached the cloud"
        );
        assert_eq!(fake.count("GET /nova/v2.1/servers"), 0);
    }

    #[test]
    fn encoding_leaves_nothing_with_meaning_in_a_path() {
        assert_eq!(encode_segment("a-b_c.d~e9"), "a-b_c.d~e9");
        assert_eq!(
            encode_segment("../x?cascade=true#f%/"),
            "..%2Fx%3Fcascade%3Dtrue%23f%25%2F"
        );
    }

    /// A request without query pairs goes out without a `?` (the fake logs the query when the
    /// URL has one, even an empty one).
    #[tokio::test]
    async fn no_empty_query_string() {
        use std::sync::Arc;

        use crate::cloud::openstack::testserver::Fake;
        use crate::cloud::openstack::{ApiMetrics, OpenStack};
        use crate::cloud::Volumes;

        let fake = Fake::start().await;
        let os = OpenStack::new("", &fake.options(), Arc::new(ApiMetrics::new()))
            .await
            .unwrap();
        let id = "cb49b381-9012-40cb-b8ee-80c19a4801b5";
        fake.add_volume(id, "available", vec![]);
        os.get_volume(id).await.unwrap();
        let log = fake.with(|s| s.log.clone());
        assert!(!log.is_empty());
        assert!(log.iter().all(|l| !l.contains('?')), "{log:?}");
    }
}
