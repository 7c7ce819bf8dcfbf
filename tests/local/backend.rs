//! The local backend on real loop devices: every method of every port role, sparse
//! copies, attach/detach, online extend, and restart/reconcile. Needs root. Each test owns a
//! state directory whose guard unbinds every loop device bound to a file inside it and
//! removes it, also when the test panics.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use cinder_csi::cloud::local::loopdev::{self, LoopDevice};
use cinder_csi::cloud::local::{register_node, LocalCloud, LocalOptions};
use cinder_csi::cloud::{
    CloudError, Copies, CopyFilter, CopyKind, CopyWait, Health, MigrationPolicy, NewBackup,
    NewSnapshot, NewVolume, PageRequest, Placement, Resource, Servers, VolumeCopy, VolumeFilter,
    VolumeSource, VolumeStatus, VolumeWait, Volumes, GIB,
};
use tokio::time::Instant;

const MIB: u64 = 1 << 20;

/// A state directory; on drop, unbinds loop devices over files inside it, then removes it.
struct StateDir {
    dir: tempfile::TempDir,
}

impl StateDir {
    fn new() -> Self {
        assert!(
            nix::unistd::geteuid().is_root(),
            "tests/local/backend.rs needs root (loop devices); run the suite as root"
        );
        let dir = crate::support::scratch::dir("cinder-csi-local-");
        Self { dir }
    }

    fn path(&self) -> PathBuf {
        self.dir.path().canonicalize().unwrap()
    }

    /// Loop devices bound to files under this directory (deleted ones included).
    fn bound(&self) -> Vec<LoopDevice> {
        self.try_bound().unwrap()
    }

    /// [`StateDir::bound`] that never panics (for `Drop`).
    fn try_bound(&self) -> std::io::Result<Vec<LoopDevice>> {
        let root = self.dir.path().canonicalize()?;
        loopdev::backed_below(&root)
    }

    fn opts(&self, nodes: &[&str]) -> LocalOptions {
        LocalOptions {
            dir: self.path(),
            nodes: nodes.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        }
    }

    async fn open(&self, nodes: &[&str]) -> LocalCloud {
        LocalCloud::open(self.opts(nodes)).await.unwrap()
    }

    fn volume_file(&self, id: &str) -> PathBuf {
        self.path().join("volumes").join(format!("{id}.img"))
    }

    /// The link the backend gives `node` to the disk of volume `id`.
    fn link(&self, node: &str, id: &str) -> PathBuf {
        self.path()
            .join("by-id")
            .join(node)
            .join(format!("virtio-{}", &id[..20]))
    }
}

impl Drop for StateDir {
    // Never panics: a panic here while a test unwinds would abort and skip the other guards.
    fn drop(&mut self) {
        use std::io::Write;
        match self.try_bound() {
            Ok(devices) => {
                for d in devices {
                    if let Err(e) = d.detach() {
                        let _ = writeln!(std::io::stderr(), "cleanup: detach {d:?}: {e}");
                    }
                }
            }
            Err(e) => {
                let _ = writeln!(
                    std::io::stderr(),
                    "cleanup: listing the loop devices of {:?}: {e}",
                    self.dir.path()
                );
            }
        }
    }
}

fn vol(name: &str, gib: u64) -> NewVolume {
    NewVolume {
        name: name.into(),
        size_gib: gib,
        ..Default::default()
    }
}

/// A volume made from `source`.
fn vol_from(name: &str, gib: u64, source: VolumeSource) -> NewVolume {
    NewVolume {
        source: Some(source),
        ..vol(name, gib)
    }
}

/// A snapshot of `volume_id`, which must succeed.
async fn snapshot(c: &LocalCloud, name: &str, volume_id: &str) -> VolumeCopy {
    c.create_snapshot(&NewSnapshot {
        name: name.into(),
        volume_id: volume_id.into(),
        ..Default::default()
    })
    .await
    .unwrap()
}

/// The copies of `kind` whose source is `volume_id`.
async fn copies_of(c: &LocalCloud, kind: CopyKind, volume_id: &str) -> Vec<VolumeCopy> {
    c.list_copies(
        kind,
        &CopyFilter {
            volume_id: Some(volume_id.into()),
            ..Default::default()
        },
        &PageRequest::default(),
    )
    .await
    .unwrap()
    .items
}

/// `r` failed with a not-found error; a failure names the caller's line (`track_caller`).
#[track_caller]
fn assert_not_found<T: std::fmt::Debug>(r: Result<T, CloudError>) {
    let e = r.unwrap_err();
    assert!(e.is_not_found(), "{e:?}");
}

fn soon() -> Instant {
    Instant::now() + Duration::from_secs(5)
}

fn allocated(path: &Path) -> u64 {
    std::fs::metadata(path).unwrap().blocks() * 512
}

/// Marker bytes at a few offsets, written through `f`.
const PATTERN: &[(u64, &[u8])] = &[
    (0, b"first sector"),
    (300 * MIB, b"middle of the volume"),
    (GIB - 16, b"last bytes here!"),
];

fn write_pattern(f: &File) {
    for (off, bytes) in PATTERN {
        f.write_all_at(bytes, *off).unwrap();
    }
    f.sync_all().unwrap();
}

fn check_pattern(path: &Path) {
    let f = File::open(path).unwrap();
    for (off, bytes) in PATTERN {
        let mut buf = vec![0u8; bytes.len()];
        f.read_exact_at(&mut buf, *off).unwrap();
        assert_eq!(&buf, bytes, "{} at {off}", path.display());
    }
    let mut hole = vec![1u8; 4096];
    f.read_exact_at(&mut hole, 700 * MIB).unwrap();
    assert!(hole.iter().all(|&b| b == 0), "hole must read as zeroes");
}

