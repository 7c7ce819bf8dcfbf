//! The demo's story, as kubelet and the sidecars would drive it: provision, attach, format,
//! mount into a pod, write, snapshot, restore into a larger volume, expand online, and undo
//! it all. Each side effect pushes its undo, so teardown (also after a failure) is exact.

use std::collections::HashMap;

use super::report::{Report, StepError};
use super::state::{blocking, status, Scenario, Undo, FILE_NAME};
use crate::server::csi::pb;
use crate::tools::ctl::render::human_bytes;

const GIB: i64 = 1 << 30;

impl Scenario<'_> {
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
}
