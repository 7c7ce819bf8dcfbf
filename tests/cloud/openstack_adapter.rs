//! The OpenStack adapter (`cloud::openstack`) against the real Keystone, Cinder and Nova of the
//! test cloud (tests/harness/openstack/ostack): every port call, every auth method, token renewal and
//! the single re-authentication on a real 401, microversion negotiation and its limits, the
//! typed mapping of real 404/409/400/413 answers, capacity from real quotas, the availability
//! zones, and the shared status watcher batching real waits.
//!
//! Runs only with CINDER_CSI_OSTACK_ENV=<state>/env.sh (docs/TESTING.md); prints "skipped: ..."
//! otherwise. The tests share the test nodes, so they run one at a time (`serial()`); whatever a
//! test creates is removed by a guard even when it fails.

use crate::support::openstack_support;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cinder_csi::cloud::openstack::{ApiMetrics, OpenStack, OpenStackOptions, Secret};
use cinder_csi::cloud::{
    CloudError, Copies, CopyFilter, CopyKind, CopyStatus, CopyWait, Health, MigrationPolicy,
    NewBackup, NewSnapshot, NewVolume, Op, PageRequest, Placement, Resource, Servers, Service,
    VolumeFilter, VolumeSource, VolumeStatus, VolumeWait, Volumes, GIB,
};
use cinder_csi::config;
use openstack_support::Cloud;
use serde_json::{json, Value};
use tokio::time::Instant;

/// The tests share two Nova servers, the demo project and its quotas.
async fn serial() -> tokio::sync::MutexGuard<'static, ()> {
    static LOCK: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    LOCK.lock().await
}

fn deadline() -> Instant {
    Instant::now() + openstack_support::CALL_TIMEOUT
}

fn unique(prefix: &str) -> String {
    format!(
        "{prefix}-{}",
        &uuid::Uuid::new_v4().simple().to_string()[..8]
    )
}

/// Adapter options from one of the cloud.conf files the test cloud wrote, through the same
/// config parser and conversion the driver uses.
fn options_from(cloud: &Cloud, conf_var: &str) -> OpenStackOptions {
    let cfg = config::load(&[PathBuf::from(cloud.var(conf_var))]).expect("parse cloud.conf");
    let clouds = cfg
        .resolve_clouds(&[], &config::ProcessEnv)
        .expect("resolve [Global]");
    OpenStackOptions::from_config(clouds[""].clone(), cfg.block_storage)
}

async fn adapter(opts: &OpenStackOptions) -> (Arc<OpenStack>, Arc<ApiMetrics>) {
    let m = Arc::new(ApiMetrics::new());
    let os = OpenStack::new("", opts, m.clone())
        .await
        .expect("build adapter");
    (Arc::new(os), m)
}

fn member_password_opts(
    cloud: &Cloud,
    user: &str,
    password: &str,
    project_id: &str,
) -> OpenStackOptions {
    let mut o = options_from(cloud, "OSTACK_CLOUD_CONF");
    o.global.auth = cinder_csi::cloud::openstack::AuthOptions {
        username: Some(user.into()),
        password: Some(Secret::new(password)),
        user_domain_id: Some("default".into()),
        project_id: Some(project_id.into()),
        ..Default::default()
    };
    o
}

/// Cloud objects a test made, removed (as admin) in reverse order when the test ends.
struct Trash<'a> {
    cloud: &'a Cloud,
    items: Mutex<Vec<Item>>,
}

enum Item {
    Volume(String),
    Backup(String),
    User(String),
    Project(String),
    VolumeType(String),
    Unlock(String),
}

impl<'a> Trash<'a> {
    fn new(cloud: &'a Cloud) -> Self {
        Self {
            cloud,
            items: Mutex::new(Vec::new()),
        }
    }

    fn add(&self, item: Item) {
        self.items.lock().unwrap().push(item);
    }

    fn volume(&self, id: &str) -> String {
        self.add(Item::Volume(id.to_string()));
        id.to_string()
    }

    fn admin(&self, service: &str, method: &str, path: &str, body: Option<Value>) -> Option<Value> {
        self.cloud
            .api_body(true, service, method, path, body.as_ref())
    }

    /// For cleanup: never panics (a Drop that panics while a test fails aborts the run);
    /// a failure is printed and the next object is tried.
    fn quiet(&self, service: &str, method: &str, path: &str, body: Option<Value>) -> Option<Value> {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            self.admin(service, method, path, body)
        }))
        .unwrap_or_else(|_| {
            eprintln!("cleanup: {method} {path} failed (see above)");
            None
        })
    }

    fn remove_volume(&self, id: &str) {
        let Some(v) = self.quiet("block-storage", "GET", &format!("/volumes/{id}"), None) else {
            return;
        };
        for a in v["volume"]["attachments"]
            .as_array()
            .cloned()
            .unwrap_or_default()
        {
            let server = a["server_id"].as_str().unwrap_or_default();
            self.quiet(
                "compute",
                "DELETE",
                &format!("/servers/{server}/os-volume_attachments/{id}"),
                None,
            );
        }
        let end = std::time::Instant::now() + Duration::from_secs(90);
        loop {
            let st = self
                .admin("block-storage", "GET", &format!("/volumes/{id}"), None)
                .map(|v| {
                    v["volume"]["status"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string()
                });
            match st.as_deref() {
                None => return,
                Some(
                    "in-use" | "detaching" | "attaching" | "reserved" | "creating" | "extending"
                    | "retyping" | "backing-up" | "restoring-backup",
                ) if std::time::Instant::now() < end => {
                    std::thread::sleep(Duration::from_millis(300))
                }
                _ => break,
            }
        }
        self.quiet(
            "block-storage",
            "DELETE",
            &format!("/volumes/{id}?cascade=true"),
            None,
        );
    }

    fn remove_backup(&self, id: &str) {
        let end = std::time::Instant::now() + Duration::from_secs(120);
        while let Some(b) = self.quiet("block-storage", "GET", &format!("/backups/{id}"), None) {
            if b["backup"]["status"] != "creating" || std::time::Instant::now() > end {
                break;
            }
            std::thread::sleep(Duration::from_millis(500));
        }
        self.quiet("block-storage", "DELETE", &format!("/backups/{id}"), None);
    }
}

