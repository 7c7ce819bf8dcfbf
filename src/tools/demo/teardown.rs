//! Teardown: each recorded side effect undone as a visible step, newest first.

use std::collections::HashMap;

use super::report::{Report, StepError};
use super::state::{short, status, Scenario, Undo};
use crate::server::csi::pb;

impl Scenario<'_> {
    /// Run one undo as a visible step.
    pub async fn undo_one(&self, r: &mut Report, u: Undo) -> Result<(), StepError> {
        let c = self.client;
        match u {
            Undo::NodeUnpublish { volume, target } => {
                let msg = pb::NodeUnpublishVolumeRequest {
                    volume_id: volume,
                    target_path: target.display().to_string(),
                };
                let shown = self.show(&target);
                r.step("NodeUnpublishVolume", async {
                    c.node()
                        .node_unpublish_volume(c.req(msg))
                        .await
                        .map_err(|s| status("NodeUnpublishVolume", s))?;
                    if target.exists() {
                        return Err(format!("{shown} still exists (CSI: the SP removes it)"));
                    }
                    Ok(((), format!("{shown} unmounted and removed")))
                })
                .await
            }
            Undo::NodeUnstage { volume, staging } => {
                let msg = pb::NodeUnstageVolumeRequest {
                    volume_id: volume,
                    staging_target_path: staging.display().to_string(),
                };
                let shown = self.show(&staging);
                r.step("NodeUnstageVolume", async {
                    c.node()
                        .node_unstage_volume(c.req(msg))
                        .await
                        .map_err(|s| status("NodeUnstageVolume", s))?;
                    Ok(((), format!("{shown} unmounted")))
                })
                .await
            }
            Undo::ControllerUnpublish { volume, node } => {
                let msg = pb::ControllerUnpublishVolumeRequest {
                    volume_id: volume.clone(),
                    node_id: node.clone(),
                    secrets: HashMap::new(),
                };
                r.step("ControllerUnpublishVolume", async {
                    c.controller()
                        .controller_unpublish_volume(c.req(msg))
                        .await
                        .map_err(|s| status("ControllerUnpublishVolume", s))?;
                    Ok((
                        (),
                        format!("volume {} detached from {node}", short(&volume)),
                    ))
                })
                .await
            }
            Undo::DeleteVolume { volume } => {
                let msg = pb::DeleteVolumeRequest {
                    volume_id: volume.clone(),
                    secrets: HashMap::new(),
                };
                r.step("DeleteVolume", async {
                    c.controller()
                        .delete_volume(c.req(msg))
                        .await
                        .map_err(|s| status("DeleteVolume", s))?;
                    Ok(((), format!("volume {}", short(&volume))))
                })
                .await
            }
            Undo::DeleteSnapshot { snapshot } => {
                let msg = pb::DeleteSnapshotRequest {
                    snapshot_id: snapshot.clone(),
                    secrets: HashMap::new(),
                };
                r.step("DeleteSnapshot", async {
                    c.controller()
                        .delete_snapshot(c.req(msg))
                        .await
                        .map_err(|s| status("DeleteSnapshot", s))?;
                    Ok(((), format!("snapshot {}", short(&snapshot))))
                })
                .await
            }
        }
    }
}
