//! For tests/cloud/openstack_faults.rs: the CSI calls of the fault matrix, how their answers are
//! judged (retryable or not), the sidecar-style retry, and the leak check that lists the cloud.
#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use cinder_csi::server::csi::pb;
use tonic::Code;

use crate::support::openstack_support::requests::mount_cap;
use crate::support::openstack_support::{Cloud, Controller};

pub mod api;
pub use api::Api;

pub const GIB: i64 = 1 << 30;

/// One controller RPC of the matrix (ids and names as the sidecars would send them).
#[derive(Debug, Clone)]
pub enum Call {
    CreateVolume { name: String, volume_type: String },
    DeleteVolume { id: String },
    Publish { id: String, node: String },
    Unpublish { id: String, node: String },
    CreateSnapshot { name: String, source: String },
    DeleteSnapshot { id: String },
    Expand { id: String, gib: i64 },
    Modify { id: String, volume_type: String },
}

impl Call {
    pub fn rpc(&self) -> &'static str {
        match self {
            Call::CreateVolume { .. } => "CreateVolume",
            Call::DeleteVolume { .. } => "DeleteVolume",
            Call::Publish { .. } => "ControllerPublishVolume",
            Call::Unpublish { .. } => "ControllerUnpublishVolume",
            Call::CreateSnapshot { .. } => "CreateSnapshot",
            Call::DeleteSnapshot { .. } => "DeleteSnapshot",
            Call::Expand { .. } => "ControllerExpandVolume",
            Call::Modify { .. } => "ControllerModifyVolume",
        }
    }
}

fn with_timeout<T>(msg: T, timeout: Duration) -> tonic::Request<T> {
    let mut r = tonic::Request::new(msg);
    r.set_timeout(timeout);
    r
}

/// What a call returned: the id it made (CreateVolume, CreateSnapshot) or the gRPC status.
/// A call the driver did not answer within `timeout` (+2 s) is DeadlineExceeded, as the
/// sidecar's own context would say.
pub async fn invoke(
    ctl: &mut Controller,
    call: &Call,
    timeout: Duration,
) -> Result<String, tonic::Status> {
    let t = timeout;
    let fut = async {
        match call {
            Call::CreateVolume { name, volume_type } => ctl
                .create_volume(with_timeout(
                    pb::CreateVolumeRequest {
                        name: name.clone(),
                        capacity_range: Some(pb::CapacityRange {
                            required_bytes: GIB,
                            limit_bytes: 0,
                        }),
                        volume_capabilities: vec![mount_cap()],
                        parameters: [("type".to_string(), volume_type.clone())].into(),
                        ..Default::default()
                    },
                    t,
                ))
                .await
                .map(|r| {
                    r.into_inner()
                        .volume
                        .map(|v| v.volume_id)
                        .unwrap_or_default()
                }),
            Call::DeleteVolume { id } => ctl
                .delete_volume(with_timeout(
                    pb::DeleteVolumeRequest {
                        volume_id: id.clone(),
                        ..Default::default()
                    },
                    t,
                ))
                .await
                .map(|_| id.clone()),
            Call::Publish { id, node } => ctl
                .controller_publish_volume(with_timeout(
                    pb::ControllerPublishVolumeRequest {
                        volume_id: id.clone(),
                        node_id: node.clone(),
                        volume_capability: Some(mount_cap()),
                        ..Default::default()
                    },
                    t,
                ))
                .await
                .map(|_| id.clone()),
            Call::Unpublish { id, node } => ctl
                .controller_unpublish_volume(with_timeout(
                    pb::ControllerUnpublishVolumeRequest {
                        volume_id: id.clone(),
                        node_id: node.clone(),
                        ..Default::default()
                    },
                    t,
                ))
                .await
                .map(|_| id.clone()),
            Call::CreateSnapshot { name, source } => ctl
                .create_snapshot(with_timeout(
                    pb::CreateSnapshotRequest {
                        name: name.clone(),
                        source_volume_id: source.clone(),
                        ..Default::default()
                    },
                    t,
                ))
                .await
                .map(|r| {
                    r.into_inner()
                        .snapshot
                        .map(|s| s.snapshot_id)
                        .unwrap_or_default()
                }),
            Call::DeleteSnapshot { id } => ctl
                .delete_snapshot(with_timeout(
                    pb::DeleteSnapshotRequest {
                        snapshot_id: id.clone(),
                        ..Default::default()
                    },
                    t,
                ))
                .await
                .map(|_| id.clone()),
            Call::Expand { id, gib } => ctl
                .controller_expand_volume(with_timeout(
                    pb::ControllerExpandVolumeRequest {
                        volume_id: id.clone(),
                        capacity_range: Some(pb::CapacityRange {
                            required_bytes: gib * GIB,
                            limit_bytes: 0,
                        }),
                        volume_capability: Some(mount_cap()),
                        ..Default::default()
                    },
                    t,
                ))
                .await
                .map(|_| id.clone()),
            Call::Modify { id, volume_type } => ctl
                .controller_modify_volume(with_timeout(
                    pb::ControllerModifyVolumeRequest {
                        volume_id: id.clone(),
                        mutable_parameters: [("type".to_string(), volume_type.clone())].into(),
                        ..Default::default()
                    },
                    t,
                ))
                .await
                .map(|_| id.clone()),
        }
    };
    match tokio::time::timeout(timeout + Duration::from_secs(2), fut).await {
        Ok(r) => r,
        Err(_) => Err(tonic::Status::deadline_exceeded("no answer (client side)")),
    }
}

