//! The client's behaviour towards one endpoint under a storm, counted by the server: how many
//! connections it opens and how many requests it has in flight at once. A client that opens a
//! connection per concurrent request makes a threaded WSGI API behind keep-alive queue
//! requests behind idle connections (docs/PERFORMANCE.md); this catches that coming back.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use http_body_util::Full;
use hyper::body::Bytes;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;

use super::*;
use crate::cloud::openstack::metrics::ApiMetrics;

#[derive(Default)]
struct Seen {
    connections: AtomicUsize,
    open: AtomicUsize,
    max_open: AtomicUsize,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
    requests: AtomicUsize,
}

fn raise(max: &AtomicUsize, now: usize) {
    max.fetch_max(now, Ordering::SeqCst);
}

/// A keep-alive HTTP/1.1 server that takes `work` per request and counts what it sees.
async fn server(work: Duration) -> (String, Arc<Seen>) {
    let seen = Arc::new(Seen::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v3/volumes", listener.local_addr().unwrap());
    let s = seen.clone();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let s = s.clone();
            s.connections.fetch_add(1, Ordering::SeqCst);
            raise(&s.max_open, s.open.fetch_add(1, Ordering::SeqCst) + 1);
            tokio::spawn(async move {
                let svc = service_fn(|_req| {
                    let s = s.clone();
                    async move {
                        s.requests.fetch_add(1, Ordering::SeqCst);
                        raise(
                            &s.max_in_flight,
                            s.in_flight.fetch_add(1, Ordering::SeqCst) + 1,
                        );
                        tokio::time::sleep(work).await;
                        s.in_flight.fetch_sub(1, Ordering::SeqCst);
                        Ok::<_, std::convert::Infallible>(hyper::Response::new(Full::new(
                            Bytes::from_static(b"{}"),
                        )))
                    }
                });
                let _ = http1::Builder::new()
                    .keep_alive(true)
                    .serve_connection(TokioIo::new(tcp), svc)
                    .await;
                s.open.fetch_sub(1, Ordering::SeqCst);
            });
        }
    });
    (url, seen)
}

async fn client(per_endpoint: usize) -> Http {
    let mut o = OpenStackOptions::new("http://127.0.0.1:5000/v3", Default::default());
    o.block_storage.api_concurrency = Some(per_endpoint);
    Http::new(
        build_client(&o).await.unwrap(),
        Arc::new(ApiMetrics::new()),
        per_endpoint,
    )
}

async fn storm(http: &Http, url: &str, n: usize) {
    let calls = (0..n).map(|i| {
        let op = if i % 2 == 0 {
            Op::VolumeGet
        } else {
            Op::VolumeCreate
        };
        let rb = if i % 2 == 0 {
            http.client.get(url)
        } else {
            http.client.post(url)
        };
        http.execute(op, rb, &[])
    });
    for r in futures::future::join_all(calls).await {
        r.expect("every call of the storm answered");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_storm_uses_few_connections_and_bounded_concurrency_per_endpoint() {
    const N: usize = 60;
    const C: usize = 4;
    let (url, seen) = server(Duration::from_millis(20)).await;
    let http = client(C).await;
    storm(&http, &url, N).await;
    let connections = seen.connections.load(Ordering::SeqCst);
    let max_in_flight = seen.max_in_flight.load(Ordering::SeqCst);
    let max_open = seen.max_open.load(Ordering::SeqCst);
    assert_eq!(seen.requests.load(Ordering::SeqCst), N);
    assert!(
        max_in_flight <= C,
        "{max_in_flight} requests in flight at once on one endpoint; at most {C} may be"
    );
    assert!(
        max_in_flight >= 2,
        "the storm ran one request at a time ({max_in_flight}): the bound is not a lock"
    );
    // Idle connections are bounded by C and reused. A connection being handed back to the
    // pool while the next request starts may race with a new connect, so allow 2C opened.
    assert!(
        connections <= 2 * C,
        "{connections} connections opened for {N} requests; a storm must reuse at most {}",
        2 * C
    );
    assert!(max_open <= 2 * C, "{max_open} connections open at once");

    // A second storm right after reuses the idle connections instead of opening new ones.
    storm(&http, &url, N).await;
    let again = seen.connections.load(Ordering::SeqCst);
    assert!(
        again <= connections + C,
        "{again} connections after the second storm (was {connections})"
    );
}

/// The same storm from a client without the bounds (reqwest's defaults, as before the fix):
/// the server sees a connection and a request in flight per call, so the assertions above
/// can fail and would on that client.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unbounded_client_is_caught_by_the_same_counts() {
    const N: usize = 60;
    let (url, seen) = server(Duration::from_millis(50)).await;
    crate::tls::install_provider();
    let http = Http::new(
        reqwest::Client::new(),
        Arc::new(ApiMetrics::new()),
        usize::MAX >> 4,
    );
    storm(&http, &url, N).await;
    let connections = seen.connections.load(Ordering::SeqCst);
    let max_in_flight = seen.max_in_flight.load(Ordering::SeqCst);
    assert!(connections > 8, "{connections}");
    assert!(max_in_flight > 4, "{max_in_flight}");
}

#[tokio::test]
async fn the_bound_is_per_endpoint_and_configurable() {
    let (a, seen_a) = server(Duration::from_millis(20)).await;
    let (b, seen_b) = server(Duration::from_millis(20)).await;
    let http = client(2).await;
    let (ra, rb) = tokio::join!(storm(&http, &a, 12), storm(&http, &b, 12));
    let _ = (ra, rb);
    for seen in [seen_a, seen_b] {
        let max = seen.max_in_flight.load(Ordering::SeqCst);
        assert_eq!(max, 2, "each endpoint gets its own 2 slots, used in full");
    }
}

#[tokio::test]
async fn the_timeout_counts_from_sending_not_from_waiting_for_a_slot() {
    // One slot, requests of 300 ms each, a 1 s request timeout: the fifth request waits
    // 1.2 s for its slot, yet answers, since its own time on the wire is 300 ms.
    let (url, seen) = server(Duration::from_millis(300)).await;
    let mut o = OpenStackOptions::new("http://127.0.0.1:5000/v3", Default::default());
    o.request_timeout = Duration::from_secs(1);
    o.block_storage.api_concurrency = Some(1);
    let http = Http::new(
        build_client(&o).await.unwrap(),
        Arc::new(ApiMetrics::new()),
        1,
    );
    let calls = (0..5).map(|_| http.execute(Op::VolumeGet, http.client.get(&url), &[]));
    for r in futures::future::join_all(calls).await {
        r.expect("no request timed out while it waited for a slot");
    }
    assert_eq!(seen.max_in_flight.load(Ordering::SeqCst), 1);
}
