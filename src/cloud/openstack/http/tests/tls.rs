//! The client's TLS settings against a local TLS server with certificates made for the test:
//! verification against `ca-file`, the loud `tls-insecure` escape, and client certificates.

use std::sync::Arc;

use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

use super::super::*;
use crate::cloud::openstack::errors::ApiError;
use crate::cloud::openstack::options::OpenStackOptions;
use crate::cloud::Op;
use crate::net::http_client::Outgoing;
use http::Method;

fn to(method: Method, url: &str) -> Outgoing {
    Outgoing::to(method, url).unwrap()
}
use crate::cloud::openstack::metrics::ApiMetrics;
use crate::config::TlsOptions;

struct Pki {
    dir: tempfile::TempDir,
    ca: CertificateDer<'static>,
    server_cert: CertificateDer<'static>,
    server_key: Vec<u8>,
}

fn pki() -> Pki {
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().unwrap()).unwrap();
    let server_key = KeyPair::generate().unwrap();
    let server_cert = CertificateParams::new(vec!["127.0.0.1".to_string()])
        .unwrap()
        .signed_by(&server_key, &ca)
        .unwrap();
    let client_key = KeyPair::generate().unwrap();
    let client_cert = CertificateParams::new(vec!["cinder-csi".to_string()])
        .unwrap()
        .signed_by(&client_key, &ca)
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("ca.pem"), ca.pem()).unwrap();
    std::fs::write(dir.path().join("client.pem"), client_cert.pem()).unwrap();
    std::fs::write(dir.path().join("client.key"), client_key.serialize_pem()).unwrap();
    Pki {
        dir,
        ca: ca.der().clone(),
        server_cert: server_cert.der().clone(),
        server_key: server_key.serialize_der(),
    }
}

/// An HTTPS server answering every request with 200 `ok`; `client_auth` demands a client
/// certificate issued by the test CA.
async fn serve(pki: &Pki, client_auth: bool) -> String {
    let builder = rustls::ServerConfig::builder();
    let builder = if client_auth {
        let mut roots = rustls::RootCertStore::empty();
        roots.add(pki.ca.clone()).unwrap();
        let verifier = rustls::server::WebPkiClientVerifier::builder(Arc::new(roots))
            .build()
            .unwrap();
        builder.with_client_cert_verifier(verifier)
    } else {
        builder.with_no_client_auth()
    };
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(pki.server_key.clone()));
    let config = builder
        .with_single_cert(vec![pki.server_cert.clone()], key)
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!(
        "https://127.0.0.1:{}/",
        listener.local_addr().unwrap().port()
    );
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let mut buf = vec![0u8; 4096];
                let mut got = Vec::new();
                while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                    match tls.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => got.extend_from_slice(&buf[..n]),
                    }
                }
                let _ = tls
                    .write_all(
                        b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok",
                    )
                    .await;
                let _ = tls.shutdown().await;
            });
        }
    });
    url
}

async fn get(tls: TlsOptions, url: &str) -> Result<(), ApiError> {
    let mut o = OpenStackOptions::new("https://127.0.0.1/v3", Default::default());
    o.global.tls = tls;
    let http = Http::build(&o, Arc::new(ApiMetrics::new())).await.unwrap();
    http.execute(Op::CinderVersions, to(Method::GET, url), &[])
        .await
        .map(|_| ())
}

#[tokio::test]
async fn server_certificates_are_verified_against_ca_file() {
    let pki = pki();
    let url = serve(&pki, false).await;
    let err = get(TlsOptions::default(), &url).await.unwrap_err();
    assert!(err.status.is_none(), "{err}");
    assert!(err.message.to_lowercase().contains("certificate"), "{err}");
    get(
        TlsOptions {
            ca_file: Some(pki.dir.path().join("ca.pem")),
            ..Default::default()
        },
        &url,
    )
    .await
    .expect("trusted through ca-file");
    get(
        TlsOptions {
            insecure: Some(true),
            ..Default::default()
        },
        &url,
    )
    .await
    .expect("tls-insecure skips verification");
}

#[tokio::test]
async fn client_certificates_are_presented() {
    let pki = pki();
    let url = serve(&pki, true).await;
    let ca = Some(pki.dir.path().join("ca.pem"));
    let without = get(
        TlsOptions {
            ca_file: ca.clone(),
            ..Default::default()
        },
        &url,
    )
    .await;
    assert!(without.is_err(), "the server demands a client certificate");
    get(
        TlsOptions {
            ca_file: ca,
            cert_file: Some(pki.dir.path().join("client.pem")),
            key_file: Some(pki.dir.path().join("client.key")),
            insecure: Some(false),
        },
        &url,
    )
    .await
    .expect("client certificate accepted");
}
