//! Attaching a volume and mounting it into a pod as the attacher and kubelet do:
//! ControllerPublish, NodeStage at kubelet's staging path, NodePublish into the pod's
//! directory. Each side effect pushes its undo.

use std::collections::HashMap;

use super::report::{Report, StepError};
use super::state::{short, status, Mounted, Scenario, Undo};
use crate::server::csi::pb;

const DRIVER: &str = "cinder.csi.openstack.org";

impl Scenario<'_> {
    pub(super) async fn attach_and_mount(
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
}

fn sorted(m: &HashMap<String, String>) -> std::collections::BTreeMap<&String, &String> {
    m.iter().collect()
}
