//! The part of a kubeconfig file this driver reads: the current context's cluster (server,
//! CA file, insecure-skip-tls-verify) and user (client certificate and key files, a token or
//! a token file). What it cannot use (embedded `*-data`, exec and auth-provider plugins,
//! basic auth) is refused by name rather than skipped, so a kubeconfig never half-works.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use url::Url;

use super::access::{ApiAccess, Credentials, IN_CLUSTER_DIR};
use crate::config::TlsOptions;

#[derive(Deserialize)]
struct File {
    #[serde(default)]
    clusters: Vec<Named<Cluster>>,
    #[serde(default)]
    users: Vec<Named<User>>,
    #[serde(default)]
    contexts: Vec<Named<Context>>,
    #[serde(rename = "current-context", default)]
    current_context: String,
}

#[derive(Deserialize)]
struct Named<T> {
    name: String,
    #[serde(alias = "cluster", alias = "user", alias = "context")]
    value: T,
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
struct Cluster {
    server: String,
    certificate_authority: Option<PathBuf>,
    certificate_authority_data: Option<serde_norway::Value>,
    #[serde(default)]
    insecure_skip_tls_verify: bool,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
struct User {
    client_certificate: Option<PathBuf>,
    client_key: Option<PathBuf>,
    client_certificate_data: Option<serde_norway::Value>,
    client_key_data: Option<serde_norway::Value>,
    token: Option<String>,
    #[serde(rename = "tokenFile")]
    token_file: Option<PathBuf>,
    exec: Option<serde_norway::Value>,
    auth_provider: Option<serde_norway::Value>,
    username: Option<serde_norway::Value>,
}

#[derive(Deserialize)]
struct Context {
    cluster: String,
    #[serde(default)]
    user: String,
}

impl ApiAccess {
    /// Access from a kubeconfig file (its current context).
    pub fn from_kubeconfig(path: &Path) -> Result<Self, String> {
        load(path)
    }

