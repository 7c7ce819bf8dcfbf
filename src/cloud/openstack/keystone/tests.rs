//! Token reuse, renewal, the single 401 retry and single-flight fetching, against the local
//! imitation in `testserver.rs`.

use std::sync::Arc;
use std::time::Duration;

use super::*;
use crate::cloud::openstack::testserver::Fake;
use crate::cloud::openstack::{ApiMetrics, OpenStack};
use crate::cloud::Op;
use crate::cloud::{CloudError, Health, Servers};

async fn cloud(fake: &Fake) -> (OpenStack, Arc<ApiMetrics>) {
    let m = Arc::new(ApiMetrics::new());
    (
        OpenStack::new("", &fake.options(), m.clone())
            .await
            .unwrap(),
        m,
    )
}

#[test]
fn token_urls() {
    assert_eq!(token_url("http://k:5000"), "http://k:5000/v3/auth/tokens");
    assert_eq!(
        token_url("http://k:5000/v3/"),
        "http://k:5000/v3/auth/tokens"
    );
    assert_eq!(
        token_url("https://c/identity/v3"),
        "https://c/identity/v3/auth/tokens"
    );
    assert_eq!(
        token_url("http://k:5000/v2.0"),
        "http://k:5000/v3/auth/tokens"
    );
}

#[tokio::test]
async fn a_storm_of_requests_costs_one_token() {
    let fake = Fake::start().await;
    let (os, metrics) = cloud(&fake).await;
    let os = Arc::new(os);
    let calls = (0..40).map(|i| {
        let os = os.clone();
        tokio::spawn(async move {
            if i % 2 == 0 {
                os.get_server("5e1f0c2a-0000-4000-8000-000000000001")
                    .await
                    .map(|_| ())
            } else {
                os.check().await
            }
        })
    });
    for r in futures::future::join_all(calls).await {
        r.unwrap().unwrap();
    }
    assert_eq!(fake.with(|s| s.tokens_issued), 1);
    let snap = metrics.snapshot();
    assert_eq!(snap.get(Op::KeystoneToken).requests, 1);
    assert_eq!(
        fake.count("GET /cinder/"),
        1 + 20,
        "one version document, then the calls"
    );
    assert_eq!(snap.get(Op::CinderVersions).requests, 1);
    assert_eq!(snap.get(Op::NovaVersions).requests, 1);
    assert_eq!(snap.get(Op::ServerGet).requests, 20);
    // The request carried the password method with our names and never logged the secret.
    let body = fake.with(|s| s.auth_bodies[0].clone());
    assert_eq!(body["auth"]["identity"]["methods"][0], "password");
    assert_eq!(body["auth"]["scope"]["project"]["name"], "demo");
}

#[tokio::test]
async fn tokens_are_renewed_before_they_expire() {
    let fake = Fake::start().await;
    fake.with(|s| s.token_lifetime = Duration::from_millis(1500));
    let (os, metrics) = cloud(&fake).await;
    os.check().await.unwrap();
    os.check().await.unwrap();
    assert_eq!(fake.with(|s| s.tokens_issued), 1);
    // Renewal happens a fifth of the lifetime early (at 1.2 s): no request sees a 401.
    tokio::time::sleep(Duration::from_millis(1300)).await;
    os.check().await.unwrap();
    assert_eq!(fake.with(|s| s.tokens_issued), 2);
    assert_eq!(metrics.snapshot().errors(crate::cloud::Service::Cinder), 0);
}

#[tokio::test]
async fn a_revoked_token_costs_one_reauth_and_one_retry() {
    let fake = Fake::start().await;
    let (os, metrics) = cloud(&fake).await;
    os.check().await.unwrap();
    fake.revoke_tokens();
    os.check().await.unwrap();
    assert_eq!(fake.with(|s| s.tokens_issued), 2);
    assert_eq!(
        fake.count("GET /cinder/v3/volumes?"),
        3,
        "first, refused, retried"
    );
    assert_eq!(metrics.snapshot().get(Op::VolumeList).errors, 1);
}

