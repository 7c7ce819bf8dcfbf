//! Node checks: what a node plugin needs from its machine and its pod spec. Each judgement is a
//! function of what was read (mountinfo text, a directory listing, the host port), so the
//! unit tests feed them fixed inputs; `run` reads the real machine.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use super::report::{Check, Status};
use crate::app::cli::{Backend, ServeArgs};
use crate::driver::node::params::DEFAULT_FS;
use crate::driver::node::{NodeCore, NodeInfo};
use crate::driver::types::ZONE_TOPOLOGY_KEY;
use crate::host::linux::{mountinfo, tools};
use crate::host::metadata::{self, MetadataOptions};
use crate::host::{Filesystems, FsKind};

/// One line per filesystem: the tools to format, check and grow it. Missing tools of the
/// default filesystem fail (every volume without an fsType needs them); others warn.
pub fn tools(fs: &dyn Filesystems) -> Vec<Check> {
    FsKind::ALL
        .into_iter()
        .map(|kind| {
            let name = format!("tools {kind}");
            let missing = fs.missing_tools(kind);
            if missing.is_empty() {
                return Check::ok(name, tools::needed(kind).join(", "));
            }
            let detail = format!(
                "{} not found on PATH or in /sbin, /usr/sbin",
                missing.join(", ")
            );
            let fix = format!(
                "install {} in the plugin's image (the project's image has it){}",
                kind.ops().package(),
                if kind == DEFAULT_FS {
                    ""
                } else {
                    "; until then volumes with this fsType fail to stage"
                }
            );
            if kind == DEFAULT_FS {
                Check::fail(
                    name,
                    format!("{detail}; every volume without an fsType needs them"),
                    fix,
                )
            } else {
                Check::warn(name, detail, fix)
            }
        })
        .collect()
}

/// The kubelet dir exists and is a directory (a hostPath mounted at the same path).
pub fn kubelet_dir(dir: &Path) -> Check {
    let name = "kubelet dir";
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => Check::ok(name, dir.display().to_string()),
        Ok(_) => Check::fail(
            name,
            format!("{} is not a directory", dir.display()),
            "set --kubelet-dir (chart: node.kubeletDir) to kubelet's --root-dir",
        ),
        Err(e) => Check::fail(
            name,
            format!("{}: {e}", dir.display()),
            "mount the host's kubelet dir into the plugin at the same path (hostPath, \
             mountPropagation: Bidirectional), or set --kubelet-dir to kubelet's --root-dir",
        ),
    }
}

/// Propagation of the mount that holds `dir`, from mountinfo's optional fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Propagation {
    /// `shared:N`: mounts made below it reach the peers (kubelet, the pods).
    Shared {
        mount_point: String,
        peer_group: String,
    },
    /// `master:N` only: the plugin sees the host's mounts, the host never sees the plugin's.
    Slave {
        mount_point: String,
    },
    Private {
        mount_point: String,
    },
}

/// The propagation of the topmost mount whose mount point contains `dir` (already resolved,
/// as mountinfo shows resolved paths). `None` when no line covers it (no `/` in the text).
pub fn propagation(mountinfo_text: &str, dir: &Path) -> Option<Propagation> {
    let mut best: Option<(usize, Propagation)> = None;
    for line in mountinfo_text.lines() {
        let Some(entry) = mountinfo::parse_line(line) else {
            continue;
        };
        if !dir.starts_with(&entry.mount_point) {
            continue;
        }
        let depth = Path::new(&entry.mount_point).components().count();
        // Optional fields: after the 6 fixed ones, up to the ` - ` separator.
        let left = line.split(" - ").next().unwrap_or("");
        let optional: Vec<&str> = left.split(' ').skip(6).collect();
        let mount_point = entry.mount_point.clone();
        let p = if let Some(g) = optional.iter().find_map(|f| f.strip_prefix("shared:")) {
            Propagation::Shared {
                mount_point,
                peer_group: g.to_string(),
            }
        } else if optional.iter().any(|f| f.starts_with("master:")) {
            Propagation::Slave { mount_point }
        } else {
            Propagation::Private { mount_point }
        };
        // Deeper mount points win; at the same one, the later line (stacked on top).
        if best.as_ref().is_none_or(|(d, _)| depth >= *d) {
            best = Some((depth, p));
        }
    }
    best.map(|(_, p)| p)
}

