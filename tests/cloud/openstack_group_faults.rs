//! Faults during volume group snapshots against the real test cloud, through the fault proxy
//! (tests/faults) and the real binary (as tests/cloud/openstack_faults.rs does for the Controller
//! RPCs), and kill -9 of the driver during a create.
//!
//! - `group_snapshot_fault_matrix`: a fault-free CreateVolumeGroupSnapshot and
//!   DeleteVolumeGroupSnapshot record the API calls they make; then at each of them a 503, and
//!   at each call that changes something also a connection reset, a hang past the RPC's
//!   deadline and a response lost after Cinder acted. The faulted RPC must answer a retryable
//!   code (or succeed); the snapshotter-style retry (same name, same volumes) must converge to
//!   exactly one group snapshot of the three volumes, with its three members, and one helper
//!   group; after the delete converges, nothing is left: no group snapshot, member snapshot or
//!   helper group, and the volumes in no group.
//! - `kill_during_create_converges`: the driver is killed with SIGKILL at points spread over a
//!   create; a new driver's retries converge to one group snapshot, nothing orphaned.
//!
//! Runs only with CINDER_CSI_OSTACK_ENV=<state>/env.sh; prints "skipped: ..." otherwise.
//! `GROUP_FAULTS_ONLY=create` or `=delete` limits the matrix.

use crate::support::faults;
use crate::support::faults_cloud;
use crate::support::openstack_support;
use crate::support::scratch;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use cinder_csi::server::csi::pb;
use faults::{Fault, FaultProxy, Rule, When};
use faults_cloud::{retryable, Api, Sweep};
use openstack_support::{Cloud, Controller, Driver};
use serde_json::{json, Value};
use tonic::transport::Channel;

type Groups = pb::group_controller_client::GroupControllerClient<Channel>;

const NODE: usize = 1;
const GIB: i64 = 1 << 30;
const HANG_DEADLINE: Duration = Duration::from_secs(8);
const CALL_DEADLINE: Duration = Duration::from_secs(60);
const RETRY_BOUND: Duration = Duration::from_secs(150);

fn proxied_conf(cloud: &Cloud, proxy: &FaultProxy, dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(cloud.var("OSTACK_CLOUD_CONF")).unwrap();
    let auth = cloud.var("OS_AUTH_URL").trim_end_matches('/').to_string();
    let text = text.replace(auth.trim_end_matches("/v3"), proxy.keystone_url());
    let path = dir.join("cloud.conf");
    std::fs::write(&path, text).unwrap();
    path
}

fn upstream_keystone(cloud: &Cloud) -> String {
    let u = reqwest::Url::parse(cloud.var("OS_AUTH_URL")).unwrap();
    format!(
        "{}://{}:{}",
        u.scheme(),
        u.host_str().unwrap(),
        u.port_or_known_default().unwrap()
    )
}

