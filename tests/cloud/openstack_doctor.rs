//! `cinder-csi doctor` against the real OpenStack test cloud (Keystone, Cinder, Nova on
//! 127.0.0.1): all OK for a correctly configured node + controller (a running driver checked
//! through `--pid`), and a FAIL naming the cause, with no secret printed, for a wrong password,
//! a wrong application-credential secret, a region the catalog lacks, a zone Cinder lacks and
//! a server that does not exist. Creates no cloud object.
//!
//! Runs only with `CINDER_CSI_OSTACK_ENV` set (tests/openstack_support); hold the cloud's
//! lock shared around it: `flock -s /var/tmp/cinder-csi-ostack.lock cargo test --test
//! openstack_doctor`.

use crate::support::doctor_support;
use crate::support::openstack_support;

use doctor_support::{doctor, line, status, SharedDir};
use openstack_support::{Cloud, Driver};

/// Every check of a run, except the listed names, is OK.
fn all_ok_but(out: &str, except: &[&str]) {
    for l in out.lines().skip(1) {
        if l.starts_with("no problem") || l.starts_with("problems") {
            break;
        }
        let name_ok = except
            .iter()
            .any(|n| l.get(6..).is_some_and(|r| r.starts_with(n)));
        assert!(l.starts_with("OK ") || name_ok, "{l}\n{out}");
    }
}

/// A copy of the cloud's cloud.conf with `key = value` replaced (or added to [Global]).
fn conf_with(cloud: &Cloud, dir: &std::path::Path, key: &str, value: &str) -> String {
    let text = std::fs::read_to_string(cloud.var("OSTACK_CLOUD_CONF")).unwrap();
    let mut replaced = false;
    let mut out: Vec<String> = text
        .lines()
        .map(|l| {
            let k = l.split('=').next().unwrap_or("").trim();
            if k == key {
                replaced = true;
                format!("{key} = {value}")
            } else {
                l.to_string()
            }
        })
        .collect();
    if !replaced {
        let at = out.iter().position(|l| l.trim() == "[Global]").unwrap() + 1;
        out.insert(at, format!("{key} = {value}"));
    }
    let path = dir.join(format!("cloud-{key}.conf"));
    std::fs::write(&path, out.join("\n") + "\n").unwrap();
    path.display().to_string()
}

