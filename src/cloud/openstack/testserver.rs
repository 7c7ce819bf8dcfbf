//! A small Keystone + Cinder + Nova imitation on 127.0.0.1:0 for the adapter's logic tests
//! (token reuse and expiry, 401 retry, negotiation, error mapping, watcher batching). It
//! implements just enough of the APIs; the adapter's real test is tests/cloud/openstack_adapter.rs
//! against the real services.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, TimeDelta, Utc};
use serde_json::{json, Value};

use super::options::{AuthOptions, OpenStackOptions, Secret};

/// One scripted change of a volume, applied when the volume is next read.
#[derive(Debug, Clone)]
pub struct Step {
    pub status: &'static str,
    pub attached_to: Option<&'static str>,
    pub size: Option<u64>,
}

pub fn step(status: &'static str) -> Step {
    Step {
        status,
        attached_to: None,
        size: None,
    }
}

#[derive(Default)]
pub struct FakeState {
    pub token_lifetime: Duration,
    pub tokens_issued: usize,
    valid_tokens: HashSet<String>,
    token_expiry: HashMap<String, std::time::Instant>,
    pub auth_bodies: Vec<Value>,
    /// "METHOD /path?query" of every request after Keystone.
    pub log: Vec<String>,
    pub cinder_max: String,
    pub volumes: BTreeMap<String, Value>,
    scripts: HashMap<String, VecDeque<Step>>,
    /// Volumes that vanish (404) once their script is used up.
    vanish: HashSet<String>,
    /// Canned failures: the next request whose "METHOD path" starts with the key gets them.
    failures: Vec<(String, u16, Value)>,
    clock: i64,
    next_id: u64,
    pub refuse_time_filter: bool,
    /// Answer 401 to every token (a revoked user, or a Keystone that lost its keys).
    pub reject_all_tokens: bool,
    /// Leave Cinder out of the catalog of the tokens issued.
    pub hide_cinder: bool,
    /// When set, only these passwords get a token (401 otherwise): credential rotation.
    pub passwords: Option<HashSet<String>>,
}

#[derive(Clone)]
pub struct Fake {
    pub state: Arc<Mutex<FakeState>>,
    pub base: String,
}

impl Fake {
    pub async fn start() -> Self {
        let state = Arc::new(Mutex::new(FakeState {
            token_lifetime: Duration::from_secs(3600),
            cinder_max: "3.71".into(),
            ..Default::default()
        }));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let app = axum::Router::new()
            .fallback(handle)
            .with_state((state.clone(), base.clone()));
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Self { state, base }
    }

    pub fn options(&self) -> OpenStackOptions {
        OpenStackOptions::new(
            format!("{}/identity", self.base),
            AuthOptions {
                username: Some("demo".into()),
                password: Some(Secret::new("demopass")),
                user_domain_id: Some("default".into()),
                project_name: Some("demo".into()),
                project_domain_id: Some("default".into()),
                ..Default::default()
            },
        )
    }

    pub fn with<T>(&self, f: impl FnOnce(&mut FakeState) -> T) -> T {
        f(&mut self.state.lock().unwrap())
    }

    /// Requests so far whose "METHOD path" starts with `prefix`.
    pub fn count(&self, prefix: &str) -> usize {
        self.with(|s| s.log.iter().filter(|l| l.starts_with(prefix)).count())
    }

    pub fn revoke_tokens(&self) {
        self.with(|s| s.valid_tokens.clear());
    }

    pub fn fail_next(&self, prefix: &str, status: u16, body: Value) {
        self.with(|s| s.failures.push((prefix.to_string(), status, body)));
    }

    /// Add a volume that goes through `script`, one step per read.
    pub fn add_volume(&self, id: &str, status: &str, script: Vec<Step>) {
        self.with(|s| {
            let t = s.tick();
            s.volumes
                .insert(id.to_string(), volume_json(id, status, 1, t));
            s.scripts.insert(id.to_string(), script.into());
        });
    }

    pub fn vanish_after_script(&self, id: &str) {
        self.with(|s| s.vanish.insert(id.to_string()));
    }
}

impl FakeState {
    /// Replace the remaining script of a volume.
    pub fn script(&mut self, id: &str, steps: Vec<Step>) {
        self.scripts.insert(id.to_string(), steps.into());
    }

    fn tick(&mut self) -> String {
        self.clock += 1;
        let t = DateTime::<Utc>::from_timestamp(1_780_000_000, 0).unwrap()
            + TimeDelta::seconds(self.clock);
        t.format("%Y-%m-%dT%H:%M:%S%.6f").to_string()
    }

