//! clouds.yaml (and secure.yaml) support for `use-clouds = true`.
//!
//! Search order for clouds.yaml when `clouds-file` is not set (gophercloud's
//! `clientconfig`): `$OS_CLIENT_CONFIG_FILE` (skipped when it does not
//! exist, like upstream), `./clouds.yaml`, `~/.config/openstack/clouds.yaml`,
//! `/etc/openstack/clouds.yaml`; the first that exists is used. An explicit
//! `clouds-file` must exist.
//!
//! The entry is `cloud`, else `$OS_CLOUD`, else the only entry of the file.
//! An optional secure.yaml (`$OS_CLIENT_SECURE_FILE`, next to the clouds.yaml,
//! then the same directories) with the same entry overrides clouds.yaml.
//! Precedence per key: cloud.conf, then secure.yaml, then clouds.yaml.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::client_env::{search_paths, ClientEnv};
use super::error::{global_label, quote, ConfigError, Location};
use super::global::GlobalConfig;
use super::secret::Secret;
use super::text_file::read_text;
use super::values::EndpointType;

#[derive(Debug, Default, Deserialize)]
struct CloudsFile {
    #[serde(default)]
    clouds: Option<BTreeMap<String, CloudEntry>>,
}

/// One `clouds.<name>` entry (the keys cinder-csi maps; others are ignored).
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(default)]
pub(crate) struct CloudEntry {
    auth: AuthEntry,
    region_name: Option<String>,
    interface: Option<String>,
    endpoint_type: Option<String>,
    cacert: Option<String>,
    cert: Option<String>,
    key: Option<String>,
    verify: Option<bool>,
}

#[derive(Default, Clone, Deserialize)]
#[serde(default)]
struct AuthEntry {
    auth_url: Option<String>,
    username: Option<String>,
    password: Option<String>,
    user_id: Option<String>,
    project_id: Option<String>,
    project_name: Option<String>,
    project_domain_id: Option<String>,
    project_domain_name: Option<String>,
    user_domain_id: Option<String>,
    user_domain_name: Option<String>,
    domain_id: Option<String>,
    domain_name: Option<String>,
    application_credential_id: Option<String>,
    application_credential_name: Option<String>,
    application_credential_secret: Option<String>,
    token: Option<String>,
    trust_id: Option<String>,
}

/// Prints the credentials as `<redacted>`; everything else as is.
impl std::fmt::Debug for AuthEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let hidden = |v: &Option<String>| v.as_ref().map(|_| "<redacted>");
        f.debug_struct("AuthEntry")
            .field("auth_url", &self.auth_url)
            .field("username", &self.username)
            .field("password", &hidden(&self.password))
            .field("user_id", &self.user_id)
            .field("project_id", &self.project_id)
            .field("project_name", &self.project_name)
            .field("project_domain_id", &self.project_domain_id)
            .field("project_domain_name", &self.project_domain_name)
            .field("user_domain_id", &self.user_domain_id)
            .field("user_domain_name", &self.user_domain_name)
            .field("domain_id", &self.domain_id)
            .field("domain_name", &self.domain_name)
            .field("application_credential_id", &self.application_credential_id)
            .field(
                "application_credential_name",
                &self.application_credential_name,
            )
            .field(
                "application_credential_secret",
                &hidden(&self.application_credential_secret),
            )
            .field("token", &hidden(&self.token))
            .field("trust_id", &self.trust_id)
            .finish()
    }
}

/// Parses a clouds.yaml/secure.yaml text into its `clouds` entries.
pub(crate) fn parse(file: &Path, text: &str) -> Result<BTreeMap<String, CloudEntry>, ConfigError> {
    if text.trim().is_empty() {
        return Ok(BTreeMap::new());
    }
    let parsed: CloudsFile = serde_norway::from_str(text).map_err(|e| ConfigError::CloudsYaml {
        at: Location {
            file: file.to_path_buf(),
            line: e.location().map(|l| l.line()),
        },
        message: format!("invalid YAML: {}", strip_location(&e.to_string())),
    })?;
    Ok(parsed.clouds.unwrap_or_default())
}

