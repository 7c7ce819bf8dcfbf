//! Controller provisioning storm against the real OpenStack test cloud, through real drivers
//! in controller mode on a Unix socket, driven over gRPC by this one client: N concurrent
//! CreateVolume, then N concurrent ControllerPublishVolume to one server, then N
//! ControllerUnpublishVolume and N DeleteVolume, each phase started when the previous one
//! ended. Every API request of a driver is counted on the wire by a relay in front of
//! Keystone, Cinder and Nova (proxy.rs): requests per API, Keystone tokens, connections opened
//! and the most requests in flight per endpoint. Reports wall time and p50/p99 per phase and
//! peak RSS, as Markdown for docs/PERFORMANCE.md.
//!
//! With `-- --other "CMD ARGS"` a second driver (e.g. upstream's cinder-csi-plugin) runs the
//! same storm right after, against the same cloud, and both are printed side by side with
//! ratios. The bench adds `--endpoint=unix://…` and `--cloud-config=…` (the relayed copy of
//! `$OSTACK_CLOUD_CONF`) to CMD. A driver whose CreateVolume/DeleteVolume return before the
//! volume is `available`/gone (upstream) is charged the time until all of them are.
//!
//! Untimed and uncounted before each driver's storm: a warm-up attach/detach by the bench
//! itself (the cloud's own cold path, `run::warm_up`), and one ListVolumes once the driver
//! listens (its token fetched and validated, `run::ready`), so neither driver is charged for
//! what only comes first.
//!
//! `CINDER_CSI_OSTACK_ENV=<state>/env.sh cargo bench --bench storm -- [--other CMD]`
//! (STORM_VOLUMES=50 by default); without the env file it prints "skipped" and exits 0.
//! `STORM_LIST=500` runs the ListVolumes patterns with that many volumes instead (storm_list.rs);
//! `STORM_SOAK_SECS=1800` runs storm after storm through one cinder-csi for that long and
//! reports what it holds over time instead (storm_soak.rs).

mod direct;
#[path = "storm_list.rs"]
mod list;
#[path = "../support/mod.rs"]
mod support;
use support::openstack_support;
mod proc_sample;
mod proxy;
#[path = "storm_run.rs"]
mod run;
#[path = "storm_soak.rs"]
mod soak;

use openstack_support::Cloud;
use run::{Outcome, PHASES};

