//! Requests in flight per API endpoint (scheme, host, port), bounded.
//!
//! Why: OpenStack APIs commonly run as threaded WSGI (uWSGI, mod_wsgi, gunicorn) behind HTTP
//! keep-alive, where each open connection holds a server thread until it is closed or idles
//! out (uWSGI: 4 s). A client that opens one connection per concurrent request makes the
//! requests beyond the thread count wait in the server's accept queue, behind connections
//! that are only idle, for the keep-alive timeout: latency in steps of ~4 s, and timeouts
//! under a larger burst. Bounding requests in flight per endpoint (and idle connections to the
//! same number, see `build_client`) keeps the connections few and busy; requests beyond the
//! bound wait here, in our process, where they cost nothing and are served in order.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Requests in flight per endpoint when `[BlockStorage] api-concurrency` is unset: at most
/// the thread count of a small WSGI deployment (1 process x 4 threads), enough for a storm
/// (Cinder answers in 10-30 ms), and far below what a cloud's API would queue.
pub const DEFAULT_PER_ENDPOINT: usize = 4;

/// One semaphore per endpoint, created on first use.
pub struct EndpointLimits {
    per_endpoint: usize,
    endpoints: Mutex<HashMap<String, Arc<Semaphore>>>,
}

impl EndpointLimits {
    pub fn new(per_endpoint: usize) -> Self {
        Self {
            per_endpoint: per_endpoint.max(1),
            endpoints: Mutex::new(HashMap::new()),
        }
    }

    /// Wait for a slot on `url`'s endpoint; the request may be sent while the permit lives.
    pub async fn acquire(&self, url: &reqwest::Url) -> OwnedSemaphorePermit {
        let key = endpoint_key(url);
        let sem = {
            let mut map = self.endpoints.lock().unwrap_or_else(|e| e.into_inner());
            map.entry(key)
                .or_insert_with(|| Arc::new(Semaphore::new(self.per_endpoint)))
                .clone()
        };
        sem.acquire_owned().await.expect("never closed")
    }
}

/// What identifies a connection pool entry: scheme, host and port (default port filled in).
fn endpoint_key(url: &reqwest::Url) -> String {
    format!(
        "{}://{}:{}",
        url.scheme(),
        url.host_str().unwrap_or_default(),
        url.port_or_known_default().unwrap_or_default()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_are_scheme_host_and_port() {
        let k = |u: &str| endpoint_key(&reqwest::Url::parse(u).unwrap());
        assert_eq!(k("http://h:8776/v3/volumes"), k("http://h:8776/"));
        assert_eq!(k("https://h/v3"), "https://h:443");
        assert_ne!(k("http://h:8776/"), k("http://h:8774/"));
    }

    #[tokio::test]
    async fn slots_are_per_endpoint() {
        let l = EndpointLimits::new(1);
        let a = reqwest::Url::parse("http://h:1/").unwrap();
        let b = reqwest::Url::parse("http://h:2/").unwrap();
        let _held = l.acquire(&a).await;
        // Another endpoint is not blocked by the first one's only slot ...
        let _other = l.acquire(&b).await;
        // ... but the same endpoint is, until the slot is released.
        let again = tokio::time::timeout(std::time::Duration::from_millis(50), l.acquire(&a));
        assert!(again.await.is_err());
    }
}
