//! Node hot path benchmark (run as root: `cargo bench --bench node`).
//!
//! Side by side, in one run and interleaved round by round, on one loop device:
//! - ours: NodePublishVolume + NodeUnpublishVolume and NodeStageVolume + NodeUnstageVolume
//!   through the real `cinder-csi` binary (release build) over its Unix socket, one persistent
//!   channel, sequential calls;
//! - the raw floor: the mount(2)/umount2(2) pair alone, and the full syscall sequence
//!   (statx + mkdir + bind / statx + umount2 + rmdir) in this process;
//! - the exec anchor: `/bin/mount --bind` + `/bin/umount` (and `/bin/mount -t ext4` for stage);
//! - the transport floor: two empty gRPC calls (NodeGetCapabilities) on the same channel.
//!
//! With `-- --other "CMD ARGS"` (e.g. upstream's cinder-csi-plugin in node mode, or an
//! earlier cinder-csi with `--kubelet-dir {root}/other`; `{root}` is this run's directory,
//! and the bench adds `--endpoint=unix://…`), both drivers then run the same calls,
//! interleaved call by call, each on its own blank loop device, and a side-by-side table with ratios follows
//! (node_side.rs). The other driver finds its device by `/dev/disk/by-id/virtio-<id[:20]>`,
//! which the bench links (and removes).
//!
//! `CINDER_CSI_BIN=PATH` runs that binary as ours instead of cargo's bench build (e.g. a
//! copy of `cargo build --release`'s, the one that ships).
//!
//! Prints a Markdown table (p50/p99 per pair) for docs/PERFORMANCE.md. `BENCH_ROUNDS` and
//! `BENCH_ITERS` scale it (defaults 10 × 200 for publish, a fifth of that for stage). Every
//! iteration samples each method once, in a rotating order, and the ratios against the
//! floors are taken per round (median and spread over the rounds): on a shared machine a
//! load change then moves ours and its floor alike.
//! `BENCH_RT=1` runs the benchmark and the driver under SCHED_FIFO (via `chrt`), which takes
//! other tenants' CPU load out of the numbers: on a shared 2-vCPU machine under CFS, a syscall
//! that sleeps (rmdir on ext4 waits for the journal) pays a whole reschedule when it wakes.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use cinder_csi::server::csi::pb::node_client::NodeClient;
use cinder_csi::server::csi::pb::volume_capability::access_mode::Mode;
use cinder_csi::server::csi::pb::volume_capability::{AccessMode, AccessType, MountVolume};
use cinder_csi::server::csi::pb::*;
use nix::mount::{MntFlags, MsFlags};
use tonic::transport::Channel;

mod node_side;

const VOL: &str = "bench-0123456789abcdefghij";
const OTHER_VOL: &str = "benchother-0123456789abcdef";

struct Cleanup {
    root: PathBuf,
    dev: Option<String>,
    other_dev: Option<String>,
    link: Option<PathBuf>,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        let text = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        let mut mounts: Vec<&str> = text
            .lines()
            .filter_map(|l| l.split(' ').nth(4))
            .filter(|p| Path::new(p).starts_with(&self.root))
            .collect();
        mounts.reverse();
        for m in mounts {
            let _ = nix::mount::umount2(m, MntFlags::MNT_DETACH);
        }
        if let Some(link) = &self.link {
            let _ = std::fs::remove_file(link);
        }
        for dev in self.dev.iter().chain(&self.other_dev) {
            let _ = Command::new("losetup").args(["-d", dev]).status();
        }
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

pub(crate) fn cap() -> VolumeCapability {
    VolumeCapability {
        access_type: Some(AccessType::Mount(MountVolume {
            fs_type: "ext4".into(),
            mount_flags: vec![],
            volume_mount_group: String::new(),
        })),
        access_mode: Some(AccessMode {
            mode: Mode::SingleNodeWriter as i32,
        }),
    }
}

/// One row's samples, in the order taken, and where each round ended (so a statistic can be
/// taken per round as well as over the whole run).
#[derive(Default)]
pub(crate) struct Samples(Vec<Duration>, Vec<usize>);

impl Samples {
    /// Nearest-rank quantile over every sample of the run.
    fn p(&self, q: f64) -> Duration {
        quantile(&self.0, q)
    }