/// Codes a transient fault may produce: the sidecars retry them. tonic's server answers
/// Cancelled "Timeout expired" when the request's deadline passes (gRPC-Go would say
/// DeadlineExceeded); the sidecar's own deadline fires at the same moment.
pub fn retryable(s: &tonic::Status) -> bool {
    matches!(
        s.code(),
        Code::Unavailable | Code::Aborted | Code::DeadlineExceeded
    ) || (s.code() == Code::Cancelled && s.message().contains("Timeout expired"))
}

/// The sidecars' retry of one call (same name, same ids): until it succeeds, at most
/// `bound`, backing off 0.5 s → 4 s. Returns the result and the number of attempts.
pub async fn retry(
    ctl: &mut Controller,
    call: &Call,
    bound: Duration,
) -> (Result<String, tonic::Status>, u32) {
    let end = Instant::now() + bound;
    let mut pause = Duration::from_millis(500);
    let mut attempts = 0;
    loop {
        attempts += 1;
        let r = invoke(ctl, call, Duration::from_secs(60)).await;
        match &r {
            Err(s) if retryable(s) && Instant::now() < end => {
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_secs(4));
            }
            _ => return (r, attempts),
        }
    }
}

/// What the test believes exists on the cloud (its own objects, all named `prefix...`).
#[derive(Debug, Default, Clone)]
pub struct Expected {
    /// name → id
    pub volumes: BTreeMap<String, String>,
    pub snapshots: BTreeMap<String, String>,
    /// volume id → servers it is attached to
    pub attached: BTreeMap<String, BTreeSet<String>>,
}

async fn list(api: &Api, service: &str, path: &str, key: &str) -> Vec<serde_json::Value> {
    api.get(service, path)
        .await
        .and_then(|v| v[key].as_array().cloned())
        .unwrap_or_default()
}