impl Drop for Trash<'_> {
    fn drop(&mut self) {
        let items = std::mem::take(&mut *self.items.lock().unwrap());
        for item in items.into_iter().rev() {
            match item {
                Item::Volume(id) => self.remove_volume(&id),
                Item::Backup(id) => self.remove_backup(&id),
                Item::User(id) => {
                    self.quiet("identity", "DELETE", &format!("/users/{id}"), None);
                }
                Item::Project(id) => {
                    self.quiet("identity", "DELETE", &format!("/projects/{id}"), None);
                }
                Item::VolumeType(id) => {
                    self.quiet("block-storage", "DELETE", &format!("/types/{id}"), None);
                }
                Item::Unlock(server) => {
                    self.quiet(
                        "compute",
                        "POST",
                        &format!("/servers/{server}/action"),
                        Some(json!({"unlock": null})),
                    );
                }
            }
        }
    }
}

fn role_id(trash: &Trash, name: &str) -> String {
    let roles = trash
        .admin("identity", "GET", &format!("/roles?name={name}"), None)
        .expect("list roles");
    roles["roles"][0]["id"]
        .as_str()
        .expect("role exists")
        .to_string()
}

/// A throwaway user with `member` on `project` (if any); removed with the trash.
fn throwaway_user(trash: &Trash, project_id: Option<&str>) -> (String, String, String) {
    let name = unique("csi-adapter");
    let password = uuid::Uuid::new_v4().to_string();
    let user = trash
        .admin(
            "identity",
            "POST",
            "/users",
            Some(json!({"user": {"name": name, "password": password, "domain_id": "default"}})),
        )
        .expect("create user");
    let id = user["user"]["id"].as_str().unwrap().to_string();
    trash.add(Item::User(id.clone()));
    if let Some(project_id) = project_id {
        let member = role_id(trash, "member");
        trash.admin(
            "identity",
            "PUT",
            &format!("/projects/{project_id}/users/{id}/roles/{member}"),
            None,
        );
    }
    (id, name, password)
}

fn throwaway_project(trash: &Trash) -> String {
    let p = trash
        .admin(
            "identity",
            "POST",
            "/projects",
            Some(json!({"project": {"name": unique("csi-adapter"), "domain_id": "default"}})),
        )
        .expect("create project");
    let id = p["project"]["id"].as_str().unwrap().to_string();
    trash.add(Item::Project(id.clone()));
    id
}

/// A project-scoped token and its body, straight from Keystone (for the preset-token and
/// trust tests).
async fn keystone_token(
    cloud: &Cloud,
    user: &str,
    password: &str,
    project: &str,
) -> (String, Value) {
    let body = json!({"auth": {
        "identity": {"methods": ["password"], "password": {"user": {
            "name": user, "domain": {"id": "default"}, "password": password}}},
        "scope": {"project": {"name": project, "domain": {"id": "default"}}}}});
    let resp = plain_client()
        .post(format!(
            "{}/auth/tokens",
            cloud.var("OS_AUTH_URL").trim_end_matches('/')
        ))
        .json(&body)
        .send()
        .await
        .expect("keystone");
    assert_eq!(resp.status().as_u16(), 201);
    let token = resp.headers()["x-subject-token"]
        .to_str()
        .unwrap()
        .to_string();
    (token, resp.json().await.unwrap())
}

fn new_volume(name: &str, size: u64) -> NewVolume {
    NewVolume {
        name: name.into(),
        size_gib: size,
        description: Some("cinder-csi adapter test".into()),
        ..Default::default()
    }
}

async fn create_available(
    os: &OpenStack,
    trash: &Trash<'_>,
    req: NewVolume,
) -> cinder_csi::cloud::Volume {
    let v = os.create_volume(&req).await.expect("create volume");
    trash.volume(&v.id);
    os.wait_volume(&v.id, &VolumeWait::Available, deadline())
        .await
        .expect("volume becomes available")
}

#[tokio::test]
async fn password_and_application_credential_auth() {
    let Some(cloud) = Cloud::from_env("password_and_application_credential_auth") else {
        return;
    };
    let _serial = serial().await;
    for conf in ["OSTACK_CLOUD_CONF", "OSTACK_CLOUD_CONF_APPCRED"] {
        let (os, m) = adapter(&options_from(&cloud, conf)).await;
        os.check().await.unwrap_or_else(|e| panic!("{conf}: {e}"));
        let server = os.get_server(cloud.node(1, "ID")).await.unwrap();
        assert_eq!(server.name, cloud.node(1, "NAME"));
        assert_eq!(
            server.availability_zone.as_deref(),
            Some(cloud.node(1, "AZ"))
        );
        assert_eq!(m.snapshot().get(Op::KeystoneToken).requests, 1, "{conf}");
    }
    // Application credential by name: needs its owner.
    let mut o = options_from(&cloud, "OSTACK_CLOUD_CONF");
    o.global.auth = cinder_csi::cloud::openstack::AuthOptions {
        application_credential_name: Some("csi-test".into()),
        application_credential_secret: Some(Secret::new(cloud.var("OSTACK_APP_CRED_SECRET"))),
        username: Some(cloud.var("OS_USERNAME").into()),
        user_domain_id: Some("default".into()),
        ..Default::default()
    };
    let (os, _) = adapter(&o).await;
    os.check().await.expect("application credential by name");
    // A wrong secret is Unauthorized, and the message names the method but not the secret.
    o.global.auth.application_credential_secret = Some(Secret::new("not-the-secret"));
    let (os, _) = adapter(&o).await;
    let err = os.check().await.unwrap_err();
    assert!(matches!(err, CloudError::Unauthorized { .. }), "{err:?}");
    assert!(
        err.to_string().contains("application credential csi-test"),
        "{err}"
    );
    assert!(!err.to_string().contains("not-the-secret"));
}

#[tokio::test]
async fn preset_token_and_trust_auth() {
    let Some(cloud) = Cloud::from_env("preset_token_and_trust_auth") else {
        return;
    };
    let _serial = serial().await;
    let trash = Trash::new(&cloud);
    let project_id = cloud.var("OSTACK_PROJECT_ID").to_string();
    let (token, body) = keystone_token(
        &cloud,
        cloud.var("OS_USERNAME"),
        cloud.var("OS_PASSWORD"),
        cloud.var("OS_PROJECT_NAME"),
    )
    .await;
    let mut o = options_from(&cloud, "OSTACK_CLOUD_CONF");
    o.global.auth = cinder_csi::cloud::openstack::AuthOptions {
        token: Some(Secret::new(token.clone())),
        project_id: Some(project_id.clone()),
        ..Default::default()
    };
    let (os, _) = adapter(&o).await;
    os.check().await.expect("preset token");

    // Trust: the member delegates `member` on its project to a throwaway trustee.
    let (trustee_id, _, trustee_password) = throwaway_user(&trash, None);
    let trustor_id = body["token"]["user"]["id"].as_str().unwrap();
    let trust: Value = plain_client()
        .post(format!(
            "{}/OS-TRUST/trusts",
            cloud.var("OS_AUTH_URL").trim_end_matches('/')
        ))
        .header("X-Auth-Token", &token)
        .json(
            &json!({"trust": {"trustor_user_id": trustor_id, "trustee_user_id": trustee_id,
            "project_id": project_id, "roles": [{"name": "member"}], "impersonation": false}}),
        )
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let trust_id = trust["trust"]["id"]
        .as_str()
        .expect("trust created")
        .to_string();
    o.global.auth = cinder_csi::cloud::openstack::AuthOptions {
        trust_id: Some(trust_id.clone()),
        trustee_id: Some(trustee_id),
        trustee_password: Some(Secret::new(trustee_password)),
        ..Default::default()
    };
    let (os, _) = adapter(&o).await;
    let page = os
        .list_volumes(
            &VolumeFilter::default(),
            &PageRequest {
                limit: Some(1),
                marker: None,
            },
        )
        .await
        .expect("trust-scoped token lists the trustor's project");
    assert!(page.items.len() <= 1);
    cloud.api_body(
        false,
        "identity",
        "DELETE",
        &format!("/OS-TRUST/trusts/{trust_id}"),
        None,
    );
}

