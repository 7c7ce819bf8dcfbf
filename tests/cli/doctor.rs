//! `cinder-csi doctor` as an operator runs it, on this machine: the real binary, a real
//! running driver (`--pid`), a kubelet dir that really is a shared mount (and one that is
//! not), a cloud.conf with a password that must never be printed. The checks against the
//! real OpenStack test cloud are in tests/cloud/openstack_doctor.rs.

use crate::support::common;
use crate::support::doctor_support;

use doctor_support::{doctor, line, status, SharedDir};

const PASSWORD: &str = "doctor-pw-9931-do-not-print";

/// `--mode all` on the local backend, its state in `local` and the kubelet dir `kubelet`.
fn local_all<'a>(local: &'a str, kubelet: &'a str) -> Vec<&'a str> {
    vec![
        "--mode",
        "all",
        "--backend",
        "local",
        "--local-dir",
        local,
        "--kubelet-dir",
        kubelet,
        "--node-id",
        "doctor-node",
    ]
}

#[test]
fn local_driver_checked_through_its_pid_is_all_ok() {
    let kubelet = SharedDir::new();
    let state = tempfile::tempdir().unwrap();
    let k = kubelet.path().display().to_string();
    let l = state.path().display().to_string();
    let driver = common::Driver::start(&local_all(&l, &k));
    let (code, out) = doctor(&["--pid", &driver.pid().to_string()]);
    assert_eq!(code, 0, "{out}");
    for l in out
        .lines()
        .skip(1)
        .take_while(|l| !l.starts_with("no problem"))
    {
        assert!(l.starts_with("OK ") || l.starts_with("SKIP "), "{l}\n{out}");
    }
    assert!(out.starts_with("cinder-csi doctor "), "{out}");
    assert!(
        line(&out, "kubelet dir propagation").contains("shared (peer group"),
        "{out}"
    );
    assert!(
        line(&out, "driver socket").contains("answers Probe: ready"),
        "{out}"
    );
    assert!(
        line(&out, "node id").contains("doctor-node, zone local"),
        "{out}"
    );
    assert_eq!(status(&out, "tools ext4"), "OK");
    assert_eq!(status(&out, "loop devices"), "OK");
    assert_eq!(status(&out, "by-id dir (local backend)"), "OK");

    // The same flags given by hand, with a kubelet dir that is not a shared mount.
    let private = tempfile::tempdir().unwrap();
    let p = private.path().display().to_string();
    let endpoint = driver.endpoint();
    let (code, out) = doctor(&[local_all(&l, &p), vec!["--endpoint", &endpoint]].concat());
    assert_eq!(code, 1, "{out}");
    let prop = line(&out, "kubelet dir propagation");
    assert!(prop.starts_with("FAIL"), "{out}");
    assert!(prop.contains("Bidirectional"), "{prop}");
    assert!(out.contains("1 failed"), "{out}");
}

#[test]
fn node_without_its_host_mounts_fails_saying_what_to_mount() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("missing").display().to_string();
    let (code, out) = doctor(&[
        "--mode",
        "node",
        "--node-id",
        "0b0e5f4e-5d1c-4c57-9a4b-1f1a5e6a7c10",
        "--kubelet-dir",
        &missing,
        "--by-id-dir",
        &missing,
        "--endpoint",
        &format!("unix://{}/csi.sock", tmp.path().display()),
    ]);
    assert_eq!(code, 1, "{out}");
    assert!(line(&out, "kubelet dir").starts_with("FAIL"), "{out}");
    assert!(line(&out, "kubelet dir").contains("mountPropagation: Bidirectional"));
    let by_id = line(&out, "by-id dir");
    assert!(
        by_id.starts_with("FAIL") && by_id.contains("/dev"),
        "{by_id}"
    );
    // Not started: a warning, not a failure. No credentials: a node needs none.
    assert_eq!(status(&out, "driver socket"), "WARN", "{out}");
    assert_eq!(status(&out, "cloud"), "SKIP", "{out}");
    assert!(line(&out, "node id").contains("(from --node-id)"), "{out}");
}