fn timeout<T>(msg: T, t: Duration) -> tonic::Request<T> {
    let mut r = tonic::Request::new(msg);
    r.set_timeout(t);
    r
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Op {
    Create,
    Delete,
}

/// One RPC of the matrix; Create answers `(id, ready)`.
async fn invoke(
    g: &mut Groups,
    op: Op,
    name: &str,
    volumes: &[String],
    id: &str,
    t: Duration,
) -> Result<(String, bool), tonic::Status> {
    let fut = async {
        match op {
            Op::Create => g
                .create_volume_group_snapshot(timeout(
                    pb::CreateVolumeGroupSnapshotRequest {
                        name: name.into(),
                        source_volume_ids: volumes.to_vec(),
                        ..Default::default()
                    },
                    t,
                ))
                .await
                .map(|r| {
                    let s = r.into_inner().group_snapshot.unwrap_or_default();
                    (s.group_snapshot_id, s.ready_to_use)
                }),
            Op::Delete => g
                .delete_volume_group_snapshot(timeout(
                    pb::DeleteVolumeGroupSnapshotRequest {
                        group_snapshot_id: id.into(),
                        ..Default::default()
                    },
                    t,
                ))
                .await
                .map(|_| (id.to_string(), true)),
        }
    };
    match tokio::time::timeout(t + Duration::from_secs(2), fut).await {
        Ok(r) => r,
        Err(_) => Err(tonic::Status::deadline_exceeded("no answer (client side)")),
    }
}

/// The snapshotter's retry: again (same arguments) until OK and, for a create, ready.
async fn converge(
    g: &mut Groups,
    op: Op,
    name: &str,
    volumes: &[String],
    id: &str,
) -> Result<(String, u32), String> {
    let end = Instant::now() + RETRY_BOUND;
    let mut attempts = 0;
    loop {
        attempts += 1;
        match invoke(g, op, name, volumes, id, CALL_DEADLINE).await {
            Ok((id, true)) => return Ok((id, attempts)),
            Ok((_, false)) => {}
            Err(s) if retryable(&s) => {}
            Err(s) => return Err(format!("{:?}: {}", s.code(), s.message())),
        }
        if Instant::now() > end {
            return Err(format!("not converged after {attempts} attempts"));
        }
        tokio::time::sleep(Duration::from_millis(700)).await;
    }
}

async fn list(api: &Api, path: &str, key: &str) -> Vec<Value> {
    api.get("block-storage", path)
        .await
        .and_then(|v| v[key].as_array().cloned())
        .unwrap_or_default()
}

/// What Cinder holds of a group snapshot named `name` of `volumes`: an empty list when all is
/// as expected (`exists`: one group snapshot with one member per volume and one helper group
/// holding them; else none of either, and the volumes in no group).
async fn check(api: &Api, name: &str, volumes: &[String], exists: bool) -> Vec<String> {
    let mut out = vec![];
    let gs: Vec<Value> = list(
        api,
        &format!("/group_snapshots/detail?name={name}"),
        "group_snapshots",
    )
    .await
    .into_iter()
    .filter(|g| g["name"] == name)
    .collect();
    let snaps: Vec<Value> = list(api, &format!("/snapshots/detail?name={name}"), "snapshots")
        .await
        .into_iter()
        .filter(|s| s["name"] == name)
        .collect();
    let mut groups_of: BTreeSet<Option<String>> = BTreeSet::new();
    for v in volumes {
        let vol = api.get("block-storage", &format!("/volumes/{v}")).await;
        groups_of.insert(vol.and_then(|v| v["volume"]["group_id"].as_str().map(str::to_string)));
    }
    let helpers: Vec<Value> = list(api, "/groups/detail", "groups")
        .await
        .into_iter()
        .filter(|g| {
            g["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("csi-group-"))
        })
        .collect();
    if exists {
        if gs.len() != 1 {
            out.push(format!("{} group snapshots named {name}, want 1", gs.len()));
        }
        let gid = gs.first().map(|g| g["id"].clone()).unwrap_or(Value::Null);
        let members = snaps
            .iter()
            .filter(|s| s["group_snapshot_id"] == gid)
            .count();
        if members != volumes.len() || snaps.len() != volumes.len() {
            out.push(format!(
                "{} snapshots named {name}, {members} of the group snapshot; want {} of it",
                snaps.len(),
                volumes.len()
            ));
        }
        if groups_of.len() != 1 || groups_of.contains(&None) {
            out.push(format!("the volumes are in groups {groups_of:?}, want one"));
        }
        if helpers.len() != 1 {
            out.push(format!("{} helper groups, want 1", helpers.len()));
        }
    } else {
        if !gs.is_empty() || !snaps.is_empty() {
            out.push(format!(
                "left: {} group snapshots, {} snapshots named {name}",
                gs.len(),
                snaps.len()
            ));
        }
        if groups_of != BTreeSet::from([None]) {
            out.push(format!("the volumes are still in groups {groups_of:?}"));
        }
        if !helpers.is_empty() {
            let names: Vec<&str> = helpers.iter().filter_map(|g| g["name"].as_str()).collect();
            out.push(format!("helper groups left: {names:?}"));
        }
    }
    out
}

/// Faults tried at a route: a 503 everywhere; where the call changes something also a reset,
/// a hang past the RPC deadline and a response lost after Cinder acted.
fn faults_for(route: &str) -> Vec<Fault> {
    if route.starts_with("GET ") {
        vec![Fault::Status(503)]
    } else {
        vec![Fault::Status(503), Fault::Reset, Fault::Hang, Fault::Lost]
    }
}

fn routes_since(proxy: &FaultProxy, mark: usize) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = vec![];
    for s in proxy.since(mark) {
        let item = (s.service.clone(), s.route.clone());
        if s.service != "keystone" && !out.contains(&item) {
            out.push(item);
        }
    }
    out
}

struct Rig<'a> {
    proxy: FaultProxy,
    api: Api,
    groups: Groups,
    volumes: Vec<String>,
    prefix: String,
    seq: usize,
    _cloud: &'a Cloud,
}

