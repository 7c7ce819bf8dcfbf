//! What a case works with: the configuration, the advertised capabilities, deadline-bound RPC
//! calls, and the tracker. The tracked calls (`create_volume`, `controller_publish_volume`,
//! `node_stage_volume`, ...) record what they created so the runner can undo it; the `raw_*`
//! variants do not, for requests about volumes the case does not own.

use std::collections::HashMap;
use std::time::Duration;

use tonic::{Code, Request, Status};

use crate::caps::Caps;
use crate::check::describe;
use crate::client::Clients;
use crate::config::{AccessType, Config};
use crate::pb::volume_capability::access_mode::Mode;
use crate::pb::volume_capability::{AccessMode, AccessType as PbAccess, BlockVolume, MountVolume};
use crate::pb::*;
use crate::tracker::{Resource, Tracker};

/// Extra wait beyond the gRPC deadline before the runner gives up on an answer itself.
const GRACE: Duration = Duration::from_secs(5);

pub struct Ctx<'a> {
    pub cfg: &'a Config,
    pub caps: &'a Caps,
    clients: Clients,
    pub tracker: Tracker,
}

macro_rules! rpc {
    ($vis:vis $name:ident, $client:ident . $method:ident, $Req:ty => $Resp:ty) => {
        $vis async fn $name(&self, req: $Req) -> Result<$Resp, Status> {
            let mut c = self.clients.$client.clone();
            let mut r = Request::new(req);
            r.set_timeout(self.cfg.timeout);
            match tokio::time::timeout(self.cfg.timeout + GRACE, c.$method(r)).await {
                Ok(res) => res.map(tonic::Response::into_inner),
                Err(_) => Err(Status::deadline_exceeded(format!(
                    "{} gave no answer within {:?}",
                    stringify!($method),
                    self.cfg.timeout
                ))),
            }
        }
    };
}

impl<'a> Ctx<'a> {
    pub fn new(cfg: &'a Config, caps: &'a Caps, clients: Clients) -> Self {
        Self {
            cfg,
            caps,
            clients,
            tracker: Tracker::default(),
        }
    }

    rpc!(pub get_plugin_info, identity.get_plugin_info, GetPluginInfoRequest => GetPluginInfoResponse);
    rpc!(pub get_plugin_capabilities, identity.get_plugin_capabilities, GetPluginCapabilitiesRequest => GetPluginCapabilitiesResponse);
    rpc!(pub probe, identity.probe, ProbeRequest => ProbeResponse);
    rpc!(pub controller_get_capabilities, controller.controller_get_capabilities, ControllerGetCapabilitiesRequest => ControllerGetCapabilitiesResponse);
    rpc!(pub raw_create_volume, controller.create_volume, CreateVolumeRequest => CreateVolumeResponse);
    rpc!(pub raw_delete_volume, controller.delete_volume, DeleteVolumeRequest => DeleteVolumeResponse);
    rpc!(pub raw_controller_publish_volume, controller.controller_publish_volume, ControllerPublishVolumeRequest => ControllerPublishVolumeResponse);
    rpc!(pub raw_controller_unpublish_volume, controller.controller_unpublish_volume, ControllerUnpublishVolumeRequest => ControllerUnpublishVolumeResponse);
    rpc!(pub validate_volume_capabilities, controller.validate_volume_capabilities, ValidateVolumeCapabilitiesRequest => ValidateVolumeCapabilitiesResponse);
    rpc!(pub list_volumes, controller.list_volumes, ListVolumesRequest => ListVolumesResponse);
    rpc!(pub get_capacity, controller.get_capacity, GetCapacityRequest => GetCapacityResponse);
    rpc!(pub raw_create_snapshot, controller.create_snapshot, CreateSnapshotRequest => CreateSnapshotResponse);
    rpc!(pub raw_delete_snapshot, controller.delete_snapshot, DeleteSnapshotRequest => DeleteSnapshotResponse);
    rpc!(pub list_snapshots, controller.list_snapshots, ListSnapshotsRequest => ListSnapshotsResponse);
    rpc!(pub get_snapshot, controller.get_snapshot, GetSnapshotRequest => GetSnapshotResponse);
    rpc!(pub controller_expand_volume, controller.controller_expand_volume, ControllerExpandVolumeRequest => ControllerExpandVolumeResponse);
    rpc!(pub controller_get_volume, controller.controller_get_volume, ControllerGetVolumeRequest => ControllerGetVolumeResponse);
    rpc!(pub controller_modify_volume, controller.controller_modify_volume, ControllerModifyVolumeRequest => ControllerModifyVolumeResponse);
    rpc!(pub raw_node_stage_volume, node.node_stage_volume, NodeStageVolumeRequest => NodeStageVolumeResponse);
    rpc!(pub raw_node_unstage_volume, node.node_unstage_volume, NodeUnstageVolumeRequest => NodeUnstageVolumeResponse);
    rpc!(pub raw_node_publish_volume, node.node_publish_volume, NodePublishVolumeRequest => NodePublishVolumeResponse);
    rpc!(pub raw_node_unpublish_volume, node.node_unpublish_volume, NodeUnpublishVolumeRequest => NodeUnpublishVolumeResponse);
    rpc!(pub node_get_volume_stats, node.node_get_volume_stats, NodeGetVolumeStatsRequest => NodeGetVolumeStatsResponse);
    rpc!(pub node_expand_volume, node.node_expand_volume, NodeExpandVolumeRequest => NodeExpandVolumeResponse);
    rpc!(pub node_get_capabilities, node.node_get_capabilities, NodeGetCapabilitiesRequest => NodeGetCapabilitiesResponse);
    rpc!(pub node_get_info, node.node_get_info, NodeGetInfoRequest => NodeGetInfoResponse);