/// Compare the cloud with `want`: every volume, snapshot and backup named `prefix*` on the
/// cloud is expected (no duplicate, no orphan, no temporary snapshot of a backup left), every
/// expected one is there, attachments match on both Cinder's and Nova's side, and the
/// driver's ListVolumes knows every expected volume. Returns the differences (empty: none).
pub async fn leaks(
    api: &Api,
    ctl: &mut Controller,
    prefix: &str,
    want: &Expected,
    servers: &[String],
) -> Vec<String> {
    let mut out = vec![];
    let named = |items: Vec<serde_json::Value>| -> Vec<(String, String, serde_json::Value)> {
        items
            .into_iter()
            .filter(|v| v["name"].as_str().is_some_and(|n| n.starts_with(prefix)))
            .map(|v| {
                (
                    v["name"].as_str().unwrap().to_string(),
                    v["id"].as_str().unwrap_or_default().to_string(),
                    v,
                )
            })
            .collect()
    };
    let vols = named(list(api, "block-storage", "/volumes/detail", "volumes").await);
    let snaps = named(list(api, "block-storage", "/snapshots/detail", "snapshots").await);
    let backups = named(list(api, "block-storage", "/backups/detail", "backups").await);
    for (what, have, want) in [
        ("volume", &vols, &want.volumes),
        ("snapshot", &snaps, &want.snapshots),
    ] {
        let seen: Vec<(String, String)> = have
            .iter()
            .map(|(n, i, _)| (n.clone(), i.clone()))
            .collect();
        for (n, i) in &seen {
            if want.get(n) != Some(i) {
                out.push(format!(
                    "{what} {n} ({i}) on the cloud, not known to the test"
                ));
            }
        }
        for (n, i) in want {
            if !seen.iter().any(|(sn, si)| sn == n && si == i) {
                out.push(format!("{what} {n} ({i}) expected, missing on the cloud"));
            }
        }
    }
    for (n, i, _) in &backups {
        out.push(format!("backup {n} ({i}) left on the cloud"));
    }
    for (_, id, v) in &vols {
        let have: BTreeSet<String> = v["attachments"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|a| a["server_id"].as_str().map(str::to_string))
            .collect();
        let expect = want.attached.get(id).cloned().unwrap_or_default();
        if have != expect {
            out.push(format!(
                "volume {id}: Cinder attachments {have:?}, expected {expect:?}"
            ));
        }
        let n_att = v["attachments"].as_array().map_or(0, |a| a.len());
        if n_att > expect.len() {
            out.push(format!("volume {id}: {n_att} attachments (double attach)"));
        }
    }
    let ours: BTreeSet<&String> = want.volumes.values().collect();
    for server in servers {
        let nova = list(
            api,
            "compute",
            &format!("/servers/{server}/os-volume_attachments"),
            "volumeAttachments",
        )
        .await;
        let have: BTreeSet<String> = nova
            .iter()
            .filter_map(|a| a["volumeId"].as_str().map(str::to_string))
            .filter(|v| ours.contains(v) || vols.iter().any(|(_, i, _)| i == v))
            .collect();
        let expect: BTreeSet<String> = want
            .attached
            .iter()
            .filter(|(_, s)| s.contains(server))
            .map(|(v, _)| v.clone())
            .collect();
        if have != expect {
            out.push(format!(
                "Nova attachments of {server}: {have:?}, expected {expect:?}"
            ));
        }
    }
    let mut listed = BTreeSet::new();
    let mut token = String::new();
    loop {
        let r = ctl
            .list_volumes(pb::ListVolumesRequest {
                max_entries: 100,
                starting_token: token.clone(),
            })
            .await;
        let Ok(r) = r else {
            out.push(format!("ListVolumes: {:?}", r.err()));
            break;
        };
        let r = r.into_inner();
        listed.extend(
            r.entries
                .into_iter()
                .filter_map(|e| e.volume.map(|v| v.volume_id)),
        );
        if r.next_token.is_empty() {
            break;
        }
        token = r.next_token;
    }
    for id in want.volumes.values() {
        if !listed.contains(id) {
            out.push(format!("volume {id}: not in the driver's ListVolumes"));
        }
    }
    out
}

/// On drop, deletes whatever is left on the cloud named `prefix*` (backups, snapshots,
/// volumes after detaching them): the objects a failed case leaked that the test never knew.
pub struct Sweep<'a> {
    pub cloud: &'a Cloud,
    pub prefix: String,
}

impl Drop for Sweep<'_> {
    fn drop(&mut self) {
        let c = self.cloud;
        let named = |path: &str, key: &str| -> Vec<serde_json::Value> {
            c.try_api_body(false, "block-storage", "GET", path, None)
                .ok()
                .flatten()
                .and_then(|v| v[key].as_array().cloned())
                .unwrap_or_default()
                .into_iter()
                .filter(|v| {
                    v["name"]
                        .as_str()
                        .is_some_and(|n| n.starts_with(&self.prefix))
                })
                .collect()
        };
        let del = |path: String, svc: &str| {
            if let Err(e) = c.try_api_body(true, svc, "DELETE", &path, None) {
                crate::support::openstack_support::log_cleanup(&format!("DELETE {path}: {e}"));
            }
        };
        let gone = |path: String| {
            let end = Instant::now() + Duration::from_secs(60);
            while Instant::now() < end
                && !matches!(
                    c.try_api_body(true, "block-storage", "GET", &path, None),
                    Ok(None)
                )
            {
                std::thread::sleep(Duration::from_millis(300));
            }
        };
        for b in named("/backups/detail", "backups") {
            let id = b["id"].as_str().unwrap_or_default();
            del(format!("/backups/{id}"), "block-storage");
            gone(format!("/backups/{id}"));
        }
        for s in named("/snapshots/detail", "snapshots") {
            let id = s["id"].as_str().unwrap_or_default();
            del(format!("/snapshots/{id}"), "block-storage");
            gone(format!("/snapshots/{id}"));
        }
        for v in named("/volumes/detail", "volumes") {
            let id = v["id"].as_str().unwrap_or_default().to_string();
            for a in v["attachments"].as_array().into_iter().flatten() {
                let server = a["server_id"].as_str().unwrap_or_default();
                del(
                    format!("/servers/{server}/os-volume_attachments/{id}"),
                    "compute",
                );
            }
            let end = Instant::now() + Duration::from_secs(60);
            while Instant::now() < end
                && !matches!(
                    c.try_volume_status(&id).as_deref(),
                    Ok("available" | "error" | "deleted")
                )
            {
                std::thread::sleep(Duration::from_millis(300));
            }
            del(format!("/volumes/{id}"), "block-storage");
            gone(format!("/volumes/{id}"));
        }
    }
}
