//! A counting TCP relay in front of the test cloud's APIs, so both drivers' requests are
//! counted the same way, by the wire: it listens on 127.0.0.2 at each API's port and relays
//! every connection one-to-one to 127.0.0.1 (so connection reuse and keep-alive behave as
//! without it), rewriting `127.0.0.1` to `127.0.0.2` in answers (same length, so bodies and
//! Content-Length stay valid) so the catalog Keystone hands out points back through it.
//!
//! Per endpoint it counts connections opened, requests (HTTP/1.1 without pipelining: a
//! request starts with the first bytes a client sends after the previous answer began), the
//! most requests in flight at once and the most connections open at once, and per request
//! line ("METHOD /path" with ids replaced by `{id}`).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

pub const FRONT: &str = "127.0.0.2";
pub const BACK: &str = "127.0.0.1";

#[derive(Default)]
struct Counters {
    connections: AtomicUsize,
    open: AtomicUsize,
    max_open: AtomicUsize,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
    requests: Mutex<BTreeMap<String, u64>>,
}

/// What one endpoint saw between two snapshots.
#[derive(Debug, Clone, Default)]
pub struct Seen {
    pub connections: usize,
    pub max_open: usize,
    pub max_in_flight: usize,
    pub requests: BTreeMap<String, u64>,
}

impl Seen {
    pub fn total(&self) -> u64 {
        self.requests.values().sum()
    }
}

pub struct Relay {
    endpoints: Vec<(&'static str, Arc<Counters>)>,
}

impl Relay {
    /// Start relaying `(name, port)` for each API.
    pub async fn start(apis: &[(&'static str, u16)]) -> std::io::Result<Self> {
        let mut endpoints = Vec::new();
        for &(name, port) in apis {
            let listener = TcpListener::bind((FRONT, port)).await?;
            let c = Arc::new(Counters::default());
            endpoints.push((name, c.clone()));
            tokio::spawn(async move {
                while let Ok((client, _)) = listener.accept().await {
                    let c = c.clone();
                    tokio::spawn(async move {
                        if let Ok(server) = TcpStream::connect((BACK, port)).await {
                            relay(client, server, &c).await;
                        }
                    });
                }
            });
        }
        Ok(Self { endpoints })
    }

    /// Counts so far; maxima are reset, so the next snapshot has the maxima in between.
    pub fn take(&self) -> BTreeMap<&'static str, Seen> {
        self.endpoints
            .iter()
            .map(|(name, c)| {
                let seen = Seen {
                    connections: c.connections.load(Ordering::SeqCst),
                    max_open: c
                        .max_open
                        .swap(c.open.load(Ordering::SeqCst), Ordering::SeqCst),
                    max_in_flight: c
                        .max_in_flight
                        .swap(c.in_flight.load(Ordering::SeqCst), Ordering::SeqCst),
                    requests: c.requests.lock().unwrap().clone(),
                };
                (*name, seen)
            })
            .collect()
    }
}

/// `after` minus `before` for the cumulative counts; maxima are `after`'s.
pub fn since(
    before: &BTreeMap<&'static str, Seen>,
    after: &BTreeMap<&'static str, Seen>,
) -> BTreeMap<&'static str, Seen> {
    after
        .iter()
        .map(|(name, a)| {
            let b = before.get(name).cloned().unwrap_or_default();
            let requests = a
                .requests
                .iter()
                .map(|(k, v)| (k.clone(), v - b.requests.get(k).copied().unwrap_or(0)))
                .filter(|(_, v)| *v > 0)
                .collect();
            let seen = Seen {
                connections: a.connections - b.connections,
                max_open: a.max_open,
                max_in_flight: a.max_in_flight,
                requests,
            };
            (*name, seen)
        })
        .collect()
}

async fn relay(client: TcpStream, server: TcpStream, c: &Counters) {
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    c.connections.fetch_add(1, Ordering::SeqCst);
    let open = c.open.fetch_add(1, Ordering::SeqCst) + 1;
    c.max_open.fetch_max(open, Ordering::SeqCst);
    let outstanding = AtomicBool::new(false);
    let (mut cr, mut cw) = client.into_split();
    let (mut sr, mut sw) = server.into_split();
    let up = async {
        let mut buf = vec![0u8; 16384];
        loop {
            let n = match cr.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            if !outstanding.swap(true, Ordering::SeqCst) {
                let now = c.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
                c.max_in_flight.fetch_max(now, Ordering::SeqCst);
                *c.requests
                    .lock()
                    .unwrap()
                    .entry(request_line(&buf[..n]))
                    .or_default() += 1;
            }
            if sw.write_all(&buf[..n]).await.is_err() {
                break;
            }
        }
        let _ = sw.shutdown().await;
    };
    let down = async {
        let mut buf = vec![0u8; 16384];
        // A tail that may be the start of an address split across reads.
        let mut carry: Vec<u8> = Vec::new();
        loop {
            let read = if carry.is_empty() {
                Ok(sr.read(&mut buf).await)
            } else {
                tokio::time::timeout(std::time::Duration::from_millis(2), sr.read(&mut buf)).await
            };
            let n = match read {
                Err(_) => {
                    // Nothing more came: the tail was not an address.
                    if cw.write_all(&carry).await.is_err() {
                        break;
                    }
                    carry.clear();
                    continue;
                }
                Ok(Ok(0)) | Ok(Err(_)) => break,
                Ok(Ok(n)) => n,
            };
            if outstanding.swap(false, Ordering::SeqCst) {
                c.in_flight.fetch_sub(1, Ordering::SeqCst);
            }
            let mut data = std::mem::take(&mut carry);
            data.extend_from_slice(&buf[..n]);
            rewrite(&mut data);
            let hold = (1..BACK.len())
                .rev()
                .find(|&k| data.ends_with(&BACK.as_bytes()[..k]))
                .unwrap_or(0);
            carry = data.split_off(data.len() - hold);
            if cw.write_all(&data).await.is_err() {
                break;
            }
        }
        let _ = cw.write_all(&carry).await;
        let _ = cw.shutdown().await;
    };
    tokio::join!(up, down);
    if outstanding.load(Ordering::SeqCst) {
        c.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
    c.open.fetch_sub(1, Ordering::SeqCst);
}

fn rewrite(data: &mut [u8]) {
    let (from, to) = (BACK.as_bytes(), FRONT.as_bytes());
    let mut i = 0;
    while i + from.len() <= data.len() {
        if &data[i..i + from.len()] == from {
            data[i..i + from.len()].copy_from_slice(to);
            i += from.len();
        } else {
            i += 1;
        }
    }
}

/// "GET /v3/{id}/volumes/{id}" from the first line of a request; query dropped.
fn request_line(head: &[u8]) -> String {
    let line = head.split(|b| *b == b'\r').next().unwrap_or_default();
    let line = String::from_utf8_lossy(line);
    let mut parts = line.split(' ');
    let method = parts.next().unwrap_or("?");
    let path = parts.next().unwrap_or("?");
    let path = path.split('?').next().unwrap_or_default();
    let path: Vec<String> = path
        .split('/')
        .map(|seg| {
            let hexish =
                seg.len() >= 16 && seg.chars().all(|ch| ch.is_ascii_hexdigit() || ch == '-');
            if hexish {
                "{id}".to_string()
            } else {
                seg.to_string()
            }
        })
        .collect();
    format!("{method} {}", path.join("/"))
}
