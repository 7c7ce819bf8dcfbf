//! DeleteSnapshot right after CreateSnapshot against the real test cloud, through the real
//! `cinder-csi` binary: Cinder still has the snapshot `creating` (and a backup `creating`),
//! refuses a delete with 400, and the driver must wait it out within the RPC deadline and
//! delete it, leaving nothing behind (issue 13: this was FailedPrecondition).
//!
//! Runs only with CINDER_CSI_OSTACK_ENV=<state>/env.sh; prints "skipped: ..." otherwise.

use crate::support::openstack_support;
use crate::support::scratch;

use std::collections::HashMap;
use std::time::Duration;

use cinder_csi::server::csi::pb;
use openstack_support::{call, log_cleanup, Cloud, CloudObjects, Controller, Driver};

const GIB: i64 = 1 << 30;

fn with_timeout<T>(msg: T, secs: u64) -> tonic::Request<T> {
    let mut r = tonic::Request::new(msg);
    r.set_timeout(Duration::from_secs(secs));
    r
}

/// Deletes backups a failed run left (the shared guard knows volumes and snapshots only).
struct Backups<'a>(&'a Cloud, Vec<String>);

impl Drop for Backups<'_> {
    fn drop(&mut self) {
        for b in &self.1 {
            let path = format!("/backups/{b}");
            let deadline = std::time::Instant::now() + Duration::from_secs(120);
            while let Ok(Some(v)) = self
                .0
                .try_api_body(true, "block-storage", "GET", &path, None)
            {
                let status = v["backup"]["status"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                if !matches!(status.as_str(), "creating" | "restoring" | "deleting")
                    || std::time::Instant::now() > deadline
                {
                    if let Err(e) =
                        self.0
                            .try_api_body(true, "block-storage", "DELETE", &path, None)
                    {
                        log_cleanup(&format!("DELETE {path}: {e}"));
                    }
                    break;
                }
                std::thread::sleep(Duration::from_millis(500));
            }
        }
    }
}

