//! Faults between the driver and the real OpenStack test cloud (tests/harness/openstack/ostack), through
//! the fault proxy of tests/faults: the real `cinder-csi` binary's cloud.conf names the proxy as
//! auth-url, and the proxy rewrites Keystone's catalog so Cinder and Nova go through it too.
//!
//! - `rpc_fault_matrix`: for CreateVolume, DeleteVolume, ControllerPublish/Unpublish,
//!   CreateSnapshot, DeleteSnapshot, ControllerExpandVolume and ControllerModifyVolume, a
//!   fault-free run records the API calls the RPC makes (the proxy's log: the matrix follows
//!   the code); then, at each of those calls, a 503, a hang until the RPC's deadline, a
//!   connection reset and (for calls that change something) a response lost after the backend
//!   acted. The faulted RPC must succeed or answer a retryable code, never Internal; the
//!   sidecar-style retry (same name, same ids) must converge; then the cloud is listed: no
//!   duplicate, no double attachment, nothing the test does not know about, nothing missing.
//! - `keystone_faults`: Keystone down at startup and mid-run, tokens revoked in the middle of
//!   a storm, Cinder missing from the catalog, clock skew on the token's expiry.
//!
//! Runs only with CINDER_CSI_OSTACK_ENV=<state>/env.sh (hold `flock -s
//! /var/tmp/cinder-csi-ostack.lock`); prints "skipped: ..." otherwise. `FAULTS_ONLY=Create
//! Volume,DeleteSnapshot` limits the matrix to these RPCs.

use crate::support::faults;
use crate::support::faults_cloud;
use crate::support::openstack_support;
use crate::support::scratch;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use faults::{Fault, FaultProxy, Rule, When};
use faults_cloud::{invoke, leaks, retry, retryable, Api, Call, Expected, Sweep};
use openstack_support::{Cloud, Controller, Driver};

const NODE: usize = 1;
/// The RPC deadline of a faulted call when the fault is a hang (the sidecars use 10–15 s).
const HANG_DEADLINE: Duration = Duration::from_secs(8);
const CALL_DEADLINE: Duration = Duration::from_secs(60);
const RETRY_BOUND: Duration = Duration::from_secs(120);
/// No new case starts after this (`FAULTS_BUDGET_SECS`); the cases left are counted and
/// printed, so a slow machine shortens the run visibly instead of timing the stage out.
const DEFAULT_BUDGET: Duration = Duration::from_secs(25 * 60);

/// A cloud.conf like the test cloud's, with auth-url through the proxy.
fn proxied_conf(cloud: &Cloud, proxy: &FaultProxy, dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(cloud.var("OSTACK_CLOUD_CONF")).unwrap();
    let auth = cloud.var("OS_AUTH_URL").trim_end_matches('/').to_string();
    let origin = auth.trim_end_matches("/v3");
    let text = text.replace(origin, proxy.keystone_url());
    assert!(
        text.contains(proxy.keystone_url()),
        "auth-url not rewritten"
    );
    let path = dir.join("cloud.conf");
    std::fs::write(&path, text).unwrap();
    path
}

fn upstream_keystone(cloud: &Cloud) -> String {
    let auth = cloud.var("OS_AUTH_URL");
    let u = reqwest::Url::parse(auth).unwrap();
    format!(
        "{}://{}:{}",
        u.scheme(),
        u.host_str().unwrap(),
        u.port_or_known_default().unwrap()
    )
}

/// The RPCs of the matrix.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Rpc {
    CreateVolume,
    DeleteVolume,
    Publish,
    Unpublish,
    CreateSnapshot,
    DeleteSnapshot,
    Expand,
    Modify,
}

const RPCS: [Rpc; 8] = [
    Rpc::CreateVolume,
    Rpc::DeleteVolume,
    Rpc::Publish,
    Rpc::Unpublish,
    Rpc::CreateSnapshot,
    Rpc::DeleteSnapshot,
    Rpc::Expand,
    Rpc::Modify,
];

