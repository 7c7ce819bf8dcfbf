//! The fault-injecting HTTP proxy: one loopback listener per upstream origin (Keystone first;
//! Cinder's and Nova's are opened when Keystone's catalog names them, and the catalog is
//! rewritten to point at them), every request logged by route template, and the [`Rule`]s
//! applied per route and per call count. It runs on its own runtime thread, so sync and async
//! tests alike can drive it, and everything stops when it is dropped.

use std::collections::{BTreeMap, HashSet};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Bytes, Frame, Incoming};
use hyper::{Request, Response};
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};

use super::rules::{route_of, Fault, Rule, RuleId};

/// Longest a [`Fault::Hang`] holds a request: past the driver's 60 s HTTP timeout.
pub const HANG_CAP: Duration = Duration::from_secs(90);

type Body = BoxBody<Bytes, std::io::Error>;

/// One request the proxy saw.
#[derive(Debug, Clone)]
pub struct Seen {
    pub service: String,
    pub method: String,
    /// `GET /v3/volumes/{id}`: ids replaced, query dropped.
    pub route: String,
    /// The path and query as sent.
    pub path: String,
    /// The fault injected, if any ([`Fault::label`]).
    pub fault: Option<String>,
    /// Status the client got; `None`: no answer (reset, hang) or not answered yet.
    pub status: Option<u16>,
}

struct RuleState {
    rule: Rule,
    added: Instant,
    matched: u64,
    injected: u64,
    active: bool,
}

#[derive(Clone)]
struct Origin {
    service: String,
    upstream: String,
    proxied: String,
}

struct State {
    rules: Mutex<Vec<RuleState>>,
    log: Mutex<Vec<Seen>>,
    origins: Mutex<Vec<Origin>>,
    hidden: Mutex<HashSet<String>>,
    release: tokio::sync::Notify,
    client: reqwest::Client,
    /// The last token Keystone issued through us, and the tokens revoked since.
    last_token: Mutex<Option<String>>,
    revoked: Mutex<HashSet<String>>,
    revoked_hits: std::sync::atomic::AtomicU64,
}

