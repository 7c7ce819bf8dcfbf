//! kill -9 storm of the controller against the real test cloud (issue 14). 20 volumes
//! (`KILL_STORM_VOLUMES`), each driven by its own sidecar-style worker through CreateVolume,
//! ControllerExpandVolume (to 2 GiB), CreateSnapshot and ControllerPublishVolume, every call
//! retried with the same name or id until it succeeds (backoff 0.5 → 4 s, as the sidecars
//! do). Meanwhile the driver is killed -9 at random moments, 1–8 s apart, until the storm
//! ends (at most `KILL_STORM_KILLS`, default 40), and started again on the same socket. The
//! end state must be the one the storm reaches without kills, which is fixed by its inputs:
//! every volume once, of 2 GiB, with exactly one snapshot, attached once to the node's server
//! (Cinder's and Nova's books agree), and nothing else under the run's prefix (the leak check
//! of tests/faults_cloud). Then everything is deleted through the driver, and the leak check
//! must find nothing.
//!
//! Runs only with CINDER_CSI_OSTACK_ENV=<state>/env.sh (hold `flock -s
//! /var/tmp/cinder-csi-ostack.lock`); prints "skipped: ..." otherwise.

use crate::support::faults_cloud;
use crate::support::openstack_support;
use crate::support::scratch;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use faults_cloud::{invoke, leaks, retryable, Api, Call, Expected, Sweep};
use openstack_support::{Cloud, Controller, Driver};

const NODE: usize = 1;
/// Bound on one call's retries (kills included) before the storm is declared stuck.
const RETRY_BOUND: Duration = Duration::from_secs(300);

fn env_usize(key: &str, default: usize) -> usize {
    std::env::var(key)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Answers other than OK seen by the workers: "RPC code" → (count, the first message).
type Codes = Arc<Mutex<BTreeMap<String, (usize, String)>>>;

/// The sidecars' retry, recording every answer that was not a success. A code that is not
/// retryable ends it.
async fn retry(ctl: &mut Controller, call: &Call, codes: &Codes) -> Result<String, String> {
    let end = Instant::now() + RETRY_BOUND;
    let mut pause = Duration::from_millis(500);
    loop {
        match invoke(ctl, call, Duration::from_secs(60)).await {
            Ok(id) => return Ok(id),
            Err(s) => {
                codes
                    .lock()
                    .unwrap()
                    .entry(format!("{} {:?}", call.rpc(), s.code()))
                    .or_insert_with(|| (0, s.message().chars().take(120).collect()))
                    .0 += 1;
                if !(retryable(&s) || broken_connection(&s)) || Instant::now() >= end {
                    return Err(format!("{}: {:?}: {}", call.rpc(), s.code(), s.message()));
                }
            }
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_secs(4));
    }
}

/// The driver died under the call: the client's connection broke (tonic says Unavailable or,
/// for a stream cut mid-answer, Unknown with h2's reason). The sidecars retry both.
fn broken_connection(s: &tonic::Status) -> bool {
    s.code() == tonic::Code::Unknown
        && ["transport", "connection", "broken pipe", "stream"]
            .iter()
            .any(|w| s.message().contains(w))
}

/// A small PRNG for the kill moments (xorshift, seeded from the clock; printed).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// The driver, restartable on the same socket (its log of each run kept as `log.<n>`).
struct Restartable<'a> {
    cloud: &'a Cloud,
    dir: PathBuf,
    kubelet: PathBuf,
    driver: Option<Driver>,
    runs: usize,
}

impl Restartable<'_> {
    fn start(&mut self) {
        if self.runs > 0 {
            let log = self.dir.join("cinder-csi.log");
            let _ = std::fs::rename(&log, self.dir.join(format!("cinder-csi.log.{}", self.runs)));
        }
        self.runs += 1;
        let conf = PathBuf::from(self.cloud.var("OSTACK_CLOUD_CONF"));
        self.driver = Some(Driver::start_with_conf(
            self.cloud,
            NODE,
            &self.dir,
            &self.kubelet,
            &conf,
        ));
    }

    fn kill9(&mut self) {
        self.driver.as_mut().expect("running").kill9();
        self.driver = None;
    }
}

