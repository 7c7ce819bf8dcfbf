//! Runs the selected cases one after another: skip what the driver does not advertise, make
//! the node directories, run the case, undo what it created, remove the directories, and turn
//! all of that into one verdict per case.

use std::panic::AssertUnwindSafe;
use std::time::Instant;

use futures::FutureExt;

use crate::caps::Caps;
use crate::cases::{self, Case};
use crate::check::Stop;
use crate::client::Clients;
use crate::config::Config;
use crate::context::Ctx;
use crate::paths;
use crate::report::{CaseReport, Report, Verdict};

#[derive(Debug)]
pub enum RunError {
    /// Bad settings (paths, files): nothing was run.
    Config(String),
    /// The driver could not be reached: nothing was run.
    Connect(String),
}

impl std::error::Error for RunError {}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Config(e) | RunError::Connect(e) => f.write_str(e),
        }
    }
}

/// The selected cases and what each needs, for `--list`.
pub fn list(cfg: &Config) -> Vec<(String, String)> {
    cases::all()
        .into_iter()
        .filter(|c| cfg.selects(&c.full_name()))
        .map(|c| {
            let needs: Vec<String> = c.needs.iter().map(ToString::to_string).collect();
            (c.full_name(), needs.join(", "))
        })
        .collect()
}

/// Run every selected case against the driver; `on_case` sees each verdict as it is reached.
pub async fn run(
    cfg: &Config,
    on_case: &mut (dyn FnMut(&CaseReport) + Send),
) -> Result<Report, RunError> {
    paths::preflight(&[&cfg.staging_dir, &cfg.mount_dir]).map_err(RunError::Config)?;
    let started = Instant::now();
    let clients = Clients::connect(
        &cfg.endpoint,
        cfg.controller_endpoint.as_deref(),
        cfg.timeout,
    )
    .await
    .map_err(RunError::Connect)?;
    let mut caps = Caps::discover(&clients, cfg.timeout).await;
    caps.has_mutable_parameters = cfg.mutable_parameters.is_some();

    let mut report = Report::default();
    for case in cases::all()
        .into_iter()
        .filter(|c| cfg.selects(&c.full_name()))
    {
        let t = Instant::now();
        let verdict = match caps.check(case.needs) {
            Err(Ok(why)) => Verdict::Skipped(why),
            Err(Err(why)) => Verdict::Failed(why),
            Ok(()) => run_one(cfg, &caps, &clients, &case).await,
        };
        let r = CaseReport {
            group: case.group,
            name: case.name,
            verdict,
            duration: t.elapsed(),
        };
        on_case(&r);
        report.cases.push(r);
    }
    report.duration = started.elapsed();
    Ok(report)
}

async fn run_one(cfg: &Config, caps: &Caps, clients: &Clients, case: &Case) -> Verdict {
    if let Err(e) = paths::create(&cfg.staging_dir) {
        return Verdict::Failed(e);
    }
    if let Err(e) = paths::create(&cfg.mount_dir) {
        let _ = paths::remove(&cfg.staging_dir);
        return Verdict::Failed(e);
    }
    let mut ctx = Ctx::new(cfg, caps, clients.clone());
    let outcome = AssertUnwindSafe((case.run)(&mut ctx)).catch_unwind().await;
    let mut extra = ctx.cleanup().await;
    // The target first: it lives inside the mount directory.
    for dir in [&cfg.mount_dir, &cfg.staging_dir] {
        if let Err(e) = paths::remove(dir) {
            extra.push(e);
        }
    }
    let extra = extra.join("; ");
    match outcome {
        Err(panic) => {
            let msg = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            Verdict::Failed(join(
                format!("the case panicked (a runner bug): {msg}"),
                &extra,
            ))
        }
        Ok(Ok(())) if extra.is_empty() => Verdict::Passed,
        Ok(Ok(())) => Verdict::Failed(extra),
        Ok(Err(Stop::Fail(why))) => Verdict::Failed(join(why, &extra)),
        Ok(Err(Stop::Skip(why))) if extra.is_empty() => Verdict::Skipped(why),
        Ok(Err(Stop::Skip(_))) => Verdict::Failed(extra),
    }
}

fn join(a: String, b: &str) -> String {
    if b.is_empty() {
        a
    } else {
        format!("{a}; {b}")
    }
}
