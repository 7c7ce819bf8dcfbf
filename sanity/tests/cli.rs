//! The `cinder-csi-sanity` binary end to end against the in-process fake driver: one line per
//! case, the closing line, JUnit, and the exit status.

mod fake;

use std::process::Output;

use fake::{Fault, Profile};

const BIN: &str = env!("CARGO_BIN_EXE_cinder-csi-sanity");

async fn sanity(drv: &fake::Running, extra: &[&str]) -> Output {
    tokio::process::Command::new(BIN)
        .arg("--endpoint")
        .arg(&drv.endpoint)
        .arg("--staging-dir")
        .arg(drv.staging_dir())
        .arg("--mount-dir")
        .arg(drv.mount_dir())
        .args(["--timeout", "20s", "--snapshot-ready-timeout", "1s"])
        .args(extra)
        .output()
        .await
        .unwrap()
}

fn lines(o: &Output) -> Vec<String> {
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn list_needs_no_driver() {
    let o = std::process::Command::new(BIN)
        .args(["--list", "--endpoint", "unix:///nonexistent.sock"])
        .output()
        .unwrap();
    assert!(o.status.success());
    let l = lines(&o);
    let n: usize = l
        .last()
        .unwrap()
        .strip_suffix(" cases")
        .unwrap()
        .parse()
        .unwrap();
    assert!(n >= 80 && n == l.len() - 1, "{n}");
    assert!(l.iter().any(|x| x.starts_with("Snapshot/")
        && x.contains("[needs controller capability CREATE_DELETE_SNAPSHOT")));
    let o = std::process::Command::new(BIN)
        .args(["--list", "--filter", "^Identity/", "--skip", "Probe"])
        .output()
        .unwrap();
    assert_eq!(lines(&o).last().unwrap(), "4 cases");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_clean_run_exits_zero_with_junit() {
    let drv = fake::start(Profile::Full, &[]).await;
    let junit = drv.path().join("junit.xml");
    let mutable = drv.path().join("mutable.yaml");
    std::fs::write(&mutable, "iops: 3000\n").unwrap();
    let o = sanity(
        &drv,
        &[
            "--junit",
            junit.to_str().unwrap(),
            "--mutable-parameters",
            mutable.to_str().unwrap(),
        ],
    )
    .await;
    let l = lines(&o);
    assert!(
        o.status.success(),
        "{l:#?}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let cases = l.len() - 1;
    assert_eq!(
        l.last().unwrap(),
        // Skipped: read-only (the fake's mounts are directories) and the single-writer second
        // target (the fake does not advertise SINGLE_NODE_MULTI_WRITER).
        &format!("{} passed, 0 failed, 2 skipped", cases - 2)
    );
    assert!(l[..cases]
        .iter()
        .all(|x| x.starts_with("PASS  ") || x.starts_with("SKIP  ")));
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(
        xml.contains(&format!("tests=\"{cases}\" failures=\"0\" skipped=\"2\"")),
        "{xml}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failure_exits_one_and_says_why() {
    let drv = fake::start(Profile::Full, &[Fault::EmptyVendorVersion]).await;
    let o = sanity(&drv, &["--filter", "^Identity/"]).await;
    assert_eq!(o.status.code(), Some(1));
    let l = lines(&o);
    assert_eq!(l.last().unwrap(), "5 passed, 1 failed, 0 skipped");
    assert!(
        l.iter()
            .any(|x| x.starts_with("FAIL  Identity/GetPluginInfo")
                && x.ends_with("vendor_version is REQUIRED but empty")),
        "{l:#?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unreachable_driver_exits_two() {
    let drv = fake::start(Profile::Full, &[]).await;
    let o = tokio::process::Command::new(BIN)
        .args([
            "--endpoint",
            "unix:///nonexistent/csi.sock",
            "--timeout",
            "1s",
        ])
        .arg("--staging-dir")
        .arg(drv.staging_dir())
        .arg("--mount-dir")
        .arg(drv.mount_dir())
        .output()
        .await
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("cannot connect"));
}