async fn create_snapshot(
    ctl: &mut Controller,
    name: &str,
    volume: &str,
    params: &[(&str, &str)],
) -> pb::Snapshot {
    call(
        "CreateSnapshot",
        ctl.create_snapshot(with_timeout(
            pb::CreateSnapshotRequest {
                source_volume_id: volume.into(),
                name: name.into(),
                parameters: params
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect::<HashMap<_, _>>(),
                ..Default::default()
            },
            120,
        )),
    )
    .await
    .snapshot
    .expect("CreateSnapshot returned no snapshot")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_snapshot_right_after_create_against_real_openstack() {
    let Some(cloud) = Cloud::from_env("openstack_snapshot_delete") else {
        return;
    };
    let (tmp, kubelet) = scratch::with_kubelet("cinder-csi-ostack-snapdel");
    let mut objects = CloudObjects::new(&cloud);
    let mut backups = Backups(&cloud, vec![]);
    let mut driver = Driver::start(&cloud, 1, tmp.path(), &kubelet);
    let mut ctl = Controller::new(driver.connect().await);
    let run = uuid::Uuid::new_v4();

    let vol = call(
        "CreateVolume",
        ctl.create_volume(with_timeout(
            pb::CreateVolumeRequest {
                name: format!("ctlvalid-snapdel-{run}"),
                capacity_range: Some(pb::CapacityRange {
                    required_bytes: GIB,
                    limit_bytes: 0,
                }),
                volume_capabilities: vec![pb::VolumeCapability {
                    access_type: Some(pb::volume_capability::AccessType::Block(
                        pb::volume_capability::BlockVolume {},
                    )),
                    access_mode: Some(pb::volume_capability::AccessMode {
                        mode: pb::volume_capability::access_mode::Mode::SingleNodeWriter as i32,
                    }),
                }],
                ..Default::default()
            },
            120,
        )),
    )
    .await
    .volume
    .expect("CreateVolume returned no volume");
    objects.volumes.push(vol.volume_id.clone());

    // A Cinder snapshot, deleted at once (while Cinder still says `creating`).
    let snap = create_snapshot(
        &mut ctl,
        &format!("ctlvalid-snap-{run}"),
        &vol.volume_id,
        &[],
    )
    .await;
    objects.snapshots.push(snap.snapshot_id.clone());
    // No look at Cinder in between (a GET through `ostack api` takes long enough for the
    // snapshot to finish): the delete goes while the snapshot is as CreateSnapshot left it.
    println!(
        "snapshot ready_to_use when DeleteSnapshot is sent: {}",
        snap.ready_to_use
    );
    call(
        "DeleteSnapshot",
        ctl.delete_snapshot(with_timeout(
            pb::DeleteSnapshotRequest {
                snapshot_id: snap.snapshot_id.clone(),
                ..Default::default()
            },
            120,
        )),
    )
    .await;
    assert_eq!(
        cloud.api(
            false,
            "block-storage",
            "GET",
            &format!("/snapshots/{}", snap.snapshot_id)
        ),
        None,
        "DeleteSnapshot returned OK, so the snapshot is gone"
    );

    // A backup (VolumeSnapshotClass type: backup), deleted at once while it is `creating`.
    let b = create_snapshot(
        &mut ctl,
        &format!("ctlvalid-backup-{run}"),
        &vol.volume_id,
        &[("type", "backup")],
    )
    .await;
    backups.1.push(b.snapshot_id.clone());
    let status = cloud
        .api(
            false,
            "block-storage",
            "GET",
            &format!("/backups/{}", b.snapshot_id),
        )
        .map(|s| {
            s["backup"]["status"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        });
    println!("backup status when DeleteSnapshot is sent: {status:?}");
    call(
        "DeleteSnapshot (backup)",
        ctl.delete_snapshot(with_timeout(
            pb::DeleteSnapshotRequest {
                snapshot_id: b.snapshot_id.clone(),
                ..Default::default()
            },
            120,
        )),
    )
    .await;
    let log = std::fs::read_to_string(&driver.log).unwrap_or_default();
    println!(
        "Cinder refused the snapshot's first delete: {} (waited for it to settle: {})",
        log.contains("Cinder refused to delete the snapshot"),
        log.contains("Cinder refused to delete the snapshot while it settles")
    );
    if status.as_deref() == Some("creating") {
        assert!(
            log.contains("the backup is still settling; waiting, then deleting"),
            "the backup was creating, so DeleteSnapshot must have waited"
        );
    }
    assert_eq!(
        cloud.api(
            false,
            "block-storage",
            "GET",
            &format!("/backups/{}", b.snapshot_id)
        ),
        None,
        "the backup is gone"
    );
    // Nothing else of this run is left: no snapshot of the volume (the backup's temporary
    // snapshot included).
    let snapshots_of_volume = || {
        cloud
            .api(
                false,
                "block-storage",
                "GET",
                &format!("/snapshots?volume_id={}", vol.volume_id),
            )
            .map(|s| s["snapshots"].as_array().cloned().unwrap_or_default())
            .unwrap_or_default()
    };
    let live: Vec<_> = snapshots_of_volume()
        .iter()
        .filter(|s| s["status"] != "deleting")
        .map(|s| s["id"].clone())
        .collect();
    assert!(live.is_empty(), "snapshots left behind: {live:?}");
    // The temporary snapshot's delete was only asked for; let it finish before the volume goes.
    cloud.wait_for("the backup's temporary snapshot to go", || {
        snapshots_of_volume().is_empty()
    });

    call(
        "DeleteVolume",
        ctl.delete_volume(with_timeout(
            pb::DeleteVolumeRequest {
                volume_id: vol.volume_id.clone(),
                ..Default::default()
            },
            120,
        )),
    )
    .await;
    assert_eq!(cloud.volume(&vol.volume_id), None);
}
