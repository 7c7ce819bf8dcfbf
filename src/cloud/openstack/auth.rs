//! Which Keystone v3 auth method the cloud.conf keys select, and the request body for it.
//! Checked when the adapter is built, so a bad combination fails at startup naming the keys.
//!
//! Precedence, as `config::GlobalConfig::validate` checks it: trust, then a preset token, then
//! application credential, then password.

use serde_json::{json, Value};

use super::options::{AuthOptions, Secret};

/// A validated auth method: the body for `POST /v3/auth/tokens` is built on demand so the
/// secret is only copied into the request it goes out with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthMethod {
    identity: Identity,
    scope: Option<Value>,
    /// For messages and logs: method, user and project, never a secret.
    pub description: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Identity {
    Password { user: Value, password: Secret },
    Token(Secret),
    AppCredential { id_or_name: Value, secret: Secret },
}

impl AuthMethod {
    pub fn from_options(o: &AuthOptions) -> Result<Self, String> {
        if let Some(trust) = &o.trust_id {
            return trust_method(o, trust);
        }
        if let Some(token) = &o.token {
            let (scope, project) = project_scope(o)?;
            return Ok(Self {
                identity: Identity::Token(token.clone()),
                scope: Some(scope),
                description: format!("preset token for project {project}"),
            });
        }
        if o.application_credential_id.is_some() || o.application_credential_name.is_some() {
            return app_credential(o);
        }
        let (scope, project) = project_scope(o)?;
        let password = o.password.as_ref().ok_or(
            "no credentials: set password (with username or user-id), \
             application-credential-id/-name with application-credential-secret, \
             trust-id, or token",
        )?;
        let (user, who) = user_ref(o)?;
        Ok(Self {
            identity: Identity::Password {
                user,
                password: password.clone(),
            },
            scope: Some(scope),
            description: format!("password of user {who} for project {project}"),
        })
    }

    /// The JSON body, secret included: send it, never log it.
    pub fn request_body(&self) -> Value {
        let identity = match &self.identity {
            Identity::Password { user, password } => {
                let mut user = user.clone();
                user["password"] = json!(password.expose());
                json!({ "methods": ["password"], "password": { "user": user } })
            }
            Identity::Token(t) => json!({ "methods": ["token"], "token": { "id": t.expose() } }),
            Identity::AppCredential { id_or_name, secret } => {
                let mut cred = id_or_name.clone();
                cred["secret"] = json!(secret.expose());
                json!({ "methods": ["application_credential"], "application_credential": cred })
            }
        };
        let mut auth = json!({ "identity": identity });
        if let Some(scope) = &self.scope {
            auth["scope"] = scope.clone();
        }
        json!({ "auth": auth })
    }
}

/// The trustee (`trustee-id`, else the user keys) with its password, scoped to the trust.
fn trust_method(o: &AuthOptions, trust: &str) -> Result<AuthMethod, String> {
    let (user, who) = match &o.trustee_id {
        Some(id) => (json!({ "id": id }), id.clone()),
        None => user_ref(o).map_err(|e| {
            format!("trust-id needs trustee-id (or user-id / username): the user the trust was delegated to ({e})")
        })?,
    };
    let password = o
        .trustee_password
        .as_ref()
        .or(o.password.as_ref())
        .ok_or("trust-id needs trustee-password (or password)")?;
    Ok(AuthMethod {
        identity: Identity::Password {
            user,
            password: password.clone(),
        },
        scope: Some(json!({ "OS-TRUST:trust": { "id": trust } })),
        description: format!("trust {trust} as trustee {who}"),
    })
}

fn app_credential(o: &AuthOptions) -> Result<AuthMethod, String> {
    let secret = o
        .application_credential_secret
        .clone()
        .ok_or("application-credential-id/-name needs application-credential-secret")?;
    // An application credential carries its own project: sending a scope is an error.
    if let Some(id) = &o.application_credential_id {
        return Ok(AuthMethod {
            identity: Identity::AppCredential {
                id_or_name: json!({ "id": id }),
                secret,
            },
            scope: None,
            description: format!("application credential {id}"),
        });
    }
    let name = o.application_credential_name.as_deref().unwrap_or_default();
    let (user, who) = user_ref(o).map_err(|e| {
        format!(
            "application-credential-name needs its owner (user-id, or username with a domain): {e}"
        )
    })?;
    Ok(AuthMethod {
        identity: Identity::AppCredential {
            id_or_name: json!({ "name": name, "user": user }),
            secret,
        },
        scope: None,
        description: format!("application credential {name} of user {who}"),
    })
}