pub fn propagation_check(p: Option<Propagation>, dir: &Path) -> Check {
    let name = "kubelet dir propagation";
    let fix = format!(
        "mount the kubelet dir into the plugin with mountPropagation: Bidirectional (the chart \
         does), and make it shared on the host (`findmnt -o TARGET,PROPAGATION {}`; \
         `mount --make-rshared /` if it is private)",
        dir.display()
    );
    match p {
        Some(Propagation::Shared {
            mount_point,
            peer_group,
        }) => Check::ok(
            name,
            format!(
                "{} is on mount {mount_point}, shared (peer group {peer_group})",
                dir.display()
            ),
        ),
        Some(Propagation::Slave { mount_point }) => Check::fail(
            name,
            format!(
                "{} is on mount {mount_point}, slave only: volumes this plugin mounts stay \
                 invisible to kubelet and the pods",
                dir.display()
            ),
            fix,
        ),
        Some(Propagation::Private { mount_point }) => Check::fail(
            name,
            format!(
                "{} is on mount {mount_point}, private: volumes this plugin mounts stay \
                 invisible to kubelet and the pods",
                dir.display()
            ),
            fix,
        ),
        None => Check::fail(
            name,
            format!("no mount in /proc/self/mountinfo holds {}", dir.display()),
            "is /proc mounted in the plugin?",
        ),
    }
}

/// Where attached disks appear by serial. `local` is the local backend's own directory,
/// made when its driver starts.
pub fn by_id_dir(dir: &Path, local: bool) -> Check {
    let name = if local {
        "by-id dir (local backend)"
    } else {
        "by-id dir"
    };
    match std::fs::read_dir(dir) {
        Ok(rd) => Check::ok(name, format!("{} ({} entries)", dir.display(), rd.count())),
        Err(e) if local && e.kind() == std::io::ErrorKind::NotFound => Check::warn(
            name,
            format!("{} does not exist yet", dir.display()),
            "it is made when the driver starts with this --local-dir",
        ),
        Err(e) => Check::fail(
            name,
            format!("{}: {e}", dir.display()),
            "mount the host's /dev into the plugin (hostPath /dev, as the chart does) and run \
             udev on the host: attached disks are found by serial there",
        ),
    }
}

/// The local backend's loop devices.
pub fn loop_control(path: &Path) -> Check {
    let name = "loop devices";
    if path.exists() {
        Check::ok(name, format!("{} present", path.display()))
    } else {
        Check::fail(
            name,
            format!("{} missing", path.display()),
            "load the loop module (modprobe loop); the local backend attaches volumes as loop \
             devices",
        )
    }
}

/// Each metadata source in `[Metadata] search-order`, asked on its own, so the output says
/// which one answered and why the others did not. Sources after the first answer are not
/// asked (the driver never asks them either).
pub async fn metadata_sources(opts: &MetadataOptions, timeout: Duration) -> Vec<Check> {
    let mut out = Vec::new();
    let mut answered = false;
    for source in &opts.metadata.search_order {
        let name = format!("metadata {source}");
        if answered {
            out.push(Check::skip(name, "an earlier source answered"));
            continue;
        }
        let mut one = opts.clone();
        one.metadata.search_order = vec![*source];
        let adapter = match metadata::from_options(one) {
            Ok(a) => a,
            Err(e) => {
                out.push(Check::fail(
                    name,
                    e.detail(),
                    "fix [Metadata] in cloud.conf",
                ));
                continue;
            }
        };
        match tokio::time::timeout(timeout, adapter.instance()).await {
            Ok(Ok(inst)) => {
                answered = true;
                out.push(Check::ok(
                    name,
                    format!(
                        "instance {} in availability zone {}",
                        inst.uuid,
                        inst.availability_zone.as_deref().unwrap_or("(none)")
                    ),
                ));
            }
            Ok(Err(e)) => out.push(Check::warn(
                name,
                e.to_string(),
                match source {
                    metadata::Source::ConfigDrive => {
                        "fine when the next source answers; else boot the server with a \
                         config drive or mount the host's /dev"
                    }
                    metadata::Source::MetadataService => {
                        "fine when another source answers; else the plugin needs hostNetwork \
                         to reach the metadata service (169.254.169.254)"
                    }
                },
            )),
            Err(_) => out.push(Check::warn(
                name,
                format!("no answer within {}s", timeout.as_secs()),
                "is the metadata service reachable from the plugin (hostNetwork)?",
            )),
        }
    }
    // A source that failed before one answered costs only time (e.g. no config drive).
    if answered {
        for c in &mut out {
            if c.status == Status::Warn {
                *c = Check::skip(
                    c.name.clone(),
                    format!("not available ({}); a later source answered", c.detail),
                );
            }
        }
    }
    out
}

