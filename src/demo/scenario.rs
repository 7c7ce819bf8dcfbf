//! The demo's story, as kubelet and the sidecars would drive it: provision, attach, format,
//! mount into a pod, write, snapshot, restore into a larger volume, expand online, and undo
//! it all. Each side effect pushes its undo, so teardown (also after a failure) is exact.

use std::collections::HashMap;

use super::report::{Report, StepError};
use super::state::{blocking, short, status, Mounted, Scenario, Undo, FILE_NAME};
use crate::csi::pb;
use crate::ctl::render::human_bytes;

const GIB: i64 = 1 << 30;
const DRIVER: &str = "cinder.csi.openstack.org";

impl Scenario<'_> {
    /// A path relative to the work directory, with volume ids shortened.
    pub(super) fn show(&self, p: &std::path::Path) -> String {
        let mut s = p
            .strip_prefix(&self.workdir)
            .unwrap_or(p)
            .display()
            .to_string();
        for id in &self.ids {
            s = s.replace(id.as_str(), &format!("{}…", short(id)));
        }
        s
    }

    fn capability(&self) -> pb::VolumeCapability {
        use pb::volume_capability::{access_mode::Mode, AccessMode, AccessType, MountVolume};
        pb::VolumeCapability {
            access_type: Some(AccessType::Mount(MountVolume {
                fs_type: self.fs_type.clone(),
                mount_flags: vec![],
                volume_mount_group: String::new(),
            })),
            access_mode: Some(AccessMode {
                mode: Mode::SingleNodeWriter as i32,
            }),
        }
    }

    pub async fn run(&mut self, r: &mut Report) -> Result<(), StepError> {
        let c = self.client;
        let (node_id, topology) = r
            .step("NodeGetInfo", async {
                let info = c
                    .node()
                    .node_get_info(c.req(pb::NodeGetInfoRequest {}))
                    .await
                    .map_err(|s| status("NodeGetInfo", s))?
                    .into_inner();
                let zone = info
                    .accessible_topology
                    .as_ref()
                    .and_then(|t| t.segments.get("topology.cinder.csi.openstack.org/zone"))
                    .map(|z| format!("zone {z}"))
                    .unwrap_or_else(|| "no zone".into());
                let detail = format!("node {}, {zone}", info.node_id);
                Ok(((info.node_id, info.accessible_topology), detail))
            })
            .await?;

        r.section("provision, attach, format, mount into a pod, write");
        let (vol, ctx) = self
            .create(r, "CreateVolume", "demo-data", GIB, None, topology.clone())
            .await?;
        let data = self
            .attach_and_mount(r, &vol, &node_id, &ctx, "", "pod-a")
            .await?;

        let file = data.target.join(FILE_NAME);
        let content = format!("written by the cinder-csi demo into volume {vol}\n");
        let want = content.clone();
        let len = want.len();
        let f2 = file.clone();
        r.step("write + fsync a file in the pod", async move {
            blocking(move || {
                use std::io::Write;
                let mut f = std::fs::File::create(&f2)?;
                f.write_all(content.as_bytes())?;
                f.sync_all()?;
                Ok(())
            })
            .await?;
            Ok(((), format!("{FILE_NAME} ({len} bytes, fsynced)")))
        })
        .await?;
        self.check_file(r, "read it back", &data.target, &want)
            .await?;

        r.section("snapshot, restore into a larger volume, read the file there");
        let snap = r
            .step("CreateSnapshot (until ready)", self.snapshot(&vol))
            .await?;
        self.undo.push(Undo::DeleteSnapshot {
            snapshot: snap.clone(),
        });

        let (restored, rctx) = self
            .create(
                r,
                "CreateVolume from the snapshot",
                "demo-restored",
                2 * GIB,
                Some(snap.clone()),
                topology,
            )
            .await?;
        let copy = self
            .attach_and_mount(r, &restored, &node_id, &rctx, " (restored)", "pod-b")
            .await?;
        self.check_file(r, "file intact in the restored copy", &copy.target, &want)
            .await?;
        let size = self.fs_size(&copy).await?;
        r.step("restored filesystem grown at stage", async move {
            if size > GIB + GIB / 2 {
                Ok(((), format!("{} from a 1 GiB snapshot", human_bytes(size))))
            } else {
                Err(format!(
                    "filesystem is {} on a 2 GiB volume",
                    human_bytes(size)
                ))
            }
        })
        .await?;

        r.section("expand the first volume while it is mounted");
        let before = self.fs_size(&data).await?;
        r.step("ControllerExpandVolume 1 → 2 GiB", async {
            let msg = pb::ControllerExpandVolumeRequest {
                volume_id: vol.clone(),
                capacity_range: Some(pb::CapacityRange {
                    required_bytes: 2 * GIB,
                    limit_bytes: 0,
                }),
                secrets: HashMap::new(),
                volume_capability: Some(self.capability()),
            };
            let resp = c
                .controller()
                .controller_expand_volume(c.req(msg))
                .await
                .map_err(|s| status("ControllerExpandVolume", s))?
                .into_inner();
            Ok((
                (),
                format!(
                    "{}, node expansion required: {}",
                    human_bytes(resp.capacity_bytes),
                    resp.node_expansion_required
                ),
            ))
        })
        .await?;
        r.step("NodeExpandVolume while mounted", async {
            let msg = pb::NodeExpandVolumeRequest {
                volume_id: vol.clone(),
                volume_path: data.target.display().to_string(),
                capacity_range: Some(pb::CapacityRange {
                    required_bytes: 2 * GIB,
                    limit_bytes: 0,
                }),
                staging_target_path: data.staging.display().to_string(),
                volume_capability: Some(self.capability()),
                secrets: HashMap::new(),
            };
            c.node()
                .node_expand_volume(c.req(msg))
                .await
                .map_err(|s| status("NodeExpandVolume", s))?;
            let after = self.fs_size(&data).await?;
            if after <= before {
                return Err(format!(
                    "filesystem still {} after the expand",
                    human_bytes(after)
                ));
            }
            Ok((
                (),
                format!(
                    "{} filesystem {} → {}",
                    self.fs_type,
                    human_bytes(before),
                    human_bytes(after)
                ),
            ))
        })
        .await?;
        self.check_file(r, "file still there after the grow", &data.target, &want)
            .await
    }

    async fn create(
        &mut self,
        r: &mut Report,
        step: &str,
        name: &str,
        bytes: i64,
        snapshot: Option<String>,
        topology: Option<pb::Topology>,
    ) -> Result<(String, HashMap<String, String>), StepError> {
        let c = self.client;
        let msg = pb::CreateVolumeRequest {
            name: format!("{name}-{}", std::process::id()),
            capacity_range: Some(pb::CapacityRange {
                required_bytes: bytes,
                limit_bytes: 0,
            }),
            volume_capabilities: vec![self.capability()],
            parameters: HashMap::new(),
            secrets: HashMap::new(),
            volume_content_source: snapshot.map(|s| pb::VolumeContentSource {
                r#type: Some(pb::volume_content_source::Type::Snapshot(
                    pb::volume_content_source::SnapshotSource { snapshot_id: s },
                )),
            }),
            accessibility_requirements: topology.map(|t| pb::TopologyRequirement {
                requisite: vec![t.clone()],
                preferred: vec![t],
            }),
            mutable_parameters: HashMap::new(),
        };
        let v = r
            .step(step, async {
                let v = c
                    .controller()
                    .create_volume(c.req(msg))
                    .await
                    .map_err(|s| status("CreateVolume", s))?
                    .into_inner()
                    .volume
                    .ok_or("CreateVolume returned no volume")?;
                let detail = format!(
                    "volume {} ({})",
                    short(&v.volume_id),
                    human_bytes(v.capacity_bytes)
                );
                Ok((v, detail))
            })
            .await?;
        self.undo.push(Undo::DeleteVolume {
            volume: v.volume_id.clone(),
        });
        self.ids.push(v.volume_id.clone());
        Ok((v.volume_id, v.volume_context))
    }

    async fn attach_and_mount(
        &mut self,
        r: &mut Report,
        vol: &str,
        node: &str,
        volume_context: &HashMap<String, String>,
        suffix: &str,
        pod: &str,
    ) -> Result<Mounted, StepError> {
        let c = self.client;
        let msg = pb::ControllerPublishVolumeRequest {
            volume_id: vol.to_string(),
            node_id: node.to_string(),
            volume_capability: Some(self.capability()),
            readonly: false,
            secrets: HashMap::new(),
            volume_context: volume_context.clone(),
        };
        let publish_context = r
            .step(&format!("ControllerPublishVolume{suffix}"), async {
                let pc = c
                    .controller()
                    .controller_publish_volume(c.req(msg))
                    .await
                    .map_err(|s| status("ControllerPublishVolume", s))?
                    .into_inner()
                    .publish_context;
                let detail = match pc.get("DevicePath") {
                    Some(dev) => format!("attached to {node} as {dev}"),
                    None => format!("attached to {node} {:?}", sorted(&pc)),
                };
                Ok((pc, detail))
            })
            .await?;
        self.undo.push(Undo::ControllerUnpublish {
            volume: vol.to_string(),
            node: node.to_string(),
        });

        let staging = self.kubelet.join(format!(
            "plugins/kubernetes.io/csi/{DRIVER}/{vol}/globalmount"
        ));
        let pod_dir = self.kubelet.join(format!(
            "pods/{pod}/volumes/kubernetes.io~csi/pvc-{}",
            short(vol)
        ));
        // The CO creates the staging directory and the target's parent (CSI spec).
        for d in [&staging, &pod_dir] {
            std::fs::create_dir_all(d).map_err(|e| format!("mkdir {}: {e}", d.display()))?;
        }
        let target = pod_dir.join("mount");
        let msg = pb::NodeStageVolumeRequest {
            volume_id: vol.to_string(),
            publish_context: publish_context.clone(),
            staging_target_path: staging.display().to_string(),
            volume_capability: Some(self.capability()),
            secrets: HashMap::new(),
            volume_context: volume_context.clone(),
        };
        let fs = self.fs_type.clone();
        let shown = self.show(&staging);
        let what = if suffix.is_empty() {
            " (mkfs + mount)"
        } else {
            " (mount + grow)"
        };
        r.step(&format!("NodeStageVolume{what}"), async {
            c.node()
                .node_stage_volume(c.req(msg))
                .await
                .map_err(|s| status("NodeStageVolume", s))?;
            Ok(((), format!("{fs} at {shown}")))
        })
        .await?;
        self.undo.push(Undo::NodeUnstage {
            volume: vol.to_string(),
            staging: staging.clone(),
        });

        let msg = pb::NodePublishVolumeRequest {
            volume_id: vol.to_string(),
            publish_context,
            staging_target_path: staging.display().to_string(),
            target_path: target.display().to_string(),
            volume_capability: Some(self.capability()),
            readonly: false,
            secrets: HashMap::new(),
            volume_context: volume_context.clone(),
        };
        let shown = self.show(&target);
        r.step(&format!("NodePublishVolume{suffix}"), async {
            c.node()
                .node_publish_volume(c.req(msg))
                .await
                .map_err(|s| status("NodePublishVolume", s))?;
            Ok(((), format!("into {shown}")))
        })
        .await?;
        self.undo.push(Undo::NodeUnpublish {
            volume: vol.to_string(),
            target: target.clone(),
        });
        Ok(Mounted {
            id: vol.to_string(),
            staging,
            target,
        })
    }

    async fn snapshot(&self, vol: &str) -> Result<(String, String), StepError> {
        let c = self.client;
        let msg = pb::CreateSnapshotRequest {
            source_volume_id: vol.to_string(),
            name: format!("demo-snap-{}", std::process::id()),
            secrets: HashMap::new(),
            parameters: HashMap::new(),
        };
        let mut s = c
            .controller()
            .create_snapshot(c.req(msg))
            .await
            .map_err(|s| status("CreateSnapshot", s))?
            .into_inner()
            .snapshot
            .ok_or("CreateSnapshot returned no snapshot")?;
        // ReadyToUse may come later (the snapshotter polls ListSnapshots; so do we).
        let deadline = tokio::time::Instant::now() + super::driver::RPC_TIMEOUT;
        while !s.ready_to_use {
            if tokio::time::Instant::now() >= deadline {
                return Err(format!("snapshot {} not ready in time", s.snapshot_id));
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            let msg = pb::ListSnapshotsRequest {
                snapshot_id: s.snapshot_id.clone(),
                ..Default::default()
            };
            let list = c
                .controller()
                .list_snapshots(c.req(msg))
                .await
                .map_err(|e| status("ListSnapshots", e))?
                .into_inner();
            if let Some(found) = list.entries.into_iter().find_map(|e| e.snapshot) {
                s = found;
            }
        }
        let detail = format!(
            "snapshot {} ({}) ready to use",
            short(&s.snapshot_id),
            human_bytes(s.size_bytes)
        );
        Ok((s.snapshot_id, detail))
    }
}

fn sorted(m: &HashMap<String, String>) -> std::collections::BTreeMap<&String, &String> {
    m.iter().collect()
}
