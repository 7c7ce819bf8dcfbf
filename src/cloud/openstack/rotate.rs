//! Credentials rotated in a reread cloud.conf (the mounted Secret updated in place): the
//! adapter takes the new `[Global]` credentials without a restart. What else a section holds
//! (auth-url, region, endpoint type, TLS files) is built into the HTTP client and the catalog
//! choice; a change there is reported as needing a restart, not half applied.

use super::auth::AuthMethod;
use super::OpenStack;
use crate::config::GlobalConfig;

/// What [`OpenStack::reload_credentials`] did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Reloaded {
    /// The credentials differ from those in use: the next token is requested with them.
    pub rotated: bool,
    /// Auth method, user and project of the credentials now in use (never a secret).
    pub auth: String,
    /// Keys that changed but take effect only at a restart.
    pub needs_restart: Vec<&'static str>,
}

impl OpenStack {
    /// Take the credentials of `global`, this cloud's section of the reread cloud.conf
    /// (validated). Errors name the cloud and the keys, as at startup; nothing changes then.
    pub async fn reload_credentials(&self, global: &GlobalConfig) -> Result<Reloaded, String> {
        let method =
            AuthMethod::from_options(&global.auth).map_err(|e| format!("{}: {e}", self.label()))?;
        let needs_restart = global.changed_settings(&self.config);
        let rotated = self.api.keystone.rotate(method).await;
        Ok(Reloaded {
            rotated,
            auth: self.api.keystone.description(),
            needs_restart,
        })
    }

    /// Ask for a token now (after a rotation): Ok when Keystone accepted the credentials in
    /// use, else its answer. The current token keeps serving either way while it is valid.
    pub async fn verify_credentials(&self) -> Result<(), String> {
        match self.api.keystone.session().await {
            Ok(_) if !self.api.keystone.rotation_pending().await => Ok(()),
            Ok(_) => Err(format!(
                "{}: Keystone refused the new credentials ({}); the current token is used \
                 until it expires, and the new ones are tried again at each renewal",
                self.label(),
                self.api.keystone.description()
            )),
            Err(e) => Err(format!("{}: {e}", self.label())),
        }
    }

    fn label(&self) -> String {
        if self.name.is_empty() {
            "[Global]".to_string()
        } else {
            format!("[Global \"{}\"]", self.name)
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;
    use std::sync::Arc;

    use super::*;
    use crate::cloud::openstack::testserver::Fake;
    use crate::cloud::openstack::{ApiMetrics, Secret};
    use crate::cloud::Health;

    fn passwords(fake: &Fake, ok: &[&str]) {
        fake.with(|s| s.passwords = Some(ok.iter().map(|p| p.to_string()).collect::<HashSet<_>>()));
    }

    fn sent_password(fake: &Fake) -> String {
        fake.with(|s| {
            s.auth_bodies.last().unwrap()["auth"]["identity"]["password"]["user"]["password"]
                .as_str()
                .unwrap()
                .to_string()
        })
    }

    async fn cloud(fake: &Fake) -> (OpenStack, GlobalConfig) {
        let opts = fake.options();
        let os = OpenStack::new("", &opts, Arc::new(ApiMetrics::new()))
            .await
            .unwrap();
        (os, opts.global)
    }

    /// The operator's rotation: a second credential added, the Secret updated, the old one
    /// deleted (its tokens revoked): every call succeeds throughout.
    #[tokio::test]
    async fn rotated_credentials_are_used_for_the_next_token() {
        let fake = Fake::start().await;
        passwords(&fake, &["demopass"]);
        let (os, mut global) = cloud(&fake).await;
        os.check().await.unwrap();
        passwords(&fake, &["demopass", "second"]);
        global.auth.password = Some(Secret::new("second"));
        let r = os.reload_credentials(&global).await.unwrap();
        assert!(r.rotated && r.needs_restart.is_empty(), "{r:?}");
        // Same credentials again (the kubelet's resync, another file of the set): nothing.
        assert!(!os.reload_credentials(&global).await.unwrap().rotated);
        os.verify_credentials().await.unwrap();
        assert_eq!(sent_password(&fake), "second");
        assert_eq!(fake.with(|s| s.tokens_issued), 2);
        // The old credential deleted: its tokens go, the new token was never one of them.
        passwords(&fake, &["second"]);
        os.check().await.unwrap();
        assert_eq!(fake.with(|s| s.tokens_issued), 2, "no new token needed");
        fake.revoke_tokens();
        os.check().await.unwrap();
        assert_eq!(sent_password(&fake), "second");
    }

    /// A typo in the new Secret: the current token keeps serving, the error says so, and the
    /// corrected Secret is taken.
    #[tokio::test]
    async fn refused_credentials_leave_the_current_token_serving() {
        let fake = Fake::start().await;
        passwords(&fake, &["demopass"]);
        let (os, mut global) = cloud(&fake).await;
        os.check().await.unwrap();
        global.auth.password = Some(Secret::new("typo"));
        assert!(os.reload_credentials(&global).await.unwrap().rotated);
        let err = os.verify_credentials().await.unwrap_err();
        assert!(err.contains("refused the new credentials"), "{err}");
        assert!(!err.contains("typo"), "a secret in {err}");
        os.check().await.unwrap();
        assert_eq!(sent_password(&fake), "typo");
        passwords(&fake, &["demopass", "fixed"]);
        global.auth.password = Some(Secret::new("fixed"));
        assert!(os.reload_credentials(&global).await.unwrap().rotated);
        os.verify_credentials().await.unwrap();
        assert_eq!(sent_password(&fake), "fixed");
    }

    #[tokio::test]
    async fn other_changed_keys_need_a_restart_and_bad_ones_change_nothing() {
        let fake = Fake::start().await;
        let (os, global) = cloud(&fake).await;
        let mut moved = global.clone();
        moved.region = Some("RegionTwo".into());
        moved.auth_url = Some("https://elsewhere/v3".into());
        let r = os.reload_credentials(&moved).await.unwrap();
        assert_eq!(r.needs_restart, ["auth-url", "region"]);
        assert!(!r.rotated);
        let mut broken = global.clone();
        broken.auth.password = None;
        let err = os.reload_credentials(&broken).await.unwrap_err();
        assert!(err.starts_with("[Global]: no credentials"), "{err}");
        os.check().await.unwrap();
        assert_eq!(sent_password(&fake), "demopass");
    }
}
