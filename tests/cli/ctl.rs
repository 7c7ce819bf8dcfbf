//! `cinder-csi ctl` against the real binary on a socket: readable text and JSON output, exit
//! statuses, and secrets that never appear in any output.

use crate::support::common;

use std::process::Command;

use common::Driver;

fn start() -> Driver {
    let dir = tempfile::tempdir().unwrap();
    let local = dir.path().join("local").display().to_string();
    let kubelet = dir.path().display().to_string();
    let socket = dir.path().join("csi.sock");
    Driver::start_at(
        dir,
        socket,
        &[
            "--mode",
            "all",
            "--backend",
            "local",
            "--local-dir",
            &local,
            "--node-id",
            "ctl-node",
            "--kubelet-dir",
            &kubelet,
        ],
    )
}

/// Run `cinder-csi ctl --endpoint EP ARGS…`; returns (exit code, stdout, stderr).
fn ctl(endpoint: &str, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_cinder-csi"))
        .args(["ctl", "--endpoint", endpoint])
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn identity_rpcs_in_text_and_json() {
    let d = start();
    let ep = d.endpoint();
    let (code, out, err) = ctl(&ep, &["info"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("name: cinder.csi.openstack.org"), "{out}");
    assert!(out.contains("vendor_version: "), "{out}");

    let (code, out, _) = ctl(&ep, &["-o", "json", "info"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["name"], "cinder.csi.openstack.org");

    let (code, out, _) = ctl(&ep, &["probe"]);
    assert_eq!(code, 0);
    assert_eq!(out.trim(), "ready: true");

    let (code, out, err) = ctl(&ep, &["--output", "json", "capabilities"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let plugin: Vec<&str> = v["plugin"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap())
        .collect();
    assert!(plugin.contains(&"CONTROLLER_SERVICE"), "{plugin:?}");
    assert!(v.get("controller").is_some() && v.get("node").is_some());
}

#[test]
fn failures_have_distinct_exit_statuses() {
    let d = start();
    let ep = d.endpoint();
    // An RPC error: exit 1, the RPC and its code named.
    let (code, out, err) = ctl(&ep, &["get-volume", "no-such-volume"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("ControllerGetVolume failed: "), "{err}");
    let (code, _, err) = ctl(&ep, &["-o", "json", "get-volume", "no-such-volume"]);
    assert_eq!(code, 1);
    let v: serde_json::Value = serde_json::from_str(err.trim()).unwrap();
    assert_eq!(v["rpc"], "ControllerGetVolume");
    assert!(v["code"].is_string());
    // Nothing listening: exit 2.
    let gone = format!("unix://{}/nothing.sock", d.path().display());
    let (code, _, err) = ctl(&gone, &["probe"]);
    assert_eq!(code, 2);
    assert!(err.contains("cannot connect"), "{err}");
    // Bad flags: clap's usage error.
    let (code, _, _) = ctl(&ep, &["create-volume"]);
    assert_eq!(code, 64);
}

#[test]
fn secrets_never_appear_in_output() {
    let d = start();
    let ep = d.endpoint();
    let secret = "hunter2-do-not-print";
    let pair = format!("password={secret}");
    for args in [
        vec!["create-volume", "pvc-x", "--size", "1Gi", "--secret", &pair],
        vec!["-o", "json", "delete-volume", "v", "--secret", &pair],
        // Malformed: the value must not be echoed either.
        vec!["delete-volume", "v", "--secret", secret],
    ] {
        let (_, out, err) = ctl(&ep, &args);
        assert!(
            !out.contains(secret) && !err.contains(secret),
            "secret printed for {args:?}:\n{out}\n{err}"
        );
    }
    let (code, _, err) = ctl(&ep, &["delete-volume", "v", "--secret", secret]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("KEY=VALUE"), "{err}");

    let file = d.path().join("secrets");
    std::fs::write(&file, format!("user=admin\n{secret}\n")).unwrap();
    let f = file.display().to_string();
    let (code, out, err) = ctl(&ep, &["delete-volume", "v", "--secrets-file", &f]);
    assert_eq!(code, 2);
    assert!(err.contains(":2:"), "names the line: {err}");
    assert!(!out.contains(secret) && !err.contains(secret));
}

/// `ctl -o json ARGS` against `ep`, which must succeed, its output parsed.
#[track_caller]
fn ctl_json(ep: &str, args: &[&str]) -> serde_json::Value {
    let mut all = vec!["-o", "json"];
    all.extend_from_slice(args);
    let (code, out, err) = ctl(ep, &all);
    assert_eq!(code, 0, "ctl {args:?}: {err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

/// The controller RPCs through `ctl` on the local backend, JSON parsed back.
#[test]
fn controller_round_trip() {
    let d = start();
    let ep = d.endpoint();
    let json = |args: &[&str]| ctl_json(&ep, args);
    let v = json(&[
        "create-volume",
        "pvc-ctl",
        "--size",
        "1Gi",
        "--fs-type",
        "xfs",
    ]);
    let id = v["volume_id"].as_str().unwrap().to_string();
    assert_eq!(v["capacity_bytes"], 1 << 30);
    assert_eq!(v["capacity"], "1 GiB");

    let list = json(&["list-volumes"]);
    let ids: Vec<&str> = list["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["volume_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, vec![id.as_str()]);
    let got = json(&["get-volume", &id]);
    assert_eq!(got["volume"]["volume_id"], id.as_str());

    let cap = json(&["get-capacity"]);
    assert!(cap["available_capacity"].as_i64().unwrap() > 0);

    let e = json(&["expand", &id, "--size", "2Gi"]);
    assert_eq!(e["capacity_bytes"], 2_i64 << 30);

    let s = json(&["create-snapshot", "snap-ctl", "--source", &id]);
    let sid = s["snapshot_id"].as_str().unwrap().to_string();
    assert_eq!(s["source_volume_id"], id.as_str());
    assert!(s["creation_time"].as_str().unwrap().ends_with('Z'));
    let ls = json(&["list-snapshots", "--source", &id]);
    assert_eq!(ls["entries"][0]["snapshot_id"], sid.as_str());

    // Text output reads as `key: value` lines.
    let (code, out, _) = ctl(&ep, &["get-volume", &id]);
    assert_eq!(code, 0);
    assert!(out.contains(&format!("  volume_id: {id}")), "{out}");

    // Deleting a volume with a snapshot is refused with its gRPC code; then it works.
    let (code, _, err) = ctl(&ep, &["delete-volume", &id]);
    assert_eq!(code, 1);
    assert!(err.contains("DeleteVolume failed: "), "{err}");
    assert_eq!(json(&["delete-snapshot", &sid]), serde_json::json!({}));
    let (code, out, _) = ctl(&ep, &["delete-volume", &id]);
    assert_eq!(code, 0);
    assert_eq!(out.trim(), "ok");
    assert!(json(&["list-volumes"])["entries"]
        .as_array()
        .unwrap()
        .is_empty());
}

/// The GroupController RPCs through `ctl` on the local backend (unattached volumes: no
/// freeze needed), and their capability.
#[test]
fn group_snapshot_round_trip() {
    let d = start();
    let ep = d.endpoint();
    let json = |args: &[&str]| ctl_json(&ep, args);
    let caps = json(&["capabilities"]);
    assert_eq!(
        caps["group_controller"],
        serde_json::json!(["CREATE_DELETE_GET_VOLUME_GROUP_SNAPSHOT"])
    );
    assert!(caps["plugin"]
        .as_array()
        .unwrap()
        .contains(&serde_json::json!("GROUP_CONTROLLER_SERVICE")));
    let a = json(&["create-volume", "pvc-a", "--size", "1Gi"])["volume_id"]
        .as_str()
        .unwrap()
        .to_string();
    let b = json(&["create-volume", "pvc-b", "--size", "2Gi"])["volume_id"]
        .as_str()
        .unwrap()
        .to_string();
    let g = json(&[
        "create-group-snapshot",
        "group-ctl",
        "--source",
        &a,
        "--source",
        &b,
        "--param",
        "group-type=local",
    ]);
    let gid = g["group_snapshot_id"].as_str().unwrap().to_string();
    assert_eq!(g["ready_to_use"], true);
    let members = g["snapshots"].as_array().unwrap();
    assert_eq!(members.len(), 2);
    let sids: Vec<&str> = members
        .iter()
        .map(|m| m["snapshot_id"].as_str().unwrap())
        .collect();
    for m in members {
        assert_eq!(m["group_snapshot_id"], gid.as_str());
    }
    let got = json(&[
        "get-group-snapshot",
        &gid,
        "--snapshot",
        sids[0],
        "--snapshot",
        sids[1],
    ]);
    assert_eq!(got, g);
    // A member list that is not the group's: InvalidArgument, exit 1.
    let (code, _, err) = ctl(&ep, &["get-group-snapshot", &gid, "--snapshot", sids[0]]);
    assert_eq!(code, 1);
    assert!(err.contains("InvalidArgument"), "{err}");
    // Text output names the members.
    let (code, out, _) = ctl(&ep, &["get-group-snapshot", &gid]);
    assert_eq!(code, 0);
    assert!(out.contains(sids[1]), "{out}");
    assert_eq!(
        json(&["delete-group-snapshot", &gid]),
        serde_json::json!({})
    );
    let (code, _, err) = ctl(&ep, &["get-group-snapshot", &gid]);
    assert_eq!(code, 1);
    assert!(err.contains("NotFound"), "{err}");
    for v in [&a, &b] {
        assert_eq!(ctl(&ep, &["delete-volume", v]).0, 0);
    }
}

use crate::support::local_rig;

/// The node RPCs (and publish/unpublish) through `ctl`, on real loop devices and mounts. The
/// rig's guard unmounts and unbinds whatever a failure leaves.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_round_trip() {
    let mut rig = local_rig::Rig::new();
    let _client = rig.start().await;
    let ep = rig.endpoint();
    let run = |args: Vec<String>| {
        let (code, out, err) = ctl(&ep, &args.iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(code, 0, "ctl {args:?}: {err}");
        out
    };
    let args = |s: &str| s.split_whitespace().map(str::to_string).collect::<Vec<_>>();

    let info: serde_json::Value = serde_json::from_str(&run(args("-o json node-info"))).unwrap();
    assert_eq!(info["node_id"], local_rig::NODE);
    let v: serde_json::Value = serde_json::from_str(&run(args(
        "-o json create-volume pvc-node --size 1Gi --fs-type xfs",
    )))
    .unwrap();
    let id = v["volume_id"].as_str().unwrap().to_string();
    let staging = rig.staging(&id).display().to_string();
    let target = rig.target("pod-ctl", &id).display().to_string();

    let p: serde_json::Value = serde_json::from_str(&run(args(&format!(
        "-o json publish {id} --node {} --fs-type xfs",
        local_rig::NODE
    ))))
    .unwrap();
    let device = p["publish_context"]["DevicePath"].as_str().unwrap_or("");
    let mut stage = format!("stage {id} --staging-path {staging} --fs-type xfs");
    if !device.is_empty() {
        stage.push_str(&format!(" --publish-context DevicePath={device}"));
    }
    assert_eq!(run(args(&stage)).trim(), "ok");
    run(args(&format!(
        "node-publish {id} --staging-path {staging} --target-path {target} --fs-type xfs"
    )));
    std::fs::write(format!("{target}/f"), b"through ctl").unwrap();

    let stats = run(args(&format!("stats {id} --volume-path {target}")));
    assert!(stats.contains("unit: BYTES"), "{stats}");
    assert!(stats.contains("used of"), "{stats}");

    run(args(&format!("expand {id} --size 2Gi")));
    let e: serde_json::Value = serde_json::from_str(&run(args(&format!(
        "-o json node-expand {id} --volume-path {target} --staging-path {staging} --size 2Gi"
    ))))
    .unwrap();
    assert!(e["capacity_bytes"].as_i64().unwrap() >= 0);
    let s: serde_json::Value = serde_json::from_str(&run(args(&format!(
        "-o json stats {id} --volume-path {target}"
    ))))
    .unwrap();
    let total = s["usage"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["unit"] == "BYTES")
        .unwrap()["total"]
        .as_i64()
        .unwrap();
    assert!(total > 3 << 29, "filesystem not grown: {total}");

    run(args(&format!("node-unpublish {id} --target-path {target}")));
    run(args(&format!("unstage {id} --staging-path {staging}")));
    run(args(&format!("unpublish {id} --node {}", local_rig::NODE)));
    run(args(&format!("delete-volume {id}")));
    assert!(rig.mounts().is_empty() && rig.loop_devices().is_empty());
    assert!(rig.stop());
}
