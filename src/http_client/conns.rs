//! Open connections per API endpoint, bounded: a connection is opened only with a permit of
//! its endpoint, and the permit goes back when the connection closes.
//!
//! Why: each open connection to a threaded WSGI API behind keep-alive holds a server thread,
//! also while it sits idle in our pool. Bounding requests in flight (`limit.rs`) and idle
//! connections to N is not enough: the pool hands a connection back to its idle list in a
//! task of its own once the answer is read, so the next request often finds the list empty
//! and opens another connection, most of all after answers without a body (a DELETE's 202).
//! Measured against a counting server, a 20-request DELETE storm at N = 4 opened up to 8
//! connections at once; cinder-api at 1 x 8 threads then served our new connections only
//! once our idle ones timed out. With a permit per connection, a request that finds no idle
//! connection while N are open waits for the one being handed back instead, so a server with
//! N threads to spare never queues a connection of ours behind another one of ours.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::endpoint;

/// No permit came within the wait: every connection to the endpoint stayed open and busy.
#[derive(Debug)]
pub struct AllBusy {
    pub endpoint: String,
    pub open: usize,
    pub waited: Duration,
}

impl std::fmt::Display for AllBusy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "all {} connections to {} stayed in use for {:?}; \
             no other may be opened ([BlockStorage] api-concurrency)",
            self.open, self.endpoint, self.waited
        )
    }
}

impl std::error::Error for AllBusy {}

/// Permits per endpoint, created on first use.
pub struct ConnectionLimits {
    per_endpoint: usize,
    endpoints: Mutex<HashMap<String, Arc<Semaphore>>>,
}

impl ConnectionLimits {
    pub fn new(per_endpoint: usize) -> Self {
        Self {
            per_endpoint: per_endpoint.max(1),
            endpoints: Mutex::new(HashMap::new()),
        }
    }

    fn endpoint(&self, key: &str) -> Arc<Semaphore> {
        let mut map = self.endpoints.lock().unwrap_or_else(|e| e.into_inner());
        map.entry(key.to_string())
            .or_insert_with(|| Arc::new(Semaphore::new(self.per_endpoint)))
            .clone()
    }

    /// A permit to open one connection to `dst`'s endpoint, waiting at most `wait` for one
    /// to close. The connection keeps the permit for as long as it is open.
    pub async fn acquire(
        &self,
        dst: &http::Uri,
        wait: Duration,
    ) -> Result<OwnedSemaphorePermit, AllBusy> {
        let key = endpoint::key(
            dst.scheme_str().unwrap_or_default(),
            dst.host().unwrap_or_default(),
            dst.port_u16(),
        );
        let permits = self.endpoint(&key);
        match tokio::time::timeout(wait, permits.acquire_owned()).await {
            Ok(Ok(permit)) => Ok(permit),
            // The semaphore is never closed; a timeout is the only way here.
            _ => Err(AllBusy {
                endpoint: key,
                open: self.per_endpoint,
                waited: wait,
            }),
        }
    }

    /// Connections open to `key` (`endpoint::key`) now.
    #[cfg(test)]
    pub fn open(&self, key: &str) -> usize {
        self.per_endpoint - self.endpoint(key).available_permits()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_permit_comes_back_when_its_connection_closes() {
        let limits = ConnectionLimits::new(2);
        let dst: http::Uri = "http://h:8776/v3".parse().unwrap();
        let key = endpoint::key("http", "h", Some(8776));
        let wait = Duration::from_millis(50);
        let a = limits.acquire(&dst, wait).await.unwrap();
        let _b = limits.acquire(&dst, wait).await.unwrap();
        assert_eq!(limits.open(&key), 2);
        let e = limits.acquire(&dst, wait).await.unwrap_err();
        assert!(
            e.to_string()
                .starts_with("all 2 connections to http://h:8776"),
            "{e}"
        );
        // Another endpoint has its own permits.
        let other: http::Uri = "http://h:8774/".parse().unwrap();
        assert!(limits.acquire(&other, wait).await.is_ok());
        drop(a);
        assert_eq!(limits.open(&key), 1);
        assert!(limits.acquire(&dst, wait).await.is_ok());
    }
}
