//! ListVolumes at scale (`STORM_LIST=N`): the bench fills the project with N volumes (straight
//! to Cinder: untimed, not counted), then each driver, started fresh, answers `LIST_ROUNDS`
//! (default 5) times each of two patterns:
//! - the external-attacher's reconcile (`--reconcile-sync`): ListVolumes without max_entries,
//!   next_token followed to the end;
//! - a CO paging 100 entries at a time.
//!
//! Reported per full listing: wall p50 / max, requests on the wire (through the relay),
//! entries returned; and the driver's peak RSS. The volumes are removed at the end, also when a
//! driver failed.

use std::time::Duration;

use cinder_csi::server::csi::pb;
use tokio::time::Instant;

use super::direct::Direct;
use super::proxy::{self, Relay};
use super::run::Launched;

/// Entries per page of the paging pattern.
const PAGE: i32 = 100;

pub struct Pattern {
    pub name: &'static str,
    pub walls: Vec<Duration>,
    pub requests: u64,
    pub entries: usize,
}

impl Pattern {
    fn pct(&self, p: f64) -> f64 {
        let mut s = self.walls.clone();
        s.sort();
        super::run::percentile(&s, p)
    }
}

pub struct ListOutcome {
    pub label: String,
    pub patterns: Vec<Pattern>,
    pub peak_rss_kib: u64,
    pub when: String,
    pub error: Option<String>,
}

/// Fill the project with `n` volumes named `storm-list-<run>-<i>`; `Err` after removing
/// whatever was made.
pub async fn fill(direct: &Direct, run: &str, n: usize) -> Result<(), String> {
    let prefix = prefix(run);
    let t = Instant::now();
    let (_, made) = direct.fill(&prefix, n).await;
    if let Err(e) = made {
        let _ = direct.empty(&prefix).await;
        return Err(format!("filling the project: {e}"));
    }
    println!(
        "filled the project with {n} volumes in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    Ok(())
}

pub fn prefix(run: &str) -> String {
    format!("storm-list-{run}-")
}

/// One driver's listings.
pub async fn lists(
    relay: &Relay,
    label: &str,
    cmd: &[String],
    conf: &std::path::Path,
    rounds: usize,
) -> ListOutcome {
    let began = super::run::now_and_load();
    let mut patterns = vec![
        Pattern {
            name: "all pages, no max_entries (external-attacher reconcile)",
            walls: vec![],
            requests: 0,
            entries: 0,
        },
        Pattern {
            name: "max_entries 100, every page",
            walls: vec![],
            requests: 0,
            entries: 0,
        },
    ];
    let (label, result, peak_rss_kib) = match Launched::start(label, cmd, conf).await {
        Err((label, e)) => (label, Err(e), 0),
        Ok(driver) => {
            let r = async {
                for _ in 0..rounds {
                    for (p, max) in patterns.iter_mut().zip([0, PAGE]) {
                        let before = relay.take();
                        let t = Instant::now();
                        p.entries = list_all(&driver, max).await?;
                        p.walls.push(t.elapsed());
                        let seen = proxy::since(&before, &relay.take());
                        p.requests += seen.values().map(proxy::Seen::total).sum::<u64>();
                    }
                }
                Ok::<(), String>(())
            }
            .await;
            let r = r.map_err(|e| format!("{e}\n--- driver log:\n{}", driver.tail()));
            (driver.label.clone(), r, driver.peak_rss_kib())
        }
    };
    ListOutcome {
        label,
        patterns,
        peak_rss_kib,
        when: format!("{began} to {}", super::run::now_and_load()),
        error: result.err(),
    }
}

/// ListVolumes with `max_entries` until next_token is empty; the entries returned.
async fn list_all(driver: &Launched, max_entries: i32) -> Result<usize, String> {
    let mut token = String::new();
    let mut entries = 0;
    loop {
        let mut c = driver.client.clone();
        let page = c
            .list_volumes(super::run::rpc(pb::ListVolumesRequest {
                max_entries,
                starting_token: token,
            }))
            .await
            .map_err(|s| format!("ListVolumes: {:?}: {}", s.code(), s.message()))?
            .into_inner();
        entries += page.entries.len();
        if page.next_token.is_empty() {
            return Ok(entries);
        }
        token = page.next_token;
    }
}

pub fn report(n: usize, rounds: usize, outcomes: &[ListOutcome]) {
    println!(
        "\nListVolumes with {n} volumes in the project: {rounds} full listings per pattern \
         and driver, same client, same cloud, one run\n"
    );
    let mut head = String::from("| pattern |");
    let mut rule = String::from("|---|");
    for o in outcomes {
        head += &format!(
            " {0} p50 / max | {0} requests per listing | {0} entries |",
            o.label
        );
        rule += "---|---|---|";
    }
    println!("{head}\n{rule}");
    let names: Vec<&str> = outcomes
        .first()
        .map(|o| o.patterns.iter().map(|p| p.name).collect())
        .unwrap_or_default();
    for (i, name) in names.iter().enumerate() {
        let mut row = format!("| {name} |");
        for o in outcomes {
            let p = &o.patterns[i];
            let per = if p.walls.is_empty() {
                0.0
            } else {
                p.requests as f64 / p.walls.len() as f64
            };
            row += &format!(
                " {:.2} / {:.2} s | {per:.1} | {} |",
                p.pct(0.5),
                p.pct(1.0),
                p.entries
            );
        }
        println!("{row}");
    }
    for o in outcomes {
        println!(
            "\n{}: peak RSS {} KiB; ran {}",
            o.label, o.peak_rss_kib, o.when
        );
        if let Some(e) = &o.error {
            println!("  FAILED: {e}");
        }
    }
}
