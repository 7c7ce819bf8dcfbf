//! The connections to each API endpoint: at most N open, reused most-recent first, and a new
//! one opened only when reusing would mean a long wait.
//!
//! Why this and not a stock pool: a threaded WSGI API behind keep-alive (uWSGI, mod_wsgi,
//! gunicorn) gives each open connection a thread until it closes or idles out, so a new
//! connection is served only when a thread is free. Right after a burst other clients hold
//! threads too (nova-compute's and nova-api's own keep-alive connections to cinder-api, for
//! the server's 4 s), and a request sent on a new connection then waits in the server's
//! accept queue for seconds while the connections we already have answer in milliseconds: in
//! a 20-DELETE storm against the test cloud, 17 DELETEs went over the one connection we had
//! (13 ms each) and the 3 sent on new connections took 1.5–2.6 s. hyper-util's pool opens a
//! connection for every request that finds none idle, and hands connections back in a task of
//! its own, so it also opened more than N (up to 2N at N = 4 after bodiless answers).
//!
//! So: an idle connection is used if there is one; else, while fewer than N are open, a new
//! one is opened only when the requests on the open ones have run for `PATIENCE` (they are slow,
//! so parallelism pays); until then the request waits for one of them to come back. A
//! connection comes back only once its answer is read and it is ready for the next request.
//!
//! A connection opened beside others carries no request of ours until the server has answered
//! on it: it is opened in the background and proven with a `GET /` (the API's version
//! document), while the request that asked for it waits for whichever comes first, it or one
//! of the connections already served. In a 20-DELETE storm against the test cloud the three
//! DELETEs sent on new connections waited 2.1 s for a cinder-api thread while the other 17
//! were answered in 17–120 ms each over the connection we had (docs/PERFORMANCE.md).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::client::conn::http1::SendRequest;
use tokio::sync::oneshot;
use tokio::time::Instant;

use super::connect::{BoxError, Connector};
use super::endpoint;

/// How long the requests on all open connections may run before a waiting request opens a
/// connection of its own rather than wait for theirs: above what a Cinder, Nova or Keystone
/// request takes when the API is not busy (10–100 ms), far below what waiting behind other
/// clients' connections costs (seconds).
pub const PATIENCE: Duration = Duration::from_millis(150);

/// How long a new connection's proof may take before it is closed: beyond the keep-alive
/// timeouts of the WSGI servers in front of the APIs (uWSGI 4 s), after which a thread is free.
pub const PROOF_WITHIN: Duration = Duration::from_secs(10);

type Sender = SendRequest<Full<Bytes>>;

/// An open connection that is not in use; `gen` tells this stay in the idle list from later
/// ones, for the timer that closes it.
struct Idle {
    sender: Sender,
    proxied: bool,
    gen: u64,
}

#[derive(Default)]
struct State {
    /// Most recently used last.
    idle: Vec<Idle>,
    /// Connected, connecting and in use, idle ones included.
    open: usize,
    /// Requests in flight on a connection: lease id → since.
    busy: HashMap<u64, Instant>,
    /// Requests waiting for a connection, in order: handed one, or `None` to look again.
    waiters: VecDeque<oneshot::Sender<Option<Idle>>>,
    next_id: u64,
}

impl State {
    /// Hand `conn` (or a fresh look, `None`) to the first waiter still waiting.
    fn hand_on(&mut self, mut conn: Option<Idle>) -> Option<Idle> {
        while let Some(w) = self.waiters.pop_front() {
            match w.send(conn) {
                Ok(()) => return None,
                Err(back) => conn = back,
            }
        }
        conn
    }
}

struct Endpoint {
    state: Mutex<State>,
}

impl Endpoint {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

enum Step {
    Use(Lease),
    /// Counted open already.
    Open,
    /// Counted open already: opened and proven in the background; meanwhile wait for it or
    /// for a connection handed on.
    OpenBeside(oneshot::Receiver<Option<Idle>>),
    /// For a connection handed on, until the given time when there is room for a new one.
    Wait(oneshot::Receiver<Option<Idle>>, Option<Instant>),
}

pub struct Pool {
    connector: Connector,
    per_endpoint: usize,
    idle_for: Duration,
    endpoints: Mutex<HashMap<String, Arc<Endpoint>>>,
}

/// The right to one request on one connection; back to the pool with [`Lease::give_back`],
/// closed when dropped without.
pub struct Lease {
    sender: Option<Sender>,
    pub proxied: bool,
    id: u64,
    returned: bool,
    endpoint: Arc<Endpoint>,
    idle_for: Duration,
}

impl Pool {
    pub fn new(connector: Connector, per_endpoint: usize, idle_for: Duration) -> Self {
        Self {
            connector,
            per_endpoint: per_endpoint.max(1),
            idle_for,
            endpoints: Mutex::new(HashMap::new()),
        }
    }

