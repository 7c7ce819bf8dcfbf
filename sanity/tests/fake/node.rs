use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use cinder_csi_sanity::pb::node_service_capability::rpc::Type as Cap;
use cinder_csi_sanity::pb::node_service_capability::{Rpc, Type as CapType};
use cinder_csi_sanity::pb::volume_capability::AccessType;
use cinder_csi_sanity::pb::volume_usage::Unit;
use cinder_csi_sanity::pb::*;
use tonic::{Request, Response, Status};

use super::state::{Access, Data, Vol};
use super::{Fault, Inner, NODE_ID, TOPOLOGY_KEY, ZONE};

pub struct Node(pub Arc<Inner>);

/// What a simulated mount leaves in the staging directory.
const STAGED_MARKER: &str = ".fake-staged-device";

fn access(cap: &Option<VolumeCapability>) -> Result<Access, Status> {
    match cap.as_ref().and_then(|c| c.access_type.as_ref()) {
        Some(AccessType::Mount(_)) => Ok(Access::Mount),
        Some(AccessType::Block(_)) => Ok(Access::Block),
        None => Err(Status::invalid_argument(
            "volume_capability with an access_type is required",
        )),
    }
}

fn io(e: std::io::Error, what: &str) -> Status {
    Status::internal(format!("{what}: {e}"))
}

/// Put the volume's data at the target: a directory of files, or a file of bytes.
fn materialise(target: &Path, a: Access, data: &Data) -> Result<(), Status> {
    match a {
        Access::Mount => {
            std::fs::create_dir(target).map_err(|e| io(e, "create target"))?;
            for (name, bytes) in &data.files {
                std::fs::write(target.join(name), bytes).map_err(|e| io(e, "write file"))?;
            }
        }
        Access::Block => {
            std::fs::write(target, &data.block).map_err(|e| io(e, "create block target"))?
        }
    }
    Ok(())
}

/// Read back what the workload wrote through the target.
fn absorb(target: &Path, a: Access, data: &mut Data) -> Result<(), Status> {
    match a {
        Access::Mount => {
            data.files.clear();
            for e in std::fs::read_dir(target)
                .map_err(|e| io(e, "read target"))?
                .flatten()
            {
                let bytes = std::fs::read(e.path()).map_err(|e| io(e, "read file"))?;
                data.files
                    .insert(e.file_name().to_string_lossy().into_owned(), bytes);
            }
        }
        Access::Block => {
            data.block = std::fs::read(target).map_err(|e| io(e, "read block target"))?
        }
    }
    Ok(())
}

impl Node {
    fn missing_id(&self) -> Status {
        if self.0.has(Fault::MissingVolumeIdNotFound) {
            Status::not_found("no such volume")
        } else {
            Status::invalid_argument("volume_id is required")
        }
    }

    fn stage_cap(&self) -> bool {
        self.0.full()
    }
}

fn vol<'a>(
    vols: &'a mut std::collections::BTreeMap<String, Vol>,
    id: &str,
) -> Result<&'a mut Vol, Status> {
    vols.get_mut(id)
        .ok_or_else(|| Status::not_found(format!("volume {id} does not exist")))
}

#[tonic::async_trait]
impl node_server::Node for Node {
    async fn node_get_capabilities(
        &self,
        _: Request<NodeGetCapabilitiesRequest>,
    ) -> Result<Response<NodeGetCapabilitiesResponse>, Status> {
        let caps: Vec<Cap> = if self.0.full() {
            vec![
                Cap::StageUnstageVolume,
                Cap::GetVolumeStats,
                Cap::ExpandVolume,
            ]
        } else {
            vec![]
        };
        let capabilities = caps
            .into_iter()
            .map(|c| NodeServiceCapability {
                r#type: Some(CapType::Rpc(Rpc { r#type: c as i32 })),
            })
            .collect();
        Ok(Response::new(NodeGetCapabilitiesResponse { capabilities }))
    }

    async fn node_get_info(
        &self,
        _: Request<NodeGetInfoRequest>,
    ) -> Result<Response<NodeGetInfoResponse>, Status> {
        let topo = self.0.full().then(|| Topology {
            segments: HashMap::from([(TOPOLOGY_KEY.to_string(), ZONE.to_string())]),
        });
        Ok(Response::new(NodeGetInfoResponse {
            node_id: NODE_ID.into(),
            max_volumes_per_node: 16,
            accessible_topology: topo,
        }))
    }

    async fn node_stage_volume(
        &self,
        req: Request<NodeStageVolumeRequest>,
    ) -> Result<Response<NodeStageVolumeResponse>, Status> {
        let r = req.into_inner();
        if r.volume_id.is_empty() {
            return Err(self.missing_id());
        }
        if r.staging_target_path.is_empty() {
            return Err(Status::invalid_argument("staging_target_path is required"));
        }
        let a = access(&r.volume_capability)?;
        let mut st = self.0.state.lock().unwrap();
        let v = vol(&mut st.vols, &r.volume_id)?;
        if let Some((path, staged)) = &v.staged {
            if *path == r.staging_target_path
                && (*staged == a || self.0.has(Fault::IncompatibleRepublishOk))
            {
                return Ok(Response::new(NodeStageVolumeResponse {}));
            }
            return Err(Status::already_exists(
                "staged elsewhere or with another capability",
            ));
        }
        std::fs::write(
            Path::new(&r.staging_target_path).join(STAGED_MARKER),
            v.id.as_bytes(),
        )
        .map_err(|e| io(e, "stage"))?;
        if self.0.has(Fault::StageFormats) {
            v.data = Data::default();
        }
        v.staged = Some((r.staging_target_path, a));
        Ok(Response::new(NodeStageVolumeResponse {}))
    }