fn open_rw(path: &Path) -> File {
    OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn volumes_types_capacity_and_waits() {
    let sd = StateDir::new();
    let c = sd.open(&["node-a"]).await;
    c.check().await.unwrap();

    let mut req = vol("pvc-1", 1);
    req.metadata.insert("cluster".into(), "k1".into());
    req.description = Some("test".into());
    let v = c.create_volume(&req).await.unwrap();
    assert_eq!(v.status, VolumeStatus::Available);
    assert_eq!(v.size_gib, 1);
    assert_eq!(v.availability_zone, "local");
    assert_eq!(v.volume_type.as_deref(), Some("local"));
    assert_eq!(uuid::Uuid::parse_str(&v.id).unwrap().to_string(), v.id);
    let file = sd.volume_file(&v.id);
    assert_eq!(std::fs::metadata(&file).unwrap().len(), GIB);
    assert!(allocated(&file) < MIB, "a new volume is sparse");
    assert_eq!(c.get_volume(&v.id).await.unwrap(), v);

    // Names are not unique, as in Cinder.
    let twin = c.create_volume(&vol("pvc-1", 2)).await.unwrap();
    let other = c.create_volume(&vol("pvc-2", 1)).await.unwrap();
    let by_name = c
        .list_volumes(
            &VolumeFilter {
                name: Some("pvc-1".into()),
                ..Default::default()
            },
            &PageRequest::default(),
        )
        .await
        .unwrap();
    assert_eq!(by_name.items.len(), 2);
    let by_meta = c
        .list_volumes(
            &VolumeFilter {
                metadata: [("cluster".to_string(), "k1".to_string())].into(),
                ..Default::default()
            },
            &PageRequest::default(),
        )
        .await
        .unwrap();
    assert_eq!(by_meta.items, vec![v.clone()]);
    // Paging walks all three exactly once.
    let mut seen = Vec::new();
    let mut marker = None;
    loop {
        let page = c
            .list_volumes(
                &VolumeFilter::default(),
                &PageRequest {
                    limit: Some(2),
                    marker: marker.clone(),
                },
            )
            .await
            .unwrap();
        seen.extend(page.items.into_iter().map(|v| v.id));
        marker = page.next_marker;
        if marker.is_none() {
            break;
        }
    }
    seen.sort();
    let mut all = vec![v.id.clone(), twin.id.clone(), other.id.clone()];
    all.sort();
    assert_eq!(seen, all);

    // Bad input changes nothing.
    let mut bad = vol("x", 1);
    bad.volume_type = Some("gold".into());
    assert!(matches!(
        c.create_volume(&bad).await,
        Err(CloudError::NotFound {
            resource: Resource::VolumeType,
            ..
        })
    ));
    let mut bad = vol("x", 1);
    bad.availability_zone = Some("nova".into());
    assert!(matches!(
        c.create_volume(&bad).await,
        Err(CloudError::BadRequest { .. })
    ));
    assert!(matches!(
        c.create_volume(&vol("x", 0)).await,
        Err(CloudError::BadRequest { .. })
    ));
    // Larger than the filesystem holding DIR: over the limit (CSI ResourceExhausted).
    assert!(matches!(
        c.create_volume(&vol("x", 1 << 30)).await,
        Err(CloudError::OverLimit { .. })
    ));
    assert_eq!(
        c.list_volumes(&VolumeFilter::default(), &PageRequest::default())
            .await
            .unwrap()
            .items
            .len(),
        3
    );

    // Types.
    assert!(!c.get_volume_type("local").await.unwrap().multiattach);
    assert!(
        c.get_volume_type("local-multiattach")
            .await
            .unwrap()
            .multiattach
    );
    assert_not_found(c.get_volume_type("gold").await);

    // Extend and retype.
    c.extend_volume(&v.id, 3, false).await.unwrap();
    assert_eq!(std::fs::metadata(&file).unwrap().len(), 3 * GIB);
    let v3 = c
        .wait_volume(&v.id, &VolumeWait::Extended(3), soon())
        .await
        .unwrap();
    assert_eq!(v3.size_gib, 3);
    assert!(matches!(
        c.extend_volume(&v.id, 2, false).await,
        Err(CloudError::BadRequest { .. })
    ));
    c.retype_volume(&v.id, "local-multiattach", MigrationPolicy::Never)
        .await
        .unwrap();
    let r = c.get_volume(&v.id).await.unwrap();
    assert_eq!(r.volume_type.as_deref(), Some("local-multiattach"));
    assert!(r.multiattach);
    assert_not_found(
        c.retype_volume(&v.id, "gold", MigrationPolicy::OnDemand)
            .await,
    );

    // Metadata update: a merge, in the record on disk.
    let pairs: std::collections::BTreeMap<String, String> =
        [("billing".to_string(), "team-b".to_string())].into();
    c.update_volume_metadata(&v.id, &pairs).await.unwrap();
    let m = c.get_volume(&v.id).await.unwrap().metadata;
    assert_eq!(m.get("billing").map(String::as_str), Some("team-b"));
    for (k, val) in &r.metadata {
        assert!(k == "billing" || m.get(k) == Some(val), "{k} lost");
    }
    let record = sd.path().join("volumes").join(format!("{}.json", v.id));
    let record: serde_json::Value =
        serde_json::from_slice(&std::fs::read(record).unwrap()).unwrap();
    assert_eq!(record["metadata"]["billing"], "team-b");
    assert_not_found(c.update_volume_metadata("no-such-volume", &pairs).await);

    // Capacity is the free space of DIR's filesystem.
    let cap = c.capacity(None, None).await.unwrap();
    let st = nix::sys::statvfs::statvfs(&sd.path()).unwrap();
    let free = st.blocks_available() as u64 * st.fragment_size() as u64;
    let got = cap.available_bytes.unwrap();
    assert!(
        got.abs_diff(free) < 256 * MIB,
        "capacity {got} vs statvfs {free}"
    );
    assert_eq!(
        c.capacity(Some("nova"), None)
            .await
            .unwrap()
            .available_bytes,
        Some(0)
    );
    assert!(c.capacity(None, Some("gold")).await.is_err());

    // Waits: satisfied at once, a timeout when the condition cannot come true.
    c.wait_volume(&v.id, &VolumeWait::Available, soon())
        .await
        .unwrap();
    c.wait_volume(&v.id, &VolumeWait::Stable, soon())
        .await
        .unwrap();
    c.wait_volume(&v.id, &VolumeWait::DetachedFrom("node-a".into()), soon())
        .await
        .unwrap();
    let t = c
        .wait_volume(
            &v.id,
            &VolumeWait::AttachedTo("node-a".into()),
            Instant::now() + Duration::from_millis(120),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(t, CloudError::WaitTimeout { ref last_status, .. } if last_status == "available"),
        "{t}"
    );

    // Delete: gone, then NotFound.
    for id in [&v.id, &twin.id, &other.id] {
        c.delete_volume(id, false).await.unwrap();
        assert_not_found(c.get_volume(id).await);
        assert_not_found(c.wait_volume(id, &VolumeWait::Deleted, soon()).await);
    }
    assert!(!file.exists());
    assert_not_found(c.delete_volume(&v.id, false).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshots_restores_and_clones_keep_bytes_and_holes() {
    let sd = StateDir::new();
    let c = sd.open(&["node-a"]).await;
    let v = c.create_volume(&vol("src", 1)).await.unwrap();
    write_pattern(&open_rw(&sd.volume_file(&v.id)));

    let mut sreq = NewSnapshot {
        name: "snap-1".into(),
        volume_id: v.id.clone(),
        ..Default::default()
    };
    sreq.metadata.insert("k".into(), "v".into());
    let s = c.create_snapshot(&sreq).await.unwrap();
    assert_eq!(s.size_gib, 1);
    assert_eq!(s.volume_id, v.id);
    assert_eq!(
        c.wait_copy(CopyKind::Snapshot, &s.id, &CopyWait::Available, soon())
            .await
            .unwrap(),
        s
    );
    assert_eq!(c.get_copy(CopyKind::Snapshot, &s.id).await.unwrap(), s);
    let snap_file = sd.path().join("snapshots").join(format!("{}.img", s.id));
    check_pattern(&snap_file);
    assert!(allocated(&snap_file) < 4 * MIB, "snapshot must stay sparse");
    assert_eq!(
        copies_of(&c, CopyKind::Snapshot, &v.id).await,
        vec![s.clone()]
    );
    let none = c
        .list_copies(
            CopyKind::Snapshot,
            &CopyFilter {
                name: Some("other".into()),
                ..Default::default()
            },
            &PageRequest::default(),
        )
        .await
        .unwrap();
    assert!(none.items.is_empty());

    // The source changes after the snapshot: the snapshot does not.
    open_rw(&sd.volume_file(&v.id))
        .write_all_at(b"changed!", 0)
        .unwrap();
    check_pattern(&snap_file);

    // Restore into a larger volume: same bytes, larger file, still sparse.
    let rreq = vol_from("restored", 2, VolumeSource::Snapshot(s.id.clone()));
    let r = c.create_volume(&rreq).await.unwrap();
    assert_eq!(r.snapshot_id.as_deref(), Some(s.id.as_str()));
    assert_eq!(r.size_gib, 2);
    let rf = sd.volume_file(&r.id);
    assert_eq!(std::fs::metadata(&rf).unwrap().len(), 2 * GIB);
    check_pattern(&rf);
    assert!(allocated(&rf) < 4 * MIB);
    let mut small = vol_from("too-small", 1, VolumeSource::Snapshot(s.id.clone()));
    c.delete_volume(&r.id, false).await.unwrap();
    c.extend_volume(&v.id, 2, false).await.unwrap();
    let s2 = snapshot(&c, "snap-2", &v.id).await;
    assert_eq!(s2.size_gib, 2);
    small.source = Some(VolumeSource::Snapshot(s2.id.clone()));
    assert!(matches!(
        c.create_volume(&small).await,
        Err(CloudError::BadRequest { .. })
    ));
    let missing = vol_from("m", 1, VolumeSource::Snapshot("nope".into()));
    assert!(matches!(
        c.create_volume(&missing).await,
        Err(CloudError::NotFound {
            resource: Resource::Snapshot,
            ..
        })
    ));

    // Clone: the source's current bytes.
    let creq = vol_from("clone", 2, VolumeSource::Volume(v.id.clone()));
    let cl = c.create_volume(&creq).await.unwrap();
    assert_eq!(cl.source_volume_id.as_deref(), Some(v.id.as_str()));
    let mut head = [0u8; 8];
    File::open(sd.volume_file(&cl.id))
        .unwrap()
        .read_exact_at(&mut head, 0)
        .unwrap();
    assert_eq!(&head, b"changed!");
    assert!(allocated(&sd.volume_file(&cl.id)) < 4 * MIB);

    // Snapshots block the volume's deletion unless cascade.
    assert!(matches!(
        c.delete_volume(&v.id, false).await,
        Err(CloudError::Conflict { .. })
    ));
    c.delete_copy(CopyKind::Snapshot, &s.id).await.unwrap();
    assert_not_found(c.get_copy(CopyKind::Snapshot, &s.id).await);
    assert_not_found(c.delete_copy(CopyKind::Snapshot, &s.id).await);
    assert_not_found(
        c.wait_copy(CopyKind::Snapshot, &s.id, &CopyWait::Deleted, soon())
            .await,
    );
    c.delete_volume(&v.id, true).await.unwrap();
    assert_not_found(c.get_copy(CopyKind::Snapshot, &s2.id).await);
    c.delete_volume(&cl.id, false).await.unwrap();
    let left: Vec<_> = std::fs::read_dir(sd.path().join("snapshots"))
        .unwrap()
        .collect();
    assert!(left.is_empty(), "cascade removes snapshot files");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backups_are_independent_copies() {
    let sd = StateDir::new();
    let c = sd.open(&["node-a"]).await;
    assert!(c.backups_supported().await.unwrap());
    let v = c.create_volume(&vol("src", 1)).await.unwrap();
    write_pattern(&open_rw(&sd.volume_file(&v.id)));
    let b = c
        .create_backup(&NewBackup {
            name: "bk".into(),
            volume_id: v.id.clone(),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(
        c.wait_copy(CopyKind::Backup, &b.id, &CopyWait::Available, soon())
            .await
            .unwrap(),
        b
    );
    assert_eq!(b.availability_zone.as_deref(), Some("local"));
    let bf = sd.path().join("backups").join(format!("{}.img", b.id));
    check_pattern(&bf);
    assert!(allocated(&bf) < 4 * MIB);

    // From a snapshot of the volume; a snapshot of another volume is refused.
    let s = snapshot(&c, "s", &v.id).await;
    let bs = c
        .create_backup(&NewBackup {
            name: "bk-from-snap".into(),
            volume_id: v.id.clone(),
            snapshot_id: Some(s.id.clone()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(bs.snapshot_id.as_deref(), Some(s.id.as_str()));
    let w = c.create_volume(&vol("other", 1)).await.unwrap();
    assert!(matches!(
        c.create_backup(&NewBackup {
            name: "x".into(),
            volume_id: w.id.clone(),
            snapshot_id: Some(s.id.clone()),
            ..Default::default()
        })
        .await,
        Err(CloudError::BadRequest { .. })
    ));
    assert_eq!(copies_of(&c, CopyKind::Backup, &v.id).await.len(), 2);

    // A volume with backups can be deleted; the backup restores it.
    c.delete_volume(&v.id, true).await.unwrap();
    assert_eq!(c.get_copy(CopyKind::Backup, &b.id).await.unwrap(), b);
    let rreq = vol_from("restored", 1, VolumeSource::Backup(b.id.clone()));
    let r = c.create_volume(&rreq).await.unwrap();
    assert_eq!(r.backup_id.as_deref(), Some(b.id.as_str()));
    check_pattern(&sd.volume_file(&r.id));

    for id in [&b.id, &bs.id] {
        c.delete_copy(CopyKind::Backup, id).await.unwrap();
        assert_not_found(c.get_copy(CopyKind::Backup, id).await);
        assert_not_found(
            c.wait_copy(CopyKind::Backup, id, &CopyWait::Deleted, soon())
                .await,
        );
    }
    assert_not_found(c.delete_copy(CopyKind::Backup, &b.id).await);
    c.delete_volume(&r.id, false).await.unwrap();
    c.delete_volume(&w.id, false).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attach_binds_a_loop_device_and_a_link_detach_removes_both() {
    let sd = StateDir::new();
    let c = sd.open(&["node-a", "node-b"]).await;
    let server = c.get_server("node-a").await.unwrap();
    assert_eq!(server.availability_zone.as_deref(), Some("local"));
    assert!(matches!(
        c.get_server("node-x").await,
        Err(CloudError::NotFound {
            resource: Resource::Server,
            ..
        })
    ));

    let v = c.create_volume(&vol("pvc", 1)).await.unwrap();
    let att = c.attach_volume("node-a", &v.id, false).await.unwrap();
    let dev_path = PathBuf::from(att.device.clone().unwrap());
    let dev = LoopDevice::from_path(&dev_path).unwrap();
    let link = sd.link("node-a", &v.id);
    assert_eq!(std::fs::read_link(&link).unwrap(), dev_path);
    assert!(loopdev::is_block_device(&link));
    assert_eq!(
        loopdev::bound_to(&sd.volume_file(&v.id)).unwrap(),
        vec![dev]
    );
    assert_eq!(dev.size_bytes().unwrap(), GIB);
    let got = c
        .wait_volume(&v.id, &VolumeWait::AttachedTo("node-a".into()), soon())
        .await
        .unwrap();
    assert_eq!(got.status, VolumeStatus::InUse);
    assert_eq!(
        got.attached_to("node-a").unwrap().device.as_deref(),
        att.device.as_deref()
    );
    assert_eq!(
        c.list_attachments("node-a").await.unwrap(),
        vec![att.clone()]
    );
    assert!(c.list_attachments("node-b").await.unwrap().is_empty());
    assert_not_found(c.list_attachments("node-x").await);

    // Data written through the device lands in the file.
    write_pattern(&open_rw(&link));
    check_pattern(&sd.volume_file(&v.id));

    // Nova's rules.
    assert!(matches!(
        c.attach_volume("node-a", &v.id, false).await,
        Err(CloudError::Conflict { .. })
    ));
    assert!(matches!(
        c.attach_volume("node-b", &v.id, false).await,
        Err(CloudError::Conflict { .. })
    ));
    assert_not_found(c.attach_volume("node-x", &v.id, false).await);
    assert_not_found(c.attach_volume("node-a", "no-such-volume", false).await);
    assert!(matches!(
        c.delete_volume(&v.id, false).await,
        Err(CloudError::Conflict { .. })
    ));

    // Extend while attached: offline refused, online grows the device too.
    assert!(matches!(
        c.extend_volume(&v.id, 2, false).await,
        Err(CloudError::Conflict { .. })
    ));
    c.extend_volume(&v.id, 2, true).await.unwrap();
    assert_eq!(dev.size_bytes().unwrap(), 2 * GIB);
    assert_eq!(c.get_volume(&v.id).await.unwrap().size_gib, 2);

    // A snapshot of the attached volume sees what was written through the device.
    let s = snapshot(&c, "hot", &v.id).await;
    check_pattern(&sd.path().join("snapshots").join(format!("{}.img", s.id)));

    c.detach_volume("node-a", &v.id).await.unwrap();
    assert!(std::fs::symlink_metadata(&link).is_err(), "link removed");
    assert!(loopdev::bound_to(&sd.volume_file(&v.id))
        .unwrap()
        .is_empty());
    // The kernel may hand the freed device to another test at once: what matters is that it
    // no longer serves our file.
    let ours = std::fs::metadata(sd.volume_file(&v.id)).unwrap();
    assert!(
        dev.status()
            .unwrap()
            .is_none_or(|st| (st.backing_dev, st.backing_ino) != (ours.dev(), ours.ino())),
        "device unbound from the volume file"
    );
    assert_eq!(
        c.get_volume(&v.id).await.unwrap().status,
        VolumeStatus::Available
    );
    c.wait_volume(&v.id, &VolumeWait::DetachedFrom("node-a".into()), soon())
        .await
        .unwrap();
    assert!(matches!(
        c.detach_volume("node-a", &v.id).await,
        Err(CloudError::NotFound {
            resource: Resource::Attachment,
            ..
        })
    ));
    c.delete_volume(&v.id, true).await.unwrap();
    assert!(sd.bound().is_empty());
}

/// Another process holding a device open (as a probe, a forked tool or a mount in another
/// namespace does); killed and reaped when dropped, a failed test too. Declared after the
/// [`StateDir`], so it lets go before that guard unbinds the devices.
struct Holder(std::process::Child);

impl Holder {
    fn new(device: &Path) -> Self {
        let node = File::open(device).unwrap();
        Self(
            std::process::Command::new("sleep")
                .arg("60")
                .stdin(node)
                .spawn()
                .unwrap(),
        )
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The devices sysfs shows bound to `file`, with whether each has autoclear set.
fn serving(file: &Path) -> Vec<(LoopDevice, bool)> {
    loopdev::release::serving(file)
        .unwrap()
        .into_iter()
        .map(|d| (d, d.status().unwrap().is_some_and(|s| s.autoclear)))
        .collect()
}

/// A backend on node-a that waits 200 ms, not 5 s, for the kernel to unbind a held device.
async fn short_release_cloud(sd: &StateDir) -> LocalCloud {
    LocalCloud::open(LocalOptions {
        release_within: Duration::from_millis(200),
        ..sd.opts(&["node-a"])
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_detach_while_another_process_holds_the_device_is_retried_after_it_lets_go() {
    let sd = StateDir::new();
    let c = short_release_cloud(&sd).await;
    let v = c.create_volume(&vol("held", 1)).await.unwrap();
    let file = sd.volume_file(&v.id);
    let att = c.attach_volume("node-a", &v.id, false).await.unwrap();
    let dev_path = PathBuf::from(att.device.unwrap());
    let dev = LoopDevice::from_path(&dev_path).unwrap();
    let link = sd.link("node-a", &v.id);

    let holder = Holder::new(&dev_path);
    let err = c.detach_volume("node-a", &v.id).await.unwrap_err();
    assert!(matches!(err, CloudError::Unavailable { .. }), "{err:?}");
    // Still attached, device and link in place, and kept: no autoclear left to unbind it.
    let got = c.get_volume(&v.id).await.unwrap();
    assert_eq!(got.status, VolumeStatus::InUse);
    assert!(got.attached_to("node-a").is_some());
    assert_eq!(std::fs::read_link(&link).unwrap(), dev_path);
    assert_eq!(serving(&file), vec![(dev, false)]);
    assert!(matches!(
        c.delete_volume(&v.id, false).await,
        Err(CloudError::Conflict { .. })
    ));

    drop(holder);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(
        serving(&file),
        vec![(dev, false)],
        "bound after the holder left"
    );
    c.detach_volume("node-a", &v.id).await.unwrap();
    assert!(serving(&file).is_empty(), "no device serves the file");
    assert!(std::fs::symlink_metadata(&link).is_err(), "link removed");
    assert_eq!(
        c.get_volume(&v.id).await.unwrap().status,
        VolumeStatus::Available
    );
    c.delete_volume(&v.id, false).await.unwrap();
    assert!(sd.bound().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_unbinds_a_stray_device_serving_the_volume_file_first() {
    let sd = StateDir::new();
    let c = short_release_cloud(&sd).await;
    let v = c.create_volume(&vol("stray", 1)).await.unwrap();
    let file = sd.volume_file(&v.id);
    // Bound behind the backend's back (someone's losetup, a reconcile's leftover).
    let stray = LoopDevice::attach(&file).unwrap();
    assert_eq!(serving(&file), vec![(stray, false)]);

    // Held: the delete refuses, the volume is still there.
    let holder = Holder::new(&stray.path());
    assert!(matches!(
        c.delete_volume(&v.id, false).await,
        Err(CloudError::Conflict { .. })
    ));
    assert_eq!(
        c.get_volume(&v.id).await.unwrap().status,
        VolumeStatus::Available
    );
    assert!(file.exists());
    drop(holder);

    // Unheld (or unbound meanwhile by the autoclear the refused delete left): deleted, and
    // no device serves the file.
    c.delete_volume(&v.id, false).await.unwrap();
    assert_not_found(c.get_volume(&v.id).await);
    assert!(serving(&file).is_empty());
    assert!(sd.bound().is_empty());

    // Unheld from the start: unbound by the delete itself.
    let w = c.create_volume(&vol("stray2", 1)).await.unwrap();
    let file = sd.volume_file(&w.id);
    let stray = LoopDevice::attach(&file).unwrap();
    assert_eq!(serving(&file), vec![(stray, false)]);
    c.delete_volume(&w.id, false).await.unwrap();
    assert!(serving(&file).is_empty());
    assert!(sd.bound().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multiattach_volumes_share_one_device() {
    let sd = StateDir::new();
    let c = sd.open(&["node-a", "node-b"]).await;
    let mut req = vol("shared", 1);
    req.volume_type = Some("local-multiattach".into());
    let v = c.create_volume(&req).await.unwrap();
    assert!(v.multiattach);
    let a = c.attach_volume("node-a", &v.id, true).await.unwrap();
    assert!(matches!(
        c.attach_volume("node-b", &v.id, false).await,
        Err(CloudError::BadRequest { .. })
    ));
    let b = c.attach_volume("node-b", &v.id, true).await.unwrap();
    assert_eq!(a.device, b.device);
    assert_eq!(sd.bound().len(), 1);
    // One link per server, both to the one device.
    let link = |node: &str| c.by_id_dir(node).join(format!("virtio-{}", &v.id[..20]));
    let dev = PathBuf::from(a.device.unwrap());
    assert_eq!(std::fs::read_link(link("node-a")).unwrap(), dev);
    assert_eq!(std::fs::read_link(link("node-b")).unwrap(), dev);
    c.detach_volume("node-a", &v.id).await.unwrap();
    assert_eq!(sd.bound().len(), 1, "still attached to node-b");
    assert!(std::fs::symlink_metadata(link("node-a")).is_err());
    assert_eq!(std::fs::read_link(link("node-b")).unwrap(), dev);
    c.detach_volume("node-b", &v.id).await.unwrap();
    assert!(sd.bound().is_empty());
    assert!(std::fs::symlink_metadata(link("node-b")).is_err());
    c.delete_volume(&v.id, false).await.unwrap();
}

/// Two zones: volumes go to the zone asked for (the first by default; a source's zone for a
/// clone or a snapshot's restore), attach only to servers of their zone, and a server sees
/// only the disks attached to it, also after a restart's reconcile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zones_and_per_server_links() {
    let sd = StateDir::new();
    let c = LocalCloud::open(LocalOptions {
        zones: vec!["zone-a".into(), "zone-b".into()],
        ..sd.opts(&[])
    })
    .await
    .unwrap();
    for (node, zone) in [
        ("node-1", "zone-a"),
        ("node-2", "zone-b"),
        ("node-3", "zone-a"),
    ] {
        register_node(&sd.path(), node, zone).unwrap();
        assert!(c.by_id_dir(node).is_dir(), "{node}'s by-id dir");
        let s = c.get_server(node).await.unwrap();
        assert_eq!(s.availability_zone.as_deref(), Some(zone));
    }
    assert_eq!(
        c.availability_zones().await.unwrap(),
        vec!["zone-a".to_string(), "zone-b".to_string()]
    );
    assert!(
        c.capacity(Some("zone-b"), None)
            .await
            .unwrap()
            .available_bytes
            > Some(0)
    );
    assert_eq!(
        c.capacity(Some("local"), None)
            .await
            .unwrap()
            .available_bytes,
        Some(0)
    );
    let default = c.create_volume(&vol("default", 1)).await.unwrap();
    assert_eq!(default.availability_zone, "zone-a");
    let mut req = vol("b", 1);
    req.availability_zone = Some("zone-c".into());
    let err = c.create_volume(&req).await.unwrap_err();
    assert!(
        matches!(&err, CloudError::BadRequest { message, .. } if message.contains("zone-c")),
        "{err:?}"
    );
    req.availability_zone = Some("zone-b".into());
    let b = c.create_volume(&req).await.unwrap();
    assert_eq!(b.availability_zone, "zone-b");

    // Across zones: refused, nothing changed.
    let err = c.attach_volume("node-1", &b.id, false).await.unwrap_err();
    assert!(
        matches!(&err, CloudError::BadRequest { message, .. }
            if message.contains("zone-b") && message.contains("zone-a")),
        "{err:?}"
    );
    assert_eq!(
        c.get_volume(&b.id).await.unwrap().status,
        VolumeStatus::Available
    );
    assert!(sd.bound().is_empty());
    let link = |node: &str, id: &str| sd.link(node, id);
    assert!(std::fs::symlink_metadata(link("node-1", &b.id)).is_err());

    // In its zone: only the attached node finds the disk.
    let att = c.attach_volume("node-2", &b.id, false).await.unwrap();
    let dev = PathBuf::from(att.device.unwrap());
    assert_eq!(std::fs::read_link(link("node-2", &b.id)).unwrap(), dev);
    for other in ["node-1", "node-3"] {
        assert!(
            std::fs::symlink_metadata(link(other, &b.id)).is_err(),
            "{other}"
        );
    }
    // Moved to node-3 (zone-a) with the zone-a volume: detach first, the link follows.
    c.attach_volume("node-1", &default.id, false).await.unwrap();
    c.detach_volume("node-1", &default.id).await.unwrap();
    assert!(std::fs::symlink_metadata(link("node-1", &default.id)).is_err());
    c.attach_volume("node-3", &default.id, false).await.unwrap();
    assert!(std::fs::read_link(link("node-3", &default.id)).is_ok());

    // A snapshot's restore and a clone stay in the source's zone.
    let s = snapshot(&c, "s", &b.id).await;
    let mut restore = vol_from("restore", 1, VolumeSource::Snapshot(s.id.clone()));
    assert_eq!(
        c.create_volume(&restore).await.unwrap().availability_zone,
        "zone-b"
    );
    restore.availability_zone = Some("zone-a".into());
    let err = c.create_volume(&restore).await.unwrap_err();
    assert!(
        matches!(&err, CloudError::BadRequest { message, .. } if message.contains(&s.id)),
        "{err:?}"
    );
    let clone = vol_from("clone", 1, VolumeSource::Volume(default.id.clone()));
    assert_eq!(
        c.create_volume(&clone).await.unwrap().availability_zone,
        "zone-a"
    );

    // Restart: links rewritten per server, strays in a server's directory and a link of the
    // shared directory of older versions removed.
    drop(c);
    std::fs::remove_file(link("node-2", &b.id)).unwrap();
    std::os::unix::fs::symlink(&dev, link("node-1", &b.id)).unwrap();
    std::os::unix::fs::symlink(&dev, sd.path().join("by-id/virtio-legacy")).unwrap();
    let c = LocalCloud::open(LocalOptions {
        zones: vec!["zone-a".into(), "zone-b".into()],
        ..sd.opts(&[])
    })
    .await
    .unwrap();
    assert_eq!(std::fs::read_link(link("node-2", &b.id)).unwrap(), dev);
    assert!(std::fs::symlink_metadata(link("node-1", &b.id)).is_err());
    assert!(std::fs::symlink_metadata(sd.path().join("by-id/virtio-legacy")).is_err());
    assert!(std::fs::read_link(link("node-3", &default.id)).is_ok());
    assert!(c.by_id_dir("node-1").is_dir(), "servers' directories stay");

    c.detach_volume("node-2", &b.id).await.unwrap();
    c.detach_volume("node-3", &default.id).await.unwrap();
    for node in ["node-1", "node-2", "node-3"] {
        assert_eq!(
            std::fs::read_dir(c.by_id_dir(node)).unwrap().count(),
            0,
            "{node}"
        );
    }
    assert!(sd.bound().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restart_keeps_state_and_reconciles_devices_and_links() {
    let sd = StateDir::new();
    let (attached, idle, snap) = {
        let c = sd.open(&["node-a"]).await;
        // A second adapter on the same DIR is refused while the first lives.
        assert!(matches!(
            LocalCloud::open(sd.opts(&["node-a"])).await,
            Err(CloudError::Unavailable { .. })
        ));
        let a = c.create_volume(&vol("attached", 1)).await.unwrap();
        let i = c.create_volume(&vol("idle", 1)).await.unwrap();
        let s = snapshot(&c, "s", &i.id).await;
        c.attach_volume("node-a", &a.id, false).await.unwrap();
        let link = sd.link("node-a", &a.id);
        write_pattern(&open_rw(&link));
        (
            c.get_volume(&a.id).await.unwrap(),
            c.get_volume(&i.id).await.unwrap(),
            c.get_copy(CopyKind::Snapshot, &s.id).await.unwrap(),
        )
    };
    let device = || {
        LoopDevice::from_path(Path::new(
            attached.attachments[0].device.as_deref().unwrap(),
        ))
        .unwrap()
    };

    // Restart: same state, the same device kept, nothing new bound.
    let c = sd.open(&["node-a"]).await;
    assert_eq!(c.get_volume(&attached.id).await.unwrap(), attached);
    assert_eq!(c.get_volume(&idle.id).await.unwrap(), idle);
    assert_eq!(
        c.get_copy(CopyKind::Snapshot, &snap.id).await.unwrap(),
        snap
    );
    assert_eq!(sd.bound(), vec![device()]);
    let report = c.reconcile().await.unwrap();
    assert_eq!(report.devices_kept, 1);
    assert_eq!(report.devices_created + report.devices_released, 0);
    drop(c);

    // After a "reboot" (device and link gone) the device is re-created; data intact.
    device().detach().unwrap();
    let link = sd.link("node-a", &attached.id);
    std::fs::remove_file(&link).unwrap();
    // Leftovers to clean: a stale link, a device bound to the idle volume, a half-written
    // copy, and records of an interrupted create and delete.
    std::os::unix::fs::symlink("/dev/loop999", sd.path().join("by-id/virtio-stale")).unwrap();
    let stray = LoopDevice::attach(&sd.volume_file(&idle.id)).unwrap();
    std::fs::write(sd.path().join("volumes/x.img.tmp"), b"partial").unwrap();
    let mut interrupted: serde_json::Value = serde_json::from_slice(
        &std::fs::read(sd.path().join(format!("volumes/{}.json", idle.id))).unwrap(),
    )
    .unwrap();
    for (id, status) in [
        ("11111111-1111-1111-1111-111111111111", "creating"),
        ("22222222-2222-2222-2222-222222222222", "deleting"),
    ] {
        interrupted["id"] = id.into();
        interrupted["status"] = status.into();
        std::fs::write(
            sd.path().join(format!("volumes/{id}.json")),
            serde_json::to_vec(&interrupted).unwrap(),
        )
        .unwrap();
    }

    let c = sd.open(&["node-a"]).await;
    let v = c.get_volume(&attached.id).await.unwrap();
    assert_eq!(v.status, VolumeStatus::InUse);
    let new_dev = PathBuf::from(v.attachments[0].device.clone().unwrap());
    assert_eq!(std::fs::read_link(&link).unwrap(), new_dev);
    assert_eq!(sd.bound(), vec![LoopDevice::from_path(&new_dev).unwrap()]);
    // The stray device was unbound (its number may have been reused for the re-attach).
    assert!(
        loopdev::bound_to(&sd.volume_file(&idle.id))
            .unwrap()
            .is_empty(),
        "stray device {stray:?} still bound to the idle volume"
    );
    assert!(std::fs::symlink_metadata(sd.path().join("by-id/virtio-stale")).is_err());
    assert!(!sd.path().join("volumes/x.img.tmp").exists());
    check_pattern(&link);
    let failed = c
        .get_volume("11111111-1111-1111-1111-111111111111")
        .await
        .unwrap();
    assert_eq!(failed.status, VolumeStatus::Error);
    assert!(matches!(
        c.wait_volume(&failed.id, &VolumeWait::Available, soon())
            .await,
        Err(CloudError::ErrorState {
            reason: Some(_),
            ..
        })
    ));
    c.delete_volume(&failed.id, false).await.unwrap();
    assert_not_found(c.get_volume("22222222-2222-2222-2222-222222222222").await);

    // Clean up through the API: nothing left bound.
    c.detach_volume("node-a", &attached.id).await.unwrap();
    c.delete_volume(&attached.id, false).await.unwrap();
    c.delete_volume(&idle.id, true).await.unwrap();
    assert!(sd.bound().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registered_nodes_are_servers() {
    let sd = StateDir::new();
    let c = sd.open(&[]).await;
    assert_not_found(c.get_server("node-z").await);
    register_node(&sd.path(), "node-z", "local").unwrap();
    assert_eq!(c.get_server("node-z").await.unwrap().id, "node-z");
    assert!(register_node(&sd.path(), "../evil", "local").is_err());
    assert_not_found(c.get_server("../evil").await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_calls_stay_consistent() {
    let sd = StateDir::new();
    let c = sd.open(&["node-a"]).await;
    let mut tasks = Vec::new();
    for i in 0..6 {
        let c = c.clone();
        tasks.push(tokio::spawn(async move {
            let v = c.create_volume(&vol(&format!("v{i}"), 1)).await.unwrap();
            c.attach_volume("node-a", &v.id, false).await.unwrap();
            let s = snapshot(&c, &format!("s{i}"), &v.id).await;
            c.extend_volume(&v.id, 2, true).await.unwrap();
            c.detach_volume("node-a", &v.id).await.unwrap();
            c.delete_volume(&v.id, true).await.unwrap();
            s.id
        }));
    }
    for t in tasks {
        let sid = t.await.unwrap();
        assert_not_found(c.get_copy(CopyKind::Snapshot, &sid).await);
    }
    assert!(c
        .list_volumes(&VolumeFilter::default(), &PageRequest::default())
        .await
        .unwrap()
        .items
        .is_empty());
    assert!(sd.bound().is_empty());
    assert_eq!(
        std::fs::read_dir(sd.path().join("by-id/node-a"))
            .unwrap()
            .count(),
        0
    );
}

/// Unmounts (lazily) on drop, before the state directory's guard unbinds the device.
struct Mounted(PathBuf);

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = nix::mount::umount2(&self.0, nix::mount::MntFlags::MNT_DETACH);
    }
}

fn free_bytes(path: &Path) -> u64 {
    let st = nix::sys::statvfs::statvfs(path).unwrap();
    st.blocks_available() as u64 * st.fragment_size() as u64
}

/// With DIR on a filesystem that shares extents (xfs with reflink), snapshots and clones are
/// reflinks: no data is copied, yet they are independent of their source.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_reflink_filesystem_copies_share_extents() {
    let sd = StateDir::new();
    let img = sd.path().join("xfs.img");
    File::create(&img).unwrap().set_len(3 * GIB).unwrap();
    let dev = LoopDevice::attach(&img).unwrap();
    let mkfs = std::process::Command::new("mkfs.xfs")
        .args(["-q", "-m", "reflink=1"])
        .arg(dev.path())
        .status()
        .expect("mkfs.xfs (xfsprogs) is needed");
    assert!(mkfs.success());
    let mnt = sd.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    nix::mount::mount(
        Some(&dev.path()),
        &mnt,
        Some("xfs"),
        nix::mount::MsFlags::empty(),
        None::<&str>,
    )
    .unwrap();
    let _mounted = Mounted(mnt.clone());

    // The copy primitive itself says it reflinked.
    let a = mnt.join("a");
    let f = File::options()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&a)
        .unwrap();
    f.set_len(GIB).unwrap();
    write_pattern(&f);
    let b = File::options()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(mnt.join("b"))
        .unwrap();
    let method = cinder_csi::cloud::local::copy::sparse_copy(&f, &b, GIB).unwrap();
    assert_eq!(method, cinder_csi::cloud::local::copy::CopyMethod::Reflink);
    check_pattern(&mnt.join("b"));

    // Through the adapter: 128 MiB of data, snapshotted and cloned without using space.
    let c = LocalCloud::open(LocalOptions {
        dir: mnt.join("state"),
        nodes: vec!["node-a".into()],
        ..Default::default()
    })
    .await
    .unwrap();
    let v = c.create_volume(&vol("v", 1)).await.unwrap();
    let vf = mnt.join("state/volumes").join(format!("{}.img", v.id));
    let data = vec![0x5a_u8; 128 << 20];
    let file = open_rw(&vf);
    file.write_all_at(&data, 256 * MIB).unwrap();
    file.sync_all().unwrap();
    let before = free_bytes(&mnt);
    let s = snapshot(&c, "s", &v.id).await;
    let creq = vol_from("clone", 1, VolumeSource::Volume(v.id.clone()));
    let cl = c.create_volume(&creq).await.unwrap();
    let used = before.saturating_sub(free_bytes(&mnt));
    assert!(used < 16 * MIB, "two copies of 128 MiB used {used} bytes");
    // Independent: overwriting the source changes neither copy.
    file.write_all_at(&[1u8; 4096], 256 * MIB).unwrap();
    file.sync_all().unwrap();
    let mut buf = [0u8; 4096];
    for copy in [
        mnt.join("state/snapshots").join(format!("{}.img", s.id)),
        mnt.join("state/volumes").join(format!("{}.img", cl.id)),
    ] {
        File::open(&copy)
            .unwrap()
            .read_exact_at(&mut buf, 256 * MIB)
            .unwrap();
        assert!(buf.iter().all(|&x| x == 0x5a), "{}", copy.display());
    }
    c.delete_volume(&cl.id, false).await.unwrap();
    c.delete_volume(&v.id, true).await.unwrap();
}