    fn endpoint(&self, key: &str) -> Arc<Endpoint> {
        let mut map = self.endpoints.lock().unwrap_or_else(|e| e.into_inner());
        map.entry(key.to_string())
            .or_insert_with(|| {
                Arc::new(Endpoint {
                    state: Mutex::new(State::default()),
                })
            })
            .clone()
    }

    /// A connection to `dst`'s endpoint for one request (the caller bounds the wait).
    pub async fn checkout(&self, dst: &http::Uri) -> Result<Lease, BoxError> {
        let endpoint = self.endpoint(&key(dst));
        loop {
            let (rx, until) = match self.next_step(&endpoint) {
                Step::Use(lease) => return Ok(lease),
                Step::Open => return self.open(&endpoint, dst).await,
                Step::OpenBeside(rx) => {
                    self.open_beside(&endpoint, dst);
                    (rx, None)
                }
                Step::Wait(rx, until) => (rx, until),
            };
            let handed = match until {
                Some(t) => tokio::time::timeout_at(t, rx).await.ok(),
                None => Some(rx.await),
            };
            if let Some(Ok(Some(conn))) = handed {
                let mut st = endpoint.lock();
                if conn.sender.is_closed() {
                    st.open -= 1;
                    continue;
                }
                return Ok(lease(
                    &endpoint,
                    &mut st,
                    conn.sender,
                    conn.proxied,
                    self.idle_for,
                ));
            }
            // Timed out (the requests in flight are slow) or told to look again.
        }
    }

    /// What a request for a connection does now, decided under the lock.
    fn next_step(&self, endpoint: &Arc<Endpoint>) -> Step {
        let mut st = endpoint.lock();
        while let Some(conn) = st.idle.pop() {
            if conn.sender.is_closed() {
                st.open -= 1;
                continue;
            }
            return Step::Use(lease(
                endpoint,
                &mut st,
                conn.sender,
                conn.proxied,
                self.idle_for,
            ));
        }
        // When the oldest request in flight will have run for PATIENCE.
        let slow_at = st.busy.values().min().map(|since| *since + PATIENCE);
        let room = st.open < self.per_endpoint;
        if room && slow_at.is_none_or(|t| t <= Instant::now()) {
            st.open += 1;
            if st.open == 1 {
                // The only one: nothing it could lose a race to.
                return Step::Open;
            }
            let (tx, rx) = oneshot::channel();
            st.waiters.push_back(tx);
            return Step::OpenBeside(rx);
        }
        let (tx, rx) = oneshot::channel();
        st.waiters.push_back(tx);
        Step::Wait(rx, slow_at.filter(|_| room))
    }

    /// A new connection, counted open by the caller; uncounted again if it fails.
    async fn open(&self, endpoint: &Arc<Endpoint>, dst: &http::Uri) -> Result<Lease, BoxError> {
        match connect(&self.connector, dst).await {
            Ok((sender, proxied)) => {
                let mut st = endpoint.lock();
                Ok(lease(endpoint, &mut st, sender, proxied, self.idle_for))
            }
            Err(e) => {
                uncount(endpoint);
                Err(e)
            }
        }
    }

