//! Startup latency and memory of the real binary: time from spawn until Probe answers over
//! the socket (node mode, local backend), and the idle resident set size afterwards.
//!
//! `cargo bench --bench startup -- [--other "CMD ARGS"]` runs `$CINDER_CSI_BIN` when set, else
//! target/release/cinder-csi. Set CINDER_CSI_BIN to a copy of what `cargo build --release`
//! made to measure the binary that ships: `cargo bench` itself relinks
//! target/release/cinder-csi with the dev-dependencies' features unified in (tokio "full",
//! `test-support`), another binary, which deploy/function-order.ld does not match (9.2
//! instead of 5.1 MB idle in node mode). With `--other`, a
//! second driver's command line (node mode; the bench adds `--endpoint=unix://…`) is measured
//! the same way, runs interleaved, and both are printed side by side.
//!
//! `BENCH_MODE=controller` runs ours in controller mode (local backend) instead of node mode.
//! `DROP_CACHE=1` drops each binary's page cache before every start (posix_fadvise
//! DONTNEED), so the resident pages of its file are those the run read, not whatever an
//! earlier run or the linker left cached: how many cached pages the kernel maps around each
//! fault depends on that, which moves RSS by up to 1 MiB between identical runs.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use cinder_csi::server::csi::pb::identity_client::IdentityClient;
use cinder_csi::server::csi::pb::ProbeRequest;

fn binary() -> PathBuf {
    if let Some(bin) = std::env::var_os("CINDER_CSI_BIN") {
        return PathBuf::from(bin);
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let release = root.join("target/release/cinder-csi");
    if release.exists() {
        release
    } else {
        PathBuf::from(env!("CARGO_BIN_EXE_cinder-csi"))
    }
}

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let idx = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[idx]
}

/// Spawn `cmd` (plus `--endpoint=unix://…`), time it until Probe answers, read its RSS.
fn once(rt: &tokio::runtime::Runtime, cmd: &[String]) -> (Duration, u64) {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("csi.sock");
    let args: Vec<String> = cmd[1..]
        .iter()
        .map(|a| a.replace("{dir}", &dir.path().display().to_string()))
        .collect();
    if std::env::var_os("DROP_CACHE").is_some() {
        drop_cache(&cmd[0]);
    }
    let started = Instant::now();
    let mut child = Command::new(&cmd[0])
        .args(&args)
        .arg(format!("--endpoint=unix://{}", sock.display()))
        .env("CINDER_CSI_LOG_LEVEL", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("start {}: {e}", cmd[0]));
    let answered = rt.block_on(async {
        loop {
            if let Ok(ch) = cinder_csi::server::csi::client::connect_unix(sock.clone()).await {
                let mut c = IdentityClient::new(ch);
                if c.probe(ProbeRequest {}).await.is_ok() {
                    return started.elapsed();
                }
            }
            if started.elapsed() > Duration::from_secs(10) {
                let _ = child.kill();
                panic!("{} did not answer Probe within 10 s", cmd[0]);
            }
            tokio::time::sleep(Duration::from_micros(200)).await;
        }
    });
    let rss = rss_kib(child.id());
    let _ = child.kill();
    let _ = child.wait();
    (answered, rss)
}

/// Evict `path`'s pages from the page cache (clean pages of a file not being written).
fn drop_cache(path: &str) {
    let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("open {path}: {e}"));
    nix::fcntl::posix_fadvise(
        &file,
        0,
        0,
        nix::fcntl::PosixFadviseAdvice::POSIX_FADV_DONTNEED,
    )
    .unwrap_or_else(|e| panic!("posix_fadvise {path}: {e}"));
}

struct Stats {
    label: String,
    samples: Vec<Duration>,
    rss: Vec<u64>,
}

impl Stats {
    fn ms(&self, p: f64) -> f64 {
        percentile(&self.samples, p).as_secs_f64() * 1e3
    }
    fn rss_median(&self) -> u64 {
        self.rss[self.rss.len() / 2]
    }
}

fn main() {
    let bin = binary();
    let runs: usize = std::env::var("RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(50);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let args: Vec<String> = std::env::args().collect();
    let other: Option<Vec<String>> = args
        .iter()
        .position(|a| a == "--other")
        .map(|i| args[i + 1].split_whitespace().map(str::to_string).collect());
    let mode = std::env::var("BENCH_MODE").unwrap_or_else(|_| "node".into());
    let mode = format!("--mode={mode}");
    let ours: Vec<String> = [
        bin.display().to_string().as_str(),
        &mode,
        "--backend=local",
        "--node-id=n1",
        "--local-dir={dir}/local",
        "--kubelet-dir={dir}",
    ]
    .map(String::from)
    .to_vec();
    let mut all: Vec<(Vec<String>, Stats)> = std::iter::once(ours)
        .chain(other)
        .map(|cmd| {
            let label = PathBuf::from(&cmd[0])
                .file_name()
                .unwrap()
                .to_string_lossy()
                .to_string();
            let s = Stats {
                label,
                samples: Vec::with_capacity(runs),
                rss: Vec::with_capacity(runs),
            };
            (cmd, s)
        })
        .collect();
    // Interleaved, so both see the same machine load.
    for _ in 0..runs {
        for (cmd, s) in all.iter_mut() {
            let (t, rss) = once(&rt, cmd);
            s.samples.push(t);
            s.rss.push(rss);
        }
    }
    for (_, s) in all.iter_mut() {
        s.samples.sort();
        s.rss.sort();
    }
    println!("binary: {}", bin.display());
    println!(
        "\nStartup to first Probe answered ({mode}, {runs} runs each, interleaved{})\n",
        if std::env::var_os("DROP_CACHE").is_some() {
            ", page cache dropped"
        } else {
            ""
        }
    );
    println!("| driver | p50 | p99 | max | RSS after first Probe (median / max) |");
    println!("|---|---|---|---|---|");
    for (_, s) in &all {
        println!(
            "| {} | {:.1} ms | {:.1} ms | {:.1} ms | {} / {} KiB |",
            s.label,
            s.ms(0.5),
            s.ms(0.99),
            s.ms(1.0),
            s.rss_median(),
            s.rss.last().unwrap()
        );
    }
    if let [(_, a), (_, b)] = &all[..] {
        println!(
            "\nratio {} / {}: startup p50 {:.2}, RSS {:.2}",
            a.label,
            b.label,
            a.ms(0.5) / b.ms(0.5),
            a.rss_median() as f64 / b.rss_median() as f64
        );
    }
}
