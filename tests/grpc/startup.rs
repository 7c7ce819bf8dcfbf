//! Startup contract: configuration errors exit 64 with one clear line before anything binds.

use std::path::{Path, PathBuf};
use std::process::Command;

fn run(args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_cinder-csi"))
        .args(args)
        .output()
        .expect("run cinder-csi");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn config_errors_exit_64_before_binding() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("csi.sock");
    let ep = format!("unix://{}", sock.display());
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec!["--endpoint".into(), "foo".into()],
            "expected unix:///abs/path.sock",
        ),
        (
            // (unix://rel.sock is /rel.sock, as upstream reads it)
            vec!["--endpoint".into(), "unix:rel.sock".into()],
            "must be absolute",
        ),
        (
            vec![
                "--endpoint".into(),
                ep.clone(),
                "--backend".into(),
                "local".into(),
            ],
            "--backend local needs --local-dir",
        ),
        (
            vec![
                "--endpoint".into(),
                ep.clone(),
                "--provide-controller-service=false".into(),
                "--provide-node-service=false".into(),
            ],
            "leave nothing to serve",
        ),
        (
            vec![
                "--endpoint".into(),
                ep.clone(),
                "--mode".into(),
                "sideways".into(),
            ],
            "invalid value",
        ),
        (
            vec![
                "--endpoint".into(),
                ep.clone(),
                "--log-level".into(),
                "=[".into(),
            ],
            "--log-level",
        ),
        (
            // Taken as a log target by EnvFilter, which then silenced every line.
            vec![
                "--endpoint".into(),
                ep.clone(),
                "--log-level".into(),
                "warning".into(),
            ],
            r#"--log-level "warning" is not a valid filter: unknown level "warning""#,
        ),
        (
            vec![
                "--endpoint".into(),
                ep.clone(),
                "--log-level".into(),
                "verbose".into(),
            ],
            r#"did you mean "debug" or "trace"?"#,
        ),
        (
            vec![
                "--endpoint".into(),
                ep.clone(),
                "--kubelet-dir".into(),
                "rel".into(),
            ],
            "absolute",
        ),
    ];
    for (args, want) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, stderr) = run(&args);
        assert_eq!(code, Some(64), "{args:?}: stderr {stderr}");
        assert!(
            stderr.contains(want),
            "{args:?}: expected {want:?} in {stderr:?}"
        );
        assert!(
            !sock.exists(),
            "{args:?}: socket was bound despite the config error"
        );
    }
}

#[test]
fn refuses_to_replace_a_regular_file_at_the_socket_path() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("csi.sock");
    std::fs::write(&sock, b"precious").unwrap();
    let ep = format!("unix://{}", sock.display());
    let (code, stderr) = run(&[
        "--endpoint",
        &ep,
        "--mode",
        "node",
        "--backend",
        "local",
        "--local-dir",
        dir.path().to_str().unwrap(),
        "--node-id",
        "n1",
    ]);
    assert_ne!(code, Some(0));
    assert!(stderr.contains("not a socket"), "{stderr}");
    assert_eq!(std::fs::read(&sock).unwrap(), b"precious");
}

#[test]
fn help_lists_the_flags_and_version_has_the_revision() {
    let out = Command::new(env!("CARGO_BIN_EXE_cinder-csi"))
        .arg("--help")
        .output()
        .unwrap();
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    for flag in [
        "--endpoint",
        "--mode",
        "--backend",
        "--local-dir",
        "--cloud-config",
        "--cloud-name",
        "--cluster",
        "--with-topology",
        "--additional-topology",
        "--node-id",
        "--driver-name",
        "--kubelet-dir",
        "--http-endpoint",
        "--log-format",
        "--log-level",
        "--provide-controller-service",
        "--provide-node-service",
    ] {
        assert!(help.contains(flag), "--help lacks {flag}");
    }
    let out = Command::new(env!("CARGO_BIN_EXE_cinder-csi"))
        .arg("--version")
        .output()
        .unwrap();
    let v = String::from_utf8_lossy(&out.stdout);
    assert!(
        v.contains(env!("CARGO_PKG_VERSION")) && v.contains("git "),
        "{v}"
    );
    // In a git checkout (CI runs in a clone) the revision is the real one, not build.rs's
    // "unknown" fallback. (`.git` is a file in a worktree.)
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    if repo.join(".git").exists() {
        let head = Command::new("git")
            .args(["rev-parse", "--short=12", "HEAD"])
            .current_dir(repo)
            .output()
            .unwrap();
        assert!(head.status.success(), "git rev-parse HEAD failed");
        let head = String::from_utf8_lossy(&head.stdout).trim().to_string();
        assert!(
            v.contains(&format!("(git {head},")),
            "{v} is not of HEAD {head}"
        );
    }
}

