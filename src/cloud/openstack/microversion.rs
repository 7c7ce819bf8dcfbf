//! Microversions: read the range a service offers from its version document and pick the one
//! to send. One version is sent on every request of a service (the highest we know, capped by
//! the cloud's maximum); features needing more than the cloud offers fail with a message
//! naming the version instead of an obscure 400/404.

use std::fmt;

use serde::Deserialize;

/// `major.minor`, ordered numerically (3.9 < 3.42).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Microversion {
    pub major: u16,
    pub minor: u16,
}

impl Microversion {
    pub const fn new(major: u16, minor: u16) -> Self {
        Self { major, minor }
    }

    pub fn parse(s: &str) -> Option<Self> {
        let (a, b) = s.trim().split_once('.')?;
        Some(Self::new(a.parse().ok()?, b.parse().ok()?))
    }
}

impl fmt::Display for Microversion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// Cinder: the base (no microversion header) and the highest we send.
pub const CINDER_BASE: Microversion = Microversion::new(3, 0);
pub const CINDER_WANTED: Microversion = Microversion::new(3, 71);
/// Extend an attached (`in-use`) volume.
pub const CINDER_ONLINE_EXTEND: Microversion = Microversion::new(3, 42);
/// Backups with metadata.
pub const CINDER_BACKUP_METADATA: Microversion = Microversion::new(3, 43);
/// Create a volume from a backup (`backup_id` in the create body).
pub const CINDER_CREATE_FROM_BACKUP: Microversion = Microversion::new(3, 47);
/// Backup create with an availability zone.
pub const CINDER_BACKUP_AZ: Microversion = Microversion::new(3, 51);
/// `created_at`/`updated_at` comparison filters on volume lists (the status watcher's batch).
pub const CINDER_TIME_FILTERS: Microversion = Microversion::new(3, 60);
/// Group snapshots (group types 3.11, groups 3.13, group snapshots 3.14).
pub const CINDER_GROUP_SNAPSHOTS: Microversion = Microversion::new(3, 14);

pub const NOVA_BASE: Microversion = Microversion::new(2, 1);
pub const NOVA_WANTED: Microversion = Microversion::new(2, 89);
/// Attach a multiattach volume to a second server.
pub const NOVA_MULTIATTACH: Microversion = Microversion::new(2, 60);

/// The range a service offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VersionRange {
    pub min: Microversion,
    pub max: Microversion,
}

/// What we send to one service.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Negotiated {
    /// `None`: send no microversion header (the base version).
    pub version: Option<Microversion>,
    /// The cloud's maximum, for messages.
    pub cloud_max: Microversion,
    base: Microversion,
}

impl Negotiated {
    /// The highest of `wanted` and the cloud's max. `pinned_to_base` (Cinder's
    /// `ignore-volume-microversion`) sends no header at all.
    pub fn choose(
        range: VersionRange,
        base: Microversion,
        wanted: Microversion,
        pinned_to_base: bool,
    ) -> Self {
        let version = (!pinned_to_base && range.max > base).then(|| range.max.min(wanted));
        Self {
            version,
            cloud_max: range.max,
            base,
        }
    }

    /// The version requests actually get.
    pub fn effective(&self) -> Microversion {
        self.version.unwrap_or(self.base)
    }

    pub fn supports(&self, v: Microversion) -> bool {
        self.effective() >= v
    }

    /// `Ok` when `v` is available; else an explanation naming the feature and both versions.
    pub fn require(&self, v: Microversion, feature: &str) -> Result<(), String> {
        if self.supports(v) {
            return Ok(());
        }
        Err(if self.version.is_none() && self.cloud_max >= v {
            format!("{feature} needs microversion {v}, but ignore-volume-microversion is set")
        } else {
            format!(
                "{feature} needs microversion {v}; this cloud offers at most {}",
                self.cloud_max
            )
        })
    }
}

#[derive(Debug, Deserialize)]
struct VersionEntry {
    id: String,
    #[serde(default)]
    version: String,
    #[serde(default)]
    min_version: String,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum VersionDoc {
    /// The service root: every API version.
    Many { versions: Vec<VersionEntry> },
    /// An API version's own root (`/v3/`).
    One { version: VersionEntry },
}

/// The range of API `id_prefix` (`v3` for Cinder, `v2.1` for Nova) in a version document.
/// An API without microversions (empty `version`) offers only `base`.
pub fn parse_versions(
    body: &[u8],
    id_prefix: &str,
    base: Microversion,
) -> Result<VersionRange, String> {
    let doc: VersionDoc =
        serde_json::from_slice(body).map_err(|e| format!("not a version document: {e}"))?;
    let entries = match doc {
        VersionDoc::Many { versions } => versions,
        VersionDoc::One { version } => vec![version],
    };
    let entry = entries
        .iter()
        .filter(|e| e.id == id_prefix || e.id.starts_with(&format!("{id_prefix}.")))
        .max_by_key(|e| Microversion::parse(&e.version).unwrap_or(base))
        .ok_or_else(|| {
            let ids: Vec<&str> = entries.iter().map(|e| e.id.as_str()).collect();
            format!(
                "no {id_prefix} API in the version document (offered: {})",
                ids.join(", ")
            )
        })?;
    Ok(VersionRange {
        min: Microversion::parse(&entry.min_version).unwrap_or(base),
        max: Microversion::parse(&entry.version).unwrap_or(base),
    })
}

/// Where the version document lives: the endpoint URL cut before its API version segment
/// (`http://h:8776/v3/p` → `http://h:8776/`, `http://h/volume/v3` → `http://h/volume/`).
pub fn service_root(endpoint: &str) -> String {
    let (scheme, rest) = endpoint.split_once("://").unwrap_or(("", endpoint));
    let segs: Vec<&str> = rest.split('/').collect();
    let is_version = |s: &str| {
        s.strip_prefix('v')
            .is_some_and(|v| !v.is_empty() && v.split('.').all(|p| p.parse::<u32>().is_ok()))
    };
    let keep = segs
        .iter()
        .skip(1)
        .rposition(|s| is_version(s))
        .map(|i| i + 1)
        .unwrap_or(1);
    let root = segs[..keep].join("/");
    if scheme.is_empty() {
        format!("{root}/")
    } else {
        format!("{scheme}://{root}/")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CINDER_ROOT: &str = r#"{"versions": [
        {"id": "v2.0", "links": [{"href": "http://127.0.0.1:45697/v2/", "rel": "self"}],
         "min_version": "", "status": "DEPRECATED", "updated": "2017-02-25T12:00:00Z", "version": ""},
        {"id": "v3.0", "links": [{"href": "http://127.0.0.1:45697/v3/", "rel": "self"}],
         "media-types": [{"base": "application/json", "type": "application/vnd.openstack.volume+json;version=3"}],
         "min_version": "3.0", "status": "CURRENT", "updated": "2018-07-17T00:00:00Z", "version": "3.59"}]}"#;

