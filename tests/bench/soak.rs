//! Load soak of the local backend (issue 14; outside CI, run as root):
//! `cargo bench --bench soak` (release build of the driver, `--mode all --backend local` in
//! the tests/local_rig rig: sparse files, real loop devices, mkfs, mounts).
//!
//! `SOAK_CONCURRENCY` (200) workers send mixed RPCs for `SOAK_SECS` (600): most of them walk
//! one of `SOAK_VOLUMES` (24) volume slots through its whole life (CreateVolume,
//! ControllerPublish, NodeStage, NodePublish, a file written, NodeUnpublish, NodeUnstage,
//! ControllerUnpublish, DeleteVolume, then a new volume in the slot); a slot busy with another
//! worker gets a read instead (Probe, ListVolumes, ListSnapshots, GetCapacity,
//! ValidateVolumeCapabilities, NodeGetCapabilities). One CreateVolume in four is sent twice at
//! once: both must answer the same volume, or one Aborted (the name's guard). Every 5 s the driver's RSS,
//! peak RSS, open file descriptors and threads are sampled from /proc. Prints counts per RPC
//! and code, latency p50/p99, the samples' start/end/peak, then tears every slot down and
//! checks that no mount, loop device or volume file is left. Fails on any code other than OK
//! and Aborted.

#[path = "../support/mod.rs"]
mod support;
use support::local_rig;
mod proc_sample;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cinder_csi::server::csi::pb;
use cinder_csi::tools::ctl::Client;
use local_rig::{mount_cap, Rig, NODE};
use proc_sample::{sample, Sample};
use tonic::Code;

const FS: &str = "ext4";
const SIZE: i64 = 256 << 20;
/// Idle time after teardown before the last sample.
const SETTLE: Duration = Duration::from_secs(15);