/// A temp dir with a cloud.conf whose line 3 is wrong (`tls-insecure = maybe`), and the
/// endpoint of a socket in it that a failed start must not leave behind: (dir, socket,
/// endpoint, cloud.conf, `--cloud-config=` argument).
fn bad_conf() -> (tempfile::TempDir, PathBuf, String, PathBuf, String) {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("csi.sock");
    let ep = format!("unix://{}", sock.display());
    let conf = dir.path().join("cloud.conf");
    std::fs::write(
        &conf,
        "[Global]\nauth-url = http://127.0.0.1:5000/v3\ntls-insecure = maybe\n",
    )
    .unwrap();
    let conf_arg = format!("--cloud-config={}", conf.display());
    (dir, sock, ep, conf, conf_arg)
}

#[test]
fn cloud_config_errors_exit_64_naming_file_and_line() {
    let (dir, sock, ep, conf, conf_arg) = bad_conf();
    let (code, stderr) = run(&["--endpoint", &ep, "--mode", "controller", &conf_arg]);
    assert_eq!(code, Some(64), "{stderr}");
    let want = format!("{}:3", conf.display());
    assert!(
        stderr.contains(&want) && stderr.contains("tls-insecure"),
        "{stderr}"
    );
    assert_eq!(stderr.trim().lines().count(), 1, "one clear line: {stderr}");
    assert!(!sock.exists());

    let missing = format!("--cloud-config={}", dir.path().join("nope.conf").display());
    let (code, stderr) = run(&["--endpoint", &ep, "--mode", "controller", &missing]);
    assert_eq!(code, Some(64), "{stderr}");
    assert!(stderr.contains("nope.conf"), "{stderr}");

    let (code, stderr) = run(&["--endpoint", &ep, "--mode", "controller"]);
    assert_eq!(code, Some(64), "{stderr}");
    assert!(stderr.contains("--cloud-config"), "{stderr}");

    std::fs::write(&conf, "[Global]\nusername = u\n").unwrap();
    let (code, stderr) = run(&["--endpoint", &ep, "--mode", "controller", &conf_arg]);
    assert_eq!(code, Some(64), "{stderr}");
    assert!(stderr.contains("auth-url"), "{stderr}");
    assert!(!sock.exists());
}

/// `--log-format json`: the last line before exiting is JSON too, whatever failed (a flag, the
/// log filter, cloud.conf), so a log pipeline parsing JSON sees why the pod restarts.
#[test]
fn fatal_errors_are_json_lines_under_log_format_json() {
    let (_dir, sock, ep, conf, conf_arg) = bad_conf();
    let cases: Vec<(Vec<&str>, String)> = vec![
        (
            vec![
                "--log-format",
                "json",
                "--endpoint",
                &ep,
                "--mode",
                "controller",
                &conf_arg,
            ],
            format!("{}:3", conf.display()),
        ),
        (
            vec![
                "--log-format=json",
                "--endpoint",
                &ep,
                "--log-level",
                "warning",
            ],
            "unknown level \"warning\"".into(),
        ),
        (
            vec!["--log-format=json", "--endpoint", &ep, "--mode", "sideways"],
            "invalid value 'sideways'".into(),
        ),
    ];
    for (args, want) in cases {
        let (code, stderr) = run(&args);
        assert_eq!(code, Some(64), "{args:?}: {stderr}");
        let lines: Vec<&str> = stderr.lines().collect();
        assert_eq!(lines.len(), 1, "{args:?}: one JSON line: {stderr}");
        let v: serde_json::Value = serde_json::from_str(lines[0])
            .unwrap_or_else(|e| panic!("{args:?}: not JSON ({e}): {stderr}"));
        assert_eq!(v["level"], "ERROR", "{stderr}");
        assert_eq!(v["exit_code"], 64, "{stderr}");
        let message = v["message"].as_str().unwrap();
        assert!(
            message.contains(&want),
            "{args:?}: {want:?} not in {message:?}"
        );
        assert!(!sock.exists());
    }
}