struct Rig<'a> {
    cloud: &'a Cloud,
    api: Api,
    proxy: FaultProxy,
    ctl: Controller,
    node: String,
    prefix: String,
    seq: usize,
    want: Expected,
    /// Volumes made by CreateVolume cases, consumed by DeleteVolume cases (and snapshots).
    spare_volumes: Vec<(String, String)>,
    spare_snapshots: Vec<(String, String)>,
    /// Long-lived volumes: attach target, snapshot source, expand and modify targets.
    fixed: Vec<String>,
    expand_gib: i64,
    modify_to_multi: bool,
    ids: Vec<String>,
    snap_ids: Vec<String>,
}

impl Rig<'_> {
    fn name(&mut self, what: &str) -> String {
        self.seq += 1;
        format!("{}{what}-{}", self.prefix, self.seq)
    }

    /// A fault-free call that must succeed (preconditions of a case).
    async fn must(&mut self, call: &Call) -> String {
        let (r, _) = retry(&mut self.ctl, call, RETRY_BOUND).await;
        r.unwrap_or_else(|s| panic!("{} (no fault): {:?}: {}", call.rpc(), s.code(), s.message()))
    }

    async fn new_volume(&mut self, volume_type: &str) -> (String, String) {
        let name = self.name("vol");
        let id = self
            .must(&Call::CreateVolume {
                name: name.clone(),
                volume_type: volume_type.into(),
            })
            .await;
        self.ids.push(id.clone());
        self.want.volumes.insert(name.clone(), id.clone());
        (name, id)
    }

    fn attached(&self, id: &str) -> bool {
        self.want.attached.get(id).is_some_and(|s| !s.is_empty())
    }

    /// Build the call of a case (its preconditions made fault-free).
    async fn prepare(&mut self, rpc: Rpc) -> Call {
        let node = self.node.clone();
        match rpc {
            Rpc::CreateVolume => Call::CreateVolume {
                name: self.name("cv"),
                volume_type: self.cloud.var("OSTACK_VOLUME_TYPE").into(),
            },
            Rpc::DeleteVolume => {
                let (_, id) = match self.spare_volumes.pop() {
                    Some(v) => v,
                    None => self.new_volume(self.cloud.var("OSTACK_VOLUME_TYPE")).await,
                };
                Call::DeleteVolume { id }
            }
            Rpc::Publish | Rpc::Unpublish => {
                let id = self.fixed[0].clone();
                let want_attached = rpc == Rpc::Unpublish;
                if self.attached(&id) != want_attached {
                    let flip = if want_attached {
                        Call::Publish {
                            id: id.clone(),
                            node: node.clone(),
                        }
                    } else {
                        Call::Unpublish {
                            id: id.clone(),
                            node: node.clone(),
                        }
                    };
                    self.must(&flip).await;
                    self.settle(&flip, &id).await;
                }
                if want_attached {
                    Call::Unpublish { id, node }
                } else {
                    Call::Publish { id, node }
                }
            }
            Rpc::CreateSnapshot => Call::CreateSnapshot {
                name: self.name("snap"),
                source: self.fixed[1].clone(),
            },
            Rpc::DeleteSnapshot => {
                let (_, id) = match self.spare_snapshots.pop() {
                    Some(s) => s,
                    None => {
                        let c = Call::CreateSnapshot {
                            name: self.name("snap"),
                            source: self.fixed[1].clone(),
                        };
                        let id = self.must(&c).await;
                        self.settle(&c, &id).await;
                        self.spare_snapshots.pop().unwrap()
                    }
                };
                Call::DeleteSnapshot { id }
            }
            Rpc::Expand => {
                self.expand_gib += 1;
                Call::Expand {
                    id: self.fixed[2].clone(),
                    gib: self.expand_gib,
                }
            }
            Rpc::Modify => {
                self.modify_to_multi = !self.modify_to_multi;
                let t = if self.modify_to_multi {
                    "OSTACK_MULTIATTACH_TYPE"
                } else {
                    "OSTACK_VOLUME_TYPE"
                };
                Call::Modify {
                    id: self.fixed[3].clone(),
                    volume_type: self.cloud.var(t).into(),
                }
            }
        }
    }

    /// After a call succeeded: check the cloud shows its effect, and record it in `want`.
    async fn settle(&mut self, call: &Call, id: &str) {
        let api = &self.api;
        let vol = |id: &str| format!("/volumes/{id}");
        let status =
            |v: Option<&serde_json::Value>, s: &str| v.is_some_and(|v| v["volume"]["status"] == s);
        match call {
            Call::CreateVolume { name, .. } => {
                assert!(!id.is_empty(), "CreateVolume returned no id");
                self.ids.push(id.to_string());
                self.want.volumes.insert(name.clone(), id.to_string());
                api.wait("the new volume available", "block-storage", &vol(id), |v| {
                    status(v, "available")
                })
                .await;
                self.spare_volumes.push((name.clone(), id.to_string()));
            }
            Call::DeleteVolume { id } => {
                api.wait("the volume gone", "block-storage", &vol(id), |v| {
                    v.is_none()
                })
                .await;
                self.want.volumes.retain(|_, v| v != id);
                self.want.attached.remove(id);
            }
            Call::Publish { id, node } => {
                let v = api.get("block-storage", &vol(id)).await;
                assert!(
                    status(v.as_ref(), "in-use"),
                    "after ControllerPublish: {v:?}"
                );
                self.want
                    .attached
                    .insert(id.clone(), BTreeSet::from([node.clone()]));
            }
            Call::Unpublish { id, .. } => {
                api.wait("the volume available", "block-storage", &vol(id), |v| {
                    status(v, "available")
                })
                .await;
                self.want.attached.remove(id);
            }
            Call::CreateSnapshot { name, .. } => {
                assert!(!id.is_empty(), "CreateSnapshot returned no id");
                self.snap_ids.push(id.to_string());
                let path = format!("/snapshots/{id}");
                api.wait("the snapshot available", "block-storage", &path, |s| {
                    s.is_some_and(|s| s["snapshot"]["status"] == "available")
                })
                .await;
                self.want.snapshots.insert(name.clone(), id.to_string());
                self.spare_snapshots.push((name.clone(), id.to_string()));
            }
            Call::DeleteSnapshot { id } => {
                let path = format!("/snapshots/{id}");
                api.wait("the snapshot gone", "block-storage", &path, |s| s.is_none())
                    .await;
                self.want.snapshots.retain(|_, v| v != id);
            }
            Call::Expand { id, gib } => {
                api.wait("the new size", "block-storage", &vol(id), |v| {
                    v.is_some_and(|v| {
                        v["volume"]["size"] == *gib && v["volume"]["status"] == "available"
                    })
                })
                .await;
            }
            Call::Modify { id, volume_type } => {
                let v = api.get("block-storage", &vol(id)).await.unwrap();
                assert_eq!(
                    v["volume"]["volume_type"],
                    volume_type.as_str(),
                    "after Modify"
                );
            }
        }
    }
}