/// What NodeGetInfo would answer: the node id, and its zone when topology is on.
pub async fn node_info(
    core: &Arc<NodeCore>,
    args: &ServeArgs,
    timeout: Duration,
) -> (Check, Option<NodeInfo>) {
    let name = "node id";
    let fix = if args.backend == Backend::Local {
        "set --node-id"
    } else {
        "the node id is the Nova instance UUID: make a metadata source answer, or set \
         --node-id (env CINDER_CSI_NODE_ID) to that UUID"
    };
    let info = match tokio::time::timeout(timeout, core.info()).await {
        Ok(Ok(info)) => info,
        Ok(Err(e)) => return (Check::fail(name, e.to_string(), fix), None),
        Err(_) => {
            return (
                Check::fail(
                    name,
                    format!("no answer within {}s", timeout.as_secs()),
                    fix,
                ),
                None,
            )
        }
    };
    let zone = info
        .topology
        .as_ref()
        .and_then(|t| t.get(ZONE_TOPOLOGY_KEY))
        .map(|z| format!(", zone {z}"))
        .unwrap_or_default();
    let mut detail = format!("{}{zone}", info.node_id);
    if args.backend == Backend::Openstack && uuid::Uuid::try_parse(&info.node_id).is_err() {
        return (
            Check::fail(name, format!("{detail} is not a UUID"), fix),
            Some(info),
        );
    }
    if args.node_id.is_some() {
        detail.push_str(" (from --node-id)");
    }
    (Check::ok(name, detail), Some(info))
}