    pub async fn create_volume(
        &mut self,
        req: CreateVolumeRequest,
    ) -> Result<CreateVolumeResponse, Status> {
        let res = self.raw_create_volume(req).await;
        if let Ok(r) = &res {
            if let Some(v) = &r.volume {
                self.tracker.add_volume(&v.volume_id);
            }
        }
        res
    }

    pub async fn delete_volume(
        &mut self,
        req: DeleteVolumeRequest,
    ) -> Result<DeleteVolumeResponse, Status> {
        let id = req.volume_id.clone();
        let res = self.raw_delete_volume(req).await;
        if res.is_ok() {
            self.tracker.remove(&id);
        }
        res
    }

    pub async fn controller_publish_volume(
        &mut self,
        req: ControllerPublishVolumeRequest,
    ) -> Result<ControllerPublishVolumeResponse, Status> {
        self.tracker.published(&req.volume_id, &req.node_id);
        self.raw_controller_publish_volume(req).await
    }

    pub async fn controller_unpublish_volume(
        &mut self,
        req: ControllerUnpublishVolumeRequest,
    ) -> Result<ControllerUnpublishVolumeResponse, Status> {
        let (id, node) = (req.volume_id.clone(), req.node_id.clone());
        let res = self.raw_controller_unpublish_volume(req).await;
        if res.is_ok() {
            self.tracker.unpublished(&id, &node);
        }
        res
    }

    pub async fn node_stage_volume(
        &mut self,
        req: NodeStageVolumeRequest,
    ) -> Result<NodeStageVolumeResponse, Status> {
        self.tracker
            .staged(&req.volume_id, &req.staging_target_path);
        self.raw_node_stage_volume(req).await
    }

    pub async fn node_unstage_volume(
        &mut self,
        req: NodeUnstageVolumeRequest,
    ) -> Result<NodeUnstageVolumeResponse, Status> {
        let (id, path) = (req.volume_id.clone(), req.staging_target_path.clone());
        let res = self.raw_node_unstage_volume(req).await;
        if res.is_ok() {
            self.tracker.unstaged(&id, &path);
        }
        res
    }

    pub async fn node_publish_volume(
        &mut self,
        req: NodePublishVolumeRequest,
    ) -> Result<NodePublishVolumeResponse, Status> {
        self.tracker
            .node_published(&req.volume_id, &req.target_path);
        self.raw_node_publish_volume(req).await
    }

    pub async fn node_unpublish_volume(
        &mut self,
        req: NodeUnpublishVolumeRequest,
    ) -> Result<NodeUnpublishVolumeResponse, Status> {
        let (id, path) = (req.volume_id.clone(), req.target_path.clone());
        let res = self.raw_node_unpublish_volume(req).await;
        if res.is_ok() {
            self.tracker.node_unpublished(&id, &path);
        }
        res
    }

    pub async fn create_snapshot(
        &mut self,
        req: CreateSnapshotRequest,
    ) -> Result<CreateSnapshotResponse, Status> {
        let res = self.raw_create_snapshot(req).await;
        if let Ok(r) = &res {
            if let Some(s) = &r.snapshot {
                self.tracker.add_snapshot(&s.snapshot_id);
            }
        }
        res
    }

    pub async fn delete_snapshot(
        &mut self,
        req: DeleteSnapshotRequest,
    ) -> Result<DeleteSnapshotResponse, Status> {
        let id = req.snapshot_id.clone();
        let res = self.raw_delete_snapshot(req).await;
        if res.is_ok() {
            self.tracker.remove(&id);
        }
        res
    }

