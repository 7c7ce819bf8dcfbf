//! The fault proxy's own tests (tests/faults), against a tiny local Keystone + Cinder made
//! with axum: the catalog is rewritten to go through the proxy, every fault does what it says
//! (the backend is or is not called, the client sees the status, reset, timeout or broken
//! body), and the per-call-count rules and counters are exact.

use crate::support::faults;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::{Path, State};
use axum::routing::{get, post};
use axum::{Json, Router};
use faults::{Fault, FaultProxy, Rule, When};
use serde_json::{json, Value};

const VOL: &str = "0b6c8a54-5f0e-4c43-9c55-2f1f7b1d5e01";

struct Backend {
    keystone: String,
    cinder: String,
    /// Calls that reached the fake Cinder.
    calls: Arc<AtomicU64>,
}

async fn serve(app: Router) -> String {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(l, app).await.unwrap() });
    url
}

async fn backend() -> Backend {
    let calls = Arc::new(AtomicU64::new(0));
    let cinder_app = Router::new()
        .route(
            "/v3/volumes",
            post(|State(c): State<Arc<AtomicU64>>| async move {
                c.fetch_add(1, Ordering::SeqCst);
                (
                    axum::http::StatusCode::ACCEPTED,
                    Json(json!({"volume": {"id": VOL}})),
                )
            }),
        )
        .route(
            "/v3/volumes/{id}",
            get(
                |State(c): State<Arc<AtomicU64>>, Path(id): Path<String>| async move {
                    c.fetch_add(1, Ordering::SeqCst);
                    Json(json!({"volume": {"id": id, "status": "available",
                        "filler": "x".repeat(2000)}}))
                },
            ),
        )
        .with_state(calls.clone());
    let cinder = serve(cinder_app).await;
    // Keystone's catalog needs its own URL: bind first, then build the app.
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let keystone = format!("http://{}", l.local_addr().unwrap());
    let catalog = json!([
        {"type": "identity", "endpoints": [{"interface": "public", "url": format!("{keystone}/v3")}]},
        {"type": "block-storage", "endpoints": [{"interface": "public", "url": format!("{cinder}/v3")}]},
        {"type": "compute", "endpoints": [{"interface": "public", "url": "http://127.0.0.1:1/v2.1"}]},
    ]);
    let ks_app = Router::new().route(
        "/v3/auth/tokens",
        post(move || {
            let catalog = catalog.clone();
            async move {
                (
                    axum::http::StatusCode::CREATED,
                    [("x-subject-token", "tok-1")],
                    Json(
                        json!({"token": {"expires_at": "2099-01-01T00:00:00.000000Z",
                        "catalog": catalog}}),
                    ),
                )
            }
        }),
    );
    tokio::spawn(async move { axum::serve(l, ks_app).await.unwrap() });
    Backend {
        keystone,
        cinder,
        calls,
    }
}

fn client(timeout: Duration) -> reqwest::Client {
    cinder_csi::net::tls::install_provider();
    reqwest::Client::builder()
        .no_proxy()
        .timeout(timeout)
        .build()
        .unwrap()
}