fn main() {
    let Some(cloud) = Cloud::from_env("the storm benchmark") else {
        return;
    };
    let n: usize = std::env::var("STORM_VOLUMES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(50);
    let other = other_arg();
    let list_n: Option<usize> = std::env::var("STORM_LIST")
        .ok()
        .and_then(|v| v.parse().ok());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (ours, theirs) = rt.block_on(async {
        let relay = proxy::Relay::start(&[("Keystone", 5000), ("Cinder", 8776), ("Nova", 8774)])
            .await
            .expect("relay on 127.0.0.2 (loopback)");
        let conf = dir.path().join("cloud.conf");
        let text = std::fs::read_to_string(cloud.var("OSTACK_CLOUD_CONF")).unwrap();
        std::fs::write(&conf, text.replace(proxy::BACK, proxy::FRONT)).unwrap();
        let ours_cmd = vec![
            env!("CARGO_BIN_EXE_cinder-csi").to_string(),
            "--mode=controller".into(),
            "--backend=openstack".into(),
            "--cluster=storm".into(),
        ];
        let warm = |who: &str| {
            let took = tokio::task::block_in_place(|| run::warm_up(&cloud));
            println!("warm-up before {who}: {:.1} s", took.as_secs_f64());
        };
        if std::env::var_os("STORM_SOAK_SECS").is_some() {
            soak::soak(&cloud, &relay, &ours_cmd, &conf).await;
            std::process::exit(0);
        }
        if let Some(n) = list_n {
            list_run(&cloud, &relay, &ours_cmd, other.as_deref(), &conf, n).await;
            std::process::exit(0);
        }
        warm("cinder-csi");
        let ours = run::storm(&cloud, &relay, "cinder-csi", &ours_cmd, &conf, n).await;
        let theirs = match &other {
            Some(cmd) => {
                warm("the other driver");
                Some(run::storm(&cloud, &relay, "other", cmd, &conf, n).await)
            }
            None => None,
        };
        (ours, theirs)
    });
    report(n, &ours, theirs.as_ref());
    let failed: Vec<&String> = std::iter::once(&ours)
        .chain(theirs.as_ref())
        .filter_map(|o| o.error.as_ref())
        .collect();
    assert!(failed.is_empty(), "storm failed: {failed:?}");
    assert!(
        ours.tokens <= 1,
        "cinder-csi took {} Keystone tokens; the whole run must cost one",
        ours.tokens
    );
}

/// `STORM_LIST=N`: the ListVolumes runs instead of the storm (storm_list.rs).
async fn list_run(
    cloud: &Cloud,
    relay: &proxy::Relay,
    ours: &[String],
    other: Option<&[String]>,
    conf: &std::path::Path,
    n: usize,
) {
    let rounds: usize = std::env::var("LIST_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    let direct = direct::Direct::new(cloud)
        .await
        .expect("a token for the bench");
    let run = uuid::Uuid::new_v4().simple().to_string()[..8].to_string();
    list::fill(&direct, &run, n)
        .await
        .expect("the project filled");
    let mut outcomes = vec![list::lists(relay, "cinder-csi", ours, conf, rounds).await];
    if let Some(cmd) = other {
        outcomes.push(list::lists(relay, "other", cmd, conf, rounds).await);
    }
    let emptied = direct.empty(&list::prefix(&run)).await;
    list::report(n, rounds, &outcomes);
    let failed: Vec<&String> = outcomes.iter().filter_map(|o| o.error.as_ref()).collect();
    assert!(failed.is_empty(), "listing failed: {failed:?}");
    emptied.expect("the project emptied");
}

/// `--other "CMD ARGS"` (cargo passes `--bench` too; it is ignored).
fn other_arg() -> Option<Vec<String>> {
    let args: Vec<String> = std::env::args().collect();
    let i = args.iter().position(|a| a == "--other")?;
    let cmd = args.get(i + 1).expect("--other needs a command line");
    Some(cmd.split_whitespace().map(str::to_string).collect())
}

fn ratio(a: f64, b: f64) -> String {
    if b > 0.0 {
        format!("{:.2}", a / b)
    } else {
        "-".into()
    }
}

fn report(n: usize, ours: &Outcome, theirs: Option<&Outcome>) {
    println!(
        "\nController storm: {n} volumes, one server, each driver over gRPC, same client, \
         same cloud, one run\n"
    );
    let who = |o: &Outcome| o.label.clone();
    match theirs {
        None => {
            println!("| phase | {} wall | p50 / p99 | requests |", who(ours));
            println!("|---|---|---|---|");
        }
        Some(t) => {
            println!(
                "| phase | {0} wall | {0} p50 / p99 | {1} wall (call + wait) | {1} p50 / p99 | \
                 wall ratio | {0} requests | {1} requests |",
                who(ours),
                who(t)
            );
            println!("|---|---|---|---|---|---|---|---|");
        }
    }
    for (i, name) in PHASES.iter().enumerate() {
        let (Some(o), t) = (ours.phases.get(i), theirs.and_then(|t| t.phases.get(i))) else {
            continue;
        };
        match t {
            None => println!(
                "| {name} | {:.1} s | {:.2} / {:.2} s | {} |",
                o.wall(),
                o.pct(0.5),
                o.pct(0.99),
                o.requests()
            ),
            Some(t) => println!(
                "| {name} | {:.1} s | {:.2} / {:.2} s | {:.1} s ({:.1} + {:.1}) | {:.2} / {:.2} s | \
                 {} | {} | {} |",
                o.wall(),
                o.pct(0.5),
                o.pct(0.99),
                t.wall(),
                t.call.as_secs_f64(),
                t.wait.as_secs_f64(),
                t.pct(0.5),
                t.pct(0.99),
                ratio(o.wall(), t.wall()),
                o.requests(),
                t.requests()
            ),
        }
    }
    let total = |o: &Outcome| o.phases.iter().map(|p| p.wall()).sum::<f64>();
    let reqs = |o: &Outcome| o.phases.iter().map(|p| p.requests()).sum::<u64>();
    match theirs {
        None => println!("| total | {:.1} s | | {} |", total(ours), reqs(ours)),
        Some(t) => println!(
            "| total | {:.1} s | | {:.1} s | | {} | {} | {} (ratio {}) |",
            total(ours),
            total(t),
            ratio(total(ours), total(t)),
            reqs(ours),
            reqs(t),
            ratio(reqs(ours) as f64, reqs(t) as f64)
        ),
    }
    for o in std::iter::once(ours).chain(theirs) {
        println!(
            "\n{}: {} Keystone token(s) for the run (startup included), peak RSS {} KiB, \
             {} requests = {:.1} per volume; ran {}",
            o.label,
            o.tokens,
            o.peak_rss_kib,
            reqs(o),
            reqs(o) as f64 / n as f64,
            o.when
        );
        println!("  per endpoint and phase: requests / connections opened / most in flight");
        for (i, p) in o.phases.iter().enumerate() {
            let per: Vec<String> = p
                .seen
                .iter()
                .map(|(api, s)| {
                    format!(
                        "{api} {} / {} / {}",
                        s.total(),
                        s.connections,
                        s.max_in_flight
                    )
                })
                .collect();
            println!("    {:<26} {}", PHASES[i], per.join(", "));
            for (api, s) in &p.seen {
                for (line, k) in &s.requests {
                    println!("    {:<26}   {k:>4}  {api:<8} {line}", "");
                }
            }
        }
        println!("  requests by API (whole storm):");
        let mut by: std::collections::BTreeMap<String, u64> = Default::default();
        for p in &o.phases {
            for (api, s) in &p.seen {
                for (line, k) in &s.requests {
                    *by.entry(format!("{api:<8} {line}")).or_default() += k;
                }
            }
        }
        for (line, k) in by {
            println!("    {k:>5}  {line}");
        }
        if let Some(e) = &o.error {
            println!("  FAILED: {e}");
        }
    }
}
