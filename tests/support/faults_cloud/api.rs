//! Direct REST reads of the test cloud as the member (one token, kept): the fault matrix
//! checks the cloud after every case, and a Python process per read (`ostack api`) costs
//! seconds on a loaded machine. Reads only; cleanup stays with `ostack api` (sync, in Drop).

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::openstack_support::{Cloud, CALL_TIMEOUT};

pub struct Api {
    client: reqwest::Client,
    token: String,
    cinder: String,
    nova: String,
}

impl Api {
    pub async fn new(cloud: &Cloud) -> Api {
        cinder_csi::net::tls::install_provider();
        let client = reqwest::Client::builder()
            .no_proxy()
            .timeout(Duration::from_secs(30))
            .build()
            .unwrap();
        let auth = cloud.var("OS_AUTH_URL").trim_end_matches('/').to_string();
        let body = json!({"auth": {
            "identity": {"methods": ["password"], "password": {"user": {
                "name": cloud.var("OS_USERNAME"),
                "domain": {"id": cloud.var("OS_USER_DOMAIN_ID")},
                "password": cloud.var("OS_PASSWORD")}}},
            "scope": {"project": {"name": cloud.var("OS_PROJECT_NAME"),
                "domain": {"id": cloud.var("OS_PROJECT_DOMAIN_ID")}}}}});
        let r = client
            .post(format!("{auth}/auth/tokens"))
            .json(&body)
            .send()
            .await
            .expect("Keystone");
        assert!(r.status().is_success(), "token: {}", r.status());
        let token = r.headers()["x-subject-token"].to_str().unwrap().to_string();
        let doc: Value = r.json().await.unwrap();
        let url = |types: &[&str]| -> String {
            let iface = cloud
                .vars
                .get("OS_INTERFACE")
                .map_or("public", |s| s.as_str());
            doc["token"]["catalog"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|s| types.contains(&s["type"].as_str().unwrap_or_default()))
                .flat_map(|s| s["endpoints"].as_array().cloned().unwrap_or_default())
                .find(|e| e["interface"] == iface)
                .and_then(|e| {
                    e["url"]
                        .as_str()
                        .map(|u| u.trim_end_matches('/').to_string())
                })
                .unwrap_or_else(|| panic!("no {types:?} in the catalog"))
        };
        Api {
            cinder: url(&["block-storage", "volumev3"]),
            nova: url(&["compute"]),
            client,
            token,
        }
    }

    /// GET `path` of "block-storage" (Cinder 3.71) or "compute"; `None` on 404.
    pub async fn get(&self, service: &str, path: &str) -> Option<Value> {
        let base = if service == "compute" {
            &self.nova
        } else {
            &self.cinder
        };
        let mut req = self
            .client
            .get(format!("{base}{path}"))
            .header("x-auth-token", &self.token);
        if service != "compute" {
            // Groups and group snapshots (3.14), a volume's group_id (3.13), a snapshot's
            // group_snapshot_id: none of them shows at the default 3.0.
            req = req.header("openstack-api-version", "volume 3.71");
        }
        let r = req
            .send()
            .await
            .unwrap_or_else(|e| panic!("GET {path}: {e}"));
        if r.status() == 404 {
            return None;
        }
        assert!(r.status().is_success(), "GET {path}: {}", r.status());
        Some(r.json().await.unwrap())
    }

    /// Poll `path` until `check` holds on what it returns (bounded by [`CALL_TIMEOUT`]).
    pub async fn wait(
        &self,
        what: &str,
        service: &str,
        path: &str,
        check: impl Fn(Option<&Value>) -> bool,
    ) {
        let end = Instant::now() + CALL_TIMEOUT;
        loop {
            let v = self.get(service, path).await;
            if check(v.as_ref()) {
                return;
            }
            assert!(Instant::now() < end, "timed out waiting for {what}: {v:?}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}
