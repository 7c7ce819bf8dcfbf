//! Credential rotation as operators do it, on the real OpenStack test cloud, through the real
//! `cinder-csi` binary: the controller reads cloud.conf from a directory laid out as the
//! kubelet lays out a Secret volume (`cloud.conf -> ..data/cloud.conf`, `..data ->
//! ..TIMESTAMP`), with application credential A. While volumes are created and deleted
//! without a pause, a second credential B is made, the "Secret" is updated the kubelet's way
//! (new directory, `..data` renamed over), the driver says Keystone accepted B, and A is
//! deleted (the test checks that Keystone revokes A's tokens with it, so a driver still on A
//! would fail from then on): not one CreateVolume or DeleteVolume fails, and every token after
//! the swap is B's.
//!
//! Runs only with CINDER_CSI_OSTACK_ENV=<state>/env.sh (see docs/TESTING.md).

use crate::support::openstack_support;

use std::os::unix::fs::symlink;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cinder_csi::server::csi::pb;
use openstack_support::{log_cleanup, Cloud, CloudObjects, Controller, Driver};
use serde_json::{json, Value};

/// The member user's application credentials made here, deleted on drop (A may be gone).
struct AppCreds<'a> {
    cloud: &'a Cloud,
    user: String,
    ids: Vec<String>,
}

impl AppCreds<'_> {
    fn create(&mut self, name: &str) -> (String, String) {
        let secret = format!("rotation-{}-{}", std::process::id(), self.ids.len());
        let made = self
            .cloud
            .api_body(
                false,
                "identity",
                "POST",
                &format!("/users/{}/application_credentials", self.user),
                Some(&json!({"application_credential": {
                    "name": name, "secret": secret,
                    "description": "cinder-csi tests/cloud/openstack_rotation.rs"}})),
            )
            .expect("create application credential");
        let id = made["application_credential"]["id"]
            .as_str()
            .expect("application credential id")
            .to_string();
        self.ids.push(id.clone());
        (id, secret)
    }

    fn delete(&self, id: &str) {
        self.cloud.api(
            false,
            "identity",
            "DELETE",
            &format!("/users/{}/application_credentials/{id}", self.user),
        );
    }
}

impl Drop for AppCreds<'_> {
    fn drop(&mut self) {
        for id in &self.ids {
            let path = format!("/users/{}/application_credentials/{id}", self.user);
            if let Err(e) = self
                .cloud
                .try_api_body(false, "identity", "DELETE", &path, None)
            {
                log_cleanup(&format!("DELETE {path}: {e}"));
            }
        }
    }
}

/// The volumes the storm made (shared with it), deleted on drop if still there: also when
/// the test fails half way.
struct Volumes<'a> {
    cloud: &'a Cloud,
    ids: Arc<Mutex<Vec<String>>>,
}

impl Drop for Volumes<'_> {
    fn drop(&mut self) {
        let ids = self.ids.lock().map(|v| v.clone()).unwrap_or_default();
        drop(CloudObjects {
            cloud: self.cloud,
            volumes: ids,
            snapshots: vec![],
        });
    }
}

