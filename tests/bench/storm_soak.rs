//! Soak of the controller against the real test cloud (`STORM_SOAK_SECS=N`, issue 14; outside
//! CI): one cinder-csi process, started once, runs storm after storm of `STORM_VOLUMES`
//! (default 20) volumes (create, publish, unpublish, delete; storm_run.rs) until N seconds
//! have passed. Every 5 s its RSS, peak RSS, threads and open fds are read from /proc.
//!
//! After every storm, as admin, straight to the cloud: no volume of that storm may be left,
//! and the storm's server holds as many attachments as before the soak. The soak stops at
//! the first failed RPC or leak and fails; either way it prints what it saw.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use super::openstack_support::Cloud;
use super::proc_sample::{self, Sample};
use super::proxy::{self, Relay};
use super::run::{self, Launched, Phase, PHASES};

/// One storm of the soak.
struct Storm {
    wall: f64,
    requests: u64,
}

pub async fn soak(cloud: &Cloud, relay: &Relay, cmd: &[String], conf: &std::path::Path) {
    let secs: u64 = env("STORM_SOAK_SECS", 1800);
    let n = env("STORM_VOLUMES", 20) as usize;
    let began = run::now_and_load();
    let before = relay.take();
    let attached = attachments(cloud).expect("the server's attachments before the soak");
    let driver = match Launched::start("cinder-csi", cmd, conf).await {
        Ok(d) => d,
        Err((label, e)) => panic!("{label} did not start: {e}"),
    };
    let pid = driver.pid();
    let samples = Arc::new(Mutex::new(vec![proc_sample::sample(pid)]));
    let start = Instant::now();
    let end = start + Duration::from_secs(secs);
    let sampler = {
        let samples = samples.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_secs(5)).await;
                samples.lock().unwrap().push(proc_sample::sample(pid));
            }
        })
    };
    let mut storms: Vec<Storm> = Vec::new();
    let mut failure = None;
    while Instant::now() < end && failure.is_none() {
        let id = uuid::Uuid::new_v4().simple().to_string()[..8].to_string();
        let mut phases: Vec<Phase> = Vec::new();
        let t = Instant::now();
        let r = run::phases_of(cloud, relay, &driver.client, n, &id, &mut phases).await;
        let wall = t.elapsed().as_secs_f64();
        let left = run::remaining(cloud, &id);
        let now_attached = attachments(cloud);
        failure = match (r, left) {
            (Err(e), _) => Some(format!("storm {}: {e}", storms.len() + 1)),
            (Ok(()), None) => Some("Cinder did not answer the leak check's list".into()),
            (Ok(()), Some(left)) if !left.is_empty() => Some(format!(
                "storm {}: {} volumes left: {:?}",
                storms.len() + 1,
                left.len(),
                left.iter().map(|v| v["id"].clone()).collect::<Vec<_>>()
            )),
            (Ok(()), Some(_)) if now_attached != Some(attached) => Some(format!(
                "storm {}: the server holds {now_attached:?} attachments, {attached} before",
                storms.len() + 1
            )),
            _ => None,
        };
        if failure.is_some() {
            run::leftovers(cloud, &id);
        }
        storms.push(Storm {
            wall,
            requests: phases.iter().map(Phase::requests).sum(),
        });
    }
    sampler.abort();
    let elapsed = start.elapsed();
    samples.lock().unwrap().push(proc_sample::sample(pid));
    let all = proxy::since(&before, &relay.take());
    let tokens = all.get("Keystone").map_or(0, |s| {
        s.requests.get("POST /v3/auth/tokens").copied().unwrap_or(0)
    });
    let samples = samples.lock().unwrap().clone();
    report(
        n,
        elapsed,
        &storms,
        &samples,
        tokens,
        &format!("{began} to {}", run::now_and_load()),
    );
    if let Some(f) = failure {
        panic!("soak failed: {f}\n--- driver log:\n{}", driver.tail());
    }
}

fn env(key: &str, default: u64) -> u64 {
    std::env::var(key)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Attachments of the storm's server, as Nova lists them; `None` when Nova's answer has no
/// list (a leak check must not read that as zero).
fn attachments(cloud: &Cloud) -> Option<usize> {
    let server = cloud.node(1, "ID");
    cloud
        .api(
            true,
            "compute",
            "GET",
            &format!("/servers/{server}/os-volume_attachments"),
        )
        .and_then(|v| v["volumeAttachments"].as_array().map(Vec::len))
}

fn report(
    n: usize,
    elapsed: Duration,
    storms: &[Storm],
    samples: &[Sample],
    tokens: u64,
    when: &str,
) {
    let rpcs = storms.len() * n * PHASES.len();
    let mut walls: Vec<Duration> = storms
        .iter()
        .map(|s| Duration::from_secs_f64(s.wall))
        .collect();
    walls.sort();
    let first = storms.first().map_or(0.0, |s| s.wall);
    let last = storms.last().map_or(0.0, |s| s.wall);
    let requests: u64 = storms.iter().map(|s| s.requests).sum();
    println!(
        "\n### Controller soak against the test cloud: {} storms of {n} volumes in {} s\n",
        storms.len(),
        elapsed.as_secs()
    );
    println!("ran {when}");
    println!(
        "{rpcs} RPCs ({} volume lives), {requests} API requests ({:.1} per volume), \
         {tokens} Keystone token(s)",
        storms.len() * n,
        requests as f64 / (storms.len() * n).max(1) as f64
    );
    println!(
        "storm wall: first {first:.1} s, p50 {:.1} s, max {:.1} s, last {last:.1} s\n",
        run::percentile(&walls, 0.5),
        run::percentile(&walls, 1.0)
    );
    println!("{}", proc_sample::table(samples));
}
