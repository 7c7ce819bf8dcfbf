//! Requests in flight per API endpoint (scheme, host, port), bounded, writes first.
//!
//! Why bounded: OpenStack APIs commonly run as threaded WSGI (uWSGI, mod_wsgi, gunicorn)
//! behind HTTP keep-alive, where each open connection holds a server thread until it is closed
//! or idles out (uWSGI: 4 s). A client that opens one connection per concurrent request makes
//! the requests beyond the thread count wait in the server's accept queue, behind connections
//! that are only idle, for the keep-alive timeout: latency in steps of ~4 s, and timeouts
//! under a larger burst. Bounding requests in flight per endpoint (and idle connections to the
//! same number, see `Http::build`) keeps the connections few and busy; requests beyond the
//! bound wait here, in our process, where they cost nothing.
//!
//! Why writes first: in a storm every RPC reads before it writes (CreateVolume looks its name
//! up, then POSTs; ControllerPublish reads the volume and the server, then POSTs the attach).
//! In arrival order, all the reads of a burst would go before the first write, and the cloud's
//! slow part (cinder-volume creating, nova-compute attaching, one after the other) would start
//! only once every lookup was answered. A waiting write (any method but GET and HEAD) takes the
//! next free slot before waiting reads, so each RPC's write follows its own read and the
//! backend's work overlaps the rest of the lookups. Reads still go in order among themselves,
//! and a burst of writes is bounded by the RPCs in flight, so reads are delayed, not starved.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;

/// Requests in flight per endpoint when `[BlockStorage] api-concurrency` is unset: at most
/// the thread count of a small WSGI deployment (1 process x 4 threads), enough for a storm
/// (Cinder answers in 10-30 ms), and far below what a cloud's API would queue.
pub const DEFAULT_PER_ENDPOINT: usize = 4;

/// Which queue a request waits in for a slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Turn {
    /// GET, HEAD: lookups, polls, lists.
    Read,
    /// Everything else: it starts work in the cloud, so it goes first.
    Write,
}

impl Turn {
    pub fn of(method: &http::Method) -> Self {
        if matches!(*method, http::Method::GET | http::Method::HEAD) {
            Turn::Read
        } else {
            Turn::Write
        }
    }
}

/// One endpoint's slots and the requests waiting for one.
#[derive(Default)]
struct Slots {
    free: usize,
    writes: VecDeque<oneshot::Sender<()>>,
    reads: VecDeque<oneshot::Sender<()>>,
}

impl Slots {
    /// A slot came back: hand it to the first waiter still waiting, writes first, or keep it.
    fn give_back(&mut self) {
        for queue in [&mut self.writes, &mut self.reads] {
            while let Some(waiter) = queue.pop_front() {
                if waiter.send(()).is_ok() {
                    return;
                }
            }
        }
        self.free += 1;
    }
}

type Shared = Arc<Mutex<Slots>>;

fn lock(slots: &Shared) -> std::sync::MutexGuard<'_, Slots> {
    slots.lock().unwrap_or_else(|e| e.into_inner())
}

/// The right to send one request to an endpoint; the slot is handed on when it drops.
pub struct Slot(Shared);

impl Drop for Slot {
    fn drop(&mut self) {
        lock(&self.0).give_back();
    }
}

/// A place in a queue. Dropped before its slot is used (the RPC was cancelled), it gives
/// back a slot it was handed, or makes sure it is never handed one.
struct Waiting {
    slots: Shared,
    rx: Option<oneshot::Receiver<()>>,
}

impl Drop for Waiting {
    fn drop(&mut self) {
        let Some(mut rx) = self.rx.take() else {
            return;
        };
        // Under the lock, so no slot is handed to this waiter between the check and the close.
        let mut slots = lock(&self.slots);
        if rx.try_recv().is_ok() {
            slots.give_back();
        } else {
            rx.close();
        }
    }
}

/// Slots per endpoint, created on first use.
pub struct EndpointLimits {
    per_endpoint: usize,
    endpoints: Mutex<HashMap<String, Shared>>,
}

impl EndpointLimits {
    pub fn new(per_endpoint: usize) -> Self {
        Self {
            per_endpoint: per_endpoint.max(1),
            endpoints: Mutex::new(HashMap::new()),
        }
    }

