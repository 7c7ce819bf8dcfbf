//! The demo's controller steps that make something: CreateVolume (empty or from a snapshot)
//! and CreateSnapshot until it is ready. Each pushes its undo.

use std::collections::HashMap;

use super::report::{Report, StepError};
use super::state::{short, status, Scenario, Undo};
use crate::server::csi::pb;
use crate::tools::ctl::render::human_bytes;

impl Scenario<'_> {
    pub(super) async fn create(
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

    pub(super) async fn snapshot(&self, vol: &str) -> Result<(String, String), StepError> {
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
