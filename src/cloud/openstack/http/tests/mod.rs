//! The HTTP layer's tests: requests and answers here, TLS (`tls.rs`) and the per-endpoint
//! bound (`limit.rs`).

mod limit;
mod tls;

use super::*;
use crate::cloud::openstack::metrics::ApiMetrics;
use crate::cloud::openstack::options::{redact_userinfo, OpenStackOptions, ProxyOptions};
use crate::cloud::Op;
use crate::config::TlsOptions;
use crate::net::http_client::Outgoing;
use std::path::PathBuf;
use std::sync::Arc;

fn get(url: &str) -> Outgoing {
    Outgoing::to(http::Method::GET, url).unwrap()
}

fn post(url: &str) -> Outgoing {
    Outgoing::to(http::Method::POST, url).unwrap()
}

async fn build(o: &OpenStackOptions) -> Result<Http, String> {
    Http::build(o, Arc::new(ApiMetrics::new())).await
}

fn opts(tls: TlsOptions) -> OpenStackOptions {
    let mut o = OpenStackOptions::new("http://127.0.0.1:5000/v3", Default::default());
    o.global.tls = tls;
    o
}

#[test]
fn a_bad_proxy_url_is_reported_without_its_password() {
    assert_eq!(
        redact_userinfo("http://u:p@proxy:3128/x@y"),
        "http://<redacted>@proxy:3128/x@y"
    );
    assert_eq!(redact_userinfo("u:p@proxy:3128"), "<redacted>@proxy:3128");
    assert_eq!(redact_userinfo("http://proxy:3128"), "http://proxy:3128");
    let p = ProxyOptions {
        https: Some("http://admin:s3cr3t@proxy:notaport".into()),
        ..Default::default()
    };
    let e = proxies(&p).unwrap_err();
    assert!(
        e.starts_with("HTTPS_PROXY \"http://<redacted>@proxy:notaport\""),
        "{e}"
    );
    assert!(!e.contains("s3cr3t") && !e.contains("admin"), "{e}");
}

#[tokio::test]
async fn tls_file_problems_name_the_key() {
    let e = build(&opts(TlsOptions {
        ca_file: Some(PathBuf::from("/nonexistent/ca.pem")),
        ..Default::default()
    }))
    .await
    .err()
    .unwrap();
    assert!(e.starts_with("ca-file /nonexistent/ca.pem"), "{e}");

    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.pem");
    std::fs::write(&empty, "not a certificate\n").unwrap();
    let e = build(&opts(TlsOptions {
        ca_file: Some(empty.clone()),
        ..Default::default()
    }))
    .await
    .err()
    .unwrap();
    assert!(e.contains("no certificate"), "{e}");

    let e = build(&opts(TlsOptions {
        cert_file: Some(empty),
        ..Default::default()
    }))
    .await
    .err()
    .unwrap();
    assert!(e.contains("cert-file and key-file"), "{e}");
}

/// A forward proxy that answers every request itself and records its request line.
async fn fake_proxy() -> (String, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let log = seen.clone();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            let mut buf = vec![0u8; 4096];
            let n = s.read(&mut buf).await.unwrap_or(0);
            let line = String::from_utf8_lossy(&buf[..n])
                .lines()
                .next()
                .unwrap_or_default()
                .to_string();
            log.lock().unwrap().push(line);
            let _ = s
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                .await;
        }
    });
    (url, seen)
}

#[tokio::test]
async fn proxies_are_used_except_for_no_proxy_and_loopback() {
    let (proxy, seen) = fake_proxy().await;
    let mut o = opts(TlsOptions::default());
    o.proxy = ProxyOptions {
        http: Some(proxy.clone()),
        https: None,
        no_proxy: Some("direct.invalid".into()),
    };
    o.connect_timeout = std::time::Duration::from_secs(2);
    let http = build(&o).await.unwrap();
    let fetch = |url: &str| http.execute(Op::CinderVersions, get(url), &[]);
    fetch("http://keystone.invalid:5000/v3").await.unwrap();
    assert_eq!(
        seen.lock().unwrap().as_slice(),
        ["GET http://keystone.invalid:5000/v3 HTTP/1.1"]
    );
    // NO_PROXY hosts and loopback go direct (and fail here: nothing listens).
    assert!(fetch("http://direct.invalid/").await.is_err());
    assert!(fetch("http://127.0.0.1:9/").await.is_err());
    assert_eq!(seen.lock().unwrap().len(), 1);
    o.proxy.http = Some("::not a url".into());
    assert!(build(&o).await.err().unwrap().starts_with("HTTP_PROXY"));
}

/// A server that drops the first connection after reading the request (as a keep-alive
/// timeout racing our write does) and answers the second.
async fn flaky_server() -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let seen = std::sync::Arc::new(AtomicUsize::new(0));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v3/volumes", listener.local_addr().unwrap());
    let n = seen.clone();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            let mut buf = vec![0u8; 4096];
            let _ = s.read(&mut buf).await;
            if n.fetch_add(1, Ordering::SeqCst).is_multiple_of(2) {
                drop(s);
                continue;
            }
            let _ = s
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}")
                .await;
        }
    });
    (url, seen)
}

#[tokio::test]
async fn safe_requests_are_resent_once_after_a_broken_connection() {
    use std::sync::atomic::Ordering;
    let (url, seen) = flaky_server().await;
    let http = build(&opts(TlsOptions::default())).await.unwrap();
    http.execute(Op::VolumeGet, get(&url), &[])
        .await
        .expect("resent once");
    assert_eq!(seen.load(Ordering::SeqCst), 2);
    let m = http.metrics.snapshot();
    assert_eq!(
        (m.get(Op::VolumeGet).requests, m.get(Op::VolumeGet).errors),
        (2, 1)
    );
    // A POST is not repeated: it may have been acted on.
    let err = http
        .execute(Op::VolumeCreate, post(&url), &[])
        .await
        .unwrap_err();
    assert!(err.status.is_none(), "{err}");
    assert_eq!(seen.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn plain_client_builds_with_and_without_verification() {
    build(&opts(TlsOptions::default())).await.unwrap();
    build(&opts(TlsOptions {
        insecure: Some(true),
        ..Default::default()
    }))
    .await
    .unwrap();
    assert!(user_agent().starts_with("cinder-csi/"));
}