/// One volume's whole storm: (name → id of the volume, name → id of its snapshot).
async fn worker(
    mut ctl: Controller,
    prefix: String,
    i: usize,
    node: String,
    volume_type: String,
    codes: Codes,
) -> Result<(String, String, String, String), String> {
    let name = format!("{prefix}vol-{i}");
    let id = retry(
        &mut ctl,
        &Call::CreateVolume {
            name: name.clone(),
            volume_type,
        },
        &codes,
    )
    .await?;
    retry(
        &mut ctl,
        &Call::Expand {
            id: id.clone(),
            gib: 2,
        },
        &codes,
    )
    .await?;
    let snap_name = format!("{prefix}snap-{i}");
    let snap = retry(
        &mut ctl,
        &Call::CreateSnapshot {
            name: snap_name.clone(),
            source: id.clone(),
        },
        &codes,
    )
    .await?;
    retry(
        &mut ctl,
        &Call::Publish {
            id: id.clone(),
            node,
        },
        &codes,
    )
    .await?;
    Ok((name, id, snap_name, snap))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn controller_kill_9_storm_ends_in_the_same_state() {
    let Some(cloud) = Cloud::from_env("openstack_kill_storm") else {
        return;
    };
    let volumes = env_usize("KILL_STORM_VOLUMES", 20);
    let kills = env_usize("KILL_STORM_KILLS", 40);
    let started = Instant::now();
    let (tmp, kubelet) = scratch::with_kubelet("cinder-csi-storm");
    let prefix = format!(
        "kstorm-{}-",
        &uuid::Uuid::new_v4().simple().to_string()[..8]
    );
    // Dropped last: deletes whatever is left under the prefix, also when the test fails.
    let _sweep = Sweep {
        cloud: &cloud,
        prefix: prefix.clone(),
    };
    let mut drv = Restartable {
        cloud: &cloud,
        dir: tmp.path().to_path_buf(),
        kubelet: kubelet.clone(),
        driver: None,
        runs: 0,
    };
    drv.start();
    let channel = drv.driver.as_mut().unwrap().connect().await;
    let node = cloud.node(NODE, "ID").to_string();
    let volume_type = cloud.var("OSTACK_VOLUME_TYPE").to_string();
    let codes: Codes = Arc::default();
    let mut tasks = Vec::new();
    for i in 0..volumes {
        tasks.push(tokio::spawn(worker(
            Controller::new(channel.clone()),
            prefix.clone(),
            i,
            node.clone(),
            volume_type.clone(),
            codes.clone(),
        )));
    }
    // The killer: a random pause of 1–8 s (spread over the storm's phases), kill -9, start
    // again at once (a restarted pod comes back on the same socket path; the sidecars
    // reconnect).
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
        | 1;
    println!("kill storm: {volumes} volumes, up to {kills} kills, seed {seed}");
    let mut rng = Rng(seed);
    let mut killed_at = Vec::new();
    {
        let all = futures::future::join_all(tasks);
        tokio::pin!(all);
        let mut results = None;
        while results.is_none() {
            let pause = Duration::from_millis(1000 + rng.next() % 7000);
            tokio::select! {
                r = &mut all => results = Some(r),
                _ = tokio::time::sleep(pause), if killed_at.len() < kills => {
                    drv.kill9();
                    killed_at.push(started.elapsed());
                    drv.start();
                }
            }
        }
        let results = results.unwrap();
        let mut want = Expected::default();
        let mut failures = Vec::new();
        for r in results {
            match r.unwrap() {
                Ok((name, id, snap_name, snap)) => {
                    want.volumes.insert(name, id.clone());
                    want.snapshots.insert(snap_name, snap);
                    want.attached.insert(id, BTreeSet::from([node.clone()]));
                }
                Err(e) => failures.push(e),
            }
        }
        let storm_secs = started.elapsed().as_secs();
        println!(
            "kill storm: {} kills at {:?} s; {storm_secs} s; answers other than OK:",
            killed_at.len(),
            killed_at.iter().map(|d| d.as_secs()).collect::<Vec<_>>(),
        );
        for (k, (n, msg)) in codes.lock().unwrap().iter() {
            println!("  {k}: {n} (first: {msg})");
        }
        assert!(
            failures.is_empty(),
            "calls that did not converge: {failures:?}"
        );
        assert!(
            !killed_at.is_empty(),
            "the storm ended before the first kill"
        );

        // The end state, checked against the cloud.
        let mut ctl = Controller::new(drv.driver.as_mut().unwrap().connect().await);
        let api = Api::new(&cloud).await;
        let diff = leaks(&api, &mut ctl, &prefix, &want, std::slice::from_ref(&node)).await;
        assert!(diff.is_empty(), "after the kill storm: {diff:#?}");
        for id in want.volumes.values() {
            let v = cloud.volume(id).expect("volume");
            assert_eq!(v["size"].as_i64(), Some(2), "volume {id}: {v}");
            assert_eq!(v["status"].as_str(), Some("in-use"), "volume {id}: {v}");
        }
        for id in want.snapshots.values() {
            let s = api
                .get("block-storage", &format!("/snapshots/{id}"))
                .await
                .expect("snapshot");
            assert_eq!(
                s["snapshot"]["status"].as_str(),
                Some("available"),
                "snapshot {id}: {s}"
            );
        }
        println!(
            "kill storm: end state as without kills: {} volumes of 2 GiB in-use, {} snapshots, \
             0 leaks",
            want.volumes.len(),
            want.snapshots.len()
        );

        // Teardown through the driver, no kills: then nothing may be left.
        for (id, _) in want.attached.clone() {
            retry(
                &mut ctl,
                &Call::Unpublish {
                    id,
                    node: node.clone(),
                },
                &codes,
            )
            .await
            .unwrap();
        }
        for id in want.snapshots.values() {
            retry(&mut ctl, &Call::DeleteSnapshot { id: id.clone() }, &codes)
                .await
                .unwrap();
        }
        for id in want.volumes.values() {
            retry(&mut ctl, &Call::DeleteVolume { id: id.clone() }, &codes)
                .await
                .unwrap();
        }
        let none = Expected::default();
        let diff = leaks(&api, &mut ctl, &prefix, &none, std::slice::from_ref(&node)).await;
        assert!(diff.is_empty(), "after the teardown: {diff:#?}");
        println!(
            "kill storm: teardown clean, {} s in all",
            started.elapsed().as_secs()
        );
    }
}
