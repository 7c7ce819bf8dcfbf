//! Controller-side validation of one `[Global]` section.

use std::path::Path;

use super::cloud_conf::GlobalConfig;
use super::error::{global_label, quote, ConfigError, Location};
use super::values::is_http_url;

/// How the controller authenticates to Keystone, in the order tried when a
/// section sets several: trust, token, application credential, password.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthMethod {
    /// `trust-id` with `trustee-id`/`trustee-password` (or `user-id`/`password`).
    Trust,
    /// `token`.
    Token,
    /// `application-credential-id` (or `-name` with a user) + `-secret`.
    ApplicationCredential,
    /// `password` with `user-id` (or `username` + user domain) and a project.
    Password,
}

impl GlobalConfig {
    /// Checks that this section (named `name`, `""` = `[Global]`) can reach
    /// and authenticate to Keystone, after clouds.yaml has been applied.
    /// Returns the authentication method the section selects.
    pub fn validate(&self, name: &str) -> Result<AuthMethod, ConfigError> {
        let label = global_label(name);
        let err = |key: &str, message: String| ConfigError::Key {
            at: self
                .origin(key)
                .or(self.defined_at.as_ref())
                .cloned()
                .unwrap_or_else(|| Location::file(Path::new("<cloud-config>"))),
            section: label.clone(),
            key: key.to_string(),
            message,
        };

        match &self.auth_url {
            None if self.use_clouds => {
                return Err(err(
                    "auth-url",
                    "not set here nor in clouds.yaml (auth.auth_url)".to_string(),
                ))
            }
            None => {
                return Err(err(
                    "auth-url",
                    "not set (the controller needs the Keystone URL; \
                     set it here or use-clouds = true with clouds.yaml)"
                        .to_string(),
                ))
            }
            Some(url) if !is_http_url(url) => {
                return Err(err(
                    "auth-url",
                    format!("{} is not an http:// or https:// URL", quote(url)),
                ))
            }
            Some(_) => {}
        }

        match (&self.cert_file, &self.key_file) {
            (Some(_), None) => {
                return Err(err(
                    "cert-file",
                    "set without key-file (TLS client authentication needs both)".to_string(),
                ))
            }
            (None, Some(_)) => {
                return Err(err(
                    "key-file",
                    "set without cert-file (TLS client authentication needs both)".to_string(),
                ))
            }
            _ => {}
        }

        let user_domain = self.user_domain_id.is_some()
            || self.user_domain_name.is_some()
            || self.domain_id.is_some()
            || self.domain_name.is_some();
        let project_domain = self.tenant_domain_id.is_some()
            || self.tenant_domain_name.is_some()
            || self.domain_id.is_some()
            || self.domain_name.is_some();

        if self.trust_id.is_some() {
            if self.trustee_id.is_none() && self.user_id.is_none() && self.username.is_none() {
                return Err(err(
                    "trust-id",
                    "set, but no trustee: set trustee-id (or user-id)".to_string(),
                ));
            }
            if self.trustee_password.is_none() && self.password.is_none() {
                return Err(err(
                    "trust-id",
                    "set, but neither trustee-password nor password is set".to_string(),
                ));
            }
            return Ok(AuthMethod::Trust);
        }

        if self.token.is_some() {
            return Ok(AuthMethod::Token);
        }

        let (app_id, app_name) = (
            &self.application_credential_id,
            &self.application_credential_name,
        );
        if app_id.is_some() || app_name.is_some() || self.application_credential_secret.is_some() {
            if app_id.is_none() && app_name.is_none() {
                return Err(err(
                    "application-credential-secret",
                    "set, but neither application-credential-id nor \
                     application-credential-name is set"
                        .to_string(),
                ));
            }
            let key = if app_id.is_some() {
                "application-credential-id"
            } else {
                "application-credential-name"
            };
            if self.application_credential_secret.is_none() {
                return Err(err(
                    key,
                    "set, but application-credential-secret is not".to_string(),
                ));
            }
            if app_id.is_none()
                && self.user_id.is_none()
                && !(self.username.is_some() && user_domain)
            {
                return Err(err(
                    key,
                    "needs user-id, or username with user-domain-name/user-domain-id \
                     (or domain-name/domain-id)"
                        .to_string(),
                ));
            }
            return Ok(AuthMethod::ApplicationCredential);
        }

        if self.password.is_some() {
            if self.user_id.is_none() && self.username.is_none() {
                return Err(err(
                    "password",
                    "set, but neither username nor user-id is set".to_string(),
                ));
            }
            if self.user_id.is_none() && !user_domain {
                return Err(err(
                    "username",
                    "needs a domain: set user-domain-name or user-domain-id \
                     (or domain-name/domain-id), or use user-id"
                        .to_string(),
                ));
            }
            if self.tenant_id.is_none() && self.tenant_name.is_none() {
                return Err(err(
                    "password",
                    "set, but no project: set tenant-id or tenant-name".to_string(),
                ));
            }
            if self.tenant_id.is_none() && !project_domain {
                return Err(err(
                    "tenant-name",
                    "needs a domain: set tenant-domain-name or tenant-domain-id \
                     (or domain-name/domain-id), or use tenant-id"
                        .to_string(),
                ));
            }
            return Ok(AuthMethod::Password);
        }

        for (key, set) in [
            ("username", self.username.is_some()),
            ("user-id", self.user_id.is_some()),
        ] {
            if set {
                return Err(err(key, "set, but password is not".to_string()));
            }
        }
        Err(err(
            "credentials",
            "none set: use username or user-id with password, application-credential-id \
             with application-credential-secret, token, or trust-id"
                .to_string(),
        ))
    }
}