fn env(key: &str, default: u64) -> u64 {
    std::env::var(key)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[derive(Default)]
struct Stats {
    /// (rpc, code) → count
    codes: BTreeMap<(&'static str, String), u64>,
    /// rpc → latencies (µs)
    lat: BTreeMap<&'static str, Vec<u64>>,
    /// The first messages of each unexpected (rpc, code): what to look for in the log.
    messages: BTreeMap<(&'static str, String), Vec<String>>,
}

type Shared = Arc<Mutex<Stats>>;
/// Per slot: the live volume's (name, id), for the reads of other workers.
type Names = Arc<Mutex<Vec<Option<(String, String)>>>>;

fn record<T>(s: &Shared, rpc: &'static str, t: Instant, r: &Result<T, tonic::Status>) {
    let code = match r {
        Ok(_) => "OK".to_string(),
        Err(e) => format!("{:?}", e.code()),
    };
    let mut s = s.lock().unwrap();
    if let Err(e) = r {
        if e.code() != Code::Aborted {
            let m = s.messages.entry((rpc, code.clone())).or_default();
            if m.len() < 3 {
                m.push(e.message().to_string());
            }
        }
    }
    *s.codes.entry((rpc, code)).or_default() += 1;
    s.lat
        .entry(rpc)
        .or_default()
        .push(t.elapsed().as_micros() as u64);
}

/// Where a slot's volume is in its life.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Step {
    Absent,
    Created,
    Attached,
    Staged,
    Published,
    Written,
    Unpublished,
    Unstaged,
    Detached,
}

struct Slot {
    index: usize,
    generation: u64,
    step: Step,
    volume: Option<pb::Volume>,
    publish_context: std::collections::HashMap<String, String>,
}

struct Ctx {
    c: Client,
    rig_dir: std::path::PathBuf,
    stats: Shared,
}

impl Ctx {
    fn name(&self, s: &Slot) -> String {
        format!("soak-{}-{}", s.index, s.generation)
    }

    fn staging(&self, id: &str) -> std::path::PathBuf {
        self.rig_dir.join(format!(
            "kubelet/plugins/kubernetes.io/csi/cinder.csi.openstack.org/{id}/globalmount"
        ))
    }

    fn target(&self, s: &Slot, id: &str) -> std::path::PathBuf {
        self.rig_dir.join(format!(
            "kubelet/pods/soak-{}/volumes/kubernetes.io~csi/pvc-{}/mount",
            s.index,
            &id[..8]
        ))
    }

    /// One step of the slot's life; it advances only on OK (Aborted: try again later).
    async fn advance(&self, s: &mut Slot) {
        let c = &self.c;
        let id = s
            .volume
            .as_ref()
            .map(|v| v.volume_id.clone())
            .unwrap_or_default();
        let t = Instant::now();
        let next = match s.step {
            Step::Absent => {
                let name = self.name(s);
                let create = || async {
                    let t = Instant::now();
                    let r = c.controller().create_volume(c.req(create_req(&name))).await;
                    record(&self.stats, "CreateVolume", t, &r);
                    r
                };
                // One in four sent twice at once, as a provisioner whose first call timed out:
                // both answer the same volume, or one is Aborted by the name's guard.
                let (a, b) = if s.generation.is_multiple_of(4) {
                    tokio::join!(create(), create())
                } else {
                    (create().await, Err(tonic::Status::aborted("not sent")))
                };
                if let (Ok(x), Ok(y)) = (&a, &b) {
                    assert_eq!(
                        x.get_ref().volume,
                        y.get_ref().volume,
                        "two volumes for {name}"
                    );
                }
                a.or(b).ok().map(|r| {
                    s.volume = r.into_inner().volume;
                    Step::Created
                })
            }
            Step::Created => {
                let r = c
                    .controller()
                    .controller_publish_volume(c.req(pb::ControllerPublishVolumeRequest {
                        volume_id: id.clone(),
                        node_id: NODE.into(),
                        volume_capability: Some(mount_cap(FS)),
                        volume_context: s.volume.as_ref().unwrap().volume_context.clone(),
                        ..Default::default()
                    }))
                    .await;
                record(&self.stats, "ControllerPublishVolume", t, &r);
                r.ok().map(|r| {
                    s.publish_context = r.into_inner().publish_context;
                    Step::Attached
                })
            }
            Step::Attached => {
                let staging = self.staging(&id);
                std::fs::create_dir_all(&staging).unwrap();
                let r = c
                    .node()
                    .node_stage_volume(c.req(pb::NodeStageVolumeRequest {
                        volume_id: id.clone(),
                        publish_context: s.publish_context.clone(),
                        staging_target_path: staging.display().to_string(),
                        volume_capability: Some(mount_cap(FS)),
                        volume_context: s.volume.as_ref().unwrap().volume_context.clone(),
                        ..Default::default()
                    }))
                    .await;
                record(&self.stats, "NodeStageVolume", t, &r);
                r.ok().map(|_| Step::Staged)
            }
            Step::Staged => {
                let target = self.target(s, &id);
                std::fs::create_dir_all(target.parent().unwrap()).unwrap();
                let r = c
                    .node()
                    .node_publish_volume(c.req(pb::NodePublishVolumeRequest {
                        volume_id: id.clone(),
                        publish_context: s.publish_context.clone(),
                        staging_target_path: self.staging(&id).display().to_string(),
                        target_path: target.display().to_string(),
                        volume_capability: Some(mount_cap(FS)),
                        volume_context: s.volume.as_ref().unwrap().volume_context.clone(),
                        ..Default::default()
                    }))
                    .await;
                record(&self.stats, "NodePublishVolume", t, &r);
                r.ok().map(|_| Step::Published)
            }
            Step::Published => {
                let f = self.target(s, &id).join("data");
                let data = format!("{} {}", s.index, s.generation);
                tokio::task::spawn_blocking(move || std::fs::write(f, data))
                    .await
                    .unwrap()
                    .expect("write into the published volume");
                Some(Step::Written)
            }
            Step::Written => {
                let f = self.target(s, &id).join("data");
                let got = std::fs::read_to_string(&f).unwrap();
                assert_eq!(got, format!("{} {}", s.index, s.generation));
                let r = c
                    .node()
                    .node_unpublish_volume(c.req(pb::NodeUnpublishVolumeRequest {
                        volume_id: id.clone(),
                        target_path: self.target(s, &id).display().to_string(),
                    }))
                    .await;
                record(&self.stats, "NodeUnpublishVolume", t, &r);
                r.ok().map(|_| Step::Unpublished)
            }
            Step::Unpublished => {
                let r = c
                    .node()
                    .node_unstage_volume(c.req(pb::NodeUnstageVolumeRequest {
                        volume_id: id.clone(),
                        staging_target_path: self.staging(&id).display().to_string(),
                    }))
                    .await;
                record(&self.stats, "NodeUnstageVolume", t, &r);
                r.ok().map(|_| Step::Unstaged)
            }
            Step::Unstaged => {
                let r = c
                    .controller()
                    .controller_unpublish_volume(c.req(pb::ControllerUnpublishVolumeRequest {
                        volume_id: id.clone(),
                        node_id: NODE.into(),
                        ..Default::default()
                    }))
                    .await;
                record(&self.stats, "ControllerUnpublishVolume", t, &r);
                r.ok().map(|_| Step::Detached)
            }
            Step::Detached => {
                let r = c
                    .controller()
                    .delete_volume(c.req(pb::DeleteVolumeRequest {
                        volume_id: id.clone(),
                        ..Default::default()
                    }))
                    .await;
                record(&self.stats, "DeleteVolume", t, &r);
                r.ok().map(|_| {
                    s.volume = None;
                    s.generation += 1;
                    Step::Absent
                })
            }
        };
        if let Some(n) = next {
            s.step = n;
        }
    }

    /// A read, or a repeated CreateVolume of a live slot's name (OK or Aborted).
    async fn read(&self, pick: u64, other: Option<(String, String)>) {
        let c = &self.c;
        let t = Instant::now();
        match (pick % 7, other) {
            (0, _) => {
                let r = c.identity().probe(c.req(pb::ProbeRequest {})).await;
                record(&self.stats, "Probe", t, &r);
            }
            (1, _) => {
                let r = c
                    .controller()
                    .list_volumes(c.req(pb::ListVolumesRequest::default()))
                    .await;
                record(&self.stats, "ListVolumes", t, &r);
            }
            (2, _) => {
                let r = c
                    .controller()
                    .get_capacity(c.req(pb::GetCapacityRequest::default()))
                    .await;
                record(&self.stats, "GetCapacity", t, &r);
            }
            (3, Some((_, id))) if !id.is_empty() => {
                let r = c
                    .controller()
                    .validate_volume_capabilities(c.req(pb::ValidateVolumeCapabilitiesRequest {
                        volume_id: id,
                        volume_capabilities: vec![mount_cap(FS)],
                        ..Default::default()
                    }))
                    .await;
                // The volume may have been deleted meanwhile: NotFound is its answer then.
                let r = r.or_else(|e| {
                    if e.code() == Code::NotFound {
                        Ok(tonic::Response::new(Default::default()))
                    } else {
                        Err(e)
                    }
                });
                record(&self.stats, "ValidateVolumeCapabilities", t, &r);
            }
            (4, _) => {
                let r = c
                    .controller()
                    .list_snapshots(c.req(pb::ListSnapshotsRequest::default()))
                    .await;
                record(&self.stats, "ListSnapshots", t, &r);
            }
            _ => {
                let r = c
                    .node()
                    .node_get_capabilities(c.req(pb::NodeGetCapabilitiesRequest {}))
                    .await;
                record(&self.stats, "NodeGetCapabilities", t, &r);
            }
        }
    }
}

fn create_req(name: &str) -> pb::CreateVolumeRequest {
    pb::CreateVolumeRequest {
        name: name.into(),
        capacity_range: Some(pb::CapacityRange {
            required_bytes: SIZE,
            limit_bytes: 0,
        }),
        volume_capabilities: vec![mount_cap(FS)],
        ..Default::default()
    }
}

fn pct(v: &mut [u64], p: f64) -> u64 {
    v.sort_unstable();
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

fn main() {
    if !nix::unistd::geteuid().is_root() {
        println!("skipped: the soak needs root (loop devices, mkfs, mounts)");
        return;
    }
    let secs = env("SOAK_SECS", 600);
    let workers = env("SOAK_CONCURRENCY", 200);
    let slots = env("SOAK_VOLUMES", 24) as usize;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut rig = Rig::new();
    let bad = rt.block_on(async {
        let c = rig.start().await;
        let pid = rig.pid().unwrap();
        let ctx = Arc::new(Ctx {
            c,
            rig_dir: rig.dir.clone(),
            stats: Shared::default(),
        });
        let table: Arc<Vec<tokio::sync::Mutex<Slot>>> = Arc::new(
            (0..slots)
                .map(|index| {
                    tokio::sync::Mutex::new(Slot {
                        index,
                        generation: 0,
                        step: Step::Absent,
                        volume: None,
                        publish_context: Default::default(),
                    })
                })
                .collect(),
        );
        let names: Names = Arc::new(Mutex::new(vec![None; slots]));
        let samples = Arc::new(Mutex::new(vec![sample(pid)]));
        let start = Instant::now();
        let end = start + Duration::from_secs(secs);
        let sampler = {
            let samples = samples.clone();
            tokio::spawn(async move {
                while Instant::now() < end {
                    tokio::time::sleep(Duration::from_secs(5)).await;
                    samples.lock().unwrap().push(sample(pid));
                }
            })
        };
        let mut tasks = Vec::new();
        for w in 0..workers {
            let (ctx, table, names) = (ctx.clone(), table.clone(), names.clone());
            tasks.push(tokio::spawn(async move {
                let mut x = (w + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
                let mut rng = move || {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x
                };
                while Instant::now() < end {
                    let i = (rng() % table.len() as u64) as usize;
                    let life = rng() % 10 < 6;
                    let guard = if life { table[i].try_lock().ok() } else { None };
                    match guard {
                        Some(mut s) => {
                            ctx.advance(&mut s).await;
                            let live = s
                                .volume
                                .as_ref()
                                .map(|v| (ctx.name(&s), v.volume_id.clone()));
                            names.lock().unwrap()[i] = live;
                        }
                        None => {
                            let other = names.lock().unwrap()[i].clone();
                            ctx.read(rng(), other).await;
                        }
                    }
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        sampler.await.unwrap();
        // The end figure is read before teardown, as the start one before the first RPC.
        samples.lock().unwrap().push(sample(pid));
        let elapsed = start.elapsed();
        // Tear every slot down, then nothing may be left.
        for slot in table.iter() {
            let mut s = slot.lock().await;
            let mut steps = 0;
            while s.step != Step::Absent {
                ctx.advance(&mut s).await;
                steps += 1;
                assert!(steps < 1000, "slot {} stuck at {:?}", s.index, s.step);
            }
        }
        // Then idle: tokio's blocking threads exit after 10 s without work, so what the
        // driver holds at rest is what the load left behind.
        tokio::time::sleep(SETTLE).await;
        let settled = sample(pid);
        let samples = samples.lock().unwrap().clone();
        let stats = ctx.stats.lock().unwrap();
        let bad = report(&stats, &samples, elapsed, workers, slots);
        println!(
            "\nsettled, {} s after teardown: RSS {:.1} MiB ({:.1} anonymous), {} open fds, \
             {} threads",
            SETTLE.as_secs(),
            settled.rss_kib as f64 / 1024.0,
            settled.anon_kib as f64 / 1024.0,
            settled.fds,
            settled.threads
        );
        bad
    });
    let mounts = rig.mounts();
    let loops = rig.loop_devices();
    let files = rig.data_files();
    println!(
        "\nleft after teardown: {} mounts, {} loop devices, {} volume files",
        mounts.len(),
        loops.len(),
        files.len()
    );
    assert!(mounts.is_empty() && loops.is_empty() && files.is_empty());
    let log = rig.log();
    assert!(rig.stop(), "driver did not exit cleanly:\n{log}");
    if !bad.is_empty() {
        let warned: Vec<&str> = log
            .lines()
            // Aborted (the name's guard) and NotFound (a read racing a delete) are expected.
            .filter(|l| l.contains("ERROR") || l.contains("WARN"))
            .filter(|l| !l.contains("code=Aborted") && !l.contains("code=NotFound"))
            .take(40)
            .collect();
        panic!(
            "codes other than OK and Aborted: {bad:?}\n--- the driver's first warnings:\n{}",
            warned.join("\n")
        );
    }
}

fn report(
    st: &Stats,
    samples: &[Sample],
    elapsed: Duration,
    workers: u64,
    slots: usize,
) -> Vec<String> {
    let total: u64 = st.codes.values().sum();
    println!(
        "\n### Soak: {workers} concurrent workers, {slots} volume slots, {} s, {total} RPCs \
         ({:.0}/s)\n",
        elapsed.as_secs(),
        total as f64 / elapsed.as_secs_f64()
    );
    println!("| RPC | OK | Aborted | other | p50 ms | p99 ms |\n|---|---|---|---|---|---|");
    let mut bad = Vec::new();
    for (rpc, lat) in &st.lat {
        let n = |code: &str| {
            st.codes
                .get(&(*rpc, code.to_string()))
                .copied()
                .unwrap_or(0)
        };
        let other: u64 = st
            .codes
            .iter()
            .filter(|((r, c), _)| r == rpc && c != "OK" && c != "Aborted")
            .map(|(k, v)| {
                bad.push(format!("{} {}: {v}", k.0, k.1));
                *v
            })
            .sum();
        let mut l = lat.clone();
        println!(
            "| {rpc} | {} | {} | {other} | {:.1} | {:.1} |",
            n("OK"),
            n("Aborted"),
            pct(&mut l, 0.5) as f64 / 1000.0,
            pct(&mut l, 0.99) as f64 / 1000.0
        );
    }
    println!("\n{}", proc_sample::table(samples));
    for ((rpc, code), m) in &st.messages {
        println!("{rpc} {code}: {}", m.join(" | "));
    }
    bad
}