/// serde_norway ends most messages with " at line L column C"; the line is
/// already in our location, so that suffix (only) is dropped.
fn strip_location(message: &str) -> &str {
    if let Some(i) = message.rfind(" at line ") {
        let tail = &message[i + " at line ".len()..];
        let is_position = tail.split_once(" column ").is_some_and(|(l, c)| {
            [l, c]
                .iter()
                .all(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        });
        if is_position {
            return &message[..i];
        }
    }
    message
}

/// Fills unset keys of `g` (the section `name`) from clouds.yaml.
pub(crate) fn apply(
    g: &mut GlobalConfig,
    name: &str,
    env: &dyn ClientEnv,
) -> Result<(), ConfigError> {
    let label = global_label(name);
    let here = |key: &str| {
        g.origin(key)
            .or(g.defined_at.as_ref())
            .cloned()
            .unwrap_or_else(|| Location::file(Path::new("<cloud-config>")))
    };

    let clouds_path = match &g.clouds_file {
        Some(path) if path.is_file() => path.clone(),
        Some(path) => {
            return Err(ConfigError::Key {
                at: here("clouds-file"),
                section: label,
                key: "clouds-file".to_string(),
                message: format!("{}: file not found", path.display()),
            })
        }
        None => {
            let candidates = search_paths(env, "OS_CLIENT_CONFIG_FILE", &[], "clouds.yaml");
            match candidates.iter().find(|p| p.is_file()) {
                Some(p) => p.clone(),
                None => {
                    let searched: Vec<String> =
                        candidates.iter().map(|p| p.display().to_string()).collect();
                    return Err(ConfigError::Key {
                        at: here("use-clouds"),
                        section: label,
                        key: "use-clouds".to_string(),
                        message: format!(
                            "true, but no clouds.yaml was found (searched: {})",
                            searched.join(", ")
                        ),
                    });
                }
            }
        }
    };

    let clouds = parse(&clouds_path, &read_text(&clouds_path)?)?;
    let (requested, by) = match (&g.cloud, env.var("OS_CLOUD").filter(|c| !c.is_empty())) {
        (Some(c), _) => (Some(c.clone()), format!("cloud in {label}")),
        (None, Some(c)) => (Some(c), "OS_CLOUD".to_string()),
        (None, None) => (None, String::new()),
    };
    let names = || {
        let names: Vec<String> = clouds.keys().map(|k| quote(k)).collect();
        if names.is_empty() {
            "none".to_string()
        } else {
            names.join(", ")
        }
    };
    let yaml_err = |message: String| ConfigError::CloudsYaml {
        at: Location::file(&clouds_path),
        message,
    };
    let (cloud_name, entry) = match requested {
        Some(wanted) => match clouds.get(&wanted) {
            Some(entry) => (wanted, entry),
            None => {
                return Err(yaml_err(format!(
                    "cloud {} (from {by}) is not defined (clouds: {})",
                    quote(&wanted),
                    names()
                )))
            }
        },
        None if clouds.len() == 1 => {
            let (k, v) = clouds.iter().next().expect("one entry");
            (k.clone(), v)
        }
        None => {
            return Err(yaml_err(format!(
                "cannot choose a cloud (clouds: {}): set cloud = <name> in {label} or OS_CLOUD",
                names()
            )))
        }
    };

    // secure.yaml first: fill() never overwrites, so it wins over clouds.yaml.
    let beside: Vec<&Path> = clouds_path.parent().into_iter().collect();
    let secure_paths = search_paths(env, "OS_CLIENT_SECURE_FILE", &beside, "secure.yaml");
    if let Some(secure_path) = secure_paths.iter().find(|p| p.is_file()) {
        let secure = parse(secure_path, &read_text(secure_path)?)?;
        if let Some(secret_entry) = secure.get(&cloud_name) {
            fill(g, secret_entry, &cloud_name, secure_path)?;
        }
    }
    fill(g, entry, &cloud_name, &clouds_path)
}

/// Sets every still-unset key of `g` from `e`, recording `file` as origin.
fn fill(g: &mut GlobalConfig, e: &CloudEntry, cloud: &str, file: &Path) -> Result<(), ConfigError> {
    let from = Location::file(file);
    let origins = &mut g.origins;
    let mut set = |slot: &mut Option<String>, value: &Option<String>, key: &str| {
        if slot.is_none() {
            if let Some(v) = value.as_ref().filter(|v| !v.is_empty()) {
                *slot = Some(v.clone());
                origins.insert(key.to_string(), from.clone());
            }
        }
    };
    let a = &e.auth;
    set(&mut g.auth_url, &a.auth_url, "auth-url");
    set(&mut g.region, &e.region_name, "region");
    let c = &mut g.auth;
    set(&mut c.username, &a.username, "username");
    set(&mut c.user_id, &a.user_id, "user-id");
    set(&mut c.project_id, &a.project_id, "tenant-id");
    set(&mut c.project_name, &a.project_name, "tenant-name");
    set(
        &mut c.project_domain_id,
        &a.project_domain_id,
        "tenant-domain-id",
    );
    set(
        &mut c.project_domain_name,
        &a.project_domain_name,
        "tenant-domain-name",
    );
    set(&mut c.user_domain_id, &a.user_domain_id, "user-domain-id");
    set(
        &mut c.user_domain_name,
        &a.user_domain_name,
        "user-domain-name",
    );
    set(&mut c.domain_id, &a.domain_id, "domain-id");
    set(&mut c.domain_name, &a.domain_name, "domain-name");
    set(
        &mut c.application_credential_id,
        &a.application_credential_id,
        "application-credential-id",
    );
    set(
        &mut c.application_credential_name,
        &a.application_credential_name,
        "application-credential-name",
    );
    set(&mut c.trust_id, &a.trust_id, "trust-id");

    let mut secret = |slot: &mut Option<Secret>, value: &Option<String>, key: &str| {
        if slot.is_none() {
            let mut plain = None;
            set(&mut plain, value, key);
            *slot = plain.map(Secret::from);
        }
    };
    secret(&mut c.password, &a.password, "password");
    secret(&mut c.token, &a.token, "token");
    secret(
        &mut c.application_credential_secret,
        &a.application_credential_secret,
        "application-credential-secret",
    );

    let mut path = |slot: &mut Option<PathBuf>, value: &Option<String>, key: &str| {
        if slot.is_none() {
            let mut plain = None;
            set(&mut plain, value, key);
            *slot = plain.map(PathBuf::from);
        }
    };
    path(&mut g.tls.ca_file, &e.cacert, "ca-file");
    path(&mut g.tls.cert_file, &e.cert, "cert-file");
    path(&mut g.tls.key_file, &e.key, "key-file");

    if g.tls.insecure.is_none() {
        if let Some(verify) = e.verify {
            g.tls.insecure = Some(!verify);
            g.origins.insert("tls-insecure".to_string(), from.clone());
        }
    }
    if g.endpoint_type.is_none() {
        // gophercloud: endpoint_type wins over interface.
        let (field, value) = match (&e.endpoint_type, &e.interface) {
            (Some(v), _) if !v.is_empty() => ("endpoint_type", v),
            (_, Some(v)) if !v.is_empty() => ("interface", v),
            _ => return Ok(()),
        };
        let parsed = value
            .parse::<EndpointType>()
            .map_err(|m| ConfigError::CloudsYaml {
                at: from.clone(),
                message: format!("clouds.{cloud}.{field}: {m}"),
            })?;
        g.endpoint_type = Some(parsed);
        g.origins.insert("os-endpoint-type".to_string(), from);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_prints_credentials() {
        let text =
            "clouds:\n  c:\n    auth:\n      username: demo\n      password: pw-Secret1\n      \
                    token: tok-Secret2\n      application_credential_secret: ac-Secret3\n";
        let entries = parse(Path::new("clouds.yaml"), text).unwrap();
        let shown = format!("{entries:?}");
        assert!(
            shown.contains("demo") && shown.contains("<redacted>"),
            "{shown}"
        );
        for s in ["pw-Secret1", "tok-Secret2", "ac-Secret3"] {
            assert!(!shown.contains(s), "{shown}");
        }
    }
}
