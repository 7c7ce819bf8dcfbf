//! Compute on this machine: servers are the node ids this backend knows, each in the zone it
//! registered; attaching binds a loop device over the volume's file and links
//! `by-id/<server>/virtio-<id[:20]>` to it, so only that server's node finds the disk (a
//! multiattach volume: one device, one link per server); detaching removes the server's link,
//! and the device with the last attachment once the kernel has let go of it. Nova's rules
//! apply: one server per volume unless the volume is multiattach, and only a server of the
//! volume's zone (Nova with `[cinder] cross_az_attach = False`).
//! Everything runs on the blocking pool (the ioctls, the records).

use std::path::Path;

use async_trait::async_trait;

use super::backend::{io_error, Inner, LocalCloud};
use super::loopdev::{self, LoopDevice};
use super::records::valid_node_id;
use super::records::{AttachmentRecord, NodeRecord};
use super::rules::{refused, PROFILE};
use super::store::{self, Kind, TMP_SUFFIX};
use crate::cloud::model;
use crate::cloud::{CloudError, CloudResult, Resource, Server, ServerAttachment, Servers};

#[async_trait]
impl Servers for LocalCloud {
    async fn get_server(&self, id: &str) -> CloudResult<Server> {
        let id = id.to_string();
        self.blocking(move |inner| inner.get_server(&id)).await
    }

    async fn attach_volume(
        &self,
        server_id: &str,
        volume_id: &str,
        multiattach: bool,
    ) -> CloudResult<ServerAttachment> {
        let (s, v) = (server_id.to_string(), volume_id.to_string());
        let id = v.clone();
        if let Some(delay) = self
            .blocking(move |inner| Ok(inner.attach_delay(&id)))
            .await?
        {
            tracing::info!(volume = %v, seconds = delay.as_secs_f64(), "attach delayed (attach-delay)");
            tokio::time::sleep(delay).await;
        }
        self.blocking(move |inner| inner.attach_volume(&s, &v, multiattach))
            .await
    }

    async fn detach_volume(&self, server_id: &str, volume_id: &str) -> CloudResult<()> {
        let (s, v) = (server_id.to_string(), volume_id.to_string());
        self.blocking(move |inner| inner.detach_volume(&s, &v))
            .await
    }

    async fn list_attachments(&self, server_id: &str) -> CloudResult<Vec<ServerAttachment>> {
        let s = server_id.to_string();
        self.blocking(move |inner| inner.list_attachments(&s)).await
    }
}

fn server(id: &str, zone: &str) -> Server {
    Server {
        id: id.to_string(),
        name: id.to_string(),
        status: "ACTIVE".to_string(),
        availability_zone: Some(zone.to_string()),
    }
}

/// The file that slows attaches down on purpose (the cluster stage's slow-attach alert test,
/// as the test cloud's fake Cinder driver does): while `DIR/attach-delay` exists, each of its
/// lines `PREFIX SECONDS` makes the attach of a volume whose name or PVC name (metadata
/// `csi.storage.k8s.io/pvc/name`) starts with PREFIX wait SECONDS before it binds the device.
const ATTACH_DELAY_FILE: &str = "attach-delay";

/// The delay `text` (an attach-delay file) asks of a volume with these names.
fn delay_for(text: &str, names: &[&str]) -> Option<std::time::Duration> {
    text.lines().find_map(|line| {
        let mut parts = line.split_whitespace();
        let (prefix, secs) = (parts.next()?, parts.next()?);
        if parts.next().is_some() || !names.iter().any(|n| !n.is_empty() && n.starts_with(prefix)) {
            return None;
        }
        std::time::Duration::try_from_secs_f64(secs.parse().ok()?).ok()
    })
}

impl Inner {
    /// What `DIR/attach-delay` asks of an attach of this volume (see [`ATTACH_DELAY_FILE`]).
    pub(super) fn attach_delay(&self, volume_id: &str) -> Option<std::time::Duration> {
        let text = std::fs::read_to_string(self.layout.root().join(ATTACH_DELAY_FILE)).ok()?;
        let state = self.read();
        let rec = state.volumes.get(volume_id)?;
        let pvc = rec
            .metadata
            .get("csi.storage.k8s.io/pvc/name")
            .map_or("", String::as_str);
        delay_for(&text, &[rec.name.as_str(), pvc])
    }