    /// Apply the next scripted step of `id`; vanish when asked to and the script is done.
    fn advance(&mut self, id: &str) {
        let next = self.scripts.get_mut(id).and_then(|q| q.pop_front());
        match next {
            Some(st) => {
                let t = self.tick();
                if let Some(v) = self.volumes.get_mut(id) {
                    v["status"] = json!(st.status);
                    v["updated_at"] = json!(t);
                    if let Some(size) = st.size {
                        v["size"] = json!(size);
                    }
                    v["attachments"] = match st.attached_to {
                        Some(server) => json!([{"server_id": server, "attachment_id": "att-1",
                            "volume_id": id, "id": id, "device": "/dev/vdb",
                            "host_name": null, "attached_at": t}]),
                        None => json!([]),
                    };
                }
            }
            None if self.vanish.contains(id) => {
                self.volumes.remove(id);
            }
            None => {}
        }
    }
}

fn volume_json(id: &str, status: &str, size: u64, created: String) -> Value {
    json!({
        "attachments": [], "availability_zone": "nova", "bootable": "false",
        "consistencygroup_id": null, "created_at": created, "description": null,
        "encrypted": false, "id": id, "links": [], "metadata": {}, "migration_status": null,
        "multiattach": false, "name": format!("name-{id}"), "replication_status": null,
        "size": size, "snapshot_id": null, "source_volid": null, "status": status,
        "updated_at": null, "user_id": "u", "volume_type": "__DEFAULT__",
        "os-vol-tenant-attr:tenant_id": "proj-1"
    })
}

fn reply(status: u16, headers: &[(&str, String)], body: Value) -> Response {
    let mut r = (StatusCode::from_u16(status).unwrap(), axum::Json(body)).into_response();
    r.headers_mut()
        .insert("x-openstack-request-id", "req-fake-0001".parse().unwrap());
    for (k, v) in headers {
        r.headers_mut().insert(
            axum::http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
            v.parse().unwrap(),
        );
    }
    r
}

fn not_found(what: &str) -> Response {
    reply(
        404,
        &[],
        json!({"itemNotFound": {"code": 404, "message": format!("{what} could not be found.")}}),
    )
}

type AppState = (Arc<Mutex<FakeState>>, String);