#[tokio::test]
async fn concurrent_401s_share_one_reauth() {
    let fake = Fake::start().await;
    let (os, _) = cloud(&fake).await;
    let os = Arc::new(os);
    os.check().await.unwrap();
    fake.revoke_tokens();
    let calls = (0..20).map(|_| {
        let os = os.clone();
        tokio::spawn(async move { os.check().await })
    });
    for r in futures::future::join_all(calls).await {
        r.unwrap().unwrap();
    }
    assert_eq!(fake.with(|s| s.tokens_issued), 2);
}

#[tokio::test]
async fn a_second_401_is_unauthorized_not_a_loop() {
    let fake = Fake::start().await;
    let (os, _) = cloud(&fake).await;
    os.check().await.unwrap();
    fake.with(|s| s.reject_all_tokens = true);
    let before = fake.count("GET /cinder/v3/volumes?");
    let err = os.check().await.unwrap_err();
    assert!(matches!(err, CloudError::Unauthorized { .. }), "{err:?}");
    assert_eq!(fake.count("GET /cinder/v3/volumes?") - before, 2);
    assert_eq!(
        fake.with(|s| s.tokens_issued),
        2,
        "exactly one re-authentication"
    );
}

#[tokio::test]
async fn keystone_refusal_names_the_method_but_not_the_secret() {
    let fake = Fake::start().await;
    fake.fail_next(
        "POST /identity/v3/auth/tokens",
        401,
        serde_json::json!({"error": {"code": 401, "title": "Unauthorized",
            "message": "The request you have made requires authentication."}}),
    );
    let (os, _) = cloud(&fake).await;
    let err = os.check().await.unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, CloudError::Unauthorized { .. }), "{err:?}");
    assert!(
        text.contains("password of user demo for project demo"),
        "{text}"
    );
    assert!(text.contains("req-fake-0001"), "{text}");
    assert!(!text.contains("demopass"), "{text}");
    // Nothing is cached after a failure: the next call authenticates again and works.
    os.check().await.unwrap();
}

#[tokio::test]
async fn keystone_down_is_unavailable() {
    let mut opts = Fake::start().await.options();
    opts.global.auth_url = Some("http://127.0.0.1:9/v3".into());
    opts.connect_timeout = Duration::from_secs(2);
    let os = OpenStack::new("", &opts, Arc::new(ApiMetrics::new()))
        .await
        .unwrap();
    let err = os.check().await.unwrap_err();
    assert!(matches!(err, CloudError::Unavailable { .. }), "{err:?}");
}

#[tokio::test]
async fn a_catalog_without_the_region_fails_clearly() {
    let fake = Fake::start().await;
    let mut opts = fake.options();
    opts.global.region = Some("RegionTwo".into());
    let os = OpenStack::new("", &opts, Arc::new(ApiMetrics::new()))
        .await
        .unwrap();
    match os.check().await.unwrap_err() {
        CloudError::Unsupported(m) => assert!(m.contains("in region RegionTwo"), "{m}"),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_catalog_missing_cinder_is_asked_again_soon() {
    // Found by tests/cloud/openstack_faults.rs: the token kept for its hour, every call failing.
    let fake = Fake::start().await;
    fake.with(|s| s.hide_cinder = true);
    let (os, _) = cloud(&fake).await;
    match os.check().await.unwrap_err() {
        CloudError::Unsupported(m) => assert!(m.contains("catalog"), "{m}"),
        other => panic!("{other:?}"),
    }
    fake.with(|s| s.hide_cinder = false);
    tokio::time::sleep(TOKEN_RETRY_AFTER + Duration::from_millis(200)).await;
    os.check().await.unwrap();
    assert_eq!(fake.with(|s| s.tokens_issued), 2);
}