    /// A connection beside the open ones, counted open by the caller, opened and proven in a
    /// task of its own; it joins the pool (to the first waiter, or idle) once the server has
    /// answered on it, or is closed and uncounted if the server does not within `PROOF_WITHIN`.
    fn open_beside(&self, endpoint: &Arc<Endpoint>, dst: &http::Uri) {
        let (connector, endpoint, dst, idle_for) = (
            self.connector.clone(),
            endpoint.clone(),
            dst.clone(),
            self.idle_for,
        );
        tokio::spawn(async move {
            let proven = tokio::time::timeout(PROOF_WITHIN, async {
                let (mut sender, proxied) = connect(&connector, &dst).await?;
                // Through a plain-http proxy the request would need the proxy's credentials,
                // which the transport holds: such a connection goes unproven.
                if !proxied {
                    prove(&mut sender, &dst).await?;
                }
                Ok::<_, BoxError>((sender, proxied))
            })
            .await;
            match proven {
                Ok(Ok((sender, proxied))) => {
                    let l = lease(&endpoint, &mut endpoint.lock(), sender, proxied, idle_for);
                    l.give_back().await;
                }
                Ok(Err(e)) => {
                    tracing::debug!(error = %e, "a new API connection failed its proof");
                    uncount(&endpoint);
                }
                Err(_) => {
                    tracing::debug!("a new API connection was not served within {PROOF_WITHIN:?}");
                    uncount(&endpoint);
                }
            }
        });
    }
}

/// A connection counted open did not open (or was closed unused): uncount it, and have the
/// first waiter look again.
fn uncount(endpoint: &Endpoint) {
    let mut st = endpoint.lock();
    st.open -= 1;
    st.hand_on(None);
}

fn lease(
    endpoint: &Arc<Endpoint>,
    st: &mut State,
    sender: Sender,
    proxied: bool,
    idle_for: Duration,
) -> Lease {
    st.next_id += 1;
    let id = st.next_id;
    st.busy.insert(id, Instant::now());
    Lease {
        sender: Some(sender),
        proxied,
        id,
        returned: false,
        endpoint: endpoint.clone(),
        idle_for,
    }
}

/// A connection to `dst`, with the task that drives it; whether it goes through a proxy.
async fn connect(connector: &Connector, dst: &http::Uri) -> Result<(Sender, bool), BoxError> {
    let conn = connector.open(dst.clone()).await?;
    let proxied = conn.proxied();
    let (sender, connection) = hyper::client::conn::http1::handshake(conn).await?;
    // The connection's own task; it ends (and the socket closes) when the server closes it
    // or every sender is dropped.
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            tracing::debug!(error = %e, "API connection ended with an error");
        }
    });
    Ok((sender, proxied))
}

/// `GET /` on a new connection, its answer read whole: any answer shows a server thread serves
/// the connection (OpenStack APIs answer their version document there).
async fn prove(sender: &mut Sender, dst: &http::Uri) -> Result<(), BoxError> {
    use http_body_util::BodyExt;
    let host = dst.authority().map_or("", |a| a.as_str());
    let req = http::Request::get("/")
        .header(http::header::HOST, host)
        .body(Full::new(Bytes::new()))?;
    sender.ready().await?;
    let resp = sender.send_request(req).await?;
    http_body_util::Limited::new(resp.into_body(), 1 << 20)
        .collect()
        .await?;
    Ok(())
}

impl Lease {
    pub fn sender(&mut self) -> &mut Sender {
        self.sender
            .as_mut()
            .expect("a lease holds its sender until given back")
    }

    /// The answer is read: the connection goes to the first waiting request, or idles (and is
    /// closed after `idle_for` unless used again).
    pub async fn give_back(mut self) {
        let Some(mut sender) = self.sender.take() else {
            return;
        };
        // Ready at once after a whole answer; not ready: the server closed it (Drop counts it).
        let ready = tokio::time::timeout(Duration::from_millis(100), sender.ready()).await;
        if !matches!(ready, Ok(Ok(()))) {
            return;
        }
        self.returned = true;
        let mut st = self.endpoint.lock();
        st.busy.remove(&self.id);
        st.next_id += 1;
        let gen = st.next_id;
        let conn = Idle {
            sender,
            proxied: self.proxied,
            gen,
        };
        if let Some(conn) = st.hand_on(Some(conn)) {
            st.idle.push(conn);
            let (endpoint, idle_for) = (self.endpoint.clone(), self.idle_for);
            tokio::spawn(async move {
                tokio::time::sleep(idle_for).await;
                let mut st = endpoint.lock();
                if let Some(i) = st.idle.iter().position(|c| c.gen == gen) {
                    // Idle all along since: close it, so it holds no server thread.
                    st.idle.remove(i);
                    st.open -= 1;
                    st.hand_on(None);
                }
            });
        }
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if self.returned {
            return;
        }
        // Closed with its request unfinished (error, timeout, cancelled) or not ready again.
        let mut st = self.endpoint.lock();
        st.busy.remove(&self.id);
        st.open -= 1;
        st.hand_on(None);
    }
}

fn key(dst: &http::Uri) -> String {
    endpoint::key(
        dst.scheme_str().unwrap_or_default(),
        dst.host().unwrap_or_default(),
        dst.port_u16(),
    )
}