    /// A node registered under `DIR/nodes` by a node process (in the zone it registered), or
    /// a node id given at startup (in the first zone).
    pub(super) fn get_server(&self, id: &str) -> CloudResult<Server> {
        if !valid_node_id(id) {
            return Err(CloudError::not_found(Resource::Server, id));
        }
        let path = self.layout.nodes_dir().join(id);
        match std::fs::read_to_string(&path) {
            Ok(text) => {
                let rec = NodeRecord::parse(id, &text).ok_or_else(|| {
                    io_error(path.display(), "not a node registration of this node")
                })?;
                return Ok(server(id, &rec.availability_zone));
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_error(format_args!("read {}", path.display()), e)),
        }
        if self.nodes.contains(id) {
            Ok(server(id, &self.zones[0]))
        } else {
            Err(CloudError::not_found(Resource::Server, id))
        }
    }

    pub(super) fn attach_volume(
        &self,
        server_id: &str,
        volume_id: &str,
        multiattach: bool,
    ) -> CloudResult<ServerAttachment> {
        let server = self.get_server(server_id)?;
        let _ops = self.lock_ops();
        let mut rec = self.read().volume(volume_id)?.clone();
        let zone = server.availability_zone.as_deref().unwrap_or_default();
        model::attach(&PROFILE, &rec.to_volume(), server_id, zone, multiattach).map_err(refused)?;
        let file = self.layout.data(Kind::Volume, volume_id);
        // A volume already attached elsewhere shares its device; otherwise take over a device
        // a lazy detach left bound to the file (never bind a second one), or bind a new one.
        let (device, created) = match rec.attachments.first() {
            Some(a) => (device_of(&a.device)?, false),
            None => match loopdev::bound_to(&file)
                .map_err(|e| io_error("list loop devices", e))?
                .first()
            {
                Some(dev) => {
                    dev.keep()
                        .map_err(|e| io_error(format_args!("keep {}", dev.path().display()), e))?;
                    (*dev, false)
                }
                None => (
                    LoopDevice::attach(&file).map_err(|e| {
                        io_error(
                            format_args!("attach {} to a loop device", file.display()),
                            e,
                        )
                    })?,
                    true,
                ),
            },
        };
        let undo = |inner: &Inner| {
            let _ = inner.remove_link(server_id, volume_id);
            if created {
                let _ = device.detach();
            }
        };
        if let Err(e) = self.ensure_link(server_id, volume_id, &device) {
            undo(self);
            return Err(e);
        }
        rec.attachments.push(AttachmentRecord {
            attachment_id: uuid::Uuid::new_v4().to_string(),
            server_id: server_id.to_string(),
            device: device.path().display().to_string(),
        });
        rec.settle_status();
        if let Err(e) = self.put_volume(rec) {
            undo(self);
            return Err(e);
        }
        tracing::info!(volume_id, server_id, device = %device.path().display(), "attached");
        Ok(ServerAttachment {
            volume_id: volume_id.to_string(),
            device: Some(device.path().display().to_string()),
        })
    }

    pub(super) fn detach_volume(&self, server_id: &str, volume_id: &str) -> CloudResult<()> {
        self.get_server(server_id)?;
        let _ops = self.lock_ops();
        let mut rec = self.read().volume(volume_id)?.clone();
        model::detach(&rec.to_volume(), server_id).map_err(refused)?;
        let Some(pos) = rec
            .attachments
            .iter()
            .position(|a| a.server_id == server_id)
        else {
            return Ok(());
        };
        let removed = rec.attachments.remove(pos);
        rec.settle_status();
        if rec.attachments.is_empty() {
            // The device first, the record after: a detach answered while the device still
            // serves the file would let DeleteVolume remove a file whose data is still open,
            // and the device stay bound (the soak's leak, docs/RELIABILITY.md). A crash after
            // the unbind leaves the volume recorded as attached with no device: the startup
            // reconcile binds one again, and the orchestrator's retry of the detach ends it.
            self.release_device(volume_id, &removed.device)?;
        }
        // The other servers keep the device; this one must no longer find it. What fails here
        // the reconcile removes.
        if let Err(e) = self.remove_link(server_id, volume_id) {
            tracing::warn!(volume_id, server_id, error = %e, "cannot remove the by-id link");
        }
        self.put_volume(rec)?;
        tracing::info!(volume_id, server_id, "detached");
        Ok(())
    }