    /// `--kubeconfig` when given, else in-cluster from the environment.
    pub fn from_options(kubeconfig: Option<&Path>) -> Result<Self, String> {
        match kubeconfig {
            Some(p) => load(p),
            None => Self::in_cluster(
                Path::new(IN_CLUSTER_DIR),
                std::env::var("KUBERNETES_SERVICE_HOST").ok().as_deref(),
                std::env::var("KUBERNETES_SERVICE_PORT").ok().as_deref(),
            ),
        }
    }
}

/// Access through `path`'s current context. Errors name the file and what to change.
fn load(path: &Path) -> Result<ApiAccess, String> {
    let at = |e: &dyn std::fmt::Display| format!("kubeconfig {}: {e}", path.display());
    let text = std::fs::read_to_string(path).map_err(|e| at(&e))?;
    let file: File = serde_norway::from_str(&text).map_err(|e| at(&e))?;
    // Relative file names are relative to the kubeconfig (kubectl's rule).
    let base = path.parent().unwrap_or(Path::new("."));
    access(file, base).map_err(|e| at(&e))
}

fn access(file: File, base: &Path) -> Result<ApiAccess, String> {
    if file.current_context.is_empty() {
        return Err("no current-context".into());
    }
    let find = |kind: &str, names: Vec<&str>, want: &str| -> Result<usize, String> {
        names.iter().position(|n| *n == want).ok_or_else(|| {
            format!(
                "current-context {:?} names {kind} {want:?}, which the file does not have",
                file.current_context
            )
        })
    };
    let ctx = &file.contexts[find(
        "context",
        file.contexts.iter().map(|c| c.name.as_str()).collect(),
        &file.current_context,
    )?]
    .value;
    let cluster = &file.clusters[find(
        "cluster",
        file.clusters.iter().map(|c| c.name.as_str()).collect(),
        &ctx.cluster,
    )?]
    .value;
    let empty = User::default();
    let user = if ctx.user.is_empty() {
        &empty
    } else {
        &file.users[find(
            "user",
            file.users.iter().map(|u| u.name.as_str()).collect(),
            &ctx.user,
        )?]
        .value
    };
    let refused = [
        (
            "certificate-authority-data",
            cluster.certificate_authority_data.is_some(),
        ),
        (
            "client-certificate-data",
            user.client_certificate_data.is_some(),
        ),
        ("client-key-data", user.client_key_data.is_some()),
        ("exec", user.exec.is_some()),
        ("auth-provider", user.auth_provider.is_some()),
        ("username", user.username.is_some()),
    ];
    if let Some((key, _)) = refused.iter().find(|(_, set)| *set) {
        return Err(format!(
            "{key} is not supported: use certificate-authority, client-certificate and \
             client-key files, token or tokenFile"
        ));
    }
    let server = Url::parse(&cluster.server)
        .ok()
        .filter(|u| u.scheme() == "https" && u.has_host())
        .ok_or_else(|| format!("server {:?} is not an https URL", cluster.server))?;
    let abs = |p: &PathBuf| base.join(p);
    let tls = TlsOptions {
        ca_file: cluster.certificate_authority.as_ref().map(abs),
        cert_file: user.client_certificate.as_ref().map(abs),
        key_file: user.client_key.as_ref().map(abs),
        insecure: cluster.insecure_skip_tls_verify.then_some(true),
    };
    let credentials = match (&user.token, &user.token_file, &tls.cert_file) {
        (Some(t), _, _) => Credentials::Token(t.trim().to_string()),
        (None, Some(f), _) => Credentials::TokenFile(abs(f)),
        (None, None, Some(_)) => Credentials::ClientCertificate,
        (None, None, None) => {
            return Err(format!(
                "user {:?} has no credentials: set client-certificate and client-key, token or \
                 tokenFile",
                ctx.user
            ))
        }
    };
    Ok(ApiAccess {
        server,
        tls,
        credentials,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(yaml: &str) -> Result<ApiAccess, String> {
        access(serde_norway::from_str(yaml).unwrap(), Path::new("/etc/k"))
    }

    const BASE: &str = "
apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: 'https://127.0.0.1:6443', certificate-authority: pki/ca.crt}
contexts:
- name: x
  context: {cluster: c, user: u}
current-context: x
";

    #[test]
    fn client_certificate_and_relative_paths() {
        let a = parse(&format!(
            "{BASE}users:\n- name: u\n  user: {{client-certificate: /p/a.crt, client-key: a.key}}\n"
        ))
        .unwrap();
        assert_eq!(a.server.as_str(), "https://127.0.0.1:6443/");
        assert_eq!(
            a.tls.ca_file.as_deref(),
            Some(Path::new("/etc/k/pki/ca.crt"))
        );
        assert_eq!(a.tls.cert_file.as_deref(), Some(Path::new("/p/a.crt")));
        assert_eq!(a.tls.key_file.as_deref(), Some(Path::new("/etc/k/a.key")));
        assert_eq!(a.credentials, Credentials::ClientCertificate);
    }

    #[test]
    fn tokens_inline_and_from_a_file() {
        let a = parse(&format!(
            "{BASE}users:\n- name: u\n  user: {{token: ' abc '}}\n"
        ))
        .unwrap();
        assert_eq!(a.credentials, Credentials::Token("abc".into()));
        let a = parse(&format!(
            "{BASE}users:\n- name: u\n  user: {{tokenFile: t}}\n"
        ))
        .unwrap();
        assert_eq!(a.credentials, Credentials::TokenFile("/etc/k/t".into()));
    }

    #[test]
    fn what_it_cannot_use_is_refused_by_name() {
        for (user, key) in [
            (
                "{client-certificate-data: AAA, client-key-data: BBB}",
                "client-certificate-data",
            ),
            ("{exec: {command: aws}}", "exec"),
            ("{username: a, password: b}", "username"),
            ("{}", "no credentials"),
        ] {
            let e = parse(&format!("{BASE}users:\n- name: u\n  user: {user}\n")).unwrap_err();
            assert!(e.contains(key), "{user}: {e}");
        }
        let e = parse(&BASE.replace("current-context: x", "current-context: y")).unwrap_err();
        assert!(e.contains("\"y\""), "{e}");
        let e = parse(&format!(
            "{}users:\n- name: u\n  user: {{token: a}}\n",
            BASE.replace("https://127", "http://127")
        ))
        .unwrap_err();
        assert!(e.contains("https"), "{e}");
    }

    #[test]
    fn a_file_that_is_not_yaml_is_named_without_its_lines() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config");
        std::fs::write(&path, "users:\n- name: u\n  user: {token: s3cr3t-token\n").unwrap();
        let err = ApiAccess::from_kubeconfig(&path).unwrap_err();
        assert!(
            err.starts_with(&format!("kubeconfig {}: ", path.display())),
            "{err}"
        );
        assert!(!err.contains("s3cr3t"), "{err}");
    }
}