#[test]
fn secrets_are_never_printed() {
    let tmp = tempfile::tempdir().unwrap();
    let conf = tmp.path().join("cloud.conf");
    // A Keystone nobody listens on: the auth check fails, naming the user, not the password.
    std::fs::write(
        &conf,
        format!(
            "[Global]\nauth-url = http://127.0.0.1:9/v3\nusername = doctor\npassword = {PASSWORD}\n\
             user-domain-id = default\ntenant-name = demo\ntenant-domain-id = default\n\
             [Global \"appcred\"]\nauth-url = http://127.0.0.1:9/v3\n\
             application-credential-id = ac1\napplication-credential-secret = {PASSWORD}-ac\n"
        ),
    )
    .unwrap();
    let c = conf.display().to_string();
    let socket = format!("unix://{}/csi.sock", tmp.path().display());
    // `-o` as ctl takes it.
    for output in ["text", "json", "-o=json"] {
        let (flag, output) = match output.strip_prefix("-o=") {
            Some(o) => ("-o", o),
            None => ("--output", output),
        };
        let (code, out) = doctor(&[
            "--mode",
            "controller",
            "--cloud-config",
            &c,
            "--cloud-name",
            ",appcred",
            "--check-timeout",
            "5",
            flag,
            output,
            "--endpoint",
            &socket,
        ]);
        assert_eq!(code, 1, "{out}");
        assert!(!out.contains(PASSWORD), "a secret was printed:\n{out}");
        if output == "text" {
            assert!(line(&out, "keystone [Global]").starts_with("FAIL"), "{out}");
            assert!(
                line(&out, "keystone [Global]").contains("reachable"),
                "{out}"
            );
            assert!(
                line(&out, "keystone [Global \"appcred\"]").starts_with("FAIL"),
                "{out}"
            );
        } else {
            let v: serde_json::Value = serde_json::from_str(&out).expect("JSON report");
            assert_eq!(v["ok"], false, "{out}");
        }
    }

    // A bad line: the configuration check fails naming it, still without the password.
    std::fs::write(
        &conf,
        format!("[Global]\nauth-url = http://127.0.0.1:9/v3\nusername = doctor\npassword = {PASSWORD}\n\
                 [BlockStorage]\nnode-volume-attach-limit = banana\n"),
    )
    .unwrap();
    let (code, out) = doctor(&["--mode", "controller", "--cloud-config", &c]);
    assert_eq!(code, 1, "{out}");
    assert!(line(&out, "configuration").starts_with("FAIL"), "{out}");
    assert!(
        line(&out, "configuration").contains("cloud.conf:6"),
        "{out}"
    );
    assert!(!out.contains(PASSWORD), "a secret was printed:\n{out}");
}

#[test]
fn pid_of_something_else_is_refused() {
    let (code, out) = doctor(&["--pid", &std::process::id().to_string()]);
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains("is not a cinder-csi serve command line"),
        "{out}"
    );
}

/// `doctor --help` lists its own options apart from the configuration it checks (the serve
/// flags, advanced ones included), so `--endpoint` does not read as a doctor setting.
#[test]
fn help_separates_the_doctors_options_from_the_configuration() {
    let (code, help) = doctor(&["--help"]);
    assert_eq!(code, 0, "{help}");
    let own = help
        .split_once("\nDoctor options:\n")
        .and_then(|(_, rest)| rest.split_once("\nConfiguration to check ("))
        .unwrap_or_else(|| panic!("Doctor options, then the configuration, in\n{help}"))
        .0;
    for flag in ["--pid", "--server", "--check-timeout", "-o, --output"] {
        assert!(
            own.contains(flag),
            "{flag} not under Doctor options:\n{own}"
        );
    }
    assert!(!own.contains("--endpoint"), "{own}");
    let checked = help
        .split_once("\nConfiguration to check (")
        .unwrap_or_else(|| panic!("no configuration heading in\n{help}"))
        .1;
    for flag in [
        "--endpoint",
        "--mode",
        "--cloud-config",
        "--log-level",
        "--by-id-dir",
    ] {
        assert!(
            checked.contains(flag),
            "{flag} not under the configuration:\n{help}"
        );
    }
    assert!(!help.contains("\nAdvanced and test options:"), "{help}");
}
