//! What `cinder-csi doctor` asks one cloud beyond the ports: the token with its catalog, and
//! the negotiated microversions against what each of the driver's features needs. Nothing
//! here is on an RPC's path, and nothing returned holds a secret.

use super::microversion::{
    Microversion, Negotiated, CINDER_BACKUP_AZ, CINDER_BACKUP_METADATA, CINDER_CREATE_FROM_BACKUP,
    CINDER_ONLINE_EXTEND, CINDER_TIME_FILTERS, CINDER_WANTED, NOVA_MULTIATTACH, NOVA_WANTED,
};
use super::OpenStack;
use crate::cloud::CloudResult;

/// Features that need more than the base Cinder v3 API, with the microversion each needs.
pub const CINDER_FEATURES: &[(&str, Microversion)] = &[
    ("extending an attached volume", CINDER_ONLINE_EXTEND),
    ("backup metadata", CINDER_BACKUP_METADATA),
    ("volumes restored from a backup", CINDER_CREATE_FROM_BACKUP),
    ("backups in a chosen availability zone", CINDER_BACKUP_AZ),
    (
        "one batched status list for all waits (else one GET per volume)",
        CINDER_TIME_FILTERS,
    ),
];

/// Features that need more than Nova 2.1.
pub const NOVA_FEATURES: &[(&str, Microversion)] = &[(
    "attaching a multiattach volume to a second server",
    NOVA_MULTIATTACH,
)];

/// A Keystone token's worth of facts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionReport {
    /// The auth method, user and project as cloud.conf names them (never a secret).
    pub auth: String,
    pub project_id: Option<String>,
    /// The catalog's Cinder v3 / Nova URL, or why there is none (what the catalog offers).
    pub cinder_url: Result<String, String>,
    pub nova_url: Result<String, String>,
}

/// One service's microversion: what requests carry and what the cloud offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiLevel {
    pub using: Microversion,
    pub cloud_max: Microversion,
    /// The highest the driver would send.
    pub wanted: Microversion,
    /// The highest any feature needs: at or above it, everything works.
    pub needed_for_all: Microversion,
    /// Features the version in use lacks, each with why (the adapter's own message).
    pub missing: Vec<String>,
}

impl ApiLevel {
    fn new(n: &Negotiated, wanted: Microversion, features: &[(&str, Microversion)]) -> Self {
        Self {
            using: n.effective(),
            cloud_max: n.cloud_max,
            wanted,
            needed_for_all: features.iter().map(|(_, v)| *v).max().unwrap_or(wanted),
            missing: features
                .iter()
                .filter_map(|(feature, v)| n.require(*v, feature).err())
                .collect(),
        }
    }
}

impl OpenStack {
    /// Authenticate (or reuse the token) and report what the token came with.
    pub async fn session_report(&self) -> CloudResult<SessionReport> {
        let session = self.api.keystone.session().await?;
        Ok(SessionReport {
            auth: self.api.keystone.description(),
            project_id: session.project_id.clone(),
            cinder_url: session.cinder.clone(),
            nova_url: session.nova.clone(),
        })
    }

    /// Cinder's microversion (negotiating first if needed).
    pub async fn cinder_level(&self) -> CloudResult<ApiLevel> {
        let n = self.api.cinder_version().await?;
        Ok(ApiLevel::new(&n, CINDER_WANTED, CINDER_FEATURES))
    }

    /// Nova's microversion (negotiating first if needed).
    pub async fn nova_level(&self) -> CloudResult<ApiLevel> {
        let n = self.api.nova_version().await?;
        Ok(ApiLevel::new(&n, NOVA_WANTED, NOVA_FEATURES))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::cloud::openstack::microversion::{VersionRange, CINDER_BASE};
    use crate::cloud::openstack::testserver::Fake;
    use crate::cloud::openstack::ApiMetrics;
    use crate::cloud::CloudError;

    #[test]
    fn lists_what_an_old_cinder_lacks() {
        let old = Negotiated::choose(
            VersionRange {
                min: CINDER_BASE,
                max: Microversion::new(3, 44),
            },
            CINDER_BASE,
            CINDER_WANTED,
            false,
        );
        let l = ApiLevel::new(&old, CINDER_WANTED, CINDER_FEATURES);
        assert_eq!(l.using, Microversion::new(3, 44));
        assert_eq!(l.needed_for_all, CINDER_TIME_FILTERS);
        assert_eq!(l.missing.len(), 3, "{:?}", l.missing);
        assert!(l.missing[0].contains("needs microversion 3.47; this cloud offers at most 3.44"));
        // Pinned to the base by ignore-volume-microversion: the message says so.
        let pinned = Negotiated::choose(
            VersionRange {
                min: CINDER_BASE,
                max: CINDER_WANTED,
            },
            CINDER_BASE,
            CINDER_WANTED,
            true,
        );
        let l = ApiLevel::new(&pinned, CINDER_WANTED, CINDER_FEATURES);
        assert_eq!(l.missing.len(), CINDER_FEATURES.len());
        assert!(l.missing[0].contains("ignore-volume-microversion"), "{l:?}");
    }

    #[tokio::test]
    async fn reports_the_session_and_levels_without_the_password() {
        let fake = Fake::start().await;
        let os = OpenStack::new("", &fake.options(), Arc::new(ApiMetrics::new()))
            .await
            .unwrap();
        let s = os.session_report().await.unwrap();
        assert!(s.auth.contains("demo"), "{s:?}");
        assert!(!format!("{s:?}").contains("demopass"));
        assert!(
            s.cinder_url.as_deref().unwrap().ends_with("/cinder/v3"),
            "{s:?}"
        );
        assert!(s.nova_url.is_ok(), "{s:?}");
        let c = os.cinder_level().await.unwrap();
        assert_eq!(c.using, CINDER_WANTED);
        assert!(c.missing.is_empty(), "{c:?}");
        assert!(os.nova_level().await.is_ok());

        // Keystone refuses the password: the error names the method, never the secret.
        let mut bad = fake.options();
        bad.global.auth.password = Some(super::super::Secret::new("wrong-pass"));
        let os = OpenStack::new("", &bad, Arc::new(ApiMetrics::new()))
            .await
            .unwrap();
        fake.fail_next(
            "POST /identity/v3/auth/tokens",
            401,
            serde_json::json!({"error": {"code": 401, "message": "The request you have made requires authentication."}}),
        );
        let e = os.session_report().await.unwrap_err();
        assert!(matches!(e, CloudError::Unauthorized { .. }), "{e:?}");
        assert!(!e.to_string().contains("wrong-pass"), "{e}");
    }
}