/// The proxy; see the module doc. Dropping it closes every listener and connection.
pub struct FaultProxy {
    state: Arc<State>,
    keystone: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl FaultProxy {
    /// Start in front of Keystone at `keystone_upstream` (`http://127.0.0.1:5000`).
    pub fn start(keystone_upstream: &str) -> FaultProxy {
        cinder_csi::net::tls::install_provider();
        let client = reqwest::Client::builder()
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(HANG_CAP)
            .build()
            .expect("proxy HTTP client");
        let state = Arc::new(State {
            rules: Mutex::default(),
            log: Mutex::default(),
            origins: Mutex::default(),
            hidden: Mutex::default(),
            release: tokio::sync::Notify::new(),
            client,
            last_token: Mutex::default(),
            revoked: Mutex::default(),
            revoked_hits: Default::default(),
        });
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .thread_name("fault-proxy")
            .build()
            .expect("proxy runtime");
        let upstream = origin_of(keystone_upstream).expect("keystone URL has an origin");
        let keystone = {
            let _in_rt = rt.enter();
            listen(state.clone(), "keystone", &upstream)
        };
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let _ = rt.block_on(stopped);
            rt.shutdown_timeout(Duration::from_secs(1));
        });
        FaultProxy {
            state,
            keystone,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// `http://127.0.0.1:<port>`: put `<this>/v3` in cloud.conf's auth-url.
    pub fn keystone_url(&self) -> &str {
        &self.keystone
    }

    pub fn inject(&self, rule: Rule) -> RuleId {
        let mut rules = self.state.rules.lock().unwrap();
        rules.push(RuleState {
            rule,
            added: Instant::now(),
            matched: 0,
            injected: 0,
            active: true,
        });
        RuleId(rules.len() - 1)
    }

    /// Stop applying a rule (its counts stay readable).
    pub fn remove(&self, id: RuleId) {
        self.state.rules.lock().unwrap()[id.0].active = false;
    }

    /// Stop applying every rule.
    pub fn clear(&self) {
        for r in self.state.rules.lock().unwrap().iter_mut() {
            r.active = false;
        }
    }

    /// How many calls the rule injected its fault into.
    pub fn injected(&self, id: RuleId) -> u64 {
        self.state.rules.lock().unwrap()[id.0].injected
    }

    /// How many calls matched the rule's route while it was active.
    pub fn matched(&self, id: RuleId) -> u64 {
        self.state.rules.lock().unwrap()[id.0].matched
    }

    /// Faults injected by all rules so far.
    pub fn injected_total(&self) -> u64 {
        self.state
            .rules
            .lock()
            .unwrap()
            .iter()
            .map(|r| r.injected)
            .sum()
    }

    /// Remove services of these catalog types from Keystone's answers.
    pub fn hide_service(&self, catalog_type: &str) {
        self.state
            .hidden
            .lock()
            .unwrap()
            .insert(catalog_type.to_string());
    }

    pub fn unhide_all(&self) {
        self.state.hidden.lock().unwrap().clear();
    }

    /// Revoke the last token Keystone issued: from now on every request carrying it gets 401,
    /// as Keystone's revocation does. Returns whether there was one.
    pub fn revoke_current_token(&self) -> bool {
        let last = self.state.last_token.lock().unwrap().clone();
        match last {
            Some(t) => self.state.revoked.lock().unwrap().insert(t),
            None => false,
        }
    }

    /// Requests refused because their token was revoked.
    pub fn revoked_hits(&self) -> u64 {
        self.state.revoked_hits.load(Ordering::SeqCst)
    }

    /// End every [`Fault::Hang`] now (each then resets its connection).
    pub fn release_hangs(&self) {
        self.state.release.notify_waiters();
    }

    /// Position in the log, for [`FaultProxy::since`].
    pub fn mark(&self) -> usize {
        self.state.log.lock().unwrap().len()
    }

    pub fn since(&self, mark: usize) -> Vec<Seen> {
        self.state.log.lock().unwrap()[mark..].to_vec()
    }

    pub fn log(&self) -> Vec<Seen> {
        self.since(0)
    }

    /// Requests seen per `service route`.
    pub fn counts(&self) -> BTreeMap<String, u64> {
        let mut out = BTreeMap::new();
        for s in self.state.log.lock().unwrap().iter() {
            *out.entry(format!("{} {}", s.service, s.route)).or_default() += 1;
        }
        out
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.state.release.notify_waiters();
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// `scheme://host:port` of a URL (port always written).
fn origin_of(url: &str) -> Option<String> {
    let u = reqwest::Url::parse(url).ok()?;
    Some(format!(
        "{}://{}:{}",
        u.scheme(),
        u.host_str()?,
        u.port_or_known_default()?
    ))
}

/// Our name for a catalog service type.
fn service_name(catalog_type: &str) -> String {
    match catalog_type {
        "identity" => "keystone".into(),
        "block-storage" | "volumev3" | "block-store" | "volume" | "volumev2" => "cinder".into(),
        "compute" => "nova".into(),
        other => other.into(),
    }
}

/// Open a listener forwarding to `upstream`; returns its origin.
/// Sync (std bind), so that the catalog rewrite can call it without async recursion; must run
/// inside the proxy's runtime.
fn listen(state: Arc<State>, service: &str, upstream: &str) -> String {
    let std_listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind proxy");
    std_listener.set_nonblocking(true).expect("nonblocking");
    let listener = TcpListener::from_std(std_listener).expect("proxy listener");
    let proxied = format!("http://{}", listener.local_addr().unwrap());
    state.origins.lock().unwrap().push(Origin {
        service: service.to_string(),
        upstream: upstream.to_string(),
        proxied: proxied.clone(),
    });
    let service = service.to_string();
    let upstream = upstream.to_string();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let _ = stream.set_nodelay(true);
            let kill = Arc::new(AtomicBool::new(false));
            let io = hyper_util::rt::TokioIo::new(KillableIo {
                inner: stream,
                kill: kill.clone(),
            });
            let (state, service, upstream) = (state.clone(), service.clone(), upstream.clone());
            tokio::spawn(async move {
                let svc = hyper::service::service_fn(move |req| {
                    handle(
                        state.clone(),
                        service.clone(),
                        upstream.clone(),
                        kill.clone(),
                        req,
                    )
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(io, svc)
                    .await;
            });
        }
    });
    proxied
}

/// Decide the fault of one request (every active matching rule counts it; the first that
/// applies wins) and log it.
fn decide(state: &State, service: &str, method: &str, path: &str) -> (usize, Option<Fault>) {
    let mut fault = None;
    for r in state.rules.lock().unwrap().iter_mut() {
        if !r.active || !r.rule.matches(service, method, path) {
            continue;
        }
        r.matched += 1;
        if fault.is_none() && r.rule.applies(r.matched, r.added) {
            r.injected += 1;
            fault = Some(r.rule.fault.clone());
        }
    }
    let mut log = state.log.lock().unwrap();
    log.push(Seen {
        service: service.to_string(),
        method: method.to_string(),
        route: route_of(method, path),
        path: path.to_string(),
        fault: fault.as_ref().map(Fault::label),
        status: None,
    });
    (log.len() - 1, fault)
}

async fn handle(
    state: Arc<State>,
    service: String,
    upstream: String,
    kill: Arc<AtomicBool>,
    req: Request<Incoming>,
) -> Result<Response<Body>, std::io::Error> {
    let method = req.method().as_str().to_string();
    let path = req
        .uri()
        .path_and_query()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "/".into());
    let revoked = req
        .headers()
        .get("x-auth-token")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| state.revoked.lock().unwrap().contains(t));
    let (seq, fault) = if revoked {
        state.revoked_hits.fetch_add(1, Ordering::SeqCst);
        let mut log = state.log.lock().unwrap();
        log.push(Seen {
            service: service.clone(),
            method: method.clone(),
            route: route_of(&method, &path),
            path: path.clone(),
            fault: Some("revoked token".into()),
            status: Some(401),
        });
        (log.len() - 1, Some(Fault::Status(401)))
    } else {
        decide(&state, &service, &method, &path)
    };
    let (parts, body) = req.into_parts();
    let body = body
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let answered = |status: Option<u16>| state.log.lock().unwrap()[seq].status = status;