    pub(crate) fn end_round(&mut self) {
        self.1.push(self.0.len());
    }

    /// The median of each round's samples.
    fn round_medians(&self) -> Vec<Duration> {
        let mut start = 0;
        let mut out = Vec::new();
        for &end in &self.1 {
            if end > start {
                out.push(quantile(&self.0[start..end], 0.5));
            }
            start = end;
        }
        out
    }
}

fn quantile(samples: &[Duration], q: f64) -> Duration {
    let mut v = samples.to_vec();
    v.sort();
    let i = ((v.len() as f64 * q).ceil() as usize).clamp(1, v.len()) - 1;
    v[i]
}

/// `ours` against `floor` (the sum of the floor rows' medians), per round: each round's
/// rows were taken interleaved, so a change of the machine's load during the run moves both
/// sides of one round's ratio alike. Returns (median, min, max) over the rounds and the ratio
/// of the whole run's medians.
pub(crate) fn ratio(ours: &Samples, floor: &[&Samples]) -> (f64, f64, f64, f64) {
    let o = ours.round_medians();
    let f: Vec<Vec<Duration>> = floor.iter().map(|s| s.round_medians()).collect();
    let mut r: Vec<f64> = (0..o.len())
        .map(|i| o[i].as_secs_f64() / f.iter().map(|x| x[i].as_secs_f64()).sum::<f64>())
        .collect();
    r.sort_by(|a, b| a.total_cmp(b));
    let whole =
        ours.p(0.5).as_secs_f64() / floor.iter().map(|s| s.p(0.5).as_secs_f64()).sum::<f64>();
    (r[r.len() / 2], r[0], r[r.len() - 1], whole)
}

pub(crate) fn us(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    if us >= 1000.0 {
        format!("{:.2} ms", us / 1000.0)
    } else {
        format!("{us:.0} µs")
    }
}

fn exec(cmd: &str, args: &[&str]) {
    let st = Command::new(cmd).args(args).status().unwrap();
    assert!(st.success(), "{cmd} {args:?}");
}

fn main() {
    // `cargo test --benches` runs bench targets with `--bench`-less args; skip there.
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    assert!(
        nix::unistd::geteuid().is_root(),
        "the node benchmark needs root (loop devices, mount(2))"
    );
    let rt_prio = std::env::var("BENCH_RT").is_ok_and(|v| v == "1");
    if rt_prio {
        // Before any thread exists, so every thread of this process inherits the policy.
        let pid = std::process::id().to_string();
        exec("chrt", &["-a", "-f", "-p", "10", &pid]);
    }
    // Ten short rounds rather than a few long ones: the ratios are taken per round, and their
    // spread shows how much the shared machine moved them.
    let rounds: usize = env_num("BENCH_ROUNDS", 10);
    let iters: usize = env_num("BENCH_ITERS", 200);
    let stage_iters = (iters / 5).max(10);

    let root = PathBuf::from(format!("/var/tmp/cinder-node-bench-{}", std::process::id()));
    let mut cleanup = Cleanup {
        root: root.clone(),
        dev: None,
        other_dev: None,
        link: None,
    };
    let args: Vec<String> = std::env::args().collect();
    let other: Option<Vec<String>> = args.iter().position(|a| a == "--other").map(|i| {
        // `{root}` stands for this run's directory (the other driver's kubelet dir must
        // hold the paths the bench sends it).
        let line = args[i + 1].replace("{root}", &root.display().to_string());
        line.split_whitespace().map(str::to_string).collect()
    });
    let kubelet = root.join("kubelet");
    let by_id = root.join("local/by-id/6b1f3c9e-2a4d-4e5f-8a7b-9c0d1e2f3a4b");
    std::fs::create_dir_all(&kubelet).unwrap();
    std::fs::create_dir_all(&by_id).unwrap();
    let dev = loop_device(&root.join("vol.img"));
    cleanup.dev = Some(dev.clone());
    std::os::unix::fs::symlink(&dev, by_id.join(format!("virtio-{}", &VOL[..20]))).unwrap();

    let sock = root.join("csi.sock");
    // Spawned by this process, the driver inherits SCHED_FIFO when BENCH_RT=1.
    // CINDER_CSI_BIN: the release binary as shipped (cargo bench's own build has the
    // dev-dependencies' features, and another function layout; tests/bench/startup.rs).
    let ours = std::env::var_os("CINDER_CSI_BIN")
        .unwrap_or_else(|| env!("CARGO_BIN_EXE_cinder-csi").into());
    let mut child = Command::new(ours)
        .args([
            "--mode",
            "node",
            "--backend",
            "local",
            "--node-id",
            "6b1f3c9e-2a4d-4e5f-8a7b-9c0d1e2f3a4b",
        ])
        .arg("--local-dir")
        .arg(root.join("local"))
        .arg("--kubelet-dir")
        .arg(&kubelet)
        .arg("--endpoint")
        .arg(format!("unix://{}", sock.display()))
        .env("CINDER_CSI_LOG_LEVEL", "warn")
        .spawn()
        .unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let mut other_child = None;
    if let Some(cmd) = &other {
        let other_dev = loop_device(&root.join("other.img"));
        cleanup.other_dev = Some(other_dev.clone());
        let link = PathBuf::from(format!("/dev/disk/by-id/virtio-{}", &OTHER_VOL[..20]));
        std::fs::create_dir_all(link.parent().unwrap()).unwrap();
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&other_dev, &link).unwrap();
        cleanup.link = Some(link);
        other_child = Some(
            Command::new(&cmd[0])
                .args(&cmd[1..])
                .arg(format!(
                    "--endpoint=unix://{}",
                    root.join("other.sock").display()
                ))
                .stdout(std::fs::File::create(root.join("other.log")).unwrap())
                .stderr(std::fs::File::create(root.join("other.log")).unwrap())
                .spawn()
                .unwrap_or_else(|e| panic!("start {}: {e}", cmd[0])),
        );
    }
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        rt.block_on(async {
            run(&kubelet, &dev, &sock, rounds, iters, stage_iters).await;
            if let Some(cmd) = &other {
                let label = Path::new(&cmd[0]).file_name().unwrap().to_string_lossy();
                let mut sides = [
                    node_side::Side::new("cinder-csi", &sock, &kubelet.join("side"), VOL, &dev)
                        .await,
                    node_side::Side::new(
                        &label,
                        &root.join("other.sock"),
                        &root.join("other"),
                        OTHER_VOL,
                        cleanup.other_dev.as_deref().unwrap(),
                    )
                    .await,
                ];
                node_side::run(&mut sides, rounds, iters / 2).await;
                node_side::report(&mut sides);
            }
        })
    }));
    let _ = child.kill();
    let _ = child.wait();
    if let Some(mut c) = other_child {
        let _ = c.kill();
        let _ = c.wait();
        if result.is_err() {
            let log = std::fs::read_to_string(root.join("other.log")).unwrap_or_default();
            eprintln!("--- other driver log:\n{log}");
        }
    }
    drop(cleanup);
    if let Err(e) = result {
        std::panic::resume_unwind(e);
    }
}

