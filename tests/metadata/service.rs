//! The metadata service client against a scripted local server: answers, retries, timeouts.

use std::time::{Duration, Instant};

use cinder_csi::host::metadata::service::{MetadataService, Retry};
use cinder_csi::host::metadata::{Metadata, MetadataError, Timeouts};

use super::support::*;

const FAST: Timeouts = Timeouts {
    connect: Duration::from_secs(2),
    request: Duration::from_millis(300),
};
const RETRY: Retry = Retry {
    attempts: 3,
    first_backoff: Duration::from_millis(20),
};

fn client(url: &str) -> MetadataService {
    MetadataService::new(url, FAST, RETRY).unwrap()
}

fn unavailable(result: Result<impl std::fmt::Debug, MetadataError>, wants: &[&str]) {
    match result {
        Err(MetadataError::Unavailable(m)) => {
            for want in wants {
                assert!(m.contains(want), "{m:?} lacks {want:?}");
            }
        }
        other => panic!("expected Unavailable containing {wants:?}, got {other:?}"),
    }
}

#[tokio::test]
async fn reads_the_document() {
    let server = Server::start(vec![Reply::Json(meta_data(UUID, "az-9"))]).await;
    let got = client(&server.url).instance().await.unwrap();
    assert_eq!(got.uuid, UUID);
    assert_eq!(got.availability_zone.as_deref(), Some("az-9"));
    assert_eq!(server.requests(), 1);
    let head = &server.heads()[0];
    assert!(
        head.starts_with("GET /openstack/latest/meta_data.json HTTP/1.1\r\n"),
        "{head}"
    );
    assert!(
        head.to_ascii_lowercase()
            .contains("accept: application/json"),
        "{head}"
    );
}

#[tokio::test]
async fn server_errors_are_retried_until_success() {
    let server = Server::start(vec![
        Reply::Status(500),
        Reply::Status(503),
        Reply::Json(meta_data(UUID, "az")),
    ])
    .await;
    assert_eq!(client(&server.url).instance().await.unwrap().uuid, UUID);
    assert_eq!(server.requests(), 3);
}

#[tokio::test]
async fn persistent_server_errors_give_up_after_the_attempts() {
    let server = Server::start(vec![Reply::Status(500)]).await;
    let started = Instant::now();
    unavailable(
        client(&server.url).instance().await,
        &[&server.url, "HTTP 500", "gave up after 3 attempts"],
    );
    assert_eq!(server.requests(), 3);
    // Backoff happened: 20 ms then 40 ms at least (a floor, not a timing assertion on speed).
    assert!(started.elapsed() >= Duration::from_millis(60));
}

#[tokio::test]
async fn not_found_is_final() {
    let server = Server::start(vec![Reply::Status(404)]).await;
    unavailable(client(&server.url).instance().await, &["HTTP 404"]);
    assert_eq!(server.requests(), 1, "a 404 is not retried");
}

#[tokio::test]
async fn slow_answers_time_out_and_are_retried() {
    let slow = Reply::Slow(Duration::from_secs(5), meta_data(UUID, "az"));
    let server = Server::start(vec![slow.clone()]).await;
    unavailable(
        client(&server.url).instance().await,
        &["no answer within 0.3s", "gave up after 3 attempts"],
    );
    assert_eq!(server.requests(), 3);

    // One slow answer, then a prompt one.
    let server = Server::start(vec![slow, Reply::Json(meta_data(UUID, "az"))]).await;
    assert_eq!(client(&server.url).instance().await.unwrap().uuid, UUID);
    assert_eq!(server.requests(), 2);
}

#[tokio::test]
async fn a_stalled_body_times_out() {
    let server = Server::start(vec![Reply::StalledBody(Duration::from_secs(5))]).await;
    unavailable(
        client(&server.url).instance().await,
        &["reading the body", "no answer within 0.3s"],
    );
    assert_eq!(server.requests(), 3);
}

#[tokio::test]
async fn refused_connections_are_retried_then_reported() {
    // A port that was just free: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/openstack/latest/meta_data.json");
    unavailable(
        client(&url).instance().await,
        &["gave up after 3 attempts", "onnection refused"],
    );
}

#[tokio::test]
async fn bad_documents_are_invalid_and_not_retried() {
    for (reply, want) in [
        (
            Reply::Json("<html>nope</html>".into()),
            "not a meta_data.json document",
        ),
        (Reply::Json(r#"{"uuid":"i-0123"}"#.into()), "is not a UUID"),
        (Reply::Claims(10 << 20), "more than the 1048576"),
        (
            Reply::Json(format!(
                r#"{{"uuid":"{UUID}","x":"{}"}}"#,
                "y".repeat(1 << 20)
            )),
            "more than the 1048576",
        ),
    ] {
        let server = Server::start(vec![reply]).await;
        match client(&server.url).instance().await {
            Err(MetadataError::Invalid(m)) => {
                assert!(m.contains(want), "{m:?} lacks {want:?}");
                assert!(m.starts_with("metadata service http://127.0.0.1:"), "{m}");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(server.requests(), 1);
    }
}

#[tokio::test]
async fn proxies_are_never_used() {
    // Were the proxy honoured, every request would go to this dead address and fail.
    for var in ["HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"] {
        std::env::set_var(var, "http://127.0.0.1:1");
    }
    let server = Server::start(vec![Reply::Json(meta_data(UUID, "az"))]).await;
    let got = client(&server.url).instance().await;
    for var in ["HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"] {
        std::env::remove_var(var);
    }
    assert_eq!(got.unwrap().uuid, UUID);
    assert_eq!(server.requests(), 1);
}

#[test]
fn urls_are_checked_up_front() {
    for bad in ["", "169.254.169.254", "ftp://x/meta_data.json", "http://"] {
        let err = MetadataService::new(bad, FAST, RETRY).err().unwrap();
        assert!(
            matches!(&err, MetadataError::Invalid(m) if m.contains("is not an http(s) URL")),
            "{bad}: {err}"
        );
    }
}
