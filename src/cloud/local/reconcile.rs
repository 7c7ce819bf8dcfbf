//! Startup reconcile: bring records, loop devices and by-id links back in line after a crash,
//! a kill -9 or a reboot. Rules:
//! - `creating` with its data file present → available (the file is renamed into place only
//!   when complete); without it → `error`. `deleting` → finish the delete.
//! - A data file larger than its record (an extend interrupted before the record) → the
//!   record takes the file's size.
//! - Each attached volume ends with exactly one loop device bound to its file: an existing
//!   one is kept (a mount on it stays valid), a missing one is re-created (after a reboot),
//!   extra ones are unbound. Devices bound to our files without an attachment, or to deleted
//!   files under DIR, are unbound (the kernel defers that while they are still mounted).
//! - `by-id/<server>/` holds exactly one link per volume attached to that server, pointing at
//!   the volume's device; anything else under `by-id/` goes (links of versions that kept one
//!   shared directory too). The servers' directories stay: node processes look into them.
//! - Filesystems listed in `frozen.json` (a group snapshot was interrupted) are thawed first;
//!   a group snapshot left `creating` or `deleting` is deleted with its members.

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use super::backend::{io_error, Inner};
use super::data::gib_of;
use super::loopdev::{self, LoopDevice};
use super::reconcile_report::ReconcileReport;
use super::records::valid_node_id;
use super::records::VolumeRecord;
use super::store::{self, Kind, TMP_SUFFIX};
use crate::cloud::{CloudResult, VolumeStatus};

impl Inner {
    pub(super) fn reconcile(&self) -> CloudResult<ReconcileReport> {
        let _ops = self.lock_ops();
        // Before anything else: a crash during a group snapshot may have left filesystems
        // frozen, and every writer on them blocked.
        let mut report = ReconcileReport {
            filesystems_thawed: super::freeze::thaw_leftovers(&self.layout.frozen_record())
                .map_err(|e| io_error("thaw the filesystems a crash left frozen", e))?,
            ..Default::default()
        };
        self.reconcile_groups(&mut report)?;
        self.reconcile_records(&mut report)?;
        let expected = self.reconcile_devices(&mut report)?;
        self.reconcile_links(&expected, &mut report)?;
        Ok(report)
    }