/// The node's topology zone: missing with topology on means volumes are not pinned to it.
pub fn topology(info: &NodeInfo, with_topology: bool) -> Check {
    let name = "node topology";
    let Some(t) = &info.topology else {
        return Check::skip(name, "--with-topology=false: the node reports no topology");
    };
    match t.get(ZONE_TOPOLOGY_KEY) {
        Some(_) => Check::ok(
            name,
            t.iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(", "),
        ),
        None if with_topology => Check::warn(
            name,
            "no availability zone: the metadata gave none (or --node-id is set)",
            format!(
                "give the zone with --additional-topology {ZONE_TOPOLOGY_KEY}=AZ, or run with \
                 --with-topology=false"
            ),
        ),
        None => Check::skip(name, "topology off"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::fake::FakeHost;

    const MOUNTINFO: &str = "\
22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
30 22 0:5 / /dev rw,nosuid shared:2 - devtmpfs udev rw
41 22 8:1 /var/lib/kubelet /var/lib/kubelet rw,relatime master:1 - ext4 /dev/sda1 rw
50 22 0:40 / /data rw - tmpfs tmpfs rw
51 50 0:41 / /data/kubelet rw shared:7 master:3 - tmpfs tmpfs rw
";

    #[test]
    fn propagation_of_the_deepest_mount_holding_the_dir() {
        let p = |d: &str| propagation(MOUNTINFO, Path::new(d)).unwrap();
        assert_eq!(
            p("/var/lib/kubelet"),
            Propagation::Slave {
                mount_point: "/var/lib/kubelet".into()
            }
        );
        assert_eq!(
            p("/var/lib/kubelet2"),
            Propagation::Shared {
                mount_point: "/".into(),
                peer_group: "1".into()
            }
        );
        assert_eq!(
            p("/data/x"),
            Propagation::Private {
                mount_point: "/data".into()
            }
        );
        // shared and master at once (a Bidirectional mount in a pod): shared wins.
        assert!(matches!(
            p("/data/kubelet/pods"),
            Propagation::Shared { .. }
        ));
        assert!(propagation("", Path::new("/x")).is_none());
    }

    #[test]
    fn only_shared_propagation_passes() {
        let dir = Path::new("/var/lib/kubelet");
        let c = propagation_check(propagation(MOUNTINFO, dir), dir);
        assert_eq!(c.status, Status::Fail);
        assert!(c.detail.contains("slave only"), "{c:?}");
        assert!(c.fix.unwrap().contains("Bidirectional"));
        let dir = Path::new("/data/kubelet");
        let c = propagation_check(propagation(MOUNTINFO, dir), dir);
        assert_eq!(c.status, Status::Ok, "{c:?}");
        assert!(c.detail.contains("peer group 7"), "{c:?}");
        assert_eq!(propagation_check(None, dir).status, Status::Fail);
    }

    #[test]
    fn missing_default_tools_fail_others_warn() {
        let fake = FakeHost::new();
        assert!(tools(fake.host().filesystems.as_ref())
            .iter()
            .all(|c| c.status == Status::Ok));
        fake.state().missing_tools = vec!["mkfs.ext4".into(), "mkfs.xfs".into()];
        let checks = tools(fake.host().filesystems.as_ref());
        let by = |n: &str| checks.iter().find(|c| c.name == n).unwrap().clone();
        assert_eq!(by("tools ext4").status, Status::Fail);
        assert!(by("tools ext4").fix.unwrap().contains("e2fsprogs"));
        assert_eq!(by("tools xfs").status, Status::Warn);
        assert!(by("tools xfs").fix.unwrap().contains("xfsprogs"));
        assert_eq!(by("tools btrfs").status, Status::Ok);
        assert_eq!(checks.len(), FsKind::ALL.len());
    }

    #[test]
    fn directories() {
        let tmp = tempfile::tempdir().unwrap();
        assert_eq!(kubelet_dir(tmp.path()).status, Status::Ok);
        let missing = tmp.path().join("nope");
        assert_eq!(kubelet_dir(&missing).status, Status::Fail);
        let file = tmp.path().join("f");
        std::fs::write(&file, "").unwrap();
        assert_eq!(kubelet_dir(&file).status, Status::Fail);
        std::fs::create_dir(tmp.path().join("by-id")).unwrap();
        std::fs::write(tmp.path().join("by-id/virtio-abc"), "").unwrap();
        let c = by_id_dir(&tmp.path().join("by-id"), false);
        assert_eq!(c.status, Status::Ok);
        assert!(c.detail.ends_with("(1 entries)"), "{c:?}");
        assert_eq!(by_id_dir(&missing, false).status, Status::Fail);
        assert_eq!(by_id_dir(&missing, true).status, Status::Warn);
        assert_eq!(loop_control(&missing).status, Status::Fail);
        assert_eq!(loop_control(&file).status, Status::Ok);
    }

    #[tokio::test]
    async fn metadata_sources_say_which_answered() {
        let tmp = tempfile::tempdir().unwrap();
        let opts = MetadataOptions {
            // No config drive label here, and a metadata service nobody listens on.
            config_drive_label_dir: tmp.path().to_path_buf(),
            metadata: crate::config::MetadataConfig {
                metadata_url: "http://127.0.0.1:9/openstack/latest/meta_data.json".into(),
                request_timeout: Duration::from_millis(200),
                ..Default::default()
            },
            connect_timeout: Duration::from_millis(200),
            ..Default::default()
        };
        let checks = metadata_sources(&opts, Duration::from_secs(20)).await;
        assert_eq!(checks.len(), 2);
        assert!(
            checks.iter().all(|c| c.status == Status::Warn),
            "{checks:?}"
        );
        assert_eq!(checks[0].name, "metadata configDrive");
    }

    #[test]
    fn topology_zone() {
        let mut t = crate::driver::types::Topology::new();
        let info = |t: Option<crate::driver::types::Topology>| NodeInfo {
            node_id: "n".into(),
            max_volumes_per_node: 0,
            topology: t,
        };
        assert_eq!(topology(&info(Some(t.clone())), true).status, Status::Warn);
        assert_eq!(topology(&info(None), false).status, Status::Skip);
        t.insert(ZONE_TOPOLOGY_KEY.into(), "nova".into());
        let c = topology(&info(Some(t)), true);
        assert_eq!(c.status, Status::Ok);
        assert_eq!(c.detail, format!("{ZONE_TOPOLOGY_KEY}=nova"));
    }
}