/// `{"id": ..}` or `{"name": .., "domain": ..}` of the user, and how to name it in messages.
fn user_ref(o: &AuthOptions) -> Result<(Value, String), String> {
    if let Some(id) = &o.user_id {
        return Ok((json!({ "id": id }), id.clone()));
    }
    let name = o
        .username
        .as_ref()
        .ok_or("username or user-id is required")?;
    let domain = domain(
        o.user_domain_id.as_ref().or(o.domain_id.as_ref()),
        o.user_domain_name.as_ref().or(o.domain_name.as_ref()),
    )
    .ok_or_else(|| {
        format!(
            "username {name} needs its domain: set user-domain-name or user-domain-id \
             (or domain-name/domain-id)"
        )
    })?;
    Ok((json!({ "name": name, "domain": domain }), name.clone()))
}

fn project_scope(o: &AuthOptions) -> Result<(Value, String), String> {
    if let Some(id) = &o.project_id {
        return Ok((json!({ "project": { "id": id } }), id.clone()));
    }
    let Some(name) = &o.project_name else {
        return Err(
            "tenant-id or tenant-name is required: Cinder and Nova need a \
                    project-scoped token"
                .into(),
        );
    };
    let domain = domain(
        o.project_domain_id.as_ref().or(o.domain_id.as_ref()),
        o.project_domain_name.as_ref().or(o.domain_name.as_ref()),
    )
    .ok_or_else(|| {
        format!(
            "tenant-name {name} needs its domain: set tenant-domain-name or tenant-domain-id \
             (or domain-name/domain-id)"
        )
    })?;
    Ok((
        json!({ "project": { "name": name, "domain": domain } }),
        name.clone(),
    ))
}