    /// Wait for a slot on `url`'s endpoint; the request may be sent while the slot lives.
    pub async fn acquire(&self, url: &url::Url, turn: Turn) -> Slot {
        let slots = {
            let mut map = self.endpoints.lock().unwrap_or_else(|e| e.into_inner());
            map.entry(endpoint_key(url))
                .or_insert_with(|| {
                    Arc::new(Mutex::new(Slots {
                        free: self.per_endpoint,
                        ..Slots::default()
                    }))
                })
                .clone()
        };
        let mut waiting = {
            let mut s = lock(&slots);
            // A free slot is taken at once only when nobody waits (otherwise a newcomer
            // would overtake the queue whenever a slot is between two holders).
            if s.free > 0 && s.writes.is_empty() && s.reads.is_empty() {
                s.free -= 1;
                drop(s);
                return Slot(slots);
            }
            let (tx, rx) = oneshot::channel();
            match turn {
                Turn::Write => s.writes.push_back(tx),
                Turn::Read => s.reads.push_back(tx),
            }
            Waiting {
                slots: slots.clone(),
                rx: Some(rx),
            }
        };
        let rx = waiting.rx.as_mut().expect("set above");
        // The sender is only dropped unsent by `give_back`'s loop, which it never does while
        // this receiver is open: an error cannot happen, and would still mean "go".
        let _ = rx.await;
        waiting.rx = None;
        Slot(slots)
    }
}

/// What identifies an endpoint: scheme, host and port, as the connections are keyed.
fn endpoint_key(url: &url::Url) -> String {
    crate::net::http_client::endpoint_key(
        url.scheme(),
        url.host_str().unwrap_or_default(),
        url.port(),
    )
}

#[cfg(test)]
mod tests {
    use futures::{poll, FutureExt};
    use std::task::Poll;

    use super::*;

    fn url(port: u16) -> url::Url {
        url::Url::parse(&format!("http://h:{port}/")).unwrap()
    }

    #[test]
    fn endpoints_are_scheme_host_and_port() {
        let k = |u: &str| endpoint_key(&url::Url::parse(u).unwrap());
        assert_eq!(k("http://h:8776/v3/volumes"), k("http://h:8776/"));
        assert_eq!(k("https://h/v3"), "https://h:443");
        assert_ne!(k("http://h:8776/"), k("http://h:8774/"));
    }

    #[test]
    fn reads_are_get_and_head() {
        assert_eq!(Turn::of(&http::Method::GET), Turn::Read);
        assert_eq!(Turn::of(&http::Method::HEAD), Turn::Read);
        for m in ["POST", "PUT", "DELETE", "PATCH"] {
            assert_eq!(Turn::of(&m.parse().unwrap()), Turn::Write, "{m}");
        }
    }

    #[tokio::test]
    async fn slots_are_per_endpoint() {
        let l = EndpointLimits::new(1);
        let (one, two) = (url(1), url(2));
        let _held = l.acquire(&one, Turn::Read).await;
        // Another endpoint is not blocked by the first one's only slot ...
        let _other = l.acquire(&two, Turn::Read).await;
        // ... but the same endpoint is, until the slot is released.
        assert!(poll!(Box::pin(l.acquire(&one, Turn::Write))).is_pending());
    }

    /// The order in which queued requests get the one slot: writes first, each queue in order.
    #[tokio::test]
    async fn a_waiting_write_goes_before_waiting_reads() {
        let l = EndpointLimits::new(1);
        let u = url(1);
        let mut slot = l.acquire(&u, Turn::Read).await;
        let queued = [
            ("r1", Turn::Read),
            ("r2", Turn::Read),
            ("w1", Turn::Write),
            ("w2", Turn::Write),
        ];
        let mut waiting: Vec<_> = queued
            .iter()
            .map(|&(name, turn)| (name, Box::pin(l.acquire(&u, turn))))
            .collect();
        // Each polled once, so each is queued, in this order.
        for (_, f) in &mut waiting {
            assert!(poll!(f).is_pending());
        }
        let mut served = Vec::new();
        while !waiting.is_empty() {
            drop(slot);
            let mut ready = Vec::new();
            for (i, (_, f)) in waiting.iter_mut().enumerate() {
                if let Poll::Ready(s) = poll!(f) {
                    ready.push((i, s));
                }
            }
            assert_eq!(ready.len(), 1, "one request holds the one slot");
            let (i, s) = ready.pop().expect("one");
            served.push(waiting.remove(i).0);
            slot = s;
        }
        assert_eq!(served, ["w1", "w2", "r1", "r2"]);
    }

    /// An RPC cancelled while it waits, or just after it was handed the slot, loses its place
    /// without taking the slot with it.
    #[tokio::test]
    async fn a_cancelled_waiter_does_not_keep_a_slot() {
        let l = EndpointLimits::new(1);
        let u = url(1);
        let held = l.acquire(&u, Turn::Read).await;
        let mut w = Box::pin(l.acquire(&u, Turn::Write));
        assert!(poll!(&mut w).is_pending());
        drop(w);
        drop(held);
        let slot = l
            .acquire(&u, Turn::Read)
            .now_or_never()
            .expect("the slot is free");
        let mut late = Box::pin(l.acquire(&u, Turn::Read));
        assert!(poll!(&mut late).is_pending());
        // Handed the slot, then dropped before it was polled again: the slot goes on.
        drop(slot);
        drop(late);
        assert!(l.acquire(&u, Turn::Read).now_or_never().is_some());
    }
}