    async fn node_unstage_volume(
        &self,
        req: Request<NodeUnstageVolumeRequest>,
    ) -> Result<Response<NodeUnstageVolumeResponse>, Status> {
        let r = req.into_inner();
        if r.volume_id.is_empty() {
            return Err(self.missing_id());
        }
        if r.staging_target_path.is_empty() {
            return Err(Status::invalid_argument("staging_target_path is required"));
        }
        let mut st = self.0.state.lock().unwrap();
        let v = vol(&mut st.vols, &r.volume_id)?;
        if v.staged
            .as_ref()
            .is_some_and(|(p, _)| *p == r.staging_target_path)
        {
            if !self.0.has(Fault::UnstageLeavesStaging) {
                std::fs::remove_file(Path::new(&r.staging_target_path).join(STAGED_MARKER))
                    .map_err(|e| io(e, "unstage"))?;
            }
            v.staged = None;
        }
        Ok(Response::new(NodeUnstageVolumeResponse {}))
    }

    async fn node_publish_volume(
        &self,
        req: Request<NodePublishVolumeRequest>,
    ) -> Result<Response<NodePublishVolumeResponse>, Status> {
        let r = req.into_inner();
        if r.volume_id.is_empty() {
            return Err(self.missing_id());
        }
        if r.target_path.is_empty() {
            return Err(Status::invalid_argument("target_path is required"));
        }
        let a = access(&r.volume_capability)?;
        let stage_cap = self.stage_cap();
        let mut st = self.0.state.lock().unwrap();
        let v = vol(&mut st.vols, &r.volume_id)?;
        if stage_cap {
            if r.staging_target_path.is_empty() {
                return Err(Status::failed_precondition(
                    "staging_target_path is required: the driver stages volumes",
                ));
            }
            if v.staged.as_ref().map(|(p, _)| p) != Some(&r.staging_target_path) {
                return Err(Status::failed_precondition(
                    "the volume is not staged at staging_target_path",
                ));
            }
        }
        if let Some((ro, _)) = v.targets.get(&r.target_path) {
            if *ro == r.readonly || self.0.has(Fault::IncompatibleRepublishOk) {
                return Ok(Response::new(NodePublishVolumeResponse {}));
            }
            return Err(Status::already_exists(
                "published at this target with another readonly flag",
            ));
        }
        materialise(Path::new(&r.target_path), a, &v.data)?;
        v.targets.insert(r.target_path, (r.readonly, a));
        Ok(Response::new(NodePublishVolumeResponse {}))
    }

    async fn node_unpublish_volume(
        &self,
        req: Request<NodeUnpublishVolumeRequest>,
    ) -> Result<Response<NodeUnpublishVolumeResponse>, Status> {
        let r = req.into_inner();
        if r.volume_id.is_empty() {
            return Err(self.missing_id());
        }
        if r.target_path.is_empty() {
            return Err(Status::invalid_argument("target_path is required"));
        }
        let mut st = self.0.state.lock().unwrap();
        let v = vol(&mut st.vols, &r.volume_id)?;
        if let Some((ro, a)) = v.targets.remove(&r.target_path) {
            let target = Path::new(&r.target_path);
            if !ro {
                absorb(target, a, &mut v.data)?;
            }
            if !self.0.has(Fault::UnpublishLeavesTarget) {
                match a {
                    Access::Mount => std::fs::remove_dir_all(target),
                    Access::Block => std::fs::remove_file(target),
                }
                .map_err(|e| io(e, "remove target"))?;
            }
        }
        Ok(Response::new(NodeUnpublishVolumeResponse {}))
    }

    async fn node_get_volume_stats(
        &self,
        req: Request<NodeGetVolumeStatsRequest>,
    ) -> Result<Response<NodeGetVolumeStatsResponse>, Status> {
        let r = req.into_inner();
        if r.volume_id.is_empty() {
            return Err(self.missing_id());
        }
        if r.volume_path.is_empty() {
            return Err(Status::invalid_argument("volume_path is required"));
        }
        let mut st = self.0.state.lock().unwrap();
        let v = vol(&mut st.vols, &r.volume_id)?;
        let here = v.targets.contains_key(&r.volume_path)
            || v.staged.as_ref().is_some_and(|(p, _)| *p == r.volume_path);
        if !here {
            return Err(Status::not_found(format!(
                "volume {} is not at {}",
                v.id, r.volume_path
            )));
        }
        let used: i64 = v.data.files.values().map(|f| f.len() as i64).sum();
        let usage = vec![
            VolumeUsage {
                available: v.size - used,
                total: v.size,
                used,
                unit: Unit::Bytes as i32,
            },
            VolumeUsage {
                available: 1000,
                total: 1000,
                used: 0,
                unit: Unit::Inodes as i32,
            },
        ];
        Ok(Response::new(NodeGetVolumeStatsResponse {
            usage,
            volume_condition: None,
        }))
    }

    async fn node_expand_volume(
        &self,
        req: Request<NodeExpandVolumeRequest>,
    ) -> Result<Response<NodeExpandVolumeResponse>, Status> {
        let r = req.into_inner();
        if r.volume_id.is_empty() {
            return Err(self.missing_id());
        }
        if r.volume_path.is_empty() {
            return Err(Status::invalid_argument("volume_path is required"));
        }
        let mut st = self.0.state.lock().unwrap();
        let v = vol(&mut st.vols, &r.volume_id)?;
        let here = v.targets.contains_key(&r.volume_path)
            || v.staged.as_ref().is_some_and(|(p, _)| *p == r.volume_path);
        if !here {
            return Err(Status::not_found(format!(
                "volume {} is not at {}",
                v.id, r.volume_path
            )));
        }
        Ok(Response::new(NodeExpandVolumeResponse {
            capacity_bytes: v.size,
        }))
    }
}