    /// Unbind the volume's device and wait for the kernel (see [`LoopDevice::release`]): a
    /// probe that has it open for a moment is waited out; a holder that stays (a mount of it
    /// in another mount namespace, a process) makes the detach fail, retryably, with the
    /// device kept bound, as Nova leaves a volume attached when the guest does not let go.
    fn release_device(&self, volume_id: &str, device: &str) -> CloudResult<()> {
        let device = device_of(device)?;
        let file = self.layout.data(Kind::Volume, volume_id);
        let path = device.path();
        let released = device
            .release(&file, self.release_within)
            .map_err(|e| io_error(format_args!("unbind {}", path.display()), e))?;
        if released {
            return Ok(());
        }
        let kept = device
            .keep_for(&file)
            .map_err(|e| io_error(format_args!("keep {}", path.display()), e))?;
        if !kept {
            // The holder let go between the wait's last look and now.
            return Ok(());
        }
        Err(CloudError::Unavailable {
            message: format!(
                "{} still has volume {volume_id} open {:?} after it was unbound: something \
                 else holds the device (a mount of it in another mount namespace, or a \
                 process); the volume stays attached, retry once that holder is gone",
                path.display(),
                self.release_within
            ),
            request_id: Default::default(),
        })
    }

    pub(super) fn list_attachments(&self, server_id: &str) -> CloudResult<Vec<ServerAttachment>> {
        self.get_server(server_id)?;
        Ok(self
            .read()
            .volumes
            .values()
            .filter_map(|v| {
                v.attachments
                    .iter()
                    .find(|a| a.server_id == server_id)
                    .map(|a| ServerAttachment {
                        volume_id: v.id.clone(),
                        device: Some(a.device.clone()),
                    })
            })
            .collect())
    }

    /// Point `by-id/<server>/virtio-<id[:20]>` at `device` (atomically replacing a stale
    /// link). `server` is a valid node id (`get_server` found it).
    pub(super) fn ensure_link(
        &self,
        server: &str,
        volume_id: &str,
        device: &LoopDevice,
    ) -> CloudResult<()> {
        let dir = self.layout.by_id_dir(server);
        let link = self.layout.by_id_link(server, volume_id);
        let target = device.path();
        if std::fs::read_link(&link).is_ok_and(|t| t == target) {
            return Ok(());
        }
        let mut tmp = link.as_os_str().to_owned();
        tmp.push(TMP_SUFFIX);
        let tmp = std::path::PathBuf::from(tmp);
        let _ = std::fs::remove_file(&tmp);
        std::fs::create_dir_all(&dir)
            .and_then(|()| std::os::unix::fs::symlink(&target, &tmp))
            .and_then(|()| std::fs::rename(&tmp, &link))
            .and_then(|()| store::sync_dir(&dir))
            .map_err(|e| io_error(format_args!("link {}", link.display()), e))
    }

    pub(super) fn remove_link(&self, server: &str, volume_id: &str) -> CloudResult<()> {
        let link = self.layout.by_id_link(server, volume_id);
        store::remove_durable(&link)
            .map_err(|e| io_error(format_args!("remove {}", link.display()), e))
    }
}

fn device_of(path: &str) -> CloudResult<LoopDevice> {
    LoopDevice::from_path(Path::new(path))
        .ok_or_else(|| io_error("attachment record", format!("{path} is not a loop device")))
}

#[cfg(test)]
mod tests {
    use super::delay_for;
    use std::time::Duration;

    #[test]
    fn attach_delay_lines_match_name_or_pvc_prefix() {
        let text = "slow-attach 140\nother 2.5\nbroken\nx y z\nneg -1\n";
        assert_eq!(
            delay_for(text, &["pvc-1", "slow-attach"]),
            Some(Duration::from_secs(140))
        );
        assert_eq!(
            delay_for(text, &["slow-attach-2", ""]),
            Some(Duration::from_secs(140))
        );
        assert_eq!(
            delay_for(text, &["other-vol", ""]),
            Some(Duration::from_millis(2500))
        );
        assert_eq!(delay_for(text, &["pvc-1", "normal"]), None);
        // An empty name matches no prefix; malformed lines and negative delays are ignored.
        assert_eq!(delay_for(text, &["", ""]), None);
        assert_eq!(delay_for(text, &["neg", ""]), None);
        assert_eq!(delay_for(text, &["x", ""]), None);
        assert_eq!(delay_for("", &["slow-attach"]), None);
    }
}
