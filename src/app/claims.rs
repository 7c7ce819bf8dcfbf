//! `--pvc-annotations`: the Kubernetes API client of the controller, built at startup so a
//! missing service account or a bad kubeconfig exits 64 before anything binds.

use std::path::PathBuf;
use std::sync::Arc;

use super::error::AppError;
use crate::app::cli::ServeArgs;
use crate::net::kube::{ApiAccess, ApiClaims, ClaimReader, Credentials};

pub async fn claim_reader(args: &ServeArgs) -> Result<Arc<dyn ClaimReader>, AppError> {
    let kubeconfig = args.upstream.kubeconfig.clone().map(PathBuf::from);
    // Reads the kubeconfig and the TLS files: off the async workers.
    let claims = tokio::task::spawn_blocking(move || {
        let access = ApiAccess::from_options(kubeconfig.as_deref())?;
        let auth = match &access.credentials {
            Credentials::ClientCertificate => "client certificate".to_string(),
            Credentials::TokenFile(p) => format!("token file {}", p.display()),
            Credentials::Token(_) => "kubeconfig token".to_string(),
        };
        tracing::info!(
            server = %access.server,
            auth = %auth,
            "--pvc-annotations: PVC affinity annotations become Cinder scheduler hints"
        );
        ApiClaims::new(access)
    })
    .await
    .map_err(|e| AppError::Runtime(e.to_string()))?
    .map_err(|e| AppError::Config(format!("--pvc-annotations: {e}")))?;
    Ok(Arc::new(claims))
}
