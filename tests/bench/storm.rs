//! Controller provisioning storm against the real OpenStack test cloud, through the real
//! driver: the `cinder-csi` binary in controller mode on a Unix socket, driven over gRPC.
//! N concurrent CreateVolume, then N concurrent ControllerPublishVolume to one server, then
//! teardown (N ControllerUnpublishVolume, N DeleteVolume). Reports wall time and RPC latency
//! per phase, and the Keystone, Cinder and Nova requests the driver made, read from its
//! `/metrics` (the adapter's metrics hooks), as Markdown for docs/PERFORMANCE.md.
//!
//! `CINDER_CSI_OSTACK_ENV=<state>/env.sh cargo bench --bench storm` (STORM_VOLUMES=50 by
//! default); without the env file it prints "skipped" and exits 0.

#[path = "../openstack_support/mod.rs"]
mod openstack_support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use cinder_csi::cloud::openstack::{Op, Service};
use cinder_csi::csi::pb;
use cinder_csi::csi::pb::controller_client::ControllerClient;
use openstack_support::Cloud;
use tokio::time::Instant;
use tonic::transport::{Channel, Endpoint, Uri};

/// The sidecars' RPC timeout (upstream manifests: --timeout=3m).
const RPC_TIMEOUT: Duration = Duration::from_secs(180);
const GIB: i64 = 1 << 30;

/// Per OpenStack operation, from the driver's `/metrics`: (requests, errors, seconds spent).
type Counts = BTreeMap<String, (u64, u64, f64)>;

struct Phase {
    name: &'static str,
    wall: Duration,
    latencies: Vec<Duration>,
    calls: Counts,
}

/// The driver process; stopped (and its log shown on failure) when dropped.
struct Driver {
    child: Child,
    log: PathBuf,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        let _ = self.child.wait();
        if std::thread::panicking() {
            let text = std::fs::read_to_string(&self.log).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            eprintln!(
                "--- cinder-csi log:\n{}",
                lines[lines.len().saturating_sub(60)..].join("\n")
            );
        }
    }
}

fn main() {
    let Some(cloud) = Cloud::from_env("the storm benchmark") else {
        return;
    };
    let n: usize = std::env::var("STORM_VOLUMES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(50);
    let dir = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let socket = dir.path().join("csi.sock");
    let log = dir.path().join("cinder-csi.log");
    let driver = Driver {
        child: Command::new(env!("CARGO_BIN_EXE_cinder-csi"))
            .args(["--mode", "controller", "--backend", "openstack"])
            .args(["--cluster", "storm"])
            .arg("--cloud-config")
            .arg(cloud.var("OSTACK_CLOUD_CONF"))
            .arg("--endpoint")
            .arg(format!("unix://{}", socket.display()))
            .arg("--http-endpoint")
            .arg(format!("127.0.0.1:{port}"))
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&log).unwrap())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("start cinder-csi"),
        log,
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let run = uuid::Uuid::new_v4().simple().to_string()[..8].to_string();
    let result = rt.block_on(storm(&cloud, n, &socket, port, &run));
    let memory = memory_kib(driver.child.id());
    drop(driver);
    leftovers(&cloud, &run);
    let phases = result.unwrap_or_else(|e| panic!("storm failed: {e}"));
    report(n, &phases);
    println!(
        "driver memory after the storm: RSS {} KiB, peak RSS (VmHWM) {} KiB \
         (upstream controller: 38-39 MB peak)",
        memory.0, memory.1
    );
}