/// A token Cinder refuses (revoked in Keystone) costs exactly one re-authentication and one
/// retry, and the retry succeeds.
#[tokio::test]
async fn a_real_401_costs_one_reauth_and_one_retry() {
    let Some(cloud) = Cloud::from_env("a_real_401_costs_one_reauth_and_one_retry") else {
        return;
    };
    let _serial = serial().await;
    let trash = Trash::new(&cloud);
    let project = cloud.var("OSTACK_PROJECT_ID").to_string();
    let (user_id, name, password) = throwaway_user(&trash, Some(&project));
    let (os, m) = adapter(&member_password_opts(&cloud, &name, &password, &project)).await;
    // First token, used with Nova only, so cinder-api has not cached its validation.
    os.get_server(cloud.node(1, "ID")).await.unwrap();
    // Revoke it: disabling a user revokes every token it holds; enabled again, it may
    // authenticate anew.
    let user = format!("/users/{user_id}");
    trash.admin(
        "identity",
        "PATCH",
        &user,
        Some(json!({"user": {"enabled": false}})),
    );
    // Keystone compares revocation times to the second: the new token must be later.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    trash.admin(
        "identity",
        "PATCH",
        &user,
        Some(json!({"user": {"enabled": true}})),
    );
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let before = m.snapshot();
    os.check().await.expect("retried with a fresh token");
    let d = m.snapshot().since(&before);
    assert_eq!(
        d.get(Op::KeystoneToken).requests,
        1,
        "exactly one re-authentication"
    );
    assert_eq!(
        d.get(Op::VolumeList).requests,
        2,
        "refused once, retried once"
    );
    assert_eq!(d.get(Op::VolumeList).errors, 1);
}