impl Rig<'_> {
    fn name(&mut self) -> String {
        self.seq += 1;
        format!("{}g{}", self.prefix, self.seq)
    }

    /// One case: the RPC with `fault` at `route` (none: the discovery run), the retries, the
    /// check of what Cinder holds. Returns the group snapshot id (for a create) and a verdict.
    async fn case(
        &mut self,
        op: Op,
        name: &str,
        id: &str,
        fault: Option<(&str, &str, Fault)>,
    ) -> (String, Result<u32, String>) {
        let rule = fault.as_ref().map(|(svc, route, f)| {
            self.proxy
                .inject(Rule::new(route, When::Nth(1), f.clone()).on(svc))
        });
        let deadline = match &fault {
            Some((_, _, Fault::Hang)) => HANG_DEADLINE,
            _ => CALL_DEADLINE,
        };
        let first = invoke(&mut self.groups, op, name, &self.volumes, id, deadline).await;
        if let Some(r) = rule {
            self.proxy.remove(r);
        }
        self.proxy.release_hangs();
        if let Err(s) = &first {
            if fault.is_none() || !retryable(s) {
                return (
                    String::new(),
                    Err(format!("first answer {:?}: {}", s.code(), s.message())),
                );
            }
        }
        let volumes = self.volumes.clone();
        match converge(&mut self.groups, op, name, &volumes, id).await {
            Ok((got, n)) => {
                let diff = check(&self.api, name, &self.volumes, op == Op::Create).await;
                if diff.is_empty() {
                    (got, Ok(n + 1))
                } else {
                    (got, Err(diff.join("; ")))
                }
            }
            Err(e) => (String::new(), Err(format!("retry did not converge: {e}"))),
        }
    }
}

async fn volumes(ctl: &mut Controller, prefix: &str, zone: &str, volume_type: &str) -> Vec<String> {
    let mut out = vec![];
    for i in 0..3 {
        let r = ctl
            .create_volume(timeout(
                pb::CreateVolumeRequest {
                    name: format!("{prefix}v{i}"),
                    capacity_range: Some(pb::CapacityRange {
                        required_bytes: GIB,
                        limit_bytes: 0,
                    }),
                    volume_capabilities: vec![pb::VolumeCapability {
                        access_type: Some(pb::volume_capability::AccessType::Mount(
                            Default::default(),
                        )),
                        access_mode: Some(pb::volume_capability::AccessMode {
                            mode: pb::volume_capability::access_mode::Mode::SingleNodeWriter as i32,
                        }),
                    }],
                    parameters: [
                        ("availability".to_string(), zone.to_string()),
                        ("type".to_string(), volume_type.to_string()),
                    ]
                    .into(),
                    ..Default::default()
                },
                CALL_DEADLINE,
            ))
            .await
            .expect("CreateVolume");
        out.push(r.into_inner().volume.unwrap().volume_id);
    }
    out
}

/// Removes what a failed run left: group snapshots named `prefix*`, helper groups (the test
/// cloud runs one group snapshot test at a time), then the volumes and snapshots (`Sweep`).
struct GroupSweep<'a>(&'a Cloud, String);