/// Get a token through the proxy; returns the token document and the proxied Cinder URL.
async fn token(proxy: &FaultProxy) -> (Value, String) {
    let r = client(Duration::from_secs(10))
        .post(format!("{}/v3/auth/tokens", proxy.keystone_url()))
        .json(&json!({"auth": {}}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    assert_eq!(r.headers()["x-subject-token"], "tok-1");
    let doc: Value = r.json().await.unwrap();
    let cinder = doc["token"]["catalog"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["type"] == "block-storage")
        .map(|s| s["endpoints"][0]["url"].as_str().unwrap().to_string());
    (doc, cinder.unwrap_or_default())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn catalog_goes_through_the_proxy_and_services_can_be_hidden() {
    let b = backend().await;
    let proxy = FaultProxy::start(&b.keystone);
    let (doc, cinder) = token(&proxy).await;
    let urls: Vec<&str> = doc["token"]["catalog"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["endpoints"][0]["url"].as_str().unwrap())
        .collect();
    assert_eq!(urls[0], format!("{}/v3", proxy.keystone_url()));
    assert!(!cinder.starts_with(&b.cinder), "{cinder}");
    assert!(urls.iter().all(|u| !u.contains(&b.cinder[7..])), "{urls:?}");
    let r = client(Duration::from_secs(5))
        .get(format!("{cinder}/volumes/{VOL}"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(b.calls.load(Ordering::SeqCst), 1);
    let log = proxy.log();
    assert_eq!(log[0].service, "keystone");
    assert_eq!(log[0].route, "POST /v3/auth/tokens");
    assert_eq!(log[1].service, "cinder");
    assert_eq!(log[1].route, "GET /v3/volumes/{id}");
    assert_eq!(log[1].status, Some(200));

    proxy.hide_service("block-storage");
    let (doc, cinder) = token(&proxy).await;
    assert_eq!(cinder, "", "hidden: {doc}");
    assert_eq!(doc["token"]["catalog"].as_array().unwrap().len(), 2);
    proxy.unhide_all();
    let (_, cinder) = token(&proxy).await;
    assert_ne!(cinder, "");

    // A revoked token: every request carrying it is refused, others pass.
    assert!(proxy.revoke_current_token());
    let c = client(Duration::from_secs(5));
    let with = |t: &str| {
        c.get(format!("{cinder}/volumes/{VOL}"))
            .header("x-auth-token", t)
            .send()
    };
    assert_eq!(with("tok-1").await.unwrap().status(), 401);
    assert_eq!(with("tok-2").await.unwrap().status(), 200);
    assert_eq!(proxy.revoked_hits(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_faults_per_call_count_without_calling_the_backend() {
    let b = backend().await;
    let proxy = FaultProxy::start(&b.keystone);
    let (_, cinder) = token(&proxy).await;
    let c = client(Duration::from_secs(5));
    let second = proxy.inject(Rule::new(
        "POST /v3/volumes",
        When::Nth(2),
        Fault::Status(503),
    ));
    let mut got = vec![];
    for _ in 0..3 {
        let r = c
            .post(format!("{cinder}/volumes"))
            .json(&json!({}))
            .send()
            .await
            .unwrap();
        got.push(r.status().as_u16());
    }
    assert_eq!(got, [202, 503, 202]);
    assert_eq!(b.calls.load(Ordering::SeqCst), 2);
    assert_eq!((proxy.matched(second), proxy.injected(second)), (3, 1));
    proxy.remove(second);

    for (code, key) in [
        (401, "error"),
        (404, "itemNotFound"),
        (409, "conflictingRequest"),
        (413, "overLimit"),
        (500, "computeFault"),
        (502, "computeFault"),
    ] {
        let id = proxy.inject(Rule::new(
            "GET /v3/volumes/{id}",
            When::Every,
            Fault::Status(code),
        ));
        let r = c
            .get(format!("{cinder}/volumes/{VOL}"))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), code);
        if code == 413 {
            assert_eq!(r.headers()["retry-after"], "1");
        }
        let body: Value = r.json().await.unwrap();
        assert!(body.get(key).is_some(), "{code}: {body}");
        proxy.remove(id);
    }
    let html = proxy.inject(Rule::new("* /**", When::Every, Fault::Html(502)).on("cinder"));
    let r = c
        .get(format!("{cinder}/volumes/{VOL}"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 502);
    assert!(r.json::<Value>().await.is_err(), "an HTML page is not JSON");
    assert_eq!(proxy.injected(html), 1);
    assert_eq!(
        b.calls.load(Ordering::SeqCst),
        2,
        "none reached the backend"
    );
    assert_eq!(proxy.injected_total(), 1 + 6 + 1);
    assert_eq!(proxy.counts()["cinder POST /v3/volumes"], 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reset_lost_hang_and_broken_bodies() {
    let b = backend().await;
    let proxy = FaultProxy::start(&b.keystone);
    let (_, cinder) = token(&proxy).await;
    let c = client(Duration::from_secs(5));
    let post = || c.post(format!("{cinder}/volumes")).json(&json!({})).send();

    let reset = proxy.inject(Rule::new("POST /v3/volumes", When::Nth(1), Fault::Reset));
    let e = post().await.expect_err("reset");
    assert!(!e.is_timeout(), "{e:?}");
    assert_eq!(
        b.calls.load(Ordering::SeqCst),
        0,
        "reset: backend not called"
    );
    assert_eq!(proxy.injected(reset), 1);
    assert_eq!(post().await.unwrap().status(), 202, "only the first call");
    assert_eq!(b.calls.load(Ordering::SeqCst), 1);
    proxy.remove(reset);

    let lost = proxy.inject(Rule::new("POST /v3/volumes", When::Every, Fault::Lost));
    post().await.expect_err("lost response");
    assert_eq!(b.calls.load(Ordering::SeqCst), 2, "lost: the backend acted");
    proxy.remove(lost);
    let seen = proxy.log().last().cloned().unwrap();
    assert_eq!(
        (seen.fault.as_deref(), seen.status),
        (Some("lost response"), None)
    );

    let hang = proxy.inject(Rule::new("POST /v3/volumes", When::Every, Fault::Hang));
    let short = client(Duration::from_millis(700));
    let e = short
        .post(format!("{cinder}/volumes"))
        .send()
        .await
        .expect_err("hang");
    assert!(e.is_timeout(), "{e:?}");
    proxy.release_hangs();
    proxy.remove(hang);
    assert_eq!(
        b.calls.load(Ordering::SeqCst),
        2,
        "hang: backend not called"
    );

    let t = proxy.inject(Rule::new(
        "GET /v3/volumes/{id}",
        When::Nth(1),
        Fault::Truncate,
    ));
    let get = || c.get(format!("{cinder}/volumes/{VOL}")).send();
    let r = get().await.unwrap();
    assert_eq!(r.status(), 200, "headers arrive");
    assert!(r.bytes().await.is_err(), "the body is cut short");
    assert_eq!(proxy.injected(t), 1);
    proxy.inject(Rule::new(
        "GET /v3/volumes/{id}",
        When::Nth(1),
        Fault::Garbage,
    ));
    let r = get().await.unwrap();
    assert_eq!(r.status(), 200);
    assert!(r.json::<Value>().await.is_err(), "not JSON");
    assert_eq!(b.calls.load(Ordering::SeqCst), 4, "both forwarded");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn windows_delays_and_token_expiry() {
    let b = backend().await;
    let proxy = FaultProxy::start(&b.keystone);
    let (_, cinder) = token(&proxy).await;
    let c = client(Duration::from_secs(5));
    let get = || c.get(format!("{cinder}/volumes/{VOL}")).send();

    let window = proxy.inject(Rule::new(
        "* /**",
        When::For(Duration::from_millis(400)),
        Fault::Status(500),
    ));
    assert_eq!(get().await.unwrap().status(), 500);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(get().await.unwrap().status(), 200, "window over");
    assert_eq!(proxy.injected(window), 1);

    let range = proxy.inject(Rule::new(
        "GET /v3/volumes/{id}",
        When::Calls(2, 3),
        Fault::Status(502),
    ));
    let mut got = vec![];
    for _ in 0..4 {
        got.push(get().await.unwrap().status().as_u16());
    }
    assert_eq!(got, [200, 502, 502, 200]);
    proxy.remove(range);

    let d = Duration::from_millis(300);
    proxy.inject(Rule::new(
        "GET /v3/volumes/{id}",
        When::Nth(1),
        Fault::Delay(d),
    ));
    let t = Instant::now();
    assert_eq!(get().await.unwrap().status(), 200);
    assert!(t.elapsed() >= d, "delayed by at least {d:?}");

    let skew = proxy.inject(
        Rule::new(
            "POST /v3/auth/tokens",
            When::Nth(1),
            Fault::TokenExpiresIn(-120),
        )
        .on("keystone"),
    );
    let (doc, _) = token(&proxy).await;
    let at: chrono::DateTime<chrono::Utc> = doc["token"]["expires_at"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(at < chrono::Utc::now(), "already expired: {at}");
    assert_eq!(proxy.injected(skew), 1);
    let (doc, _) = token(&proxy).await;
    assert_eq!(doc["token"]["expires_at"], "2099-01-01T00:00:00.000000Z");
    proxy.inject(Rule::new(
        "POST /v3/auth/tokens",
        When::Nth(1),
        Fault::TokenSkew(-3600),
    ));
    let (doc, _) = token(&proxy).await;
    assert_eq!(doc["token"]["expires_at"], "2098-12-31T23:00:00.000000Z");
}
