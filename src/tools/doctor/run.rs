//! The doctor's run: the plan serve would build, each check, the report.

use super::*;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use clap::ValueEnum;

use crate::app::cli::{Backend, ServeArgs};
use crate::app::{self, Plan};
use crate::cloud::openstack::ApiMetrics;
use crate::config::{self, GlobalConfig};
use crate::host::linux::LinuxHost;
use crate::tools::cli::{Cli, Command};
use crate::tools::ctl::Output;

/// Exit status: 0 when no check failed, 1 when one did, 2 when the doctor could not start.
pub async fn run(args: DoctorArgs) -> u8 {
    let serve = match &args.pid {
        Some(pid) => match serve_args_of(*pid) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("cinder-csi doctor: {e}");
                return 2;
            }
        },
        None => args.serve.clone(),
    };
    let report = diagnose(&serve, &args).await;
    match args.output {
        Output::Text => print!("{}", report.text()),
        Output::Json => println!("{}", report.json()),
    }
    report.exit_status()
}

/// The serve flags of a running driver, from `/proc/PID/cmdline`.
pub(super) fn serve_args_of(pid: u32) -> Result<ServeArgs, String> {
    let path = format!("/proc/{pid}/cmdline");
    let raw = std::fs::read(&path).map_err(|e| format!("{path}: {e}"))?;
    let argv: Vec<String> = raw
        .split(|b| *b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    let named = argv
        .first()
        .and_then(|a| Path::new(a).file_name())
        .map(|n| n.to_string_lossy());
    if !named.is_some_and(|n| n.starts_with("cinder-csi")) {
        return Err(format!(
            "PID {pid} ({}) is not a cinder-csi serve command line",
            argv.join(" ")
        ));
    }
    let cli = <Cli as clap::Parser>::try_parse_from(crate::app::cli::normalize_argv(argv.clone()))
        .map_err(|e| {
            format!(
                "PID {pid} ({}) is not a cinder-csi serve command line: {e}",
                argv.join(" ")
            )
        })?;
    match cli.command {
        None => Ok(cli.serve),
        Some(Command::Serve(a)) => Ok(*a),
        Some(_) => Err(format!(
            "PID {pid} runs a cinder-csi client command, not the driver"
        )),
    }
}

/// Every check for the mode `serve` selects.
pub async fn diagnose(serve: &ServeArgs, args: &DoctorArgs) -> Report {
    let timeout = Duration::from_secs(args.check_timeout.max(1));
    let name = |v: Option<clap::builder::PossibleValue>| {
        v.map(|v| v.get_name().to_string())
            .unwrap_or_else(|| "?".into())
    };
    let mode = name(
        serve
            .effective_mode()
            .ok()
            .and_then(|m| m.to_possible_value()),
    );
    let backend = name(serve.backend.to_possible_value());
    let mut r = Report::new(format!(
        "cinder-csi doctor {}: mode {mode}, backend {backend}",
        crate::config::version::vendor_version()
    ));
    // Before anything is printed: every secret the configuration holds.
    if let Ok(cfg) = config::load_optional(&serve.cloud_config) {
        for g in cfg.globals.values() {
            hide_secrets(&mut r, g);
        }
    }
    let plan = match app::plan(serve) {
        Ok(p) => p,
        Err(e) => {
            r.push(Check::fail(
                "configuration",
                e.to_string(),
                "fix the flag or the cloud.conf line named; the driver exits 64 on it",
            ));
            r.push(Check::skip(
                "other checks",
                "they need a valid configuration",
            ));
            return r;
        }
    };
    r.push(configuration(serve, &plan));
    for w in &plan.config.warnings {
        r.push(Check::warn(
            "cloud.conf",
            w.to_string(),
            "remove or fix the line; it is ignored",
        ));
    }
    let node_info = if plan.node {
        node_checks(&mut r, serve, &plan, timeout).await
    } else {
        r.push(Check::skip("node", "controller mode: no node checks"));
        None
    };
    driver_socket(&mut r, serve, args.pid.is_some(), timeout).await;
    cloud_checks(&mut r, serve, &plan, args, node_info.as_ref(), timeout).await;
    r
}

pub(super) fn hide_secrets(r: &mut Report, g: &GlobalConfig) {
    for s in g.auth.secrets() {
        r.hide(s.expose());
    }
}

pub(super) fn configuration(serve: &ServeArgs, plan: &Plan) -> Check {
    let files = if plan.config.files.is_empty() {
        "no cloud.conf".to_string()
    } else {
        plan.config
            .files
            .iter()
            .map(|f| f.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let clouds = if serve.backend == Backend::Local {
        String::new()
    } else if plan.clouds.is_empty() {
        format!("; sections {}", section_list(plan.config.globals.keys()))
    } else {
        format!("; serving {}", section_list(plan.clouds.keys()))
    };
    Check::ok(
        "configuration",
        format!("flags valid, {files} parsed{clouds}"),
    )
}

pub(super) fn section_list<'a>(names: impl Iterator<Item = &'a String>) -> String {
    let v: Vec<String> = names.map(|n| cloud::label(n)).collect();
    if v.is_empty() {
        "none".into()
    } else {
        v.join(", ")
    }
}

/// Node checks; the node's info (id, topology) when it resolved.
pub(super) async fn node_checks(
    r: &mut Report,
    serve: &ServeArgs,
    plan: &Plan,
    timeout: Duration,
) -> Option<crate::driver::node::NodeInfo> {
    let host = LinuxHost::host(app::by_id_dir(serve), &serve.kubelet_dir);
    let fs = host.filesystems.clone();
    let tools = tokio::task::spawn_blocking(move || node::tools(fs.as_ref()))
        .await
        .unwrap_or_default();
    r.extend(tools);
    r.push(node::kubelet_dir(&serve.kubelet_dir));
    let resolved = std::fs::canonicalize(&serve.kubelet_dir).unwrap_or(serve.kubelet_dir.clone());
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    r.push(node::propagation_check(
        node::propagation(&mountinfo, &resolved),
        &serve.kubelet_dir,
    ));
    let local = serve.backend == Backend::Local;
    r.push(node::by_id_dir(&app::by_id_dir(serve), local));
    if local {
        r.push(node::loop_control(Path::new("/dev/loop-control")));
    } else if serve.node_id.is_none() {
        let opts = app::metadata_options(serve, &plan.config.metadata);
        r.extend(node::metadata_sources(&opts, timeout).await);
    }
    let metadata = plan.metadata.clone()?;
    let core = app::node_core(serve, &plan.config, metadata);
    let (check, info) = node::node_info(&core, serve, timeout).await;
    r.push(check);
    if let Some(i) = &info {
        r.push(node::topology(i, serve.with_topology));
    }
    info
}

/// The driver's socket: does a driver answer Probe there? Only a failure when the doctor was
/// pointed at a running driver (`--pid`); otherwise the driver may not be started yet.
pub(super) async fn driver_socket(
    r: &mut Report,
    serve: &ServeArgs,
    expected: bool,
    timeout: Duration,
) {
    let name = "driver socket";
    let answer = async {
        let client = crate::tools::ctl::Client::connect(&serve.endpoint, timeout).await?;
        client
            .identity()
            .probe(client.req(crate::server::csi::pb::ProbeRequest {}))
            .await
            .map(|r| r.into_inner().ready)
            .map_err(|s| format!("Probe: {:?}: {}", s.code(), s.message()))
    };
    let answer = tokio::time::timeout(timeout, answer)
        .await
        .unwrap_or_else(|_| Err(format!("no answer within {}s", timeout.as_secs())));
    r.push(match answer {
        Ok(ready) if ready != Some(false) => {
            Check::ok(name, format!("{} answers Probe: ready", serve.endpoint))
        }
        Ok(_) => Check::fail(
            name,
            format!("{} answers Probe: not ready", serve.endpoint),
            "the driver's log says why",
        ),
        Err(e) if expected => Check::fail(
            name,
            e,
            "the driver is not serving on its --endpoint; see its log",
        ),
        Err(e) => Check::warn(
            name,
            e,
            "fine when the driver is not started yet; else check --endpoint",
        ),
    });
}

/// The clouds of cloud.conf: the controller's, or on a node those with credentials (the
/// chart gives the node the same cloud.conf).
pub(super) async fn cloud_checks(
    r: &mut Report,
    serve: &ServeArgs,
    plan: &Plan,
    args: &DoctorArgs,
    node: Option<&crate::driver::node::NodeInfo>,
    timeout: Duration,
) {
    if serve.backend == Backend::Local {
        r.push(Check::skip("cloud", "local backend: no cloud to reach"));
        return;
    }
    let clouds = if plan.controller {
        plan.clouds.clone()
    } else {
        match plan
            .config
            .resolve_clouds(&serve.cloud_name, &config::ProcessEnv)
        {
            Ok(c) => c,
            Err(e) => {
                r.push(Check::skip(
                    "cloud",
                    format!("no usable credentials for the node ({e}); a node needs none"),
                ));
                return;
            }
        }
    };
    for g in clouds.values() {
        hide_secrets(r, g);
    }
    let node_zone = node
        .and_then(|n| n.topology.as_ref())
        .and_then(|t| t.get(crate::driver::types::ZONE_TOPOLOGY_KEY))
        .map(String::as_str);
    let server = args.server.as_deref().or(node.map(|n| n.node_id.as_str()));
    let metrics = Arc::new(ApiMetrics::new());
    for (name, global) in &clouds {
        let os =
            match app::openstack_cloud(name, global, &plan.config.block_storage, &metrics).await {
                Ok(os) => os,
                Err(e) => {
                    r.push(Check::fail(
                        format!("cloud {}", cloud::label(name)),
                        e.to_string(),
                        "fix the section in cloud.conf",
                    ));
                    continue;
                }
            };
        let (checks, usable) = cloud::openstack(name, &os, timeout).await;
        r.extend(checks);
        if !usable {
            r.push(Check::skip(
                format!("quota, zones {}", cloud::label(name)),
                "they need a token and a Cinder endpoint",
            ));
            continue;
        }
        let c = os.into_cloud();
        r.extend(
            cloud::port(
                &c,
                server,
                node_zone,
                plan.config.block_storage.ignore_volume_az,
                timeout,
            )
            .await,
        );
    }
}
