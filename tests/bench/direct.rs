//! The bench's own Cinder client, straight to Cinder (not through the relay, not counted): the
//! project's volume statuses for charging a driver's pending work, and the filling and
//! emptying of the project for the ListVolumes runs.

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use futures::stream::{self, StreamExt};
use tokio::time::Instant;

use super::openstack_support::Cloud;

/// Requests at once when the bench fills or empties the project (cinder-api's thread count
/// is 4-8 here; more only queues in the server).
const CONCURRENCY: usize = 4;

#[derive(Clone)]
pub struct Direct {
    http: reqwest::Client,
    token: String,
    /// `http://127.0.0.1:8776/v3/<project>`
    base: String,
}

impl Direct {
    pub async fn new(cloud: &Cloud) -> Result<Self, String> {
        let body = serde_json::json!({"auth": {
            "identity": {"methods": ["password"], "password": {"user": {
                "name": cloud.var("OS_USERNAME"), "password": cloud.var("OS_PASSWORD"),
                "domain": {"id": cloud.var("OS_USER_DOMAIN_ID")}}}},
            "scope": {"project": {"name": cloud.var("OS_PROJECT_NAME"),
                "domain": {"id": cloud.var("OS_PROJECT_DOMAIN_ID")}}}}});
        cinder_csi::net::tls::install_provider();
        let http = reqwest::Client::new();
        let r = http
            .post(format!("{}/auth/tokens", cloud.var("OS_AUTH_URL")))
            .json(&body)
            .send()
            .await
            .map_err(|e| e.to_string())?;
        let token = r
            .headers()
            .get("x-subject-token")
            .and_then(|v| v.to_str().ok())
            .ok_or("no token")?
            .to_string();
        let base = format!(
            "http://127.0.0.1:8776/v3/{}",
            cloud.var("OSTACK_PROJECT_ID")
        );
        Ok(Self { http, token, base })
    }

    async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<serde_json::Value>,
    ) -> Result<serde_json::Value, String> {
        let mut req = self
            .http
            .request(method.clone(), format!("{}{path}", self.base))
            .header("X-Auth-Token", &self.token)
            .header("OpenStack-API-Version", "volume 3.60");
        if let Some(b) = body {
            req = req.json(&b);
        }
        let r = req.send().await.map_err(|e| e.to_string())?;
        let status = r.status();
        let text = r.text().await.map_err(|e| e.to_string())?;
        if !status.is_success() {
            return Err(format!("{method} {path}: {status}: {text}"));
        }
        Ok(serde_json::from_str(&text).unwrap_or(serde_json::Value::Null))
    }

    /// Until the guard drops, one small GET per second on the bench's connection, so that it
    /// stays open (uWSGI closes idle ones after 4 s). A check after a phase then goes over it
    /// at once instead of over a new connection, which after a storm waits for a cinder-api
    /// thread while nova's idle connections hold them (seconds, charged to whichever driver
    /// the check followed). Both drivers' storms run with it.
    pub fn keep_warm(&self) -> WarmGuard {
        let me = self.clone();
        WarmGuard(tokio::spawn(async move {
            loop {
                let _ = me
                    .call(reqwest::Method::GET, "/volumes?limit=1", None)
                    .await;
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }))
    }

    /// Status of every volume of the project whose name starts with `prefix` (all pages).
    pub async fn statuses(&self, prefix: &str) -> Result<BTreeMap<String, String>, String> {
        let mut out = BTreeMap::new();
        let mut marker = String::new();
        loop {
            let v = self
                .call(
                    reqwest::Method::GET,
                    &format!("/volumes/detail?limit=1000{marker}"),
                    None,
                )
                .await?;
            let page = v["volumes"].as_array().cloned().unwrap_or_default();
            for v in &page {
                let (Some(id), Some(name), Some(s)) =
                    (v["id"].as_str(), v["name"].as_str(), v["status"].as_str())
                else {
                    continue;
                };
                if name.starts_with(prefix) {
                    out.insert(id.to_string(), s.to_string());
                }
            }
            let more = v["volumes_links"]
                .as_array()
                .is_some_and(|l| l.iter().any(|l| l["rel"] == "next"));
            match page.last().and_then(|v| v["id"].as_str()) {
                Some(last) if more => marker = format!("&marker={last}"),
                _ => return Ok(out),
            }
        }
    }

    /// Time until `ok(status)` holds for every id (`None` = the volume is gone), one project
    /// list per 100 ms.
    pub async fn until(
        &self,
        ids: &[String],
        ok: impl Fn(Option<&str>) -> bool,
        timeout: Duration,
    ) -> Result<Duration, String> {
        let started = Instant::now();
        let wanted: HashSet<&str> = ids.iter().map(String::as_str).collect();
        loop {
            let all = self.statuses("").await?;
            let status: BTreeMap<&str, &str> = all
                .iter()
                .filter(|(id, _)| wanted.contains(id.as_str()))
                .map(|(id, s)| (id.as_str(), s.as_str()))
                .collect();
            if wanted.iter().all(|id| ok(status.get(id).copied())) {
                return Ok(started.elapsed());
            }
            if started.elapsed() > timeout {
                return Err(format!("volumes not settled: {status:?}"));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// `n` 1 GiB volumes named `<prefix><i>`, `CONCURRENCY` POSTs at a time, then waited for
    /// until all are `available`. Their ids, also when some failed (so they can be removed).
    pub async fn fill(&self, prefix: &str, n: usize) -> (Vec<String>, Result<(), String>) {
        let made: Vec<Result<String, String>> = stream::iter(0..n)
            .map(|i| async move {
                let body =
                    serde_json::json!({"volume": {"size": 1, "name": format!("{prefix}{i}")}});
                let v = self
                    .call(reqwest::Method::POST, "/volumes", Some(body))
                    .await?;
                v["volume"]["id"]
                    .as_str()
                    .map(str::to_string)
                    .ok_or_else(|| format!("no id in {v}"))
            })
            .buffer_unordered(CONCURRENCY)
            .collect()
            .await;
        let ids: Vec<String> = made.iter().filter_map(|r| r.clone().ok()).collect();
        if let Some(Err(e)) = made.into_iter().find(Result::is_err) {
            return (ids, Err(e));
        }
        let settled = self
            .until(&ids, |s| s == Some("available"), Duration::from_secs(600))
            .await
            .map(drop);
        (ids, settled)
    }

    /// Delete every volume named `<prefix>…` and wait until they are gone.
    pub async fn empty(&self, prefix: &str) -> Result<(), String> {
        let ids: Vec<String> = self.statuses(prefix).await?.into_keys().collect();
        let failed: Vec<String> = stream::iter(ids.iter())
            .map(|id| async move {
                self.call(reqwest::Method::DELETE, &format!("/volumes/{id}"), None)
                    .await
            })
            .buffer_unordered(CONCURRENCY)
            .filter_map(|r| async move { r.err() })
            .collect()
            .await;
        if !failed.is_empty() {
            return Err(failed.join("; "));
        }
        self.until(&ids, |s| s.is_none(), Duration::from_secs(600))
            .await
            .map(drop)
    }
}

/// Stops [`Direct::keep_warm`] when dropped.
pub struct WarmGuard(tokio::task::JoinHandle<()>);

impl Drop for WarmGuard {
    fn drop(&mut self) {
        self.0.abort();
    }
}