    let reset = |kill: &AtomicBool| {
        kill.store(true, Ordering::SeqCst);
        Ok(Response::new(full(Bytes::new())))
    };
    match &fault {
        Some(Fault::Status(code)) => {
            answered(Some(*code));
            return Ok(json_error(*code));
        }
        Some(Fault::Html(code)) => {
            answered(Some(*code));
            return Ok(html_error(*code));
        }
        Some(Fault::Reset) => return reset(&kill),
        Some(Fault::Hang) => {
            hang(&state).await;
            return reset(&kill);
        }
        Some(Fault::Delay(d)) => tokio::time::sleep(*d).await,
        _ => {}
    }

    let forwarded = forward(&state, &service, &upstream, &parts, body).await;
    let (status, headers, mut bytes) = match forwarded {
        Ok(r) => r,
        Err(e) => {
            answered(Some(502));
            return Ok(html_error_msg(502, &e));
        }
    };
    match &fault {
        Some(Fault::Lost) => return reset(&kill),
        Some(Fault::LostHang) => {
            hang(&state).await;
            return reset(&kill);
        }
        Some(Fault::Garbage) => bytes = Bytes::from_static(b"<html><body>oops</body></html>"),
        Some(Fault::TokenExpiresIn(secs)) => bytes = set_expiry(&bytes, *secs),
        Some(Fault::TokenSkew(secs)) => bytes = skew_token(&bytes, *secs),
        _ => {}
    }
    answered(Some(status.as_u16()));
    let mut resp = Response::builder().status(status);
    for (k, v) in headers.iter() {
        if !matches!(
            k.as_str(),
            "content-length" | "transfer-encoding" | "connection" | "keep-alive"
        ) {
            resp = resp.header(k, v);
        }
    }
    if fault == Some(Fault::Truncate) {
        // Announce the whole body, send half, then reset.
        let half = bytes.slice(..bytes.len() / 2);
        resp = resp.header("content-length", bytes.len());
        let kill = kill.clone();
        let frames = futures::stream::unfold(0u8, move |step| {
            let (half, kill) = (half.clone(), kill.clone());
            async move {
                match step {
                    0 => Some((Ok(Frame::data(half)), 1)),
                    1 => {
                        tokio::time::sleep(Duration::from_millis(200)).await;
                        kill.store(true, Ordering::SeqCst);
                        Some((
                            Err(std::io::Error::other("truncated by the fault proxy")),
                            2,
                        ))
                    }
                    _ => None,
                }
            }
        });
        return Ok(resp.body(StreamBody::new(frames).boxed()).unwrap());
    }
    Ok(resp.body(full(bytes)).unwrap())
}

