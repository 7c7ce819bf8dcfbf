//! Topology zone values back to Cinder availability zones. Nodes report their AZ as a label
//! value ([`topology_value`]: "zone 1" becomes `zone-1`), so a zone that comes from topology
//! (CreateVolume's preferred/requisite, GetCapacity's accessible_topology) is not always a
//! name Cinder knows. The controller lists the cloud's AZs (cached per cloud) and takes the
//! one whose label form is the value. The `availability` StorageClass parameter is a Cinder
//! name already and is never mapped.
//!
//! Only RPCs that carry a topology zone look here, so a cloud is never asked for its zones
//! when topology is not in play.

use std::time::Duration;

use tokio::time::Instant;

use super::Controller;
use crate::cloud::Cloud;
use crate::driver::types::{topology_value, TopologyRequirement, ZONE_TOPOLOGY_KEY};
use crate::driver::{Error, Refusal, Result};

/// A value the cached list cannot place refreshes the list, at most this often: a new AZ is
/// learnt within a minute without one zone list per RPC.
pub const ZONE_REFRESH: Duration = Duration::from_secs(60);

#[derive(Debug, PartialEq, Eq)]
enum Match {
    Found(String),
    Missing,
    /// Several Cinder zones share the value's label form.
    Ambiguous(Vec<String>),
}

/// The Cinder zone whose label form is `value`. A zone named exactly `value` does not settle
/// it when another zone has the same label form: nodes in either zone report that value, so
/// it does not say which one is meant.
fn match_zone(zones: &[String], value: &str) -> Match {
    let mut same: Vec<&String> = zones
        .iter()
        // An empty value is no label form: zones that have none do not answer to it.
        .filter(|z| *z == value || (!value.is_empty() && topology_value(z) == value))
        .collect();
    same.sort();
    same.dedup();
    match same.as_slice() {
        [] => Match::Missing,
        [one] => Match::Found(one.to_string()),
        many => Match::Ambiguous(many.iter().map(|z| z.to_string()).collect()),
    }
}

/// What the zone list says about a topology value.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Lookup {
    Found(String),
    /// No Cinder zone has this label form; the zones the cloud listed.
    Missing(Vec<String>),
    /// The cloud's zones are not known (no list, or listing failed): Cinder decides.
    Unlisted,
}

impl Controller {
    /// The Cinder AZ the topology zone `value` names. A value no Cinder zone matches goes to
    /// Cinder unchanged (as before this mapping existed): Cinder's answer decides, e.g. with
    /// `ignore-volume-az` the topology holds Nova zones that Cinder may fall back from.
    pub(super) async fn cinder_zone(&self, cloud: &Cloud, value: &str) -> Result<String> {
        match self.lookup_zone(cloud, value).await? {
            Lookup::Found(zone) => Ok(zone),
            Lookup::Missing(known) => {
                tracing::info!(
                    cloud = %cloud.name, zone = value, ?known,
                    "topology zone names no Cinder availability zone; passing it to Cinder as it is"
                );
                Ok(value.to_string())
            }
            Lookup::Unlisted => Ok(value.to_string()),
        }
    }

    /// Look `value` up in the cloud's zone list (cached; a miss lists again at most every
    /// [`ZONE_REFRESH`]).
    pub(super) async fn lookup_zone(&self, cloud: &Cloud, value: &str) -> Result<Lookup> {
        let Some(cell) = self.zones.by_cloud.get(&cloud.name) else {
            return Ok(Lookup::Unlisted);
        };
        let mut known = cell.lock().await;
        let mut found = match_zone(&known.zones, value);
        // A cached match stands (Cinder answers for a zone that has gone since); a miss lists
        // again unless the list is fresh.
        let may_list = known
            .listed_at
            .is_none_or(|at| at.elapsed() >= ZONE_REFRESH);
        if found == Match::Missing && may_list {
            known.listed_at = Some(Instant::now());
            match cloud.placement.availability_zones().await {
                Ok(zones) => {
                    tracing::debug!(cloud = %cloud.name, ?zones, "listed the availability zones");
                    known.zones = zones;
                    known.list_failed = false;
                    found = match_zone(&known.zones, value);
                }
                Err(e) => {
                    known.list_failed = true;
                    tracing::warn!(
                        cloud = %cloud.name, error = %e,
                        "cannot list the availability zones; topology zones go to Cinder as they are"
                    )
                }
            }
        }
        match found {
            Match::Found(zone) => Ok(Lookup::Found(zone)),
            Match::Missing if known.list_failed || known.listed_at.is_none() => {
                Ok(Lookup::Unlisted)
            }
            Match::Missing => Ok(Lookup::Missing(known.zones.clone())),
            Match::Ambiguous(zones) => Err(Refusal::AmbiguousZone {
                value: value.to_string(),
                zones,
            }
            .into()),
        }
    }

    /// The Cinder zone for a CreateVolume with a requisite topology: the first preferred, then
    /// the first requisite zone Cinder has. CSI: the volume "MUST be accessible from at least
    /// one of the requisite topologies", so when no requisite term names a zone Cinder has,
    /// nothing is created and the answer is RESOURCE_EXHAUSTED ("Unable to provision in
    /// accessible_topology"). When the zone list is unavailable Cinder decides, as before.
    pub(super) async fn requisite_zone(
        &self,
        cloud: &Cloud,
        t: &TopologyRequirement,
    ) -> Result<String> {
        let mut asked: Vec<String> = Vec::new();
        for value in t
            .preferred
            .iter()
            .chain(t.requisite.iter())
            .filter_map(|term| term.get(ZONE_TOPOLOGY_KEY))
        {
            if asked.contains(value) {
                continue;
            }
            asked.push(value.clone());
            match self.lookup_zone(cloud, value).await? {
                Lookup::Found(zone) => return Ok(zone),
                Lookup::Unlisted => return Ok(value.clone()),
                Lookup::Missing(_) => {}
            }
        }
        let known = match self.lookup_zone(cloud, "").await? {
            Lookup::Missing(known) => known,
            _ => Vec::new(),
        };
        Err(Error::NoZone { asked, known })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zones(z: &[&str]) -> Vec<String> {
        z.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn exact_or_unique_label_form() {
        let z = zones(&["nova", "zone 1", "dc1:rack2"]);
        assert_eq!(match_zone(&z, "nova"), Match::Found("nova".into()));
        assert_eq!(match_zone(&z, "zone-1"), Match::Found("zone 1".into()));
        assert_eq!(
            match_zone(&z, "dc1-rack2"),
            Match::Found("dc1:rack2".into())
        );
        assert_eq!(match_zone(&z, "zone 1"), Match::Found("zone 1".into()));
        assert_eq!(match_zone(&z, "az9"), Match::Missing);
        assert_eq!(match_zone(&[], "nova"), Match::Missing);
        assert_eq!(match_zone(&zones(&["nova", "---"]), ""), Match::Missing);
    }

    #[test]
    fn shared_label_forms_are_ambiguous() {
        let z = zones(&["zone 1", "zone:1", "zone-1", "nova"]);
        assert_eq!(
            match_zone(&z, "zone-1"),
            Match::Ambiguous(zones(&["zone 1", "zone-1", "zone:1"]))
        );
        assert_eq!(match_zone(&z, "nova"), Match::Found("nova".into()));
    }
}
