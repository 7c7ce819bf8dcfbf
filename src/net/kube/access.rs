//! Where the Kubernetes API is and how to authenticate to it: in-cluster (the pod's service
//! account token and CA, `KUBERNETES_SERVICE_HOST`/`_PORT`, as client-go's `InClusterConfig`)
//! or a kubeconfig file (`--kubeconfig`, for running outside a cluster and for tests).

use std::path::{Path, PathBuf};

use url::Url;

use crate::config::TlsOptions;

/// The service account files every pod gets (client-go's paths).
pub const IN_CLUSTER_DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// How requests authenticate.
#[derive(Clone, PartialEq, Eq)]
pub enum Credentials {
    /// The client certificate in [`ApiAccess::tls`] does it.
    ClientCertificate,
    /// A bearer token read from this file at every request: projected service account tokens
    /// are rotated in place (client-go re-reads them too).
    TokenFile(PathBuf),
    /// A bearer token given inline (a kubeconfig's `token`).
    Token(String),
}

/// Never shows a token.
impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::ClientCertificate => f.write_str("ClientCertificate"),
            Self::TokenFile(p) => f.debug_tuple("TokenFile").field(p).finish(),
            Self::Token(_) => f.write_str("Token(<redacted>)"),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiAccess {
    /// `https://host:port`, maybe with a path prefix.
    pub server: Url,
    pub tls: TlsOptions,
    pub credentials: Credentials,
}

impl ApiAccess {
    /// In-cluster access from `dir`'s `token` and `ca.crt` and the service's host and port
    /// (the pod's `KUBERNETES_SERVICE_HOST` / `KUBERNETES_SERVICE_PORT`). Checks that the
    /// files are there; reads no token.
    pub fn in_cluster(dir: &Path, host: Option<&str>, port: Option<&str>) -> Result<Self, String> {
        let (Some(host), Some(port)) = (
            host.filter(|h| !h.is_empty()),
            port.filter(|p| !p.is_empty()),
        ) else {
            return Err(
                "not running in a Kubernetes pod (KUBERNETES_SERVICE_HOST and \
                 KUBERNETES_SERVICE_PORT are not set): give --kubeconfig"
                    .into(),
            );
        };
        let token = dir.join("token");
        let ca = dir.join("ca.crt");
        for f in [&token, &ca] {
            if !f.is_file() {
                return Err(format!(
                    "the service account file {} is missing: mount the service account \
                     token (automountServiceAccountToken) or give --kubeconfig",
                    f.display()
                ));
            }
        }
        // An IPv6 service address needs brackets in a URL.
        let host = if host.contains(':') && !host.starts_with('[') {
            format!("[{host}]")
        } else {
            host.to_string()
        };
        let server = Url::parse(&format!("https://{host}:{port}"))
            .map_err(|e| format!("KUBERNETES_SERVICE_HOST/PORT {host}:{port}: {e}"))?;
        Ok(Self {
            server,
            tls: TlsOptions {
                ca_file: Some(ca),
                ..Default::default()
            },
            credentials: Credentials::TokenFile(token),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_cluster_needs_the_service_and_the_files() {
        let dir = tempfile::tempdir().unwrap();
        let e = ApiAccess::in_cluster(dir.path(), None, Some("443")).unwrap_err();
        assert!(e.contains("--kubeconfig"), "{e}");
        let e = ApiAccess::in_cluster(dir.path(), Some("10.96.0.1"), Some("443")).unwrap_err();
        assert!(e.contains("token") && e.contains("missing"), "{e}");
        std::fs::write(dir.path().join("token"), "t0k3n").unwrap();
        std::fs::write(dir.path().join("ca.crt"), "pem").unwrap();
        let a = ApiAccess::in_cluster(dir.path(), Some("fd00::1"), Some("6443")).unwrap();
        assert_eq!(a.server.as_str(), "https://[fd00::1]:6443/");
        assert_eq!(
            a.tls.ca_file.as_deref(),
            Some(dir.path().join("ca.crt").as_path())
        );
        assert_eq!(
            a.credentials,
            Credentials::TokenFile(dir.path().join("token"))
        );
        let shown = format!("{:?}", Credentials::Token("t0k3n".into()));
        assert!(!shown.contains("t0k3n"), "{shown}");
    }
}