fn domain(id: Option<&String>, name: Option<&String>) -> Option<Value> {
    match (id, name) {
        (Some(id), _) => Some(json!({ "id": id })),
        (None, Some(name)) => Some(json!({ "name": name })),
        (None, None) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &str) -> Option<String> {
        Some(v.to_string())
    }

    fn secret(v: &str) -> Option<Secret> {
        Some(Secret::new(v))
    }

    #[test]
    fn password_with_names_and_domains() {
        let o = AuthOptions {
            username: s("demo"),
            password: secret("demopass"),
            project_name: s("demo"),
            user_domain_name: s("Default"),
            project_domain_id: s("default"),
            ..Default::default()
        };
        let m = AuthMethod::from_options(&o).unwrap();
        assert_eq!(
            m.request_body(),
            json!({"auth": {
                "identity": {"methods": ["password"], "password": {"user": {
                    "name": "demo", "domain": {"name": "Default"}, "password": "demopass"}}},
                "scope": {"project": {"name": "demo", "domain": {"id": "default"}}}
            }})
        );
        assert!(!m.description.contains("demopass"));
        assert!(!format!("{m:?}").contains("demopass"));
    }

    #[test]
    fn domain_keys_default_both_user_and_project() {
        let o = AuthOptions {
            username: s("u"),
            password: secret("p"),
            project_name: s("proj"),
            domain_name: s("Corp"),
            ..Default::default()
        };
        let body = AuthMethod::from_options(&o).unwrap().request_body();
        assert_eq!(
            body["auth"]["identity"]["password"]["user"]["domain"],
            json!({"name": "Corp"})
        );
        assert_eq!(
            body["auth"]["scope"]["project"]["domain"],
            json!({"name": "Corp"})
        );
    }

    #[test]
    fn ids_need_no_domains() {
        let o = AuthOptions {
            user_id: s("uid"),
            password: secret("p"),
            project_id: s("pid"),
            ..Default::default()
        };
        let body = AuthMethod::from_options(&o).unwrap().request_body();
        assert_eq!(
            body["auth"]["identity"]["password"]["user"],
            json!({"id": "uid", "password": "p"})
        );
        assert_eq!(body["auth"]["scope"], json!({"project": {"id": "pid"}}));
    }

    #[test]
    fn application_credentials_by_id_or_name_and_unscoped() {
        let o = AuthOptions {
            application_credential_id: s("ac1"),
            application_credential_secret: secret("appsecret"),
            project_name: s("ignored"),
            ..Default::default()
        };
        let m = AuthMethod::from_options(&o).unwrap();
        assert_eq!(
            m.request_body(),
            json!({"auth": {"identity": {"methods": ["application_credential"],
                "application_credential": {"id": "ac1", "secret": "appsecret"}}}})
        );
        let o = AuthOptions {
            application_credential_name: s("csi"),
            application_credential_secret: secret("appsecret"),
            username: s("demo"),
            user_domain_id: s("default"),
            ..Default::default()
        };
        assert_eq!(
            AuthMethod::from_options(&o).unwrap().request_body()["auth"]["identity"]
                ["application_credential"],
            json!({"name": "csi", "secret": "appsecret",
                   "user": {"name": "demo", "domain": {"id": "default"}}})
        );
        let o = AuthOptions {
            application_credential_name: s("csi"),
            application_credential_secret: secret("x"),
            ..Default::default()
        };
        assert!(AuthMethod::from_options(&o)
            .unwrap_err()
            .contains("needs its owner"));
        let o = AuthOptions {
            application_credential_id: s("ac1"),
            ..Default::default()
        };
        assert!(AuthMethod::from_options(&o)
            .unwrap_err()
            .contains("application-credential-secret"));
    }

    #[test]
    fn trust_uses_trustee_credentials_and_trust_scope() {
        let o = AuthOptions {
            trust_id: s("t1"),
            trustee_id: s("trustee"),
            trustee_password: secret("tp"),
            user_id: s("someone-else"),
            password: secret("other"),
            ..Default::default()
        };
        let body = AuthMethod::from_options(&o).unwrap().request_body();
        assert_eq!(
            body["auth"]["identity"]["password"]["user"],
            json!({"id": "trustee", "password": "tp"})
        );
        assert_eq!(
            body["auth"]["scope"],
            json!({"OS-TRUST:trust": {"id": "t1"}})
        );
        let o = AuthOptions {
            trust_id: s("t1"),
            user_id: s("u"),
            password: secret("p"),
            ..Default::default()
        };
        let body = AuthMethod::from_options(&o).unwrap().request_body();
        assert_eq!(body["auth"]["identity"]["password"]["user"]["id"], "u");
    }

    #[test]
    fn preset_token_is_exchanged_for_a_project_token() {
        let o = AuthOptions {
            token: secret("gAAAA-token"),
            project_id: s("pid"),
            ..Default::default()
        };
        let m = AuthMethod::from_options(&o).unwrap();
        assert_eq!(
            m.request_body(),
            json!({"auth": {"identity": {"methods": ["token"], "token": {"id": "gAAAA-token"}},
                            "scope": {"project": {"id": "pid"}}}})
        );
        assert!(!m.description.contains("gAAAA"));
    }

    #[test]
    fn missing_pieces_name_the_keys_to_set() {
        let base = AuthOptions {
            username: s("u"),
            password: secret("p"),
            ..Default::default()
        };
        let e = AuthMethod::from_options(&base).unwrap_err();
        assert!(e.contains("tenant-id or tenant-name"), "{e}");
        let o = AuthOptions {
            project_name: s("p"),
            ..base.clone()
        };
        let e = AuthMethod::from_options(&o).unwrap_err();
        assert!(e.contains("tenant-domain-name"), "{e}");
        let o = AuthOptions {
            project_id: s("p"),
            ..base.clone()
        };
        let e = AuthMethod::from_options(&o).unwrap_err();
        assert!(e.contains("user-domain-name"), "{e}");
        let o = AuthOptions {
            project_id: s("p"),
            ..Default::default()
        };
        let e = AuthMethod::from_options(&o).unwrap_err();
        assert!(e.contains("no credentials"), "{e}");
    }
}
