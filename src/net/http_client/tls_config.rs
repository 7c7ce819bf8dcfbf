//! The TLS settings of every connection to Keystone, Cinder and Nova, from `[Global]`: the
//! system's trusted roots plus `ca-file`, a client certificate (`cert-file` + `key-file`), or
//! no verification at all (`tls-insecure`). HTTP/1.1 only, as the APIs speak it.

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, SignatureScheme};

use crate::config::TlsOptions;

/// The client configuration for `tls`. Reads the files named there, so it runs off the async
/// workers. Errors name the cloud.conf key and the file.
pub fn client_config(tls: &TlsOptions) -> Result<ClientConfig, String> {
    crate::net::tls::install_provider();
    let provider = CryptoProvider::get_default()
        .cloned()
        .ok_or("no TLS crypto provider installed")?;
    let read = |key: &str, p: &std::path::Path| {
        std::fs::read(p).map_err(|e| format!("{key} {}: {e}", p.display()))
    };
    let mut roots = Vec::new();
    if let Some(ca) = &tls.ca_file {
        roots = CertificateDer::pem_slice_iter(&read("ca-file", ca)?)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("ca-file {}: not a PEM bundle: {e}", ca.display()))?;
        if roots.is_empty() {
            return Err(format!(
                "ca-file {}: no certificate in it (expected PEM)",
                ca.display()
            ));
        }
    }
    let identity = match (&tls.cert_file, &tls.key_file) {
        (None, None) => None,
        (Some(cert), Some(key)) => {
            let bad = |e: &dyn std::fmt::Display| {
                format!(
                    "cert-file {} / key-file {}: not a PEM certificate and key: {e}",
                    cert.display(),
                    key.display()
                )
            };
            let chain = CertificateDer::pem_slice_iter(&read("cert-file", cert)?)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| bad(&e))?;
            if chain.is_empty() {
                return Err(bad(&"no certificate in cert-file"));
            }
            let secret =
                PrivateKeyDer::from_pem_slice(&read("key-file", key)?).map_err(|e| bad(&e))?;
            Some((chain, secret))
        }
        _ => return Err("cert-file and key-file must be set together".into()),
    };
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?;
    let verifier: Arc<dyn ServerCertVerifier> = if tls.is_insecure() {
        Arc::new(NoVerification(provider))
    } else {
        Arc::new(
            rustls_platform_verifier::Verifier::new_with_extra_roots(roots, provider)
                .map_err(|e| format!("TLS: the system's trusted certificates: {e}"))?,
        )
    };
    let builder = builder
        .dangerous()
        .with_custom_certificate_verifier(verifier);
    let mut config = match identity {
        Some((chain, secret)) => builder.with_client_auth_cert(chain, secret).map_err(|e| {
            format!(
                "cert-file / key-file: the key does not fit the certificate or is not supported: {e}"
            )
        })?,
        None => builder.with_no_client_auth(),
    };
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

/// `tls-insecure`: any certificate is accepted (`Http::build` warns loudly); the handshake's
/// signatures are still checked, so the session is at least with the holder of that key.
#[derive(Debug)]
struct NoVerification(Arc<CryptoProvider>);

impl ServerCertVerifier for NoVerification {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