    fn reconcile_records(&self, report: &mut ReconcileReport) -> CloudResult<()> {
        let volumes: Vec<VolumeRecord> = self.read().volumes.values().cloned().collect();
        for mut v in volumes {
            let file = self.layout.data(Kind::Volume, &v.id);
            let len = std::fs::metadata(&file).ok().map(|m| m.len());
            match (v.status(), len) {
                (VolumeStatus::Deleting, _) => {
                    let snaps: Vec<String> = self
                        .read()
                        .snapshots
                        .values()
                        .filter(|s| s.volume_id == v.id)
                        .map(|s| s.id.clone())
                        .collect();
                    for s in snaps {
                        self.drop_object(Kind::Snapshot, &s)?;
                    }
                    self.drop_object(Kind::Volume, &v.id)?;
                    report.deletes_finished += 1;
                }
                (VolumeStatus::Creating, Some(len)) => {
                    v.size_gib = v.size_gib.max(gib_of(len));
                    v.settle_status();
                    self.put_volume(v)?;
                    report.creates_completed += 1;
                }
                (VolumeStatus::Creating, None) => {
                    v.set_status(VolumeStatus::Error);
                    v.error_reason = Some("creation was interrupted by a restart".into());
                    self.put_volume(v)?;
                    report.creates_failed += 1;
                }
                (status, Some(len)) if gib_of(len) > v.size_gib && !status.is_error() => {
                    v.size_gib = gib_of(len);
                    self.put_volume(v)?;
                    report.sizes_adopted += 1;
                }
                (status, None) if !status.is_error() => {
                    tracing::error!(volume_id = %v.id, file = %file.display(), "data file missing");
                    v.set_status(VolumeStatus::Error);
                    v.error_reason = Some(format!("data file {} is missing", file.display()));
                    v.attachments.clear();
                    self.put_volume(v)?;
                }
                _ => {}
            }
        }
        for kind in [Kind::Snapshot, Kind::Backup] {
            let records: Vec<_> = {
                let st = self.read();
                let map = if kind == Kind::Snapshot {
                    &st.snapshots
                } else {
                    &st.backups
                };
                map.values().cloned().collect()
            };
            for mut r in records {
                let exists = self.layout.data(kind, &r.id).exists();
                match r.status.as_str() {
                    "deleting" => {
                        self.drop_object(kind, &r.id)?;
                        report.deletes_finished += 1;
                    }
                    "creating" if exists => {
                        r.status = "available".into();
                        self.put_copy(kind, r)?;
                        report.creates_completed += 1;
                    }
                    "creating" => {
                        r.status = "error".into();
                        r.error_reason = Some("creation was interrupted by a restart".into());
                        self.put_copy(kind, r)?;
                        report.creates_failed += 1;
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    }

    /// A group snapshot interrupted while `creating` (its copies may be incomplete; it was
    /// never returned) or `deleting` is deleted with its members.
    fn reconcile_groups(&self, report: &mut ReconcileReport) -> CloudResult<()> {
        let groups: Vec<(String, String)> = self
            .read()
            .group_snapshots
            .values()
            .map(|g| (g.id.clone(), g.status.clone()))
            .collect();
        for (id, status) in groups {
            match status.as_str() {
                "creating" => {
                    self.drop_group(&id)?;
                    report.creates_failed += 1;
                }
                "deleting" => {
                    self.drop_group(&id)?;
                    report.deletes_finished += 1;
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Returns the links (server, link name) every attached volume must have.
    fn reconcile_devices(
        &self,
        report: &mut ReconcileReport,
    ) -> CloudResult<BTreeSet<(String, String)>> {
        let volumes: Vec<VolumeRecord> = self.read().volumes.values().cloned().collect();
        let mut by_inode = BTreeMap::new();
        for v in &volumes {
            if let Ok(m) = std::fs::metadata(self.layout.data(Kind::Volume, &v.id)) {
                by_inode.insert((m.dev(), m.ino()), v.id.clone());
            }
        }
        let mut bound: BTreeMap<String, Vec<LoopDevice>> = BTreeMap::new();
        let root = self.layout.root();
        for b in loopdev::bound_devices().map_err(|e| io_error("list loop devices", e))? {
            match by_inode.get(&(b.status.backing_dev, b.status.backing_ino)) {
                Some(id) => bound.entry(id.clone()).or_default().push(b.device),
                // Bound to a file of ours that is gone, or that is not a volume.
                None if b.backing_file.starts_with(root) => {
                    self.release(&b.device, &b.backing_file, report);
                }
                None => {}
            }
        }
        let mut expected = BTreeSet::new();
        for mut v in volumes {
            let devices = bound.remove(&v.id).unwrap_or_default();
            let file = self.layout.data(Kind::Volume, &v.id);
            if v.attachments.is_empty() {
                for d in &devices {
                    self.release(d, &file, report);
                }
                continue;
            }
            let recorded = LoopDevice::from_path(Path::new(&v.attachments[0].device));
            let keep = recorded
                .filter(|d| devices.contains(d))
                .or_else(|| devices.first().copied());
            let device = match keep {
                Some(d) => {
                    d.keep()
                        .map_err(|e| io_error(format_args!("keep {}", d.path().display()), e))?;
                    report.devices_kept += 1;
                    d
                }
                None => {
                    let d = LoopDevice::attach(&file)
                        .map_err(|e| io_error(format_args!("re-attach {}", file.display()), e))?;
                    report.devices_created += 1;
                    d
                }
            };
            for d in devices.iter().filter(|d| **d != device) {
                self.release(d, &file, report);
            }
            // An extend interrupted between the file and the device.
            let file_len = std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0);
            if device.size_bytes().is_ok_and(|s| s < file_len) {
                device
                    .set_capacity()
                    .map_err(|e| io_error(format_args!("resize {}", device.path().display()), e))?;
            }
            let path = device.path().display().to_string();
            if v.attachments.iter().any(|a| a.device != path) {
                for a in &mut v.attachments {
                    a.device = path.clone();
                }
                self.put_volume(v.clone())?;
            }
            for a in v.attachments.iter().filter(|a| valid_node_id(&a.server_id)) {
                let link = self.layout.by_id_link(&a.server_id, &v.id);
                expected.insert((a.server_id.clone(), store::link_name(&v.id)));
                if std::fs::read_link(&link).ok() != Some(device.path()) {
                    self.ensure_link(&a.server_id, &v.id, &device)?;
                    report.links_written += 1;
                }
            }
        }
        Ok(expected)
    }

    fn release(&self, device: &LoopDevice, file: &Path, report: &mut ReconcileReport) {
        tracing::info!(device = %device.path().display(), file = %file.display(),
            "unbinding a loop device no attachment claims");
        match device.detach() {
            Ok(()) => report.devices_released += 1,
            Err(e) => tracing::warn!(device = %device.path().display(), error = %e,
                "cannot unbind loop device"),
        }
    }

    fn reconcile_links(
        &self,
        expected: &BTreeSet<(String, String)>,
        report: &mut ReconcileReport,
    ) -> CloudResult<()> {
        let root = self.layout.by_id_root();
        for entry in read_dir(&root)? {
            let (path, server) = (entry.path(), entry.file_name());
            let server = server.to_string_lossy();
            let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
            if !is_dir {
                remove(&path, report)?;
                continue;
            }
            for link in read_dir(&path)? {
                let name = link.file_name().to_string_lossy().into_owned();
                let wanted = expected.contains(&(server.to_string(), name.clone()));
                if !wanted || name.ends_with(TMP_SUFFIX) {
                    remove(&link.path(), report)?;
                }
            }
        }
        Ok(())
    }
}

fn read_dir(dir: &Path) -> CloudResult<Vec<std::fs::DirEntry>> {
    std::fs::read_dir(dir)
        .and_then(|entries| entries.collect())
        .map_err(|e| io_error(format_args!("read {}", dir.display()), e))
}

fn remove(path: &Path, report: &mut ReconcileReport) -> CloudResult<()> {
    store::remove_durable(path)
        .map_err(|e| io_error(format_args!("remove {}", path.display()), e))?;
    report.links_removed += 1;
    Ok(())
}