async fn hang(state: &State) {
    let _ = tokio::time::timeout(HANG_CAP, state.release.notified()).await;
}

type Forwarded = (reqwest::StatusCode, reqwest::header::HeaderMap, Bytes);

async fn forward(
    state: &Arc<State>,
    service: &str,
    upstream: &str,
    parts: &hyper::http::request::Parts,
    body: Bytes,
) -> Result<Forwarded, String> {
    let path = parts
        .uri
        .path_and_query()
        .map(|p| p.as_str())
        .unwrap_or("/");
    let method =
        reqwest::Method::from_bytes(parts.method.as_str().as_bytes()).map_err(|e| e.to_string())?;
    let mut req = state.client.request(method, format!("{upstream}{path}"));
    for (k, v) in parts.headers.iter() {
        if !matches!(
            k.as_str(),
            "host" | "content-length" | "connection" | "transfer-encoding"
        ) {
            req = req.header(k.as_str(), v.as_bytes());
        }
    }
    let resp = req
        .body(body)
        .send()
        .await
        .map_err(|e| format!("{upstream}: {e}"))?;
    let (status, headers) = (resp.status(), resp.headers().clone());
    if let Some(t) = headers.get("x-subject-token").and_then(|v| v.to_str().ok()) {
        *state.last_token.lock().unwrap() = Some(t.to_string());
    }
    let bytes = resp.bytes().await.map_err(|e| e.to_string())?;
    let bytes = if service == "keystone" {
        rewrite_catalog(state, &bytes).await
    } else {
        bytes
    };
    Ok((status, headers, rewrite_origins(state, bytes)))
}

/// In a Keystone answer with a catalog: drop hidden services, open a listener for every
/// origin the catalog names.
async fn rewrite_catalog(state: &Arc<State>, bytes: &Bytes) -> Bytes {
    let Ok(mut doc) = serde_json::from_slice::<Value>(bytes) else {
        return bytes.clone();
    };
    let Some(catalog) = doc
        .pointer_mut("/token/catalog")
        .and_then(Value::as_array_mut)
    else {
        return bytes.clone();
    };
    let hidden = state.hidden.lock().unwrap().clone();
    catalog.retain(|s| !hidden.contains(s["type"].as_str().unwrap_or_default()));
    let mut wanted = Vec::new();
    for s in catalog.iter() {
        let service = service_name(s["type"].as_str().unwrap_or_default());
        for e in s["endpoints"].as_array().into_iter().flatten() {
            if let Some(o) = e["url"].as_str().and_then(origin_of) {
                wanted.push((service.clone(), o));
            }
        }
    }
    for (service, upstream) in wanted {
        let known = state
            .origins
            .lock()
            .unwrap()
            .iter()
            .any(|o| o.upstream == upstream);
        if !known {
            listen(state.clone(), &service, &upstream);
        }
    }
    Bytes::from(serde_json::to_vec(&doc).unwrap())
}

/// Point every upstream origin named in a body at its listener.
fn rewrite_origins(state: &State, bytes: Bytes) -> Bytes {
    let Ok(mut text) = String::from_utf8(bytes.to_vec()) else {
        return bytes;
    };
    let origins: Vec<Origin> = state.origins.lock().unwrap().clone();
    let mut changed = false;
    for o in origins {
        // Written with or without the default port.
        let bare = o.upstream.trim_end_matches(":80").to_string();
        for from in [o.upstream.as_str(), bare.as_str()] {
            if text.contains(from) {
                text = text.replace(from, &o.proxied);
                changed = true;
            }
        }
    }
    if changed {
        Bytes::from(text)
    } else {
        bytes
    }
}