/// A loop device over a new sparse 1 GiB file.
fn loop_device(img: &Path) -> String {
    std::fs::File::create(img)
        .unwrap()
        .set_len(1 << 30)
        .unwrap();
    let out = Command::new("losetup")
        .args(["--find", "--show", img.to_str().unwrap()])
        .output()
        .unwrap();
    let dev = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert!(dev.starts_with("/dev/loop"), "losetup: {out:?}");
    dev
}

fn env_num(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

async fn run(
    kubelet: &Path,
    dev: &str,
    sock: &Path,
    rounds: usize,
    iters: usize,
    stage_iters: usize,
) {
    let until = Instant::now() + Duration::from_secs(10);
    while std::os::unix::net::UnixStream::connect(sock).is_err() {
        assert!(Instant::now() < until, "driver did not start");
        std::thread::sleep(Duration::from_millis(5));
    }
    let ch: Channel = cinder_csi::server::csi::client::connect_unix(sock.to_path_buf())
        .await
        .unwrap();
    let mut c = NodeClient::new(ch);
    let staging = kubelet.join("plugins/kubernetes.io/csi/cinder/globalmount");
    let target = kubelet.join("pods/p/volumes/kubernetes.io~csi/pvc/mount");
    std::fs::create_dir_all(target.parent().unwrap()).unwrap();
    let raw_staging = kubelet.join("raw-staging");
    std::fs::create_dir_all(&raw_staging).unwrap();
    let stage_req = NodeStageVolumeRequest {
        volume_id: VOL.into(),
        staging_target_path: staging.display().to_string(),
        volume_capability: Some(cap()),
        ..Default::default()
    };
    let unstage_req = NodeUnstageVolumeRequest {
        volume_id: VOL.into(),
        staging_target_path: staging.display().to_string(),
    };
    let publish_req = NodePublishVolumeRequest {
        volume_id: VOL.into(),
        staging_target_path: staging.display().to_string(),
        target_path: target.display().to_string(),
        volume_capability: Some(cap()),
        ..Default::default()
    };
    let unpublish_req = NodeUnpublishVolumeRequest {
        volume_id: VOL.into(),
        target_path: target.display().to_string(),
    };
    // First stage formats the blank device; time it once.
    let t = Instant::now();
    c.node_stage_volume(stage_req.clone()).await.unwrap();
    let first_stage = t.elapsed();

    let names = [
        "ours: NodePublish + NodeUnpublish (gRPC)",
        "raw: mount(MS_BIND) + umount2 pair",
        "raw: statx+mkdir+bind / statx+umount2+rmdir",
        "exec: /bin/mount --bind + /bin/umount",
        "gRPC floor: 2 × NodeGetCapabilities",
        "ours: NodeStage + NodeUnstage, formatted ext4 (gRPC)",
        "raw: mount(2) ext4 + umount2",
        "exec: /bin/mount -t ext4 + /bin/umount",
        "tokio spawn_blocking round trip, empty closure (×2 per pair)",
    ];
    let mut s: Vec<Samples> = names.iter().map(|_| Samples::default()).collect();
    let mut publish_only = Samples::default();
    let mut unpublish_only = Samples::default();
    let mut stage_grpc = Samples::default();
    let bind_dir = kubelet.join("raw-target");
    // Each iteration takes one sample of every method, in an order that rotates from one
    // iteration to the next: a change of the machine's load (the machine is shared) falls on
    // all of them alike, instead of on whichever block of one method ran at that moment.
    // The exec anchors (a few ms each) run every fourth iteration.
    for _ in 0..rounds {
        // Publish side: the volume stays staged.
        for i in 0..iters {
            for k in 0..5 {
                match (i + k) % 5 {
                    0 => {
                        let t = Instant::now();
                        c.node_publish_volume(publish_req.clone()).await.unwrap();
                        let mid = Instant::now();
                        c.node_unpublish_volume(unpublish_req.clone())
                            .await
                            .unwrap();
                        let end = Instant::now();
                        s[0].0.push(end - t);
                        publish_only.0.push(mid - t);
                        unpublish_only.0.push(end - mid);
                    }
                    1 => {
                        std::fs::create_dir_all(&bind_dir).unwrap();
                        let t = Instant::now();
                        bind(&staging, &bind_dir);
                        nix::mount::umount2(&bind_dir, MntFlags::empty()).unwrap();
                        s[1].0.push(t.elapsed());
                        std::fs::remove_dir(&bind_dir).unwrap();
                    }
                    2 => {
                        let t = Instant::now();
                        let _ = statx(&bind_dir);
                        std::fs::create_dir(&bind_dir).unwrap();
                        bind(&staging, &bind_dir);
                        let _ = statx(&bind_dir);
                        nix::mount::umount2(&bind_dir, MntFlags::empty()).unwrap();
                        std::fs::remove_dir(&bind_dir).unwrap();
                        s[2].0.push(t.elapsed());
                    }
                    3 if i % 4 == 0 => {
                        std::fs::create_dir_all(&bind_dir).unwrap();
                        let t = Instant::now();
                        let (from, to) = (staging.to_str().unwrap(), bind_dir.to_str().unwrap());
                        exec("/bin/mount", &["--bind", from, to]);
                        exec("/bin/umount", &[to]);
                        s[3].0.push(t.elapsed());
                        std::fs::remove_dir(&bind_dir).unwrap();
                    }
                    4 => {
                        let t = Instant::now();
                        two_empty_calls(&mut c).await;
                        s[4].0.push(t.elapsed());
                    }
                    _ => {}
                }
            }
            // What handing one RPC's host work to the blocking pool costs (the driver does
            // it once per RPC; same runtime shape as this client: tokio multi-thread).
            let t = Instant::now();
            tokio::task::spawn_blocking(|| ()).await.unwrap();
            s[8].0.push(t.elapsed());
        }
        // Stage side: each pair starts and ends unstaged, so the raw mounts can use the
        // device in between. The transport floor is sampled here too (its own row is the
        // publish side's).
        c.node_unstage_volume(unstage_req.clone()).await.unwrap();
        for i in 0..stage_iters {
            for k in 0..4 {
                match (i + k) % 4 {
                    0 => {
                        let t = Instant::now();
                        c.node_stage_volume(stage_req.clone()).await.unwrap();
                        c.node_unstage_volume(unstage_req.clone()).await.unwrap();
                        s[5].0.push(t.elapsed());
                    }
                    1 => {
                        let t = Instant::now();
                        nix::mount::mount(
                            Some(dev),
                            &raw_staging,
                            Some("ext4"),
                            MsFlags::empty(),
                            None::<&str>,
                        )
                        .unwrap();
                        nix::mount::umount2(&raw_staging, MntFlags::empty()).unwrap();
                        s[6].0.push(t.elapsed());
                    }
                    2 if i % 4 == 0 => {
                        let t = Instant::now();
                        let to = raw_staging.to_str().unwrap();
                        exec("/bin/mount", &["-t", "ext4", dev, to]);
                        exec("/bin/umount", &[to]);
                        s[7].0.push(t.elapsed());
                    }
                    3 => {
                        let t = Instant::now();
                        two_empty_calls(&mut c).await;
                        stage_grpc.0.push(t.elapsed());
                    }
                    _ => {}
                }
            }
        }
        c.node_stage_volume(stage_req.clone()).await.unwrap();
        for row in s.iter_mut().chain([&mut stage_grpc]) {
            row.end_round();
        }
    }
    c.node_unstage_volume(unstage_req.clone()).await.unwrap();

    println!(
        "scheduling: {}; {rounds} rounds of {iters} publish and {stage_iters} stage iterations",
        if std::env::var("BENCH_RT").is_ok_and(|v| v == "1") {
            "SCHED_FIFO (BENCH_RT=1)"
        } else {
            "CFS (default)"
        }
    );
    println!("| pair | samples | p50 | p99 |");
    println!("|---|---:|---:|---:|");
    let row = |name: &str, samples: &Samples| {
        println!(
            "| {name} | {} | {} | {} |",
            samples.0.len(),
            us(samples.p(0.5)),
            us(samples.p(0.99))
        );
    };
    for (name, samples) in names.iter().zip(s.iter()) {
        row(name, samples);
    }
    row("… of which NodePublishVolume alone", &publish_only);
    row("… of which NodeUnpublishVolume alone", &unpublish_only);
    row("gRPC floor, sampled among the stage pairs", &stage_grpc);
    println!(
        "\nfirst NodeStageVolume of the blank 1 GiB device (mkfs.ext4 included): {}",
        us(first_stage)
    );
    let show = |what: &str, (mid, lo, hi, whole): (f64, f64, f64, f64)| {
        println!(
            "{what}: {mid:.2}× per round (median of {rounds}; min {lo:.2}×, max {hi:.2}×), \
             {whole:.2}× over the whole run's medians"
        );
    };
    show(
        "publish+unpublish / (raw statx+mkdir+bind/statx+umount2+rmdir + gRPC floor)",
        ratio(&s[0], &[&s[2], &s[4]]),
    );
    show(
        "stage+unstage / (raw mount(2)+umount2 + gRPC floor)",
        ratio(&s[5], &[&s[6], &stage_grpc]),
    );
}

fn bind(from: &Path, to: &Path) {
    nix::mount::mount(Some(from), to, None::<&str>, MsFlags::MS_BIND, None::<&str>).unwrap();
}

fn statx(path: &Path) -> rustix::io::Result<rustix::fs::Statx> {
    rustix::fs::statx(
        rustix::fs::CWD,
        path,
        rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
        rustix::fs::StatxFlags::TYPE,
    )
}

async fn two_empty_calls(c: &mut NodeClient<Channel>) {
    for _ in 0..2 {
        c.node_get_capabilities(NodeGetCapabilitiesRequest {})
            .await
            .unwrap();
    }
}