/// One line of the report.
struct Case {
    rpc: &'static str,
    route: String,
    fault: String,
    first: String,
    attempts: u32,
    verdict: Result<(), String>,
}

fn code_of(r: &Result<String, tonic::Status>) -> String {
    match r {
        Ok(_) => "OK".into(),
        Err(s) => format!("{:?}", s.code()),
    }
}

/// The faults tried at a route: a 5xx, a hang (timeout), a reset; for a call that changes
/// something also a response lost after the backend acted.
fn faults_for(route: &str) -> Vec<Fault> {
    let mut out = vec![Fault::Status(503), Fault::Hang, Fault::Reset];
    if !route.starts_with("GET ") {
        out.push(Fault::Lost);
    }
    out
}

async fn run_case(rig: &mut Rig<'_>, rpc: Rpc, fault: Option<(&str, &str, Fault)>) -> Case {
    let call = rig.prepare(rpc).await;
    let mark = rig.proxy.mark();
    let rule = fault.as_ref().map(|(service, route, f)| {
        rig.proxy
            .inject(Rule::new(route, When::Nth(1), f.clone()).on(service))
    });
    let deadline = match &fault {
        Some((_, _, Fault::Hang)) => HANG_DEADLINE,
        _ => CALL_DEADLINE,
    };
    let first = invoke(&mut rig.ctl, &call, deadline).await;
    let injected = rule.map(|id| rig.proxy.injected(id));
    if let Some(id) = rule {
        rig.proxy.remove(id);
    }
    rig.proxy.release_hangs();
    let mut case = Case {
        rpc: call.rpc(),
        route: fault.as_ref().map(|f| f.1.to_string()).unwrap_or_default(),
        fault: fault
            .as_ref()
            .map(|f| f.2.label())
            .unwrap_or_else(|| "none".into()),
        first: code_of(&first),
        attempts: 1,
        verdict: Ok(()),
    };
    if injected == Some(0) {
        case.first = format!("{} (route not reached)", case.first);
    }
    if let Err(s) = &first {
        if fault.is_none() || !retryable(s) {
            case.verdict = Err(format!("first answer {:?}: {}", s.code(), s.message()));
            return case;
        }
    }
    let (r, attempts) = match first {
        Ok(id) => (Ok(id), 1),
        Err(_) => {
            let (r, n) = retry(&mut rig.ctl, &call, RETRY_BOUND).await;
            (r, n + 1)
        }
    };
    case.attempts = attempts;
    match r {
        Ok(id) => rig.settle(&call, &id).await,
        Err(s) => {
            case.verdict = Err(format!(
                "retry did not converge: {:?}: {}",
                s.code(),
                s.message()
            ));
            return case;
        }
    }
    if fault.is_none() {
        // The discovery run: what the RPC calls, in order.
        let routes: Vec<String> = rig
            .proxy
            .since(mark)
            .iter()
            .map(|s| format!("{} {}", s.service, s.route))
            .collect();
        case.route = routes.join(", ");
    }
    case
}

