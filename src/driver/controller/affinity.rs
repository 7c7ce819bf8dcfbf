//! `--pvc-annotations`: the PVC's `cinder.csi.openstack.org/affinity` and `/anti-affinity`
//! annotations become Cinder's `same_host` and `different_host` scheduler hints, as upstream
//! v1.36.0 makes them: each a list of Cinder volume names or UUIDs split at commas and
//! whitespace, every entry resolved to one volume's UUID (a UUID that is no volume is tried
//! as a name), the resolved lists also put in the volume context (`affinity`,
//! `anti-affinity`).

use std::collections::BTreeMap;

use super::params::{PVC_NAMESPACE_KEY, PVC_NAME_KEY};
use super::{Controller, CreateVolume};
use crate::cloud::{Cloud, CloudError, PageRequest, SchedulerHints, VolumeFilter, VolumeStatus};
use crate::driver::{Error, Invalid, Result};

pub const AFFINITY_KEY: &str = "cinder.csi.openstack.org/affinity";
pub const ANTI_AFFINITY_KEY: &str = "cinder.csi.openstack.org/anti-affinity";

/// Upstream's `util.SplitTrim(s, ',')`: fields between commas and whitespace, none empty.
pub fn split_list(s: &str) -> Vec<&str> {
    s.split(|c: char| c == ',' || c.is_whitespace())
        .filter(|f| !f.is_empty())
        .collect()
}

impl Controller {
    /// The scheduler hints of the PVC this request is for, and the volume context keys that
    /// record them. Nothing without `--pvc-annotations`; without the provisioner's
    /// `--extra-create-metadata` names upstream logs and creates without hints, and so does
    /// this driver.
    pub(super) async fn scheduler_hints(
        &self,
        cloud: &Cloud,
        req: &CreateVolume,
    ) -> Result<(SchedulerHints, BTreeMap<String, String>)> {
        let none = || (SchedulerHints::default(), BTreeMap::new());
        let Some(claims) = &self.claims else {
            return Ok(none());
        };
        let meta = &req.params.k8s_metadata;
        let (Some(namespace), Some(name)) = (meta.get(PVC_NAMESPACE_KEY), meta.get(PVC_NAME_KEY))
        else {
            tracing::warn!(
                volume = %req.name,
                "--pvc-annotations is on but the request names no PVC (the provisioner needs \
                 --extra-create-metadata): created without scheduler hints"
            );
            return Ok(none());
        };
        let annotations = claims
            .annotations(namespace, name)
            .await
            .map_err(Error::Kube)?;
        let claim = format!("{namespace}/{name}");
        let mut context = BTreeMap::new();
        let mut lists = Vec::with_capacity(2);
        for (key, ctx_key) in [
            (AFFINITY_KEY, "affinity"),
            (ANTI_AFFINITY_KEY, "anti-affinity"),
        ] {
            let mut ids = Vec::new();
            for entry in annotations
                .get(key)
                .map(|v| split_list(v))
                .unwrap_or_default()
            {
                ids.push(resolve(cloud, &claim, key, entry).await?);
            }
            if !ids.is_empty() {
                context.insert(ctx_key.to_string(), ids.join(","));
            }
            lists.push(ids);
        }
        let different_host = lists.pop().unwrap_or_default();
        let same_host = lists.pop().unwrap_or_default();
        if !context.is_empty() {
            tracing::info!(
                volume = %req.name,
                pvc = %claim,
                same_host = ?same_host,
                different_host = ?different_host,
                "scheduler hints from the PVC's annotations"
            );
        }
        Ok((
            SchedulerHints {
                same_host,
                different_host,
            },
            context,
        ))
    }
}

/// One entry's volume UUID: by id when it parses as a UUID (any form upstream's `uuid.Parse`
/// takes), else, or when no volume has that id, by name, which must match exactly one.
async fn resolve(
    cloud: &Cloud,
    claim: &str,
    annotation: &'static str,
    entry: &str,
) -> Result<String> {
    if let Ok(id) = uuid::Uuid::parse_str(entry) {
        match cloud.volumes.get_volume(&id.to_string()).await {
            Ok(v) => return Ok(v.id),
            Err(CloudError::NotFound { .. }) => {}
            Err(e) => return Err(e.into()),
        }
    }
    let filter = VolumeFilter {
        name: Some(entry.to_string()),
        ..Default::default()
    };
    let page = cloud
        .volumes
        .list_volumes(&filter, &PageRequest::default())
        .await?;
    let mut ids: Vec<String> = page
        .items
        .into_iter()
        .filter(|v| v.name == entry && v.status != VolumeStatus::Deleting)
        .map(|v| v.id)
        .collect();
    if ids.len() == 1 {
        return Ok(ids.remove(0));
    }
    Err(Invalid::AffinityVolume {
        claim: claim.to_string(),
        annotation,
        entry: entry.to_string(),
        matches: ids,
    }
    .into())
}