impl Drop for GroupSweep<'_> {
    fn drop(&mut self) {
        let c = self.0;
        let get = |path: &str, key: &str| -> Vec<Value> {
            c.try_api_body(true, "block-storage", "GET", path, None)
                .ok()
                .flatten()
                .and_then(|v| v[key].as_array().cloned())
                .unwrap_or_default()
        };
        for g in get("/group_snapshots/detail?all_tenants=1", "group_snapshots") {
            if g["name"].as_str().is_some_and(|n| n.starts_with(&self.1)) {
                let _ = c.try_api_body(
                    true,
                    "block-storage",
                    "DELETE",
                    &format!("/group_snapshots/{}", g["id"].as_str().unwrap_or_default()),
                    None,
                );
            }
        }
        std::thread::sleep(Duration::from_secs(3));
        for g in get("/groups/detail?all_tenants=1", "groups") {
            if !g["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("csi-group-"))
            {
                continue;
            }
            let id = g["id"].as_str().unwrap_or_default();
            let vols: Vec<String> = get(
                &format!("/volumes/detail?all_tenants=1&group_id={id}"),
                "volumes",
            )
            .iter()
            .filter_map(|v| v["id"].as_str().map(str::to_string))
            .collect();
            if !vols.is_empty() {
                let _ = c.try_api_body(
                    true,
                    "block-storage",
                    "PUT",
                    &format!("/groups/{id}"),
                    Some(&json!({"group": {"remove_volumes": vols.join(",")}})),
                );
                std::thread::sleep(Duration::from_secs(3));
            }
            let _ = c.try_api_body(
                true,
                "block-storage",
                "POST",
                &format!("/groups/{id}/action"),
                Some(&json!({"delete": {"delete-volumes": false}})),
            );
        }
        std::thread::sleep(Duration::from_secs(3));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn group_snapshot_fault_matrix() {
    let Some(cloud) = Cloud::from_env("openstack_group_faults") else {
        return;
    };
    let only = std::env::var("GROUP_FAULTS_ONLY").ok();
    let (tmp, kubelet) = scratch::with_kubelet("cinder-csi-group-faults");
    let prefix = format!(
        "gfault-{}-",
        &uuid::Uuid::new_v4().simple().to_string()[..6]
    );
    let _sweep = Sweep {
        cloud: &cloud,
        prefix: prefix.clone(),
    };
    let _groups_sweep = GroupSweep(&cloud, prefix.clone());
    let proxy = FaultProxy::start(&upstream_keystone(&cloud));
    let conf = proxied_conf(&cloud, &proxy, tmp.path());
    let mut driver = Driver::start_with_conf(&cloud, NODE, tmp.path(), &kubelet, &conf);
    let channel = driver.connect().await;
    let mut ctl = Controller::new(channel.clone());
    let vols = volumes(
        &mut ctl,
        &prefix,
        cloud.node(NODE, "AZ"),
        cloud.var("OSTACK_GROUP_VOLUME_TYPE"),
    )
    .await;
    let mut rig = Rig {
        proxy,
        api: Api::new(&cloud).await,
        groups: Groups::new(channel),
        volumes: vols,
        prefix: prefix.clone(),
        seq: 0,
        _cloud: &cloud,
    };
    let started = Instant::now();

    // Discovery: the calls of a create (and its retries until ready) and of a delete.
    let name = rig.name();
    let mark = rig.proxy.mark();
    let (id, verdict) = rig.case(Op::Create, &name, "", None).await;
    assert!(verdict.is_ok(), "create without faults: {verdict:?}");
    let create_routes = routes_since(&rig.proxy, mark);
    let mark = rig.proxy.mark();
    let (_, verdict) = rig.case(Op::Delete, &name, &id, None).await;
    assert!(verdict.is_ok(), "delete without faults: {verdict:?}");
    let delete_routes = routes_since(&rig.proxy, mark);
    println!("create calls: {create_routes:?}\ndelete calls: {delete_routes:?}");

    let mut failed = vec![];
    let mut cases = 0;
    for (op, routes) in [(Op::Create, &create_routes), (Op::Delete, &delete_routes)] {
        if only
            .as_deref()
            .is_some_and(|o| !format!("{op:?}").eq_ignore_ascii_case(o))
        {
            continue;
        }
        for (svc, route) in routes {
            for fault in faults_for(route) {
                let name = rig.name();
                let label = format!("{op:?} {svc} {route} {}", fault.label());
                let (id, verdict) = match op {
                    Op::Create => {
                        rig.case(Op::Create, &name, "", Some((svc, route, fault)))
                            .await
                    }
                    Op::Delete => {
                        let (id, v) = rig.case(Op::Create, &name, "", None).await;
                        assert!(v.is_ok(), "{label}: create without faults: {v:?}");
                        rig.case(Op::Delete, &name, &id, Some((svc, route, fault)))
                            .await
                    }
                };
                cases += 1;
                println!("{label:<70} {verdict:?}");
                if let Err(e) = &verdict {
                    failed.push(format!("{label}: {e}"));
                }
                if op == Op::Create && !id.is_empty() {
                    // Back to no group snapshot for the next case (fault-free delete).
                    let (_, v) = rig.case(Op::Delete, &name, &id, None).await;
                    if let Err(e) = v {
                        failed.push(format!("{label}: cleanup delete: {e}"));
                    }
                }
            }
        }
    }
    println!(
        "group snapshot fault matrix: {cases} cases in {:?}, {} failed",
        started.elapsed(),
        failed.len()
    );
    for v in rig.volumes.clone() {
        let _ = ctl
            .delete_volume(timeout(
                pb::DeleteVolumeRequest {
                    volume_id: v,
                    ..Default::default()
                },
                CALL_DEADLINE,
            ))
            .await;
    }
    drop(driver);
    assert!(failed.is_empty(), "failed cases:\n{}", failed.join("\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_during_create_converges() {
    let Some(cloud) = Cloud::from_env("openstack_group_faults") else {
        return;
    };
    let (tmp, kubelet) = scratch::with_kubelet("cinder-csi-group-kill");
    let prefix = format!("gkill-{}-", &uuid::Uuid::new_v4().simple().to_string()[..6]);
    let _sweep = Sweep {
        cloud: &cloud,
        prefix: prefix.clone(),
    };
    let _groups_sweep = GroupSweep(&cloud, prefix.clone());
    let api = Api::new(&cloud).await;
    let mut driver = Driver::start(&cloud, NODE, tmp.path(), &kubelet);
    let channel = driver.connect().await;
    let mut ctl = Controller::new(channel.clone());
    let vols = volumes(
        &mut ctl,
        &prefix,
        cloud.node(NODE, "AZ"),
        cloud.var("OSTACK_GROUP_VOLUME_TYPE"),
    )
    .await;
    let mut failed = vec![];
    // Spread over a create of about 2-4 s on this cloud: before the group exists, while it is
    // made, while the volumes join it, around the group snapshot's POST.
    for (i, ms) in [50u64, 300, 700, 1200, 1800, 2600].into_iter().enumerate() {
        let name = format!("{prefix}k{i}");
        let mut g = Groups::new(driver.connect().await);
        let call = {
            let (name, vols) = (name.clone(), vols.clone());
            tokio::spawn(async move {
                invoke(&mut g, Op::Create, &name, &vols, "", CALL_DEADLINE).await
            })
        };
        tokio::time::sleep(Duration::from_millis(ms)).await;
        driver.kill9();
        let first = call.await.unwrap();
        driver = Driver::start(&cloud, NODE, tmp.path(), &kubelet);
        let mut g = Groups::new(driver.connect().await);
        let verdict = match converge(&mut g, Op::Create, &name, &vols, "").await {
            Ok((id, n)) => {
                let diff = check(&api, &name, &vols, true).await;
                let del = converge(&mut g, Op::Delete, &name, &vols, &id).await;
                let after = check(&api, &name, &vols, false).await;
                match (diff.is_empty(), del, after.is_empty()) {
                    (true, Ok(_), true) => Ok(n),
                    (_, del, _) => Err(format!("{diff:?} / delete {del:?} / after {after:?}")),
                }
            }
            Err(e) => Err(e),
        };
        println!(
            "kill -9 after {ms} ms: first answer {:?}; {verdict:?}",
            first.as_ref().map(|_| "OK").map_err(|s| s.code())
        );
        if let Err(e) = verdict {
            failed.push(format!("kill after {ms} ms: {e}"));
        }
    }
    let mut ctl = Controller::new(driver.connect().await);
    for v in vols {
        let _ = ctl
            .delete_volume(timeout(
                pb::DeleteVolumeRequest {
                    volume_id: v,
                    ..Default::default()
                },
                CALL_DEADLINE,
            ))
            .await;
    }
    assert!(failed.is_empty(), "failed:\n{}", failed.join("\n"));
}