/// The driver's current and peak resident set (VmRSS, VmHWM) in KiB, from /proc.
fn memory_kib(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

async fn storm(
    cloud: &Cloud,
    n: usize,
    socket: &Path,
    port: u16,
    run: &str,
) -> Result<Vec<Phase>, String> {
    let channel = connect(socket).await?;
    let client = ControllerClient::new(channel);
    let server = cloud.node(1, "ID").to_string();
    let mut phases = Vec::new();

    let created = phase(&mut phases, "CreateVolume", port, n, |i| {
        let mut c = client.clone();
        let name = format!("storm-{run}-{i}");
        async move {
            let r = c
                .create_volume(rpc(pb::CreateVolumeRequest {
                    name,
                    capacity_range: Some(pb::CapacityRange {
                        required_bytes: GIB,
                        limit_bytes: 0,
                    }),
                    volume_capabilities: vec![capability()],
                    ..Default::default()
                }))
                .await?;
            Ok(r.into_inner()
                .volume
                .map(|v| v.volume_id)
                .unwrap_or_default())
        }
    })
    .await?;

    let ids = created.clone();
    phase(&mut phases, "ControllerPublishVolume", port, n, |i| {
        let mut c = client.clone();
        let (id, node) = (ids[i].clone(), server.clone());
        async move {
            c.controller_publish_volume(rpc(pb::ControllerPublishVolumeRequest {
                volume_id: id.clone(),
                node_id: node,
                volume_capability: Some(capability()),
                ..Default::default()
            }))
            .await?;
            Ok(id)
        }
    })
    .await?;

    phase(&mut phases, "ControllerUnpublishVolume", port, n, |i| {
        let mut c = client.clone();
        let (id, node) = (ids[i].clone(), server.clone());
        async move {
            c.controller_unpublish_volume(rpc(pb::ControllerUnpublishVolumeRequest {
                volume_id: id.clone(),
                node_id: node,
                ..Default::default()
            }))
            .await?;
            Ok(id)
        }
    })
    .await?;

    phase(&mut phases, "DeleteVolume", port, n, |i| {
        let mut c = client.clone();
        let id = ids[i].clone();
        async move {
            c.delete_volume(rpc(pb::DeleteVolumeRequest {
                volume_id: id.clone(),
                ..Default::default()
            }))
            .await?;
            Ok(id)
        }
    })
    .await?;
    Ok(phases)
}

fn rpc<T>(msg: T) -> tonic::Request<T> {
    let mut r = tonic::Request::new(msg);
    r.set_timeout(RPC_TIMEOUT);
    r
}

fn capability() -> pb::VolumeCapability {
    pb::VolumeCapability {
        access_type: Some(pb::volume_capability::AccessType::Mount(
            pb::volume_capability::MountVolume {
                fs_type: "ext4".into(),
                ..Default::default()
            },
        )),
        access_mode: Some(pb::volume_capability::AccessMode {
            mode: pb::volume_capability::access_mode::Mode::SingleNodeWriter as i32,
        }),
    }
}

/// Run `n` copies of one RPC at once; record wall time, latencies and the requests made.
async fn phase<F, Fut>(
    phases: &mut Vec<Phase>,
    name: &'static str,
    port: u16,
    n: usize,
    call: F,
) -> Result<Vec<String>, String>
where
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = Result<String, tonic::Status>> + Send + 'static,
{
    let before = scrape(port).await?;
    let started = Instant::now();
    let tasks: Vec<_> = (0..n)
        .map(|i| {
            let fut = call(i);
            tokio::spawn(async move {
                let t = Instant::now();
                (fut.await, t.elapsed())
            })
        })
        .collect();
    let mut ids = Vec::with_capacity(n);
    let mut latencies = Vec::with_capacity(n);
    let mut failed = Vec::new();
    for t in tasks {
        let (r, took) = t.await.map_err(|e| e.to_string())?;
        latencies.push(took);
        match r {
            Ok(id) => ids.push(id),
            Err(s) => failed.push(format!("{:?}: {}", s.code(), s.message())),
        }
    }
    let wall = started.elapsed();
    let after = scrape(port).await?;
    let calls = after
        .iter()
        .map(|(k, (r, e, t))| {
            let (r0, e0, t0) = before.get(k).copied().unwrap_or_default();
            (k.clone(), (r - r0, e - e0, t - t0))
        })
        .collect();
    latencies.sort();
    phases.push(Phase {
        name,
        wall,
        latencies,
        calls,
    });
    if failed.is_empty() {
        Ok(ids)
    } else {
        Err(format!(
            "{name}: {} of {n} failed: {}",
            failed.len(),
            failed.join("; ")
        ))
    }
}

async fn connect(socket: &Path) -> Result<Channel, String> {
    let deadline = Instant::now() + Duration::from_secs(30);
    while tokio::net::UnixStream::connect(socket).await.is_err() {
        if Instant::now() > deadline {
            return Err("cinder-csi did not bind its socket".into());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let path = socket.to_path_buf();
    Endpoint::try_from("http://csi.invalid")
        .map_err(|e| e.to_string())?
        .connect_with_connector(tower::service_fn(move |_: Uri| {
            let path = path.clone();
            async move {
                let s = tokio::net::UnixStream::connect(path).await?;
                Ok::<_, std::io::Error>(hyper_util::rt::TokioIo::new(s))
            }
        }))
        .await
        .map_err(|e| e.to_string())
}

/// `openstack_api_requests_total{request="…"}` and `…_errors_total` from `/metrics`.
async fn scrape(port: u16) -> Result<Counts, String> {
    let text = reqwest::get(format!("http://127.0.0.1:{port}/metrics"))
        .await
        .map_err(|e| e.to_string())?
        .text()
        .await
        .map_err(|e| e.to_string())?;
    let mut out = Counts::new();
    let kinds = [
        "openstack_api_requests_total{",
        "openstack_api_request_errors_total{",
        "openstack_api_request_duration_seconds_sum{",
    ];
    for line in text.lines() {
        let Some((which, metric)) = kinds
            .iter()
            .enumerate()
            .find_map(|(i, k)| line.strip_prefix(k).map(|r| (i, r)))
        else {
            continue;
        };
        let Some((labels, value)) = metric.split_once("} ") else {
            continue;
        };
        let op = labels
            .trim_start_matches("request=\"")
            .trim_end_matches('"')
            .to_string();
        let v: f64 = value.trim().parse().unwrap_or(0.0);
        let e = out.entry(op).or_default();
        match which {
            0 => e.0 = v as u64,
            1 => e.1 = v as u64,
            _ => e.2 = v,
        }
    }
    Ok(out)
}

fn service_of(op: &str) -> Option<Service> {
    Op::ALL.iter().find(|o| o.name() == op).map(|o| o.service())
}

fn per_service(c: &Counts, s: Service) -> (u64, u64) {
    c.iter()
        .filter(|(op, _)| service_of(op) == Some(s))
        .fold((0, 0), |(r, e), (_, (r1, e1, _))| (r + r1, e + e1))
}

/// Volumes of this run still in the cloud after a failure: detach and delete as admin.
fn leftovers(cloud: &Cloud, run: &str) {
    let Some(list) = cloud.api(
        true,
        "block-storage",
        "GET",
        "/volumes/detail?all_tenants=1",
    ) else {
        return;
    };
    let prefix = format!("storm-{run}-");
    for v in list["volumes"].as_array().cloned().unwrap_or_default() {
        if !v["name"].as_str().unwrap_or_default().starts_with(&prefix) {
            continue;
        }
        let id = v["id"].as_str().unwrap_or_default().to_string();
        for a in v["attachments"].as_array().cloned().unwrap_or_default() {
            let server = a["server_id"].as_str().unwrap_or_default();
            cloud.api(
                true,
                "compute",
                "DELETE",
                &format!("/servers/{server}/os-volume_attachments/{id}"),
            );
        }
        cloud.wait_for(&format!("volume {id} detached"), || {
            !matches!(
                cloud.volume_status(&id).as_str(),
                "in-use" | "detaching" | "attaching" | "reserved" | "creating"
            )
        });
        cloud.api(true, "block-storage", "DELETE", &format!("/volumes/{id}"));
    }
}

fn pct(sorted: &[Duration], p: f64) -> f64 {
    let i = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i].as_secs_f64()
}

fn report(n: usize, phases: &[Phase]) {
    println!("\nController storm: {n} volumes, one server, real driver over gRPC\n");
    println!("| phase | wall | RPC p50 / max | Cinder | Nova | Keystone | API errors |");
    println!("|---|---|---|---|---|---|---|");
    let mut total = Counts::new();
    for p in phases {
        for (op, (r, e, secs)) in &p.calls {
            let t = total.entry(op.clone()).or_default();
            t.0 += r;
            t.1 += e;
            t.2 += secs;
        }
        let (c, ce) = per_service(&p.calls, Service::Cinder);
        let (nv, ne) = per_service(&p.calls, Service::Nova);
        let (k, ke) = per_service(&p.calls, Service::Keystone);
        println!(
            "| {} | {:.1} s | {:.2} / {:.2} s | {c} | {nv} | {k} | {} |",
            p.name,
            p.wall.as_secs_f64(),
            pct(&p.latencies, 0.5),
            pct(&p.latencies, 1.0),
            ce + ne + ke
        );
    }
    let wall: Duration = phases.iter().map(|p| p.wall).sum();
    let (c, _) = per_service(&total, Service::Cinder);
    let (nv, _) = per_service(&total, Service::Nova);
    let (k, _) = per_service(&total, Service::Keystone);
    println!(
        "| total | {:.1} s | | {c} | {nv} | {k} | |",
        wall.as_secs_f64()
    );
    println!("\nby operation: requests / errors / mean latency");
    for (op, (r, e, secs)) in &total {
        if *r > 0 {
            println!(
                "  {op:<24} {r:>5} / {e:>3} / {:>6.0} ms",
                secs * 1000.0 / *r as f64
            );
        }
    }
    for p in phases {
        let ops: Vec<String> = p
            .calls
            .iter()
            .filter(|(_, (r, _, _))| *r > 0)
            .map(|(op, (r, _, _))| format!("{op} {r}"))
            .collect();
        println!("  {}: {}", p.name, ops.join(", "));
    }
    let all = c + nv + k;
    println!(
        "\n{all} requests for {n} volumes = {:.1} per volume (upstream: 309-338 for 20 volumes = \
         15.5-16.9 per volume, one Keystone token)",
        all as f64 / n as f64
    );
    assert_eq!(k, 1, "the whole storm must cost one Keystone token request");
}
