//! The Keystone credentials of a `[Global]` section: their keys, and which authentication
//! method a set of them selects (checked by the controller at startup). The OpenStack
//! adapter takes [`AuthOptions`] as it is; how it builds the token request is its own
//! business (`cloud/openstack/auth.rs`).

use super::error::ConfigError;
use super::key::Cx;
use super::secret::Secret;

/// Keystone credentials, one field per cloud.conf key (`None` = unset). The project keys are
/// spelled `tenant-*` in cloud.conf (upstream's names) and `project_*` here (Keystone's).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuthOptions {
    /// `user-id`.
    pub user_id: Option<String>,
    /// `username` (needs a user domain).
    pub username: Option<String>,
    pub password: Option<Secret>,
    /// `token`: a pre-issued token, exchanged for a scoped one with a catalog.
    pub token: Option<Secret>,
    /// `tenant-id` / `tenant-name` (+ `tenant-domain-*`): the project to scope to.
    pub project_id: Option<String>,
    pub project_name: Option<String>,
    pub project_domain_id: Option<String>,
    pub project_domain_name: Option<String>,
    /// `domain-id` / `domain-name`: default for both the user's and the project's domain.
    pub domain_id: Option<String>,
    pub domain_name: Option<String>,
    pub user_domain_id: Option<String>,
    pub user_domain_name: Option<String>,
    pub application_credential_id: Option<String>,
    pub application_credential_name: Option<String>,
    pub application_credential_secret: Option<Secret>,
    /// `trust-id`: authenticate as the trustee (`trustee-id`/`trustee-password`, else
    /// `user-id`/`password`) scoped to the trust.
    pub trust_id: Option<String>,
    pub trustee_id: Option<String>,
    pub trustee_password: Option<Secret>,
}

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

impl AuthOptions {
    /// Sets one credential key; `Ok(false)` when `cx.key` is not one.
    pub(crate) fn set(&mut self, v: Option<&str>, cx: &Cx<'_>) -> Result<bool, ConfigError> {
        match cx.key {
            "username" => self.username = cx.text(v)?,
            "user-id" => self.user_id = cx.text(v)?,
            "password" => self.password = cx.secret(v)?,
            "token" => self.token = cx.secret(v)?,
            "tenant-id" => self.project_id = cx.text(v)?,
            "tenant-name" => self.project_name = cx.text(v)?,
            "tenant-domain-id" => self.project_domain_id = cx.text(v)?,
            "tenant-domain-name" => self.project_domain_name = cx.text(v)?,
            "domain-id" => self.domain_id = cx.text(v)?,
            "domain-name" => self.domain_name = cx.text(v)?,
            "user-domain-id" => self.user_domain_id = cx.text(v)?,
            "user-domain-name" => self.user_domain_name = cx.text(v)?,
            "application-credential-id" => self.application_credential_id = cx.text(v)?,
            "application-credential-name" => self.application_credential_name = cx.text(v)?,
            "application-credential-secret" => self.application_credential_secret = cx.secret(v)?,
            "trust-id" => self.trust_id = cx.text(v)?,
            "trustee-id" => self.trustee_id = cx.text(v)?,
            "trustee-password" => self.trustee_password = cx.secret(v)?,
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Every secret that is set, for output that must hide them (`cinder-csi doctor`).
    pub fn secrets(&self) -> impl Iterator<Item = &Secret> {
        [
            &self.password,
            &self.token,
            &self.application_credential_secret,
            &self.trustee_password,
        ]
        .into_iter()
        .flatten()
    }

    /// The method these credentials select, or what is missing; `err(key, message)` places
    /// the error at the key's line.
    pub(crate) fn method(
        &self,
        err: impl Fn(&str, String) -> ConfigError,
    ) -> Result<AuthMethod, ConfigError> {
        let user_domain = self.user_domain_id.is_some()
            || self.user_domain_name.is_some()
            || self.domain_id.is_some()
            || self.domain_name.is_some();
        let project_domain = self.project_domain_id.is_some()
            || self.project_domain_name.is_some()
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
            if self.project_id.is_none() && self.project_name.is_none() {
                return Err(err(
                    "password",
                    "set, but no project: set tenant-id or tenant-name".to_string(),
                ));
            }
            if self.project_id.is_none() && !project_domain {
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