/// The routes (service, route) an RPC called in its discovery run, first call order, no
/// Keystone (tokens are cached across RPCs: Keystone has its own scenarios).
fn routes_of(discovery: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = vec![];
    for r in discovery.split(", ").filter(|r| !r.is_empty()) {
        let (service, route) = r.split_once(' ').unwrap();
        let item = (service.to_string(), route.to_string());
        if service != "keystone" && !out.contains(&item) {
            out.push(item);
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rpc_fault_matrix() {
    let Some(cloud) = Cloud::from_env("openstack_faults") else {
        return;
    };
    let only: Option<Vec<String>> = std::env::var("FAULTS_ONLY")
        .ok()
        .map(|v| v.split(',').map(str::to_string).collect());
    let started = Instant::now();
    let budget = std::env::var("FAULTS_BUDGET_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .map_or(DEFAULT_BUDGET, Duration::from_secs);
    let mut not_run = 0;
    let (tmp, kubelet) = scratch::with_kubelet("cinder-csi-faults");
    let prefix = format!(
        "faults-{}-",
        &uuid::Uuid::new_v4().simple().to_string()[..8]
    );
    // Dropped last: deletes whatever is left under the prefix (a failing case's leaks).
    let _sweep = Sweep {
        cloud: &cloud,
        prefix: prefix.clone(),
    };
    let proxy = FaultProxy::start(&upstream_keystone(&cloud));
    let conf = proxied_conf(&cloud, &proxy, tmp.path());
    let mut driver = Driver::start_with_conf(&cloud, NODE, tmp.path(), &kubelet, &conf);
    let ctl = Controller::new(driver.connect().await);
    let mut rig = Rig {
        cloud: &cloud,
        api: Api::new(&cloud).await,
        proxy,
        ctl,
        node: cloud.node(NODE, "ID").to_string(),
        prefix: prefix.clone(),
        seq: 0,
        want: Expected::default(),
        spare_volumes: vec![],
        spare_snapshots: vec![],
        fixed: vec![],
        expand_gib: 1,
        modify_to_multi: false,
        ids: vec![],
        snap_ids: vec![],
    };
    for _ in 0..4 {
        let (_, id) = rig.new_volume(cloud.var("OSTACK_VOLUME_TYPE")).await;
        rig.fixed.push(id);
    }
    let servers = vec![rig.node.clone()];
    let mut cases: Vec<Case> = vec![];
    for rpc in RPCS {
        if only
            .as_ref()
            .is_some_and(|o| !o.iter().any(|r| format!("{rpc:?}") == *r))
        {
            continue;
        }
        let discovery = run_case(&mut rig, rpc, None).await;
        let routes = routes_of(&discovery.route);
        println!("{rpc:?} calls: {}", discovery.route);
        assert!(
            discovery.verdict.is_ok(),
            "{rpc:?} without faults: {:?}",
            discovery.verdict
        );
        cases.push(discovery);
        for (service, route) in &routes {
            for fault in faults_for(route) {
                if started.elapsed() > budget {
                    not_run += 1;
                    continue;
                }
                let case = run_case(&mut rig, rpc, Some((service, route, fault))).await;
                let mut case = case;
                if case.verdict.is_ok() {
                    let diff = leaks(&rig.api, &mut rig.ctl, &prefix, &rig.want, &servers).await;
                    if !diff.is_empty() {
                        case.verdict = Err(format!("leak check: {}", diff.join("; ")));
                    }
                }
                println!(
                    "{:<26} {:<58} {:<14} first {:<22} attempts {} {}",
                    case.rpc,
                    format!("{service} {route}"),
                    case.fault,
                    case.first,
                    case.attempts,
                    match &case.verdict {
                        Ok(()) => "ok".to_string(),
                        Err(e) => format!("FAILED: {e}"),
                    }
                );
                cases.push(case);
            }
        }
    }
    // Leave nothing: detach, delete what the test made, then the final leak check is empty.
    let ids: Vec<String> = rig.want.attached.keys().cloned().collect();
    for id in ids {
        let c = Call::Unpublish {
            id: id.clone(),
            node: rig.node.clone(),
        };
        rig.must(&c).await;
        rig.settle(&c, &id).await;
    }
    let snaps: Vec<String> = rig.want.snapshots.values().cloned().collect();
    for id in snaps {
        let c = Call::DeleteSnapshot { id: id.clone() };
        rig.must(&c).await;
        rig.settle(&c, &id).await;
    }
    let vols: Vec<String> = rig.want.volumes.values().cloned().collect();
    for id in vols {
        let c = Call::DeleteVolume { id: id.clone() };
        rig.must(&c).await;
        rig.settle(&c, &id).await;
    }
    let diff = leaks(&rig.api, &mut rig.ctl, &prefix, &rig.want, &servers).await;
    let faulted = cases.iter().filter(|c| c.fault != "none").count();
    let failed: Vec<String> = cases
        .iter()
        .filter_map(|c| {
            c.verdict
                .as_ref()
                .err()
                .map(|e| format!("{} at {} ({}): {e}", c.rpc, c.route, c.fault))
        })
        .collect();
    let retried = cases.iter().filter(|c| c.attempts > 1).count();
    println!(
        "fault matrix: {faulted} faulted cases, {retried} needed a retry, {} failed, \
         {not_run} not run (budget {budget:?}), {} faults injected, {} requests seen, {:?}",
        failed.len(),
        rig.proxy.injected_total(),
        rig.proxy.log().len(),
        started.elapsed()
    );
    drop(driver);
    assert!(diff.is_empty(), "final leak check: {diff:#?}");
    assert!(failed.is_empty(), "failed cases:\n{}", failed.join("\n"));
}

/// Token requests the proxy saw since `mark`.
fn token_requests(proxy: &FaultProxy, mark: usize) -> usize {
    proxy
        .since(mark)
        .iter()
        .filter(|s| s.service == "keystone" && s.route == "POST /v3/auth/tokens")
        .count()
}

fn cinder_types() -> [&'static str; 4] {
    ["block-storage", "volumev3", "block-store", "volume"]
}

/// Keystone down at startup and mid-run, tokens revoked in the middle of a storm, Cinder
/// missing from the catalog, clock skew on the token. Each ends with a leak check.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keystone_faults() {
    let Some(cloud) = Cloud::from_env("openstack_faults") else {
        return;
    };
    let (tmp, kubelet) = scratch::with_kubelet("cinder-csi-faults-ks");
    let prefix = format!(
        "faults-{}-",
        &uuid::Uuid::new_v4().simple().to_string()[..8]
    );
    let _sweep = Sweep {
        cloud: &cloud,
        prefix: prefix.clone(),
    };
    let api = Api::new(&cloud).await;
    let proxy = FaultProxy::start(&upstream_keystone(&cloud));
    let conf = proxied_conf(&cloud, &proxy, tmp.path());
    let vtype = cloud.var("OSTACK_VOLUME_TYPE").to_string();
    let mut want = Expected::default();
    let servers = vec![cloud.node(NODE, "ID").to_string()];
    let create = |n: &str| Call::CreateVolume {
        name: format!("{prefix}{n}"),
        volume_type: vtype.clone(),
    };
    let mut report = vec![];

    // 1. Keystone down when the driver starts: it serves, answers Unavailable, recovers.
    let down = proxy.inject(Rule::new("* /**", When::Every, Fault::Reset).on("keystone"));
    let mut driver = Driver::start_with_conf(&cloud, NODE, tmp.path(), &kubelet, &conf);
    let mut ctl = Controller::new(driver.connect().await);
    let c = create("startup");
    let first = invoke(&mut ctl, &c, CALL_DEADLINE).await;
    assert!(
        matches!(&first, Err(s) if s.code() == tonic::Code::Unavailable),
        "Keystone down: {first:?}"
    );
    proxy.remove(down);
    let (r, n) = retry(&mut ctl, &c, RETRY_BOUND).await;
    let id = r.expect("CreateVolume once Keystone is back");
    want.volumes.insert(format!("{prefix}startup"), id);
    report.push(format!(
        "Keystone down at startup: first {}, converged after {n} attempts, {} resets",
        code_of(&first),
        proxy.injected(down)
    ));

    // 2. Token revoked while Keystone is down: Unavailable, never Internal; then converges.
    let down = proxy.inject(Rule::new("* /**", When::Every, Fault::Reset).on("keystone"));
    let revoked = proxy.inject(Rule::new("* /**", When::Every, Fault::Status(401)).on("cinder"));
    let c = create("midrun");
    for _ in 0..3 {
        let r = invoke(&mut ctl, &c, CALL_DEADLINE).await;
        assert!(
            matches!(&r, Err(s) if s.code() == tonic::Code::Unavailable),
            "token revoked and Keystone down: {r:?}"
        );
    }
    proxy.remove(down);
    proxy.remove(revoked);
    let (r, n) = retry(&mut ctl, &c, RETRY_BOUND).await;
    want.volumes.insert(
        format!("{prefix}midrun"),
        r.expect("after Keystone is back"),
    );
    report.push(format!(
        "Keystone down mid-run with the token revoked: 3 x Unavailable, converged after {n}"
    ));

    // 3. The token revoked in the middle of a storm of 6 CreateVolumes: every request still
    //    carrying it gets 401; each RPC re-authenticates once (single flight), all converge.
    let mark = proxy.mark();
    let channel = driver.connect().await;
    let storm: Vec<_> = (0..6)
        .map(|i| {
            let mut ctl = Controller::new(channel.clone());
            let c = create(&format!("storm-{i}"));
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(150 * i)).await;
                let first = invoke(&mut ctl, &c, CALL_DEADLINE).await;
                let (r, n) = match &first {
                    Err(s) if retryable(s) => retry(&mut ctl, &c, RETRY_BOUND).await,
                    _ => (first.clone(), 0),
                };
                (c, first, r, n)
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        proxy.revoke_current_token(),
        "a token was issued through the proxy"
    );
    let mut codes = vec![];
    for t in storm {
        let (c, first, r, _) = t.await.unwrap();
        codes.push(code_of(&first));
        let Call::CreateVolume { name, .. } = c else {
            unreachable!()
        };
        let id = r.unwrap_or_else(|s| panic!("storm {name}: {:?}: {}", s.code(), s.message()));
        want.volumes.insert(name, id);
    }
    assert!(
        codes.iter().all(|c| c == "OK"),
        "401s are re-authenticated: {codes:?}"
    );
    let tokens = token_requests(&proxy, mark);
    let hits = proxy.revoked_hits();
    assert!(hits >= 1, "the storm used the revoked token");
    assert_eq!(
        tokens, 1,
        "one new token for the whole storm (single flight)"
    );
    report.push(format!(
        "token revoked mid-storm of 6 CreateVolume: first answers {codes:?}, {hits} requests \
         refused with 401, {tokens} new token"
    ));
    for id in want.volumes.values() {
        api.wait(
            "available",
            "block-storage",
            &format!("/volumes/{id}"),
            |v| v.is_some_and(|v| v["volume"]["status"] == "available"),
        )
        .await;
    }
    let diff = leaks(&api, &mut ctl, &prefix, &want, &servers).await;
    assert!(diff.is_empty(), "after the storm: {diff:#?}");

    // 4. Cinder missing from the catalog of the next token: a clear error, not Internal; once
    //    the catalog is whole again (next token), CreateVolume converges.
    for t in cinder_types() {
        proxy.hide_service(t);
    }
    let once = proxy.inject(Rule::new("* /**", When::Nth(1), Fault::Status(401)).on("cinder"));
    let c = create("nocinder");
    let first = invoke(&mut ctl, &c, CALL_DEADLINE).await;
    let msg = first
        .as_ref()
        .err()
        .map(|s| s.message().to_string())
        .unwrap_or_default();
    assert!(
        matches!(&first, Err(s) if s.code() != tonic::Code::Internal && s.code() != tonic::Code::Unknown),
        "no Cinder in the catalog: {first:?}"
    );
    assert!(
        msg.contains("catalog"),
        "the error names the catalog: {msg}"
    );
    proxy.unhide_all();
    proxy.remove(once);
    let (r, n) = retry_all(&mut ctl, &c, RETRY_BOUND).await;
    want.volumes.insert(
        format!("{prefix}nocinder"),
        r.expect("once Cinder is back in the catalog"),
    );
    report.push(format!(
        "Cinder missing from the catalog: first {} ({msg}); converged after {n} attempts",
        code_of(&first)
    ));

    // 5. Clock skew: Keystone's clock an hour ahead, then an hour behind ours. The token's
    //    lifetime is measured on Keystone's clock: no token storm, every call works.
    for skew in [3600, -3600] {
        let s = proxy.inject(
            Rule::new("POST /v3/auth/tokens", When::Every, Fault::TokenSkew(skew)).on("keystone"),
        );
        let once = proxy.inject(Rule::new("* /**", When::Nth(1), Fault::Status(401)).on("cinder"));
        let mark = proxy.mark();
        for i in 0..3 {
            let name = format!("skew{skew}-{i}");
            let c = create(&name);
            let r = invoke(&mut ctl, &c, CALL_DEADLINE).await;
            want.volumes.insert(
                format!("{prefix}{name}"),
                r.unwrap_or_else(|s| {
                    panic!("Keystone clock {skew:+} s: {:?}: {}", s.code(), s.message())
                }),
            );
        }
        let tokens = token_requests(&proxy, mark);
        assert_eq!(tokens, 1, "one new token after the 401, then it is reused");
        proxy.remove(s);
        proxy.remove(once);
        report.push(format!(
            "Keystone clock {skew:+} s: 3 CreateVolume OK with {tokens} token request"
        ));
    }

    // Clean up through the driver, then nothing of ours is left.
    for id in want.volumes.values().cloned().collect::<Vec<_>>() {
        let (r, _) = retry(
            &mut ctl,
            &Call::DeleteVolume { id: id.clone() },
            RETRY_BOUND,
        )
        .await;
        r.expect("DeleteVolume");
        api.wait("gone", "block-storage", &format!("/volumes/{id}"), |v| {
            v.is_none()
        })
        .await;
    }
    want.volumes.clear();
    let diff = leaks(&api, &mut ctl, &prefix, &want, &servers).await;
    for line in &report {
        println!("keystone scenario: {line}");
    }
    println!(
        "keystone scenarios: {} faults injected",
        proxy.injected_total()
    );
    drop(driver);
    assert!(diff.is_empty(), "final leak check: {diff:#?}");
}

/// Like [`retry`], also through non-retryable answers (a configuration being fixed), at most
/// `bound`.
async fn retry_all(
    ctl: &mut Controller,
    call: &Call,
    bound: Duration,
) -> (Result<String, tonic::Status>, u32) {
    let end = Instant::now() + bound;
    let mut n = 0;
    loop {
        n += 1;
        let r = invoke(ctl, call, CALL_DEADLINE).await;
        if r.is_ok() || Instant::now() > end {
            return (r, n);
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
}