/// cloud.conf of the test cloud with `[Global]` authenticating as application credential
/// `id`: the harness' application-credential variant with its credential swapped.
fn conf_with(cloud: &Cloud, id: &str, secret: &str) -> String {
    let base = std::fs::read_to_string(cloud.var("OSTACK_CLOUD_CONF_APPCRED"))
        .expect("the harness' application-credential cloud.conf");
    base.lines()
        .map(|l| {
            if l.starts_with("application-credential-id") {
                format!("application-credential-id = {id}")
            } else if l.starts_with("application-credential-secret") {
                format!("application-credential-secret = {secret}")
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

/// The kubelet's atomic update of a Secret volume: data in a new timestamped directory,
/// `..data` renamed over the old link, the old directory removed.
fn publish_secret(dir: &Path, version: u32, text: &str) {
    let data = dir.join(format!("..2026_12_04_00_00_0{version}.000000000"));
    std::fs::create_dir(&data).unwrap();
    std::fs::write(data.join("cloud.conf"), text).unwrap();
    let old = std::fs::read_link(dir.join("..data")).ok();
    let tmp = dir.join("..data_tmp");
    symlink(data.file_name().unwrap(), &tmp).unwrap();
    std::fs::rename(&tmp, dir.join("..data")).unwrap();
    if !dir.join("cloud.conf").exists() {
        symlink("..data/cloud.conf", dir.join("cloud.conf")).unwrap();
    }
    if let Some(old) = old {
        std::fs::remove_dir_all(dir.join(old)).unwrap();
    }
}

/// A Keystone token for `body` (POST /v3/auth/tokens), straight from Keystone.
async fn token(auth_url: &str, body: Value) -> String {
    cinder_csi::net::tls::install_provider();
    let r = reqwest::Client::new()
        .post(format!("{auth_url}/auth/tokens"))
        .json(&body)
        .send()
        .await
        .expect("POST /auth/tokens");
    assert_eq!(
        r.status().as_u16(),
        201,
        "token refused: {:?}",
        r.text().await
    );
    r.headers()["x-subject-token"].to_str().unwrap().to_string()
}

/// Whether Keystone still validates `subject` (GET /v3/auth/tokens as the admin).
async fn token_valid(auth_url: &str, admin: &str, subject: &str) -> bool {
    cinder_csi::net::tls::install_provider();
    let r = reqwest::Client::new()
        .get(format!("{auth_url}/auth/tokens"))
        .header("x-auth-token", admin)
        .header("x-subject-token", subject)
        .send()
        .await
        .expect("GET /auth/tokens");
    match r.status().as_u16() {
        200 => true,
        404 | 401 => false,
        s => panic!("validating a token: HTTP {s}"),
    }
}

fn wait_for_log(driver: &Driver, what: &str, timeout: Duration) -> String {
    let deadline = Instant::now() + timeout;
    loop {
        let log = std::fs::read_to_string(&driver.log).unwrap_or_default();
        if log.contains(what) {
            return log;
        }
        assert!(
            Instant::now() < deadline,
            "no {what:?} in the driver's log within {timeout:?}:\n{}",
            driver.log_tail()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn provisioning_continues_through_an_application_credential_rotation() {
    let Some(cloud) = Cloud::from_env("openstack_rotation") else {
        return;
    };
    let member = cloud.var("OS_USERNAME");
    let users: Value = cloud
        .api(true, "identity", "GET", &format!("/users?name={member}"))
        .expect("users");
    let user = users["users"][0]["id"]
        .as_str()
        .expect("member id")
        .to_string();
    let mut creds = AppCreds {
        cloud: &cloud,
        user,
        ids: Vec::new(),
    };
    let pid = std::process::id();
    let (a, a_secret) = creds.create(&format!("csi-rotation-a-{pid}"));

    let dir = tempfile::tempdir().unwrap();
    let secret_dir = dir.path().join("etc-config");
    std::fs::create_dir(&secret_dir).unwrap();
    publish_secret(&secret_dir, 1, &conf_with(&cloud, &a, &a_secret));
    let kubelet = dir.path().join("kubelet");
    std::fs::create_dir(&kubelet).unwrap();
    let mut driver = Driver::start_with_conf(
        &cloud,
        1,
        dir.path(),
        &kubelet,
        &secret_dir.join("cloud.conf"),
    );
    let channel = driver.connect().await;
    wait_for_log(
        &driver,
        "watching cloud.conf for rotated credentials",
        Duration::from_secs(30),
    );

    // Provisioning without a pause: create + delete, one after the other, until stopped.
    let objects = Arc::new(Mutex::new(Vec::<String>::new()));
    let _volumes = Volumes {
        cloud: &cloud,
        ids: objects.clone(),
    };
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicUsize::new(0));
    let storm = {
        let (objects, stop, done) = (objects.clone(), stop.clone(), done.clone());
        let mut ctl = Controller::new(channel.clone());
        tokio::spawn(async move {
            let mut failures = Vec::new();
            let mut i = 0;
            while !stop.load(Ordering::SeqCst) {
                i += 1;
                let name = format!("rotation-{pid}-{i}");
                let created = ctl
                    .create_volume(pb::CreateVolumeRequest {
                        name: name.clone(),
                        capacity_range: Some(pb::CapacityRange {
                            required_bytes: 1 << 30,
                            limit_bytes: 0,
                        }),
                        volume_capabilities: vec![pb::VolumeCapability {
                            access_type: Some(pb::volume_capability::AccessType::Mount(
                                Default::default(),
                            )),
                            access_mode: Some(pb::volume_capability::AccessMode {
                                mode: pb::volume_capability::access_mode::Mode::SingleNodeWriter
                                    as i32,
                            }),
                        }],
                        ..Default::default()
                    })
                    .await;
                let id = match created {
                    Ok(r) => r.into_inner().volume.expect("volume").volume_id,
                    Err(s) => {
                        failures.push(format!("CreateVolume {name}: {s:?}"));
                        continue;
                    }
                };
                objects.lock().unwrap().push(id.clone());
                if let Err(s) = ctl
                    .delete_volume(pb::DeleteVolumeRequest {
                        volume_id: id.clone(),
                        ..Default::default()
                    })
                    .await
                {
                    failures.push(format!("DeleteVolume {id}: {s:?}"));
                }
                done.fetch_add(1, Ordering::SeqCst);
            }
            failures
        })
    };
    let wait_done = |n: usize| {
        let done = done.clone();
        async move {
            let deadline = Instant::now() + Duration::from_secs(180);
            while done.load(Ordering::SeqCst) < n {
                assert!(Instant::now() < deadline, "provisioning stalled at {n}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    };
    wait_done(2).await;

    // The operator's rotation: B made, the Secret updated, the driver on B, A deleted.
    let (b, b_secret) = creds.create(&format!("csi-rotation-b-{pid}"));
    publish_secret(&secret_dir, 2, &conf_with(&cloud, &b, &b_secret));
    let swapped_at = std::fs::read_to_string(&driver.log).unwrap().len();
    let log = wait_for_log(
        &driver,
        "Keystone accepted the new credentials",
        Duration::from_secs(60),
    );
    let after = &log[swapped_at..];
    assert!(
        after.contains(&format!("application credential {b}")),
        "the accepted credentials are not B's:\n{after}"
    );
    let before_delete = done.load(Ordering::SeqCst);
    wait_done(before_delete + 2).await;
    // A token of A, to show what deleting A does to a driver that kept it.
    let auth_url = cloud.var("OS_AUTH_URL").to_string();
    let a_token = token(
        &auth_url,
        json!({"auth": {"identity": {"methods": ["application_credential"],
            "application_credential": {"id": a, "secret": a_secret}}}}),
    )
    .await;
    let admin = token(
        &auth_url,
        json!({"auth": {"identity": {"methods": ["password"], "password": {"user": {
            "name": cloud.var("OSTACK_ADMIN_USERNAME"), "domain": {"id": "default"},
            "password": cloud.var("OSTACK_ADMIN_PASSWORD")}}},
            "scope": {"project": {"name": cloud.var("OSTACK_ADMIN_PROJECT_NAME"),
            "domain": {"id": "default"}}}}}),
    )
    .await;
    assert!(token_valid(&auth_url, &admin, &a_token).await);
    creds.delete(&a);
    assert!(
        !token_valid(&auth_url, &admin, &a_token).await,
        "Keystone still validates a token of the deleted credential A: the test proves nothing"
    );
    // A is gone for Keystone too: it refuses a token for it.
    let refused = cloud.try_api_body(
        false,
        "identity",
        "GET",
        &format!("/users/{}/application_credentials/{a}", creds.user),
        None,
    );
    assert!(matches!(refused, Ok(None)), "A still exists: {refused:?}");
    let after_delete = done.load(Ordering::SeqCst);
    wait_done(after_delete + 3).await;
    stop.store(true, Ordering::SeqCst);
    let failures = storm.await.unwrap();

    assert!(
        failures.is_empty(),
        "provisioning failed during the rotation:\n{}\n{}",
        failures.join("\n"),
        driver.log_tail()
    );
    // Every token fetched after the swap was B's, none A's.
    let log = std::fs::read_to_string(&driver.log).unwrap();
    let tokens_after: Vec<&str> = log[swapped_at..]
        .lines()
        .filter(|l| l.contains("got a Keystone token"))
        .collect();
    assert!(!tokens_after.is_empty(), "no token after the swap");
    for l in &tokens_after {
        assert!(
            l.contains(&b) && !l.contains(&a),
            "a token after the swap not with B: {l}"
        );
    }
    let total = done.load(Ordering::SeqCst);
    println!(
        "rotation: {total} volumes created and deleted across the swap (B accepted) and A's \
         deletion, 0 failures; {} tokens after the swap, all B's",
        tokens_after.len()
    );
    // Volumes whose delete succeeded are gone: no leftovers for the guard but failures.
    for id in objects.lock().unwrap().iter() {
        assert_eq!(cloud.volume(id), None, "volume {id} left behind");
    }
    drop(driver);
}