#[tokio::test]
async fn doctor_against_the_test_cloud() {
    let Some(cloud) = Cloud::from_env("openstack_doctor") else {
        return;
    };
    let password = cloud.var("OS_PASSWORD").to_string();
    let app_secret = cloud.var("OSTACK_APP_CRED_SECRET").to_string();
    let tmp = tempfile::tempdir().unwrap();
    let kubelet = SharedDir::new();

    // A correctly configured node-1 (node + controller): everything OK, through the running
    // driver's own command line.
    let mut driver = Driver::start(&cloud, 1, tmp.path(), kubelet.path());
    let _channel = driver.connect().await;
    let (code, out) = doctor(&["--pid", &driver.pid().to_string()]);
    assert_eq!(code, 0, "{out}");
    all_ok_but(&out, &[]);
    assert_eq!(status(&out, "metadata metadataService"), "OK", "{out}");
    assert!(
        line(&out, "keystone [Global]").contains("user demo"),
        "{out}"
    );
    assert!(
        line(&out, "catalog cinder v3 [Global]").contains("/v3"),
        "{out}"
    );
    assert_eq!(status(&out, "cinder microversion [Global]"), "OK", "{out}");
    assert_eq!(status(&out, "nova microversion [Global]"), "OK", "{out}");
    assert_eq!(status(&out, "quota [Global]"), "OK", "{out}");
    assert!(
        line(&out, "nova server [Global]").contains(cloud.node(1, "ID")),
        "{out}"
    );
    let zone = cloud.node(1, "AZ");
    assert!(
        line(&out, "availability zones [Global]")
            .contains(&format!("node zone {zone} is Cinder's")),
        "{out}"
    );
    assert!(!out.contains(&password), "the password was printed:\n{out}");
    drop(driver);

    let socket = format!("unix://{}/none.sock", tmp.path().display());
    let controller = |conf: &str, extra: &[&str]| {
        let mut a = vec![
            "--mode",
            "controller",
            "--cloud-config",
            conf,
            "--endpoint",
            &socket,
        ];
        a.extend_from_slice(extra);
        let (code, out) = doctor(&a);
        assert!(!out.contains(&password), "the password was printed:\n{out}");
        assert!(
            !out.contains(&app_secret),
            "the app credential secret was printed:\n{out}"
        );
        (code, out)
    };

    // Upstream's default search order on a cloud without config drives: the config drive is
    // skipped, the metadata service answers, nothing fails.
    let conf = conf_with(
        &cloud,
        tmp.path(),
        "search-order",
        "configDrive,metadataService",
    );
    let (code, out) = doctor(&[
        "--mode",
        "node",
        "--cloud-config",
        &conf,
        "--by-id-dir",
        cloud.node(2, "BY_ID_DIR"),
        "--metadata-url",
        cloud.node(2, "METADATA_URL"),
        "--kubelet-dir",
        &kubelet.path().display().to_string(),
        "--endpoint",
        &format!("unix://{}/none.sock", tmp.path().display()),
    ]);
    assert_eq!(code, 0, "{out}");
    let cd = line(&out, "metadata configDrive");
    assert!(
        cd.starts_with("SKIP") && cd.contains("a later source answered"),
        "{out}"
    );
    assert_eq!(status(&out, "metadata metadataService"), "OK", "{out}");
    assert!(line(&out, "node id").contains(cloud.node(2, "ID")), "{out}");

    // The controller alone, checking node-2's server from there.
    let conf = cloud.var("OSTACK_CLOUD_CONF").to_string();
    let (code, out) = controller(&conf, &["--server", cloud.node(2, "ID")]);
    assert_eq!(code, 0, "{out}");
    all_ok_but(&out, &["node", "driver socket"]);
    assert!(
        line(&out, "availability zones [Global]")
            .contains(&format!("node zone {} is Cinder's", cloud.node(2, "AZ"))),
        "{out}"
    );
    // The application credential.
    let (code, out) = controller(cloud.var("OSTACK_CLOUD_CONF_APPCRED"), &[]);
    assert_eq!(code, 0, "{out}");
    assert!(
        line(&out, "keystone [Global]").contains("application credential"),
        "{out}"
    );

    // Wrong password: Keystone refuses, the line says so, nothing after it is tried.
    let wrong = "doctor-wrong-password-4711";
    let (code, out) = controller(&conf_with(&cloud, tmp.path(), "password", wrong), &[]);
    assert_eq!(code, 1, "{out}");
    let k = line(&out, "keystone [Global]");
    assert!(
        k.starts_with("FAIL") && k.contains("authentication failed"),
        "{out}"
    );
    assert!(k.contains("check the credentials"), "{out}");
    assert!(
        !out.contains(wrong),
        "the wrong password was printed:\n{out}"
    );
    assert_eq!(status(&out, "quota, zones [Global]"), "SKIP", "{out}");

    // Wrong application-credential secret.
    let text = std::fs::read_to_string(cloud.var("OSTACK_CLOUD_CONF_APPCRED")).unwrap();
    let bad_secret = "doctor-wrong-secret-0815";
    let bad = text.replace(&app_secret, bad_secret);
    assert_ne!(bad, text, "the app-cred cloud.conf holds the secret");
    let bad_conf = tmp.path().join("appcred-bad.conf");
    std::fs::write(&bad_conf, bad).unwrap();
    let (code, out) = controller(&bad_conf.display().to_string(), &[]);
    assert_eq!(code, 1, "{out}");
    assert!(line(&out, "keystone [Global]").starts_with("FAIL"), "{out}");
    assert!(
        !out.contains(bad_secret),
        "the wrong secret was printed:\n{out}"
    );

    // A region the catalog has no endpoints in.
    let (code, out) = controller(
        &conf_with(&cloud, tmp.path(), "region", "NoSuchRegion"),
        &[],
    );
    assert_eq!(code, 1, "{out}");
    assert_eq!(status(&out, "keystone [Global]"), "OK", "{out}");
    let c = line(&out, "catalog cinder v3 [Global]");
    assert!(c.starts_with("FAIL") && c.contains("NoSuchRegion"), "{out}");
    assert!(
        line(&out, "catalog nova [Global]").starts_with("FAIL"),
        "{out}"
    );

    // A server that does not exist, and a node zone Cinder does not have.
    let (code, out) = controller(&conf, &["--server", "00000000-0000-4000-8000-000000000000"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        line(&out, "nova server [Global]").contains("no Nova server"),
        "{out}"
    );
    let (code, out) = doctor(&[
        "--mode",
        "all",
        "--cloud-config",
        &conf,
        "--by-id-dir",
        cloud.node(1, "BY_ID_DIR"),
        "--metadata-url",
        cloud.node(1, "METADATA_URL"),
        "--kubelet-dir",
        &kubelet.path().display().to_string(),
        "--additional-topology",
        "topology.cinder.csi.openstack.org/zone=az-nowhere",
        "--endpoint",
        &socket,
    ]);
    assert_eq!(code, 1, "{out}");
    let z = line(&out, "availability zones [Global]");
    assert!(
        z.starts_with("FAIL") && z.contains("node zone az-nowhere is not a Cinder zone"),
        "{out}"
    );
    assert!(z.contains("ignore-volume-az"), "{z}");
}