async fn handle(
    State((state, base)): State<AppState>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri.path().to_string();
    let query: HashMap<String, String> =
        axum::extract::Query::<HashMap<String, String>>::try_from_uri(&uri)
            .map(|q| q.0)
            .unwrap_or_default();
    let mut s = state.lock().unwrap();
    let line = match uri.query() {
        Some(q) => format!("{method} {path}?{q}"),
        None => format!("{method} {path}"),
    };
    s.log.push(line.clone());
    if let Some(i) = s
        .failures
        .iter()
        .position(|(p, _, _)| line.starts_with(p.as_str()))
    {
        let (_, status, body) = s.failures.remove(i);
        return reply(status, &[], body);
    }
    if path == "/identity/v3/auth/tokens" && method == Method::POST {
        let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let password = body["auth"]["identity"]["password"]["user"]["password"].as_str();
        let refused = s
            .passwords
            .as_ref()
            .is_some_and(|ok| !password.is_some_and(|p| ok.contains(p)));
        s.auth_bodies.push(body);
        if refused {
            return reply(
                401,
                &[],
                json!({"error": {"code": 401, "title": "Unauthorized",
                "message": "The request you have made requires authentication."}}),
            );
        }
        s.tokens_issued += 1;
        let token = format!("tok-{}", s.tokens_issued);
        s.valid_tokens.insert(token.clone());
        let life = s.token_lifetime;
        s.token_expiry
            .insert(token.clone(), std::time::Instant::now() + life);
        let issued = Utc::now();
        let expires = issued + TimeDelta::from_std(life).unwrap();
        let fmt = |t: DateTime<Utc>| t.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string();
        let ep = |url: String| json!([{"interface": "public", "region_id": "RegionOne", "region": "RegionOne", "url": url}]);
        return reply(
            201,
            &[("x-subject-token", token)],
            json!({"token": {
            "methods": ["password"], "expires_at": fmt(expires), "issued_at": fmt(issued),
            "project": {"id": "proj-1", "name": "demo", "domain": {"id": "default"}},
            "user": {"id": "u", "name": "demo", "domain": {"id": "default"}},
            "catalog": [
                {"type": "identity", "endpoints": ep(format!("{base}/identity/v3"))},
                {"type": if s.hide_cinder { "other" } else { "block-storage" },
                    "endpoints": ep(format!("{base}/cinder/v3"))},
                {"type": "compute", "endpoints": ep(format!("{base}/nova/v2.1"))}
            ]}}),
        );
    }
    match path.as_str() {
        "/cinder/" => {
            return reply(
                300,
                &[],
                json!({"versions": [{"id": "v3.0", "status": "CURRENT",
                "version": s.cinder_max, "min_version": "3.0", "links": []}]}),
            )
        }
        "/nova/" => {
            return reply(
                200,
                &[],
                json!({"versions": [{"id": "v2.1", "status": "CURRENT",
                "version": "2.96", "min_version": "2.1", "links": []}]}),
            )
        }
        _ => {}
    }
    let token = headers
        .get("x-auth-token")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let expired = s
        .token_expiry
        .get(token)
        .is_none_or(|t| std::time::Instant::now() >= *t);
    if !s.valid_tokens.contains(token) || expired || s.reject_all_tokens {
        return reply(
            401,
            &[],
            json!({"error": {"code": 401, "title": "Unauthorized",
            "message": "The request you have made requires authentication."}}),
        );
    }
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    match (method.clone(), segs.as_slice()) {
        (Method::GET, ["cinder", "v3", "volumes", "detail"]) => {
            if s.refuse_time_filter && query.contains_key("updated_at") {
                return reply(
                    400,
                    &[],
                    json!({"badRequest": {"code": 400,
                    "message": "Invalid filters updated_at are found in query options."}}),
                );
            }
            let ids: Vec<String> = s.volumes.keys().cloned().collect();
            for id in &ids {
                s.advance(id);
            }
            // Cinder's 3.60 time filters: a null time never matches.
            let since = |key: &str| {
                query
                    .get(key)
                    .and_then(|f| f.strip_prefix("gte:"))
                    .map(|t| t[..19].to_string())
            };
            let (updated, created) = (since("updated_at"), since("created_at"));
            let at_or_after = |v: &Value, key: &str, t: &Option<String>| match t {
                Some(t) => v[key].as_str().is_some_and(|x| x[..19] >= t[..]),
                None => true,
            };
            let vols: Vec<Value> = s
                .volumes
                .values()
                .filter(|v| at_or_after(v, "updated_at", &updated))
                .filter(|v| at_or_after(v, "created_at", &created))
                .filter(|v| query.get("name").is_none_or(|n| v["name"] == json!(n)))
                .cloned()
                .collect();
            let start = query
                .get("marker")
                .and_then(|m| vols.iter().position(|v| v["id"] == json!(m)).map(|i| i + 1))
                .unwrap_or(0);
            let limit: usize = query
                .get("limit")
                .and_then(|l| l.parse().ok())
                .unwrap_or(1000);
            let page: Vec<Value> = vols.iter().skip(start).take(limit).cloned().collect();
            let links = if start + page.len() < vols.len() {
                json!([{"rel": "next", "href": format!("{base}/cinder/v3/volumes/detail?marker=x")}])
            } else {
                json!([])
            };
            reply(200, &[], json!({"volumes": page, "volumes_links": links}))
        }
        (Method::GET, ["cinder", "v3", "volumes"]) => {
            let vols: Vec<Value> = s
                .volumes
                .values()
                .map(|v| json!({"id": v["id"], "name": v["name"], "links": []}))
                .collect();
            reply(200, &[], json!({"volumes": vols}))
        }
        (Method::GET, ["cinder", "v3", "volumes", id]) => {
            let id = id.to_string();
            s.advance(&id);
            match s.volumes.get(&id) {
                Some(v) => reply(200, &[], json!({"volume": v})),
                None => not_found(&format!("Volume {id}")),
            }
        }
        (Method::POST, ["cinder", "v3", "volumes"]) => {
            let req: Value = serde_json::from_slice(&body).unwrap();
            s.next_id += 1;
            let id = format!("vol-{}", s.next_id);
            let t = s.tick();
            let size = req["volume"]["size"].as_u64().unwrap_or(1);
            let mut v = volume_json(&id, "creating", size, t);
            v["name"] = req["volume"]["name"].clone();
            s.volumes.insert(id.clone(), v.clone());
            s.scripts.insert(id, VecDeque::from([step("available")]));
            reply(202, &[], json!({"volume": v}))
        }
        (Method::GET, ["cinder", "v3", "os-availability-zone"]) => reply(
            200,
            &[],
            json!({"availabilityZoneInfo": [
                {"zoneState": {"available": true}, "zoneName": "nova"},
                {"zoneState": {"available": false}, "zoneName": "zone 1"}]}),
        ),
        (Method::GET, ["cinder", "v3", "messages"]) => reply(
            200,
            &[],
            json!({"messages": [
            {"id": "m1", "user_message": "create volume:Schedule allocate volume:Could not find any available weighted backend.",
             "created_at": "2026-01-01T00:00:01.000000", "resource_uuid": query.get("resource_uuid")}]}),
        ),
        (Method::GET, ["nova", "v2.1", "servers", id]) => reply(
            200,
            &[],
            json!({"server": {"id": id, "name": "node-1", "status": "ACTIVE",
                "OS-EXT-AZ:availability_zone": "nova"}}),
        ),
        _ => not_found(&format!("route {method} {path}")),
    }
}
