//! Startup latency and memory of the real binary: time from spawn until Probe answers over
//! the socket (node mode, local backend), and the idle resident set size afterwards.
//!
//! `cargo bench --bench startup` (build the release binary first: the bench runs
//! target/release/cinder-csi when it exists, else the debug one).

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use cinder_csi::csi::pb::identity_client::IdentityClient;
use cinder_csi::csi::pb::ProbeRequest;

fn binary() -> PathBuf {
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
    let mut samples = Vec::with_capacity(runs);
    let mut rss = Vec::with_capacity(runs);
    for _ in 0..runs {
        let dir = tempfile::tempdir().unwrap();
        let sock = dir.path().join("csi.sock");
        let started = Instant::now();
        let mut child = Command::new(&bin)
            .args(["--mode", "node", "--backend", "local", "--node-id", "n1"])
            .arg("--local-dir")
            .arg(dir.path().join("local"))
            .arg("--kubelet-dir")
            .arg(dir.path())
            .arg("--endpoint")
            .arg(format!("unix://{}", sock.display()))
            .env("CINDER_CSI_LOG_LEVEL", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let answered = rt.block_on(async {
            loop {
                if let Ok(ch) = cinder_csi::csi::client::connect_unix(sock.clone()).await {
                    let mut c = IdentityClient::new(ch);
                    if c.probe(ProbeRequest {}).await.is_ok() {
                        return started.elapsed();
                    }
                }
                if started.elapsed() > Duration::from_secs(10) {
                    panic!("driver did not answer Probe within 10 s");
                }
                tokio::time::sleep(Duration::from_micros(200)).await;
            }
        });
        samples.push(answered);
        rss.push(rss_kib(child.id()));
        let _ = child.kill();
        let _ = child.wait();
    }
    samples.sort();
    rss.sort();
    println!("binary: {}", bin.display());
    println!(
        "startup to first Probe answered (node mode, {runs} runs): p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        percentile(&samples, 0.5).as_secs_f64() * 1e3,
        percentile(&samples, 0.99).as_secs_f64() * 1e3,
        samples.last().unwrap().as_secs_f64() * 1e3
    );
    println!(
        "RSS after the first Probe: median {} KiB, max {} KiB",
        rss[rss.len() / 2],
        rss.last().unwrap()
    );
}