/// Renewal before expiry, with Keystone's real token times: an application credential that
/// expires in 60 s makes Keystone issue tokens that expire with it, so the adapter must renew
/// a fifth of the lifetime early (~12 s before) and no request may meet a 401. Timed from the
/// expiry Keystone returns, not from our clock before the credential was made.
#[tokio::test]
async fn tokens_are_renewed_before_they_expire() {
    let Some(cloud) = Cloud::from_env("tokens_are_renewed_before_they_expire") else {
        return;
    };
    let _serial = serial().await;
    let trash = Trash::new(&cloud);
    let project = cloud.var("OSTACK_PROJECT_ID").to_string();
    let (user_id, name, password) = throwaway_user(&trash, Some(&project));
    let (token, _) = keystone_token(&cloud, &name, &password, cloud.var("OS_PROJECT_NAME")).await;
    let lifetime = chrono::TimeDelta::seconds(60);
    let expires = (chrono::Utc::now() + lifetime)
        .format("%Y-%m-%dT%H:%M:%S")
        .to_string();
    let cred: Value = plain_client()
        .post(format!(
            "{}/users/{user_id}/application_credentials",
            cloud.var("OS_AUTH_URL").trim_end_matches('/')
        ))
        .header("X-Auth-Token", &token)
        .json(&json!({"application_credential": {"name": unique("short"), "expires_at": expires}}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let mut o = options_from(&cloud, "OSTACK_CLOUD_CONF");
    o.global.auth = cinder_csi::cloud::openstack::AuthOptions {
        application_credential_id: cred["application_credential"]["id"]
            .as_str()
            .map(String::from),
        application_credential_secret: cred["application_credential"]["secret"]
            .as_str()
            .map(Secret::new),
        ..Default::default()
    };
    // The expiry Keystone stored (it returns it), to the second: tokens expire with it.
    let stored = cred["application_credential"]["expires_at"]
        .as_str()
        .unwrap_or_else(|| panic!("no expires_at in {cred}"));
    let expiry =
        chrono::NaiveDateTime::parse_from_str(stored.trim_end_matches('Z'), "%Y-%m-%dT%H:%M:%S%.f")
            .unwrap_or_else(|e| panic!("expires_at {stored:?}: {e}"))
            .and_utc();
    let expiry = chrono::Timelike::with_nanosecond(&expiry, 0).unwrap();
    let (os, m) = adapter(&o).await;
    os.check().await.unwrap();
    // The token was issued before now, so it lives at most `left`; the adapter renews it a
    // fifth of its lifetime before `expiry`, i.e. by expiry - left/5 at the latest.
    let left = expiry - chrono::Utc::now();
    os.check().await.unwrap();
    assert_eq!(m.snapshot().get(Op::KeystoneToken).requests, 1, "reused");
    // Check 4 s before expiry: past the renewal point (left/5 > 4 s, with room to spare).
    let check_at = expiry - chrono::TimeDelta::seconds(4);
    assert!(
        left > chrono::TimeDelta::seconds(30),
        "setup took too long: the credential had only {left} left"
    );
    let wait = (check_at - chrono::Utc::now()).to_std().unwrap_or_default();
    tokio::time::sleep(wait).await;
    os.check().await.expect("renewed before expiry");
    let s = m.snapshot();
    assert_eq!(s.get(Op::KeystoneToken).requests, 2, "renewed once");
    assert_eq!(
        s.get(Op::VolumeList).errors,
        0,
        "no request met an expired token"
    );
}

#[tokio::test]
async fn microversions_are_negotiated_and_their_limits_explained() {
    let Some(cloud) = Cloud::from_env("microversions_are_negotiated_and_their_limits_explained")
    else {
        return;
    };
    let _serial = serial().await;
    let trash = Trash::new(&cloud);
    let (os, m) = adapter(&options_from(&cloud, "OSTACK_CLOUD_CONF")).await;
    let v = os.microversions().await.unwrap();
    assert_eq!(
        (v.cinder_max.as_str(), v.cinder.as_str()),
        ("3.71", "3.71"),
        "{v:?}"
    );
    assert_eq!(v.nova, "2.89", "{v:?}");
    assert!(v.nova_max.starts_with("2."), "{v:?}");
    let s = m.snapshot();
    assert_eq!(s.get(Op::CinderVersions).requests, 1);
    assert_eq!(s.get(Op::NovaVersions).requests, 1);

    // ignore-volume-microversion: Cinder 3.0 only; what needs more says so.
    let mut o = options_from(&cloud, "OSTACK_CLOUD_CONF");
    o.block_storage.ignore_volume_microversion = true;
    let (pinned, _) = adapter(&o).await;
    assert_eq!(pinned.microversions().await.unwrap().cinder, "3.0");
    let vol = create_available(&pinned, &trash, new_volume(&unique("mv"), 1)).await;
    match pinned.extend_volume(&vol.id, 2, true).await.unwrap_err() {
        CloudError::Unsupported(m) => assert!(m.contains("3.42"), "{m}"),
        other => panic!("{other:?}"),
    }
    let mut from_backup = new_volume("x", 1);
    from_backup.source = Some(VolumeSource::Backup(uuid::Uuid::new_v4().to_string()));
    match pinned.create_volume(&from_backup).await.unwrap_err() {
        CloudError::Unsupported(m) => assert!(m.contains("3.47"), "{m}"),
        other => panic!("{other:?}"),
    }
    // Offline extend works at 3.0.
    pinned.extend_volume(&vol.id, 2, false).await.unwrap();
    let grown = pinned
        .wait_volume(&vol.id, &VolumeWait::Extended(2), deadline())
        .await
        .unwrap();
    assert_eq!(grown.size_gib, 2);
}

#[tokio::test]
async fn real_errors_map_to_typed_errors() {
    let Some(cloud) = Cloud::from_env("real_errors_map_to_typed_errors") else {
        return;
    };
    let _serial = serial().await;
    let trash = Trash::new(&cloud);
    let (os, _) = adapter(&options_from(&cloud, "OSTACK_CLOUD_CONF")).await;
    let nobody = uuid::Uuid::new_v4().to_string();
    let node = cloud.node(1, "ID").to_string();
    // 404s name what is missing.
    assert_eq!(
        os.get_volume(&nobody).await.unwrap_err(),
        CloudError::not_found(Resource::Volume, &nobody)
    );
    assert_eq!(
        os.get_server(&nobody).await.unwrap_err(),
        CloudError::not_found(Resource::Server, &nobody)
    );
    assert_eq!(
        os.get_copy(CopyKind::Snapshot, &nobody).await.unwrap_err(),
        CloudError::not_found(Resource::Snapshot, &nobody)
    );
    assert_eq!(
        os.get_copy(CopyKind::Backup, &nobody).await.unwrap_err(),
        CloudError::not_found(Resource::Backup, &nobody)
    );
    assert_eq!(
        os.delete_volume(&nobody, false).await.unwrap_err(),
        CloudError::not_found(Resource::Volume, &nobody)
    );
    assert_eq!(
        os.delete_copy(CopyKind::Snapshot, &nobody)
            .await
            .unwrap_err(),
        CloudError::not_found(Resource::Snapshot, &nobody)
    );
    assert_eq!(
        os.get_volume_type("no-such-type").await.unwrap_err(),
        CloudError::not_found(Resource::VolumeType, "no-such-type")
    );
    assert_eq!(
        os.attach_volume(&nobody, &nobody, false).await.unwrap_err(),
        CloudError::not_found(Resource::Server, &nobody)
    );
    let vol = create_available(&os, &trash, new_volume(&unique("err"), 1)).await;
    assert_eq!(
        os.detach_volume(&node, &vol.id).await.unwrap_err(),
        CloudError::not_found(Resource::Attachment, &vol.id),
        "not attached there"
    );
    let mut missing_snap = new_volume("x", 1);
    missing_snap.source = Some(VolumeSource::Snapshot(nobody.clone()));
    assert_eq!(
        os.create_volume(&missing_snap).await.unwrap_err(),
        CloudError::not_found(Resource::Snapshot, &nobody)
    );

    // State conflicts (Cinder 400 "Invalid volume: ...") are Conflict.
    let snap = os
        .create_snapshot(&NewSnapshot {
            name: unique("snap"),
            volume_id: vol.id.clone(),
            ..Default::default()
        })
        .await
        .unwrap();
    os.wait_copy(
        CopyKind::Snapshot,
        &snap.id,
        &CopyWait::Available,
        deadline(),
    )
    .await
    .unwrap();
    let err = os.delete_volume(&vol.id, false).await.unwrap_err();
    assert!(
        matches!(err, CloudError::Conflict { .. }),
        "volume with a snapshot: {err:?}"
    );
    assert!(
        err.to_string().contains("(request req-"),
        "request id kept: {err}"
    );
    os.attach_volume(&node, &vol.id, false).await.unwrap();
    os.wait_volume(&vol.id, &VolumeWait::AttachedTo(node.clone()), deadline())
        .await
        .unwrap();
    let err = os.delete_volume(&vol.id, true).await.unwrap_err();
    assert!(
        matches!(err, CloudError::Conflict { .. }),
        "attached volume: {err:?}"
    );
    let other = create_available(&os, &trash, new_volume(&unique("err"), 1)).await;

    // A real 409: Nova refuses to attach to a server an admin locked.
    let node2 = cloud.node(2, "ID").to_string();
    trash.add(Item::Unlock(node2.clone()));
    trash.admin(
        "compute",
        "POST",
        &format!("/servers/{node2}/action"),
        Some(json!({"lock": null})),
    );
    let err = os
        .attach_volume(&node2, &other.id, false)
        .await
        .unwrap_err();
    assert!(
        matches!(err, CloudError::Conflict { .. }),
        "locked server: {err:?}"
    );
    trash.admin(
        "compute",
        "POST",
        &format!("/servers/{node2}/action"),
        Some(json!({"unlock": null})),
    );

    // A real 413: a project whose quota allows 2 GiB.
    let project = throwaway_project(&trash);
    trash.admin(
        "block-storage",
        "PUT",
        &format!("/os-quota-sets/{project}"),
        Some(json!({"quota_set": {"gigabytes": 2, "volumes": 5}})),
    );
    let (_, name, password) = throwaway_user(&trash, Some(&project));
    let (limited, _) = adapter(&member_password_opts(&cloud, &name, &password, &project)).await;
    let err = limited
        .create_volume(&new_volume(&unique("big"), 3))
        .await
        .unwrap_err();
    assert!(matches!(err, CloudError::OverLimit { .. }), "{err:?}");
    os.detach_volume(&node, &vol.id).await.unwrap();
    os.wait_volume(&vol.id, &VolumeWait::DetachedFrom(node), deadline())
        .await
        .unwrap();
}

#[tokio::test]
async fn volume_lifecycle() {
    let Some(cloud) = Cloud::from_env("volume_lifecycle") else {
        return;
    };
    let _serial = serial().await;
    let trash = Trash::new(&cloud);
    let (os, _) = adapter(&options_from(&cloud, "OSTACK_CLOUD_CONF")).await;
    let node = cloud.node(1, "ID").to_string();
    let tag = unique("run");
    let standard = cloud.var("OSTACK_VOLUME_TYPE").to_string();
    let mut req = new_volume(&unique("life"), 1);
    req.volume_type = Some(standard.clone());
    req.availability_zone = Some("az2".into());
    req.metadata = BTreeMap::from([("cinder.csi.openstack.org/cluster".to_string(), tag.clone())]);
    let vol = create_available(&os, &trash, req.clone()).await;
    assert_eq!(vol.availability_zone, "az2");
    assert_eq!(vol.volume_type.as_deref(), Some(standard.as_str()));
    assert_eq!(
        vol.metadata.get("cinder.csi.openstack.org/cluster"),
        Some(&tag)
    );
    assert_eq!(os.get_volume(&vol.id).await.unwrap().id, vol.id);

    // List by name, by metadata, and page through.
    let by_name = os
        .list_volumes(
            &VolumeFilter {
                name: Some(req.name.clone()),
                ..Default::default()
            },
            &PageRequest::default(),
        )
        .await
        .unwrap();
    assert_eq!(
        by_name
            .items
            .iter()
            .map(|v| v.id.as_str())
            .collect::<Vec<_>>(),
        vec![vol.id.as_str()]
    );
    let mut ids = vec![vol.id.clone()];
    for _ in 0..2 {
        let mut more = req.clone();
        more.name = unique("life");
        more.availability_zone = None;
        let v = os.create_volume(&more).await.unwrap();
        ids.push(trash.volume(&v.id));
    }
    let filter = VolumeFilter {
        metadata: BTreeMap::from([("cinder.csi.openstack.org/cluster".to_string(), tag.clone())]),
        ..Default::default()
    };
    let all = os
        .list_volumes(&filter, &PageRequest::default())
        .await
        .unwrap();
    assert_eq!(all.items.len(), 3);
    assert_eq!(all.next_marker, None);
    let mut seen = Vec::new();
    let mut page = PageRequest {
        limit: Some(2),
        marker: None,
    };
    loop {
        let p = os.list_volumes(&filter, &page).await.unwrap();
        assert!(p.items.len() <= 2);
        seen.extend(p.items.into_iter().map(|v| v.id));
        match p.next_marker {
            Some(m) => page.marker = Some(m),
            None => break,
        }
    }
    seen.sort();
    ids.sort();
    assert_eq!(seen, ids, "pages cover every volume once");
    // A marker Cinder does not know is BadRequest or NotFound (the controller restarts then).
    let stale = PageRequest {
        limit: Some(2),
        marker: Some(uuid::Uuid::new_v4().to_string()),
    };
    let err = os.list_volumes(&filter, &stale).await.unwrap_err();
    assert!(
        matches!(
            err,
            CloudError::BadRequest { .. } | CloudError::NotFound { .. }
        ),
        "{err:?}"
    );

    // Retype without migration (before any snapshot: Cinder 29 leaves a volume with
    // snapshots stuck in `retyping` — "save failed because: snapshots changed").
    let multi = cloud.var("OSTACK_MULTIATTACH_TYPE").to_string();
    os.retype_volume(&vol.id, &multi, MigrationPolicy::Never)
        .await
        .unwrap();
    let end = deadline();
    loop {
        let v = os
            .wait_volume(&vol.id, &VolumeWait::Stable, end)
            .await
            .unwrap();
        if v.volume_type.as_deref() == Some(multi.as_str()) {
            break;
        }
        assert!(Instant::now() < end, "retype never showed");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    assert_eq!(
        os.retype_volume(&vol.id, "no-such-type", MigrationPolicy::OnDemand)
            .await
            .unwrap_err(),
        CloudError::not_found(Resource::VolumeType, "no-such-type")
    );

    // Metadata update (VolumeAttributesClass appendVolumeMetadata): Cinder merges the pairs.
    let before = os.get_volume(&vol.id).await.unwrap().metadata;
    let pairs: std::collections::BTreeMap<String, String> =
        [("billing".to_string(), "team-b".to_string())].into();
    os.update_volume_metadata(&vol.id, &pairs).await.unwrap();
    let after = os.get_volume(&vol.id).await.unwrap().metadata;
    assert_eq!(after.get("billing").map(String::as_str), Some("team-b"));
    for (k, val) in before.iter().filter(|(k, _)| *k != "billing") {
        assert_eq!(after.get(k), Some(val), "{k}");
    }
    let gone = uuid::Uuid::new_v4().to_string();
    assert!(os
        .update_volume_metadata(&gone, &pairs)
        .await
        .unwrap_err()
        .is_not_found());

    // Extend detached, attach, extend attached (3.42), snapshot while attached (force).
    os.extend_volume(&vol.id, 2, false).await.unwrap();
    assert_eq!(
        os.wait_volume(&vol.id, &VolumeWait::Extended(2), deadline())
            .await
            .unwrap()
            .size_gib,
        2
    );
    let att = os.attach_volume(&node, &vol.id, false).await.unwrap();
    assert_eq!(att.volume_id, vol.id);
    let v = os
        .wait_volume(&vol.id, &VolumeWait::AttachedTo(node.clone()), deadline())
        .await
        .unwrap();
    assert_eq!(v.status, VolumeStatus::InUse);
    assert!(v.attached_to(&node).is_some());
    assert!(os
        .list_attachments(&node)
        .await
        .unwrap()
        .iter()
        .any(|a| a.volume_id == vol.id));
    os.extend_volume(&vol.id, 3, true).await.unwrap();
    let v = os
        .wait_volume(&vol.id, &VolumeWait::Extended(3), deadline())
        .await
        .unwrap();
    assert_eq!((v.size_gib, v.status), (3, VolumeStatus::InUse));
    let snap = os
        .create_snapshot(&NewSnapshot {
            name: unique("snap"),
            volume_id: vol.id.clone(),
            force: true,
            metadata: BTreeMap::from([("k".to_string(), "v".to_string())]),
            ..Default::default()
        })
        .await
        .unwrap();
    let snap = os
        .wait_copy(
            CopyKind::Snapshot,
            &snap.id,
            &CopyWait::Available,
            deadline(),
        )
        .await
        .unwrap();
    assert_eq!((snap.status, snap.size_gib), (CopyStatus::Available, 3));
    let listed = os
        .list_copies(
            CopyKind::Snapshot,
            &CopyFilter {
                volume_id: Some(vol.id.clone()),
                ..Default::default()
            },
            &PageRequest::default(),
        )
        .await
        .unwrap();
    assert_eq!(listed.items.len(), 1);
    let listed = os
        .list_copies(
            CopyKind::Snapshot,
            &CopyFilter {
                name: Some(snap.name.clone()),
                ..Default::default()
            },
            &PageRequest::default(),
        )
        .await
        .unwrap();
    assert_eq!(listed.items[0].id, snap.id);
    os.detach_volume(&node, &vol.id).await.unwrap();
    let v = os
        .wait_volume(&vol.id, &VolumeWait::DetachedFrom(node.clone()), deadline())
        .await
        .unwrap();
    assert_eq!(v.status, VolumeStatus::Available);

    // Volumes from the snapshot and from the volume.
    let mut from_snap = new_volume(&unique("fromsnap"), 3);
    from_snap.source = Some(VolumeSource::Snapshot(snap.id.clone()));
    let c = create_available(&os, &trash, from_snap).await;
    assert_eq!(c.snapshot_id.as_deref(), Some(snap.id.as_str()));
    let mut clone = new_volume(&unique("clone"), 3);
    clone.source = Some(VolumeSource::Volume(vol.id.clone()));
    let c = create_available(&os, &trash, clone).await;
    assert_eq!(c.source_volume_id.as_deref(), Some(vol.id.as_str()));

    // Delete with its snapshot (cascade), and wait until it is gone.
    os.delete_volume(&vol.id, true).await.unwrap();
    // A deletion wait ends with NotFound once the volume is gone (the port's contract).
    let gone = os
        .wait_volume(&vol.id, &VolumeWait::Deleted, deadline())
        .await;
    assert_eq!(
        gone.unwrap_err(),
        CloudError::not_found(Resource::Volume, &vol.id)
    );
    assert!(os.get_volume(&vol.id).await.unwrap_err().is_not_found());
    assert!(os
        .get_copy(CopyKind::Snapshot, &snap.id)
        .await
        .unwrap_err()
        .is_not_found());
}

#[tokio::test]
async fn backups_and_restore() {
    let Some(cloud) = Cloud::from_env("backups_and_restore") else {
        return;
    };
    let _serial = serial().await;
    let trash = Trash::new(&cloud);
    let (os, _) = adapter(&options_from(&cloud, "OSTACK_CLOUD_CONF")).await;
    assert!(os.backups_supported().await.unwrap());
    let vol = create_available(&os, &trash, new_volume(&unique("bk"), 1)).await;
    let snap = os
        .create_snapshot(&NewSnapshot {
            name: unique("bksnap"),
            volume_id: vol.id.clone(),
            ..Default::default()
        })
        .await
        .unwrap();
    os.wait_copy(
        CopyKind::Snapshot,
        &snap.id,
        &CopyWait::Available,
        deadline(),
    )
    .await
    .unwrap();
    let backup = os
        .create_backup(&NewBackup {
            name: unique("backup"),
            volume_id: vol.id.clone(),
            snapshot_id: Some(snap.id.clone()),
            metadata: BTreeMap::from([(
                "cinder.csi.openstack.org/cluster".to_string(),
                "t".to_string(),
            )]),
            ..Default::default()
        })
        .await
        .unwrap();
    trash.add(Item::Backup(backup.id.clone()));
    let b = os
        .wait_copy(
            CopyKind::Backup,
            &backup.id,
            &CopyWait::Available,
            deadline(),
        )
        .await
        .unwrap();
    assert_eq!(b.status, CopyStatus::Available);
    assert_eq!(b.snapshot_id.as_deref(), Some(snap.id.as_str()));
    assert_eq!(
        b.metadata
            .get("cinder.csi.openstack.org/cluster")
            .map(String::as_str),
        Some("t")
    );
    let by_volume = os
        .list_copies(
            CopyKind::Backup,
            &CopyFilter {
                volume_id: Some(vol.id.clone()),
                ..Default::default()
            },
            &PageRequest::default(),
        )
        .await
        .unwrap();
    assert_eq!(
        by_volume
            .items
            .iter()
            .map(|b| b.id.as_str())
            .collect::<Vec<_>>(),
        vec![backup.id.as_str()]
    );
    let by_name = os
        .list_copies(
            CopyKind::Backup,
            &CopyFilter {
                name: Some(b.name.clone()),
                ..Default::default()
            },
            &PageRequest::default(),
        )
        .await
        .unwrap();
    assert_eq!(by_name.items.len(), 1);

    let mut restore = new_volume(&unique("restored"), 1);
    restore.source = Some(VolumeSource::Backup(backup.id.clone()));
    let restored = create_available(&os, &trash, restore).await;
    assert_eq!(restored.size_gib, 1);

    // Deletion waits end with NotFound once the object is gone (the port's contract).
    os.delete_copy(CopyKind::Snapshot, &snap.id).await.unwrap();
    let gone = os
        .wait_copy(CopyKind::Snapshot, &snap.id, &CopyWait::Deleted, deadline())
        .await;
    assert_eq!(
        gone.unwrap_err(),
        CloudError::not_found(Resource::Snapshot, &snap.id)
    );
    os.delete_copy(CopyKind::Backup, &backup.id).await.unwrap();
    let gone = os
        .wait_copy(CopyKind::Backup, &backup.id, &CopyWait::Deleted, deadline())
        .await;
    assert_eq!(
        gone.unwrap_err(),
        CloudError::not_found(Resource::Backup, &backup.id)
    );
    assert!(os
        .get_copy(CopyKind::Backup, &backup.id)
        .await
        .unwrap_err()
        .is_not_found());
}

#[tokio::test]
async fn multiattach_through_nova() {
    let Some(cloud) = Cloud::from_env("multiattach_through_nova") else {
        return;
    };
    let _serial = serial().await;
    let trash = Trash::new(&cloud);
    let (os, _) = adapter(&options_from(&cloud, "OSTACK_CLOUD_CONF")).await;
    let multi = cloud.var("OSTACK_MULTIATTACH_TYPE").to_string();
    let t = os.get_volume_type(&multi).await.unwrap();
    assert!(t.multiattach);
    assert_eq!(
        os.get_volume_type(&t.id).await.unwrap().name,
        multi,
        "by id too"
    );
    assert!(
        !os.get_volume_type(cloud.var("OSTACK_VOLUME_TYPE"))
            .await
            .unwrap()
            .multiattach
    );
    let mut req = new_volume(&unique("shared"), 1);
    req.volume_type = Some(multi);
    let vol = create_available(&os, &trash, req).await;
    assert!(vol.multiattach);
    let (n1, n2) = (
        cloud.node(1, "ID").to_string(),
        cloud.node(2, "ID").to_string(),
    );
    for n in [&n1, &n2] {
        os.attach_volume(n, &vol.id, true).await.unwrap();
        os.wait_volume(&vol.id, &VolumeWait::AttachedTo(n.clone()), deadline())
            .await
            .unwrap();
    }
    let v = os.get_volume(&vol.id).await.unwrap();
    assert_eq!(v.attachments.len(), 2);
    for n in [&n1, &n2] {
        os.detach_volume(n, &vol.id).await.unwrap();
        os.wait_volume(&vol.id, &VolumeWait::DetachedFrom(n.clone()), deadline())
            .await
            .unwrap();
    }
    assert_eq!(
        os.get_volume(&vol.id).await.unwrap().status,
        VolumeStatus::Available
    );
}

#[tokio::test]
async fn capacity_from_real_quotas() {
    let Some(cloud) = Cloud::from_env("capacity_from_real_quotas") else {
        return;
    };
    let _serial = serial().await;
    let trash = Trash::new(&cloud);
    let (os, _) = adapter(&options_from(&cloud, "OSTACK_CLOUD_CONF")).await;
    let c = os.capacity(None, None).await.unwrap();
    assert_eq!(
        c.available_bytes, None,
        "the demo project's quota is lifted"
    );
    let project = throwaway_project(&trash);
    let standard = cloud.var("OSTACK_VOLUME_TYPE");
    trash.admin(
        "block-storage",
        "PUT",
        &format!("/os-quota-sets/{project}"),
        Some(
            json!({"quota_set": {"gigabytes": 5, "per_volume_gigabytes": 4,
            format!("gigabytes_{standard}"): 3}}),
        ),
    );
    let (_, name, password) = throwaway_user(&trash, Some(&project));
    let (limited, _) = adapter(&member_password_opts(&cloud, &name, &password, &project)).await;
    let c = limited.capacity(None, None).await.unwrap();
    assert_eq!(
        (c.available_bytes, c.maximum_volume_bytes),
        (Some(5 * GIB), Some(4 * GIB))
    );
    let c = limited
        .capacity(Some("nova"), Some(standard))
        .await
        .unwrap();
    assert_eq!(c.available_bytes, Some(3 * GIB));
    let mut req = new_volume(&unique("cap"), 1);
    req.volume_type = Some(standard.into());
    create_available(&limited, &trash, req).await;
    let c = limited.capacity(None, Some(standard)).await.unwrap();
    assert_eq!(c.available_bytes, Some(2 * GIB));
    assert_eq!(
        limited.capacity(None, None).await.unwrap().available_bytes,
        Some(4 * GIB)
    );
}

#[tokio::test]
async fn availability_zones_of_the_real_cinder() {
    let Some(cloud) = Cloud::from_env("availability_zones_of_the_real_cinder") else {
        return;
    };
    let _serial = serial().await;
    let trash = Trash::new(&cloud);
    let mut expected: Vec<String> = cloud
        .var("OSTACK_AVAILABILITY_ZONES")
        .split_whitespace()
        .map(str::to_string)
        .collect();
    expected.sort();
    assert_eq!(expected, ["az2", "nova"], "the test cloud's two backends");
    let (os, m) = adapter(&options_from(&cloud, "OSTACK_CLOUD_CONF")).await;
    assert_eq!(os.availability_zones().await.unwrap(), expected);
    assert_eq!(m.snapshot().get(Op::AvailabilityZoneList).requests, 1);
    assert_eq!(m.snapshot().get(Op::AvailabilityZoneList).errors, 0);
    // A plain member of another project may list them too (Cinder's default policy): the
    // controller's credentials need no extra role for the topology mapping.
    let project = throwaway_project(&trash);
    let (_, name, password) = throwaway_user(&trash, Some(&project));
    let (member, _) = adapter(&member_password_opts(&cloud, &name, &password, &project)).await;
    assert_eq!(member.availability_zones().await.unwrap(), expected);
}

#[tokio::test]
async fn a_failed_create_ends_the_wait_with_cinders_reason() {
    let Some(cloud) = Cloud::from_env("a_failed_create_ends_the_wait_with_cinders_reason") else {
        return;
    };
    let _serial = serial().await;
    let trash = Trash::new(&cloud);
    let name = unique("nowhere");
    let t = trash
        .admin(
            "block-storage",
            "POST",
            "/types",
            Some(json!({"volume_type": {"name": name, "extra_specs": {"volume_backend_name": "no-such-backend"}}})),
        )
        .expect("create type");
    trash.add(Item::VolumeType(
        t["volume_type"]["id"].as_str().unwrap().to_string(),
    ));
    let (os, _) = adapter(&options_from(&cloud, "OSTACK_CLOUD_CONF")).await;
    let mut req = new_volume(&unique("doomed"), 1);
    req.volume_type = Some(name);
    let v = os.create_volume(&req).await.unwrap();
    trash.volume(&v.id);
    let started = Instant::now();
    match os
        .wait_volume(&v.id, &VolumeWait::Available, deadline())
        .await
        .unwrap_err()
    {
        CloudError::ErrorState { status, reason, .. } => {
            assert_eq!(status, "error");
            let reason = reason.expect("Cinder's user message");
            assert!(reason.to_lowercase().contains("backend"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "error ends the wait at once"
    );
}

/// Concurrent waits share the watcher's rounds: one filtered list per round, no GET per volume.
#[tokio::test]
async fn concurrent_waits_share_one_list_per_round() {
    let Some(cloud) = Cloud::from_env("concurrent_waits_share_one_list_per_round") else {
        return;
    };
    let _serial = serial().await;
    let trash = Trash::new(&cloud);
    let (os, m) = adapter(&options_from(&cloud, "OSTACK_CLOUD_CONF")).await;
    os.check().await.unwrap();
    let before = m.snapshot();
    let creates = (0..8).map(|_| {
        let os = os.clone();
        tokio::spawn(async move {
            let v = os.create_volume(&new_volume(&unique("batch"), 1)).await?;
            let waited = os
                .wait_volume(&v.id, &VolumeWait::Available, deadline())
                .await;
            Ok::<_, CloudError>((v.id, waited))
        })
    });
    let mut failures = Vec::new();
    for r in futures::future::join_all(creates).await {
        let (id, waited) = r.unwrap().expect("create");
        trash.volume(&id);
        if let Err(e) = waited {
            failures.push(format!("{id}: {e}"));
        }
    }
    assert!(failures.is_empty(), "{failures:?}");
    let d = m.snapshot().since(&before);
    let rounds = d.get(Op::VolumeWatch).requests;
    println!(
        "8 creates: {} POST, {} watcher lists, {} GETs, cinder total {}",
        d.get(Op::VolumeCreate).requests,
        rounds,
        d.get(Op::VolumeGet).requests,
        d.requests(Service::Cinder)
    );
    assert_eq!(d.get(Op::VolumeCreate).requests, 8);
    // Rounds list; only a round left with a single volume uses a GET. Polling per volume
    // would have cost at least one GET per volume and round.
    assert!(d.get(Op::VolumeGet).requests <= 2, "{d:?}");
    assert!((1..=8).contains(&rounds), "{rounds} rounds");
    assert!(d.requests(Service::Cinder) <= 8 + 8, "{d:?}");
    assert_eq!(d.requests(Service::Keystone), 0);
}

/// IDs that cannot be Cinder or Nova IDs never become URL paths: DeleteSnapshot of
/// `../volumes/<id>` must not delete the volume, DeleteVolume of `<id>?cascade=true` must not
/// delete it with its snapshots, GetVolume of `detail` is NotFound (not the volume list).
/// Each is NotFound without a single request, and everything is still there afterwards.
#[tokio::test]
async fn ids_that_cannot_be_ids_touch_nothing() {
    let Some(cloud) = Cloud::from_env("ids_that_cannot_be_ids_touch_nothing") else {
        return;
    };
    let _serial = serial().await;
    let trash = Trash::new(&cloud);
    let (os, m) = adapter(&options_from(&cloud, "OSTACK_CLOUD_CONF")).await;
    let vol = create_available(&os, &trash, new_volume(&unique("ids"), 1)).await;
    let snap = os
        .create_snapshot(&NewSnapshot {
            name: unique("snap"),
            volume_id: vol.id.clone(),
            ..Default::default()
        })
        .await
        .unwrap();
    os.wait_copy(
        CopyKind::Snapshot,
        &snap.id,
        &CopyWait::Available,
        deadline(),
    )
    .await
    .unwrap();
    let before = m.snapshot();
    let escape = format!("../volumes/{}", vol.id);
    let cascade = format!("{}?cascade=true", vol.id);
    let node = cloud.node(1, "ID");
    let results = [
        (
            "delete_snapshot ../volumes/<id>",
            os.delete_copy(CopyKind::Snapshot, &escape).await,
        ),
        (
            "delete_volume <id>?cascade=true",
            os.delete_volume(&cascade, false).await,
        ),
        (
            "delete_volume <id>/",
            os.delete_volume(&format!("{}/", vol.id), true).await,
        ),
        (
            "delete_backup ../volumes/<id>",
            os.delete_copy(CopyKind::Backup, &escape).await,
        ),
        (
            "get_volume detail",
            os.get_volume("detail").await.map(|_| ()),
        ),
        (
            "get_snapshot ../volumes/<id>",
            os.get_copy(CopyKind::Snapshot, &escape).await.map(|_| ()),
        ),
        (
            "get_server <node>/os-volume_attachments",
            os.get_server(&format!("{node}/os-volume_attachments"))
                .await
                .map(|_| ()),
        ),
        (
            "detach_volume <node> ../<id>",
            os.detach_volume(node, &format!("../{}", vol.id)).await,
        ),
    ];
    for (what, r) in results {
        assert!(
            matches!(r, Err(CloudError::NotFound { .. })),
            "{what}: {r:?}"
        );
    }
    let d = m.snapshot().since(&before);
    assert_eq!(
        (d.requests(Service::Cinder), d.requests(Service::Nova)),
        (0, 0),
        "no request reached the cloud"
    );
    let v = os.get_volume(&vol.id).await.unwrap();
    assert_eq!(v.status, VolumeStatus::Available);
    let s = os.get_copy(CopyKind::Snapshot, &snap.id).await.unwrap();
    assert_eq!(s.status, CopyStatus::Available);
}

/// ControllerUnpublishVolume while Nova is still attaching (a publish that ran out of time):
/// right after Nova's POST the volume is `reserved`/`attaching` and Cinder lists no attachment
/// yet. The unpublish must wait for the attach to land and detach it, not answer OK and leave
/// the disk on the node with no VolumeAttachment to ever remove it.
#[tokio::test]
async fn unpublish_during_a_real_attach_in_flight_detaches() {
    use cinder_csi::driver::controller::{Controller, ControllerOptions, Unpublish};

    let Some(cloud) = Cloud::from_env("unpublish_during_a_real_attach_in_flight_detaches") else {
        return;
    };
    let _serial = serial().await;
    let trash = Trash::new(&cloud);
    let (os, _) = adapter(&options_from(&cloud, "OSTACK_CLOUD_CONF")).await;
    let vol = create_available(&os, &trash, new_volume(&unique("inflight"), 1)).await;
    let node = cloud.node(1, "ID").to_string();
    let ctl = Controller::new(
        cinder_csi::cloud::Clouds::new([cinder_csi::cloud::Cloud::new("", os.clone())]),
        ControllerOptions::default(),
    );
    os.attach_volume(&node, &vol.id, false).await.unwrap();
    let seen = os.get_volume(&vol.id).await.unwrap();
    eprintln!(
        "right after Nova's POST: status {}, attachments {}",
        seen.status,
        seen.attachments.len()
    );
    ctl.unpublish_volume(Unpublish {
        volume_id: vol.id.clone(),
        node_id: Some(node.clone()),
        cloud: String::new(),
        deadline: deadline(),
    })
    .await
    .expect("unpublish");
    // Whatever Nova was doing has finished by now; nothing may be left attached.
    let v = os
        .wait_volume(&vol.id, &VolumeWait::Stable, deadline())
        .await
        .unwrap();
    assert_eq!(v.status, VolumeStatus::Available, "{v:?}");
    assert!(v.attachments.is_empty(), "{v:?}");
    let on_node = os.list_attachments(&node).await.unwrap();
    assert!(
        on_node.iter().all(|a| a.volume_id != vol.id),
        "Nova still has it: {on_node:?}"
    );
}

/// A client of the test's own (rustls needs the driver's crypto provider installed first).
fn plain_client() -> reqwest::Client {
    cinder_csi::net::tls::install_provider();
    reqwest::Client::new()
}
