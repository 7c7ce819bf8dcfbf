//! Service catalog of a Keystone token: which URL to use for Cinder and Nova, by service type,
//! region and interface. URLs are used as the catalog gives them (with or without a project
//! id in the path).

use serde::Deserialize;

use super::options::Interface;

/// Service types of Cinder v3, most specific first (os-service-types: `block-storage` and its
/// aliases). `volume` may name an old v1/v2 endpoint; those are skipped.
pub const BLOCK_STORAGE_TYPES: &[&str] = &["block-storage", "volumev3", "block-store", "volume"];
pub const COMPUTE_TYPES: &[&str] = &["compute"];

#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct CatalogService {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub endpoints: Vec<CatalogEndpoint>,
}

#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct CatalogEndpoint {
    pub interface: String,
    #[serde(default)]
    pub region: Option<String>,
    #[serde(default)]
    pub region_id: Option<String>,
    pub url: String,
}

impl CatalogEndpoint {
    fn region(&self) -> Option<&str> {
        self.region_id.as_deref().or(self.region.as_deref())
    }
}

/// The URL of the first service type in `types` that has an endpoint for `interface` (and
/// `region`, when set). Errors say what the catalog offers instead.
pub fn select(
    catalog: &[CatalogService],
    types: &[&str],
    interface: Interface,
    region: Option<&str>,
) -> Result<String, String> {
    for kind in types {
        let mut found: Vec<&CatalogEndpoint> = catalog
            .iter()
            .filter(|s| s.kind == *kind)
            .flat_map(|s| &s.endpoints)
            .filter(|e| e.interface == interface.as_str())
            .filter(|e| region.is_none_or(|r| e.region() == Some(r)))
            .filter(|e| !is_legacy_volume_api(kind, &e.url))
            .collect();
        found.dedup_by(|a, b| a.url == b.url);
        match found.as_slice() {
            [] => continue,
            [one] => return Ok(one.url.trim_end_matches('/').to_string()),
            several => {
                let regions: Vec<&str> = several
                    .iter()
                    .map(|e| e.region().unwrap_or("(none)"))
                    .collect();
                return Err(format!(
                    "the catalog has several {kind} endpoints for interface {} (regions {}): \
                     set region in cloud.conf",
                    interface.as_str(),
                    regions.join(", ")
                ));
            }
        }
    }
    let offered: Vec<String> = catalog
        .iter()
        .filter(|s| types.contains(&s.kind.as_str()))
        .flat_map(|s| {
            s.endpoints.iter().map(move |e| {
                format!(
                    "{} {} in {}",
                    s.kind,
                    e.interface,
                    e.region().unwrap_or("no region")
                )
            })
        })
        .collect();
    Err(format!(
        "the catalog has no {} endpoint with interface {}{} (offered: {}); check region and \
         os-endpoint-type",
        types.join(" / "),
        interface.as_str(),
        region
            .map(|r| format!(" in region {r}"))
            .unwrap_or_default(),
        if offered.is_empty() {
            "none".to_string()
        } else {
            offered.join(", ")
        }
    ))
}

/// A `volume`-typed endpoint of Cinder v1/v2 cannot serve v3 calls.
fn is_legacy_volume_api(kind: &str, url: &str) -> bool {
    kind == "volume" && url.split('/').any(|seg| seg == "v1" || seg == "v2")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn catalog() -> Vec<CatalogService> {
        serde_json::from_value(serde_json::json!([
            {"type": "identity", "name": "keystone", "id": "1", "endpoints": [
                {"interface": "public", "region": "RegionOne", "region_id": "RegionOne",
                 "url": "http://127.0.0.1:5000/v3", "id": "a"}]},
            {"type": "volume", "name": "cinderv2", "endpoints": [
                {"interface": "public", "region_id": "RegionOne",
                 "url": "http://127.0.0.1:8776/v2/p1"}]},
            {"type": "block-storage", "name": "cinder", "endpoints": [
                {"interface": "public", "region_id": "RegionOne", "url": "http://127.0.0.1:8776/v3/"},
                {"interface": "internal", "region_id": "RegionOne", "url": "http://cinder.internal:8776/v3"},
                {"interface": "public", "region_id": "RegionTwo", "url": "http://two:8776/v3"}]},
            {"type": "compute", "name": "nova", "endpoints": [
                {"interface": "public", "region_id": "RegionOne", "url": "http://127.0.0.1:8774/v2.1"}]}
        ]))
        .unwrap()
    }

    #[test]
    fn selects_by_type_interface_and_region() {
        let c = catalog();
        assert_eq!(
            select(
                &c,
                BLOCK_STORAGE_TYPES,
                Interface::Public,
                Some("RegionOne")
            )
            .unwrap(),
            "http://127.0.0.1:8776/v3"
        );
        assert_eq!(
            select(&c, BLOCK_STORAGE_TYPES, Interface::Internal, None).unwrap(),
            "http://cinder.internal:8776/v3"
        );
        assert_eq!(
            select(&c, COMPUTE_TYPES, Interface::Public, None).unwrap(),
            "http://127.0.0.1:8774/v2.1"
        );
    }

    #[test]
    fn ambiguity_and_absence_are_explained() {
        let c = catalog();
        let e = select(&c, BLOCK_STORAGE_TYPES, Interface::Public, None).unwrap_err();
        assert!(e.contains("RegionOne, RegionTwo"), "{e}");
        let e = select(&c, COMPUTE_TYPES, Interface::Admin, None).unwrap_err();
        assert!(
            e.contains("no compute endpoint with interface admin"),
            "{e}"
        );
        assert!(e.contains("compute public in RegionOne"), "{e}");
        let e = select(&c, COMPUTE_TYPES, Interface::Public, Some("RegionNine")).unwrap_err();
        assert!(e.contains("in region RegionNine"), "{e}");
    }

    #[test]
    fn aliases_and_legacy_volume_endpoints() {
        let c: Vec<CatalogService> = serde_json::from_value(serde_json::json!([
            {"type": "volume", "endpoints": [
                {"interface": "public", "region": "R", "url": "http://h/volume/v2/p"}]},
            {"type": "volumev3", "endpoints": [
                {"interface": "public", "region": "R", "url": "http://h/volume/v3/p"}]}
        ]))
        .unwrap();
        assert_eq!(
            select(&c, BLOCK_STORAGE_TYPES, Interface::Public, None).unwrap(),
            "http://h/volume/v3/p"
        );
        let only_v2: Vec<CatalogService> = c.into_iter().take(1).collect();
        assert!(select(&only_v2, BLOCK_STORAGE_TYPES, Interface::Public, None).is_err());
    }
}
