//! The demo's flags and its run: preflight, a fresh work directory, the scenario, the leak check.

use super::*;

use std::path::{Path, PathBuf};

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::Args;

use crate::host::fs::FsKind;
use driver::{Driver, DriverPaths};
use report::Report;
use state::Scenario;

/// `--fs-type`: any filesystem the node formats (`host/fs`), so a new one needs no change here.
pub(super) fn fs_kind_parser() -> impl TypedValueParser<Value = FsKind> {
    PossibleValuesParser::new(FsKind::ALL.map(FsKind::as_str))
        .map(|s| FsKind::parse(&s).expect("a possible value is a filesystem"))
}

#[derive(Debug, Clone, Args)]
pub struct DemoArgs {
    /// Work directory (must not exist or be empty); removed at the end.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Filesystem to format the volumes with. xfs and btrfs grow online as root without
    /// CAP_SYS_RESOURCE; the ext family's online grow (resize2fs) needs it and fails without.
    #[arg(long, value_parser = fs_kind_parser(), default_value = "xfs")]
    pub fs_type: FsKind,
    /// The driver binary to run (default: this executable).
    #[arg(long, value_name = "PATH")]
    pub driver: Option<PathBuf>,
}

/// Node id the demo's driver runs as.
pub(super) const NODE_ID: &str = "demo-node";

/// Exit status: 0 when every step passed and nothing was left behind.
pub async fn run(args: DemoArgs) -> u8 {
    match preflight(&args) {
        Ok(()) => {}
        Err(e) => {
            eprintln!("cinder-csi demo: {e}");
            return 2;
        }
    }
    let dir = args.dir.clone().unwrap_or_else(|| {
        PathBuf::from(format!("/var/tmp/cinder-csi-demo-{}", std::process::id()))
    });
    if let Err(e) = fresh_dir(&dir) {
        eprintln!("cinder-csi demo: {e}");
        return 2;
    }
    let dir = dir.canonicalize().unwrap_or(dir);
    let paths = DriverPaths {
        socket: dir.join("csi.sock"),
        state: dir.join("state"),
        kubelet: dir.join("kubelet"),
        log: dir.join("driver.log"),
    };
    println!(
        "cinder-csi demo: the driver's whole job on the local backend ({}, {})",
        args.fs_type,
        crate::config::version::vendor_version()
    );
    println!(
        "  work directory {} (paths below are relative to it)",
        dir.display()
    );

    let mut report = Report::new();
    let binary = args
        .driver
        .clone()
        .or_else(|| std::env::current_exe().ok())
        .unwrap_or_else(|| PathBuf::from("cinder-csi"));
    let ok = drive(&mut report, &binary, &paths, args.fs_type).await;

    // Whatever happened: nothing may stay behind.
    report.section("check");
    let left = cleanup::find(&dir, &paths.state);
    let clean = left.is_empty();
    report.note(
        clean,
        "nothing left behind",
        &if clean {
            "no mount, loop device or volume file remains".to_string()
        } else {
            left.describe()
        },
    );
    let problems = cleanup::force(&dir);
    if !problems.is_empty() {
        report.note(false, "cleanup", &problems.join("; "));
    } else if dir.exists() {
        report.note(false, "cleanup", &format!("{} still exists", dir.display()));
    } else {
        report.note(true, "work directory removed", &dir.display().to_string());
    }
    let passed = ok && clean && problems.is_empty() && report.failed() == 0;
    println!(
        "\n{} ({})",
        if passed { "demo passed" } else { "demo FAILED" },
        report.summary()
    );
    if passed {
        0
    } else {
        1
    }
}

/// Start the driver, run the scenario, tear down (also after a failure), stop the driver.
pub(super) async fn drive(
    report: &mut Report,
    binary: &Path,
    paths: &DriverPaths,
    fs: FsKind,
) -> bool {
    let mut driver = match Driver::start(binary, paths, NODE_ID) {
        Ok(d) => d,
        Err(e) => {
            report.note(false, "start the driver", &e);
            return false;
        }
    };
    report.section("start the driver");
    let client = report
        .step("cinder-csi serve --mode all", async {
            let c = driver.ready().await?;
            Ok((c, "backend local, answering Probe on csi.sock".to_string()))
        })
        .await;
    let Ok(client) = client else {
        println!("--- driver log (last lines) ---\n{}", driver.log_tail(20));
        let _ = driver.stop().await;
        return false;
    };
    let mut scenario = Scenario {
        client: &client,
        fs_type: fs.as_str().to_string(),
        workdir: paths
            .socket
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default(),
        kubelet: paths.kubelet.clone(),
        undo: Vec::new(),
        ids: Vec::new(),
    };
    let story = scenario.run(report).await;
    report.section(if story.is_ok() {
        "tear down: unmount, detach, delete"
    } else {
        "tear down what was created before the failure"
    });
    let mut teardown_ok = true;
    while let Some(u) = scenario.undo.pop() {
        teardown_ok &= scenario.undo_one(report, u).await.is_ok();
    }
    let failed = story.is_err() || !teardown_ok;
    if failed {
        println!("--- driver log (last lines) ---\n{}", driver.log_tail(20));
    }
    let stopped = report
        .step("stop the driver (SIGTERM)", async {
            driver.stop().await.map(|how| ((), how))
        })
        .await;
    !failed && stopped.is_ok()
}

pub(super) fn preflight(args: &DemoArgs) -> Result<(), String> {
    if !nix::unistd::geteuid().is_root() {
        return Err("needs root (loop devices, mkfs, mount); run it with sudo".into());
    }
    let mkfs = format!("mkfs.{}", args.fs_type);
    let found = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(&mkfs).is_file()))
        .unwrap_or(false);
    if !found {
        let pkg = args.fs_type.ops().package();
        return Err(format!(
            "{mkfs} not found; install it (apt-get install {pkg})"
        ));
    }
    if !Path::new("/dev/loop-control").exists() {
        return Err("/dev/loop-control is missing (modprobe loop)".into());
    }
    Ok(())
}

/// The work directory must be new or empty: the demo removes it at the end.
pub(super) fn fresh_dir(dir: &Path) -> Result<(), String> {
    match std::fs::read_dir(dir) {
        Ok(mut rd) => {
            if rd.next().is_some() {
                return Err(format!(
                    "{} exists and is not empty; the demo needs a fresh directory",
                    dir.display()
                ));
            }
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display())),
        Err(e) => Err(format!("cannot use {}: {e}", dir.display())),
    }
}