fn set_expiry(bytes: &Bytes, secs: i64) -> Bytes {
    let Ok(mut doc) = serde_json::from_slice::<Value>(bytes) else {
        return bytes.clone();
    };
    if let Some(t) = doc.get_mut("token").and_then(Value::as_object_mut) {
        let at = chrono::Utc::now() + chrono::Duration::seconds(secs);
        t.insert(
            "expires_at".into(),
            Value::String(at.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()),
        );
    }
    Bytes::from(serde_json::to_vec(&doc).unwrap())
}

fn skew_token(bytes: &Bytes, secs: i64) -> Bytes {
    let Ok(mut doc) = serde_json::from_slice::<Value>(bytes) else {
        return bytes.clone();
    };
    if let Some(t) = doc.get_mut("token").and_then(Value::as_object_mut) {
        for key in ["issued_at", "expires_at"] {
            let at = t
                .get(key)
                .and_then(Value::as_str)
                .and_then(|s| s.parse::<chrono::DateTime<chrono::Utc>>().ok());
            if let Some(at) = at {
                let moved = at + chrono::Duration::seconds(secs);
                t.insert(
                    key.into(),
                    Value::String(moved.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()),
                );
            }
        }
    }
    Bytes::from(serde_json::to_vec(&doc).unwrap())
}

fn full(b: Bytes) -> Body {
    Full::new(b).map_err(|never| match never {}).boxed()
}

/// The error bodies Keystone, Cinder and Nova send for `code`.
fn json_error(code: u16) -> Response<Body> {
    let msg = "injected by the fault proxy";
    let body = match code {
        401 => serde_json::json!({"error": {"code": 401, "title": "Unauthorized",
            "message": "The request you have made requires authentication."}}),
        other => {
            let key = match other {
                400 => "badRequest",
                403 => "forbidden",
                404 => "itemNotFound",
                409 => "conflictingRequest",
                413 => "overLimit",
                503 => "serviceUnavailable",
                _ => "computeFault",
            };
            serde_json::json!({key: {"code": other, "message": msg}})
        }
    };
    let mut r = Response::builder()
        .status(code)
        .header("content-type", "application/json")
        .header("x-openstack-request-id", "req-fault-proxy");
    if code == 413 || code == 503 {
        r = r.header("retry-after", "1");
    }
    r.body(full(Bytes::from(body.to_string()))).unwrap()
}

fn html_error(code: u16) -> Response<Body> {
    html_error_msg(code, "injected by the fault proxy")
}

fn html_error_msg(code: u16, msg: &str) -> Response<Body> {
    let body = format!("<html><head><title>{code}</title></head><body>{msg}</body></html>");
    Response::builder()
        .status(code)
        .header("content-type", "text/html")
        .body(full(Bytes::from(body)))
        .unwrap()
}

/// A TCP stream that fails every operation once `kill` is set and then closes with RST
/// (zero linger), so the client sees "connection reset" and not a clean close.
struct KillableIo {
    inner: TcpStream,
    kill: Arc<AtomicBool>,
}

impl KillableIo {
    fn killed(&self) -> bool {
        self.kill.load(Ordering::SeqCst)
    }
}

fn reset_err() -> std::io::Error {
    std::io::Error::from(std::io::ErrorKind::ConnectionReset)
}

impl AsyncRead for KillableIo {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        if self.killed() {
            return Poll::Ready(Err(reset_err()));
        }
        Pin::new(&mut self.get_mut().inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for KillableIo {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        if self.killed() {
            return Poll::Ready(Err(reset_err()));
        }
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        if self.killed() {
            return Poll::Ready(Err(reset_err()));
        }
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        if self.killed() {
            return Poll::Ready(Err(reset_err()));
        }
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

impl Drop for KillableIo {
    fn drop(&mut self) {
        if self.killed() {
            let _ = self.inner.set_zero_linger();
        }
    }
}