    const NOVA_ROOT: &str = r#"{"versions": [
        {"id": "v2.0", "links": [{"href": "http://openstack.example.com/v2/", "rel": "self"}],
         "status": "SUPPORTED", "version": "", "min_version": "", "updated": "2011-01-21T11:33:21Z"},
        {"id": "v2.1", "links": [{"href": "http://openstack.example.com/v2.1/", "rel": "self"}],
         "status": "CURRENT", "version": "2.55", "min_version": "2.1", "updated": "2013-07-23T11:33:21Z"}]}"#;

    #[test]
    fn parses_and_orders_numerically() {
        let v = Microversion::parse("3.9").unwrap();
        assert!(v < Microversion::parse("3.42").unwrap());
        assert_eq!(v.to_string(), "3.9");
        assert!(Microversion::parse("latest").is_none());
    }

    #[test]
    fn reads_the_range_from_root_and_version_documents() {
        let r = parse_versions(CINDER_ROOT.as_bytes(), "v3", CINDER_BASE).unwrap();
        assert_eq!(r.max, Microversion::new(3, 59));
        assert_eq!(r.min, Microversion::new(3, 0));
        let r = parse_versions(NOVA_ROOT.as_bytes(), "v2.1", NOVA_BASE).unwrap();
        assert_eq!(r.max, Microversion::new(2, 55));
        let one = r#"{"version": {"id": "v3.0", "status": "CURRENT", "version": "3.71", "min_version": "3.0"}}"#;
        let r = parse_versions(one.as_bytes(), "v3", CINDER_BASE).unwrap();
        assert_eq!(r.max, Microversion::new(3, 71));
        let e = parse_versions(NOVA_ROOT.as_bytes(), "v3", CINDER_BASE).unwrap_err();
        assert!(e.contains("offered: v2.0, v2.1"), "{e}");
        assert!(parse_versions(b"<html/>", "v3", CINDER_BASE).is_err());
    }

    #[test]
    fn chooses_the_highest_we_know_within_the_cloud() {
        let range = |max| VersionRange {
            min: CINDER_BASE,
            max,
        };
        let n = Negotiated::choose(
            range(Microversion::new(3, 71)),
            CINDER_BASE,
            CINDER_WANTED,
            false,
        );
        assert_eq!(n.version, Some(CINDER_WANTED));
        assert!(n.supports(CINDER_ONLINE_EXTEND));

        let n = Negotiated::choose(
            range(Microversion::new(3, 40)),
            CINDER_BASE,
            CINDER_WANTED,
            false,
        );
        assert_eq!(n.version, Some(Microversion::new(3, 40)));
        let e = n
            .require(CINDER_ONLINE_EXTEND, "extending an in-use volume")
            .unwrap_err();
        assert_eq!(
            e,
            "extending an in-use volume needs microversion 3.42; this cloud offers at most 3.40"
        );

        let n = Negotiated::choose(
            range(Microversion::new(3, 71)),
            CINDER_BASE,
            CINDER_WANTED,
            true,
        );
        assert_eq!(n.version, None);
        assert_eq!(n.effective(), CINDER_BASE);
        assert!(n
            .require(CINDER_ONLINE_EXTEND, "online extend")
            .unwrap_err()
            .contains("ignore-volume-microversion"));

        let n = Negotiated::choose(range(CINDER_BASE), CINDER_BASE, CINDER_WANTED, false);
        assert_eq!(n.version, None);
    }

    #[test]
    fn service_roots() {
        assert_eq!(
            service_root("http://127.0.0.1:8776/v3"),
            "http://127.0.0.1:8776/"
        );
        assert_eq!(
            service_root("http://127.0.0.1:8776/v3/89afd400b6464bbcb12bc0a4d63e5bd3"),
            "http://127.0.0.1:8776/"
        );
        assert_eq!(
            service_root("https://cloud.example/volume/v3/p1"),
            "https://cloud.example/volume/"
        );
        assert_eq!(
            service_root("http://127.0.0.1:8774/v2.1"),
            "http://127.0.0.1:8774/"
        );
        assert_eq!(
            service_root("https://cloud.example/compute/v2.1/"),
            "https://cloud.example/compute/"
        );
        assert_eq!(service_root("http://h:8776"), "http://h:8776/");
    }
}