    /// Undo everything the case created, newest first. Returns one line per step that failed.
    pub async fn cleanup(&mut self) -> Vec<String> {
        let mut errors = Vec::new();
        let gone = [Code::NotFound];
        for item in self.tracker.drain_lifo() {
            match item {
                Resource::Volume(v) => {
                    for t in &v.targets {
                        let r = self
                            .raw_node_unpublish_volume(NodeUnpublishVolumeRequest {
                                volume_id: v.id.clone(),
                                target_path: t.clone(),
                            })
                            .await;
                        note(
                            &mut errors,
                            r,
                            &gone,
                            format!("NodeUnpublishVolume {} {t}", v.id),
                        );
                    }
                    if let Some(s) = &v.staging {
                        let r = self
                            .raw_node_unstage_volume(NodeUnstageVolumeRequest {
                                volume_id: v.id.clone(),
                                staging_target_path: s.clone(),
                            })
                            .await;
                        note(
                            &mut errors,
                            r,
                            &gone,
                            format!("NodeUnstageVolume {} {s}", v.id),
                        );
                    }
                    for n in &v.nodes {
                        let r = self
                            .raw_controller_unpublish_volume(ControllerUnpublishVolumeRequest {
                                volume_id: v.id.clone(),
                                node_id: n.clone(),
                                secrets: self
                                    .cfg
                                    .secrets
                                    .controller_unpublish_volume_secret
                                    .clone(),
                            })
                            .await;
                        note(
                            &mut errors,
                            r,
                            &gone,
                            format!("ControllerUnpublishVolume {} from {n}", v.id),
                        );
                    }
                    let r = self
                        .raw_delete_volume(DeleteVolumeRequest {
                            volume_id: v.id.clone(),
                            secrets: self.cfg.secrets.delete_volume_secret.clone(),
                        })
                        .await;
                    note(&mut errors, r, &[], format!("DeleteVolume {}", v.id));
                }
                Resource::Snapshot(id) => {
                    let r = self
                        .raw_delete_snapshot(DeleteSnapshotRequest {
                            snapshot_id: id.clone(),
                            secrets: self.cfg.secrets.delete_snapshot_secret.clone(),
                        })
                        .await;
                    note(&mut errors, r, &[], format!("DeleteSnapshot {id}"));
                }
            }
        }
        errors
    }

    // ---- request builders shared by the cases ----

    /// A name unique to this run: `<prefix>-<tag>-<random>`.
    pub fn unique_name(&self, tag: &str) -> String {
        let rand = uuid::Uuid::new_v4().simple().to_string();
        format!("{}-{tag}-{}", self.cfg.volume_prefix, &rand[..12])
    }

    /// A unique name exactly `len` bytes long (the CSI size limit is 128).
    pub fn unique_name_of_len(&self, tag: &str, len: usize) -> String {
        let mut n = self.unique_name(tag);
        while n.len() < len {
            n.push('x');
        }
        n.truncate(len);
        n
    }

    pub fn access_type(&self) -> PbAccess {
        match self.cfg.access_type {
            AccessType::Mount => PbAccess::Mount(MountVolume::default()),
            AccessType::Block => PbAccess::Block(BlockVolume {}),
        }
    }

    pub fn cap_with(&self, mode: Mode) -> VolumeCapability {
        VolumeCapability {
            access_type: Some(self.access_type()),
            access_mode: Some(AccessMode { mode: mode as i32 }),
        }
    }

    /// SINGLE_NODE_WRITER with the run's access type.
    pub fn cap(&self) -> VolumeCapability {
        self.cap_with(Mode::SingleNodeWriter)
    }

    /// Topology requirement for this node when the plugin advertises accessibility constraints.
    pub fn topology_requirement(&self) -> Option<TopologyRequirement> {
        if !self.caps.accessibility_constraints {
            return None;
        }
        let topo = self.caps.node_info.as_ref()?.accessible_topology.clone()?;
        Some(TopologyRequirement {
            requisite: vec![topo.clone()],
            preferred: vec![topo],
        })
    }

    /// A CreateVolumeRequest for `--volume-size` bytes exactly, with the run's parameters.
    pub fn create_request(&self, name: &str) -> CreateVolumeRequest {
        CreateVolumeRequest {
            name: name.to_string(),
            capacity_range: Some(CapacityRange {
                required_bytes: self.cfg.volume_size,
                limit_bytes: self.cfg.volume_size,
            }),
            volume_capabilities: vec![self.cap()],
            parameters: self.cfg.parameters.clone(),
            secrets: self.cfg.secrets.create_volume_secret.clone(),
            volume_content_source: None,
            accessibility_requirements: self.topology_requirement(),
            mutable_parameters: HashMap::new(),
        }
    }

    pub fn snapshot_request(&self, name: &str, source: &str) -> CreateSnapshotRequest {
        CreateSnapshotRequest {
            source_volume_id: source.to_string(),
            name: name.to_string(),
            secrets: self.cfg.secrets.create_snapshot_secret.clone(),
            parameters: self.cfg.snapshot_parameters.clone(),
        }
    }

    pub fn staging_path(&self) -> String {
        self.cfg.staging_dir.display().to_string()
    }

    pub fn target_path(&self) -> String {
        self.cfg.target_path().display().to_string()
    }
}

fn note<T>(errors: &mut Vec<String>, res: Result<T, Status>, also_ok: &[Code], what: String) {
    if let Err(s) = res {
        if !also_ok.contains(&s.code()) {
            errors.push(format!("cleanup: {what} failed: {}", describe(&s)));
        }
    }
}
