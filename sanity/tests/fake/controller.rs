use std::collections::HashMap;
use std::sync::Arc;

use cinder_csi_sanity::pb::controller_service_capability::rpc::Type as Cap;
use cinder_csi_sanity::pb::controller_service_capability::{Rpc, Type as CapType};
use cinder_csi_sanity::pb::volume_content_source::Type as Source;
use cinder_csi_sanity::pb::*;
use tonic::{Request, Response, Status};

use super::state::{new_id, page, Data, Snap, Vol};
use super::{Fault, Inner, NODE_ID, TOPOLOGY_KEY, ZONE};

pub struct Controller(pub Arc<Inner>);

const GIB: i64 = 1 << 30;
const MUTABLE_KEYS: &[&str] = &["iops", "throughput"];

fn topology() -> Topology {
    Topology {
        segments: HashMap::from([(TOPOLOGY_KEY.to_string(), ZONE.to_string())]),
    }
}

impl Controller {
    fn missing_id(&self) -> Status {
        if self.0.has(Fault::MissingVolumeIdNotFound) {
            Status::not_found("no such volume")
        } else {
            Status::invalid_argument("volume_id is required")
        }
    }

    fn to_volume(&self, v: &Vol) -> Volume {
        Volume {
            capacity_bytes: v.size,
            volume_id: v.id.clone(),
            volume_context: v.context.clone(),
            content_source: None,
            accessible_topology: if self.0.full() {
                vec![topology()]
            } else {
                vec![]
            },
        }
    }
}

fn check_caps(caps: &[VolumeCapability]) -> Result<(), Status> {
    if caps.is_empty() {
        return Err(Status::invalid_argument("volume_capabilities are required"));
    }
    for c in caps {
        if c.access_mode.is_none() || c.access_type.is_none() {
            return Err(Status::invalid_argument(
                "each volume capability needs access_mode and access_type",
            ));
        }
    }
    Ok(())
}

fn check_mutable(p: &HashMap<String, String>) -> Result<(), Status> {
    match p.keys().find(|k| !MUTABLE_KEYS.contains(&k.as_str())) {
        Some(k) => Err(Status::invalid_argument(format!(
            "unsupported mutable parameter {k:?}"
        ))),
        None => Ok(()),
    }
}

#[tonic::async_trait]
impl controller_server::Controller for Controller {
    async fn controller_get_capabilities(
        &self,
        _: Request<ControllerGetCapabilitiesRequest>,
    ) -> Result<Response<ControllerGetCapabilitiesResponse>, Status> {
        let caps: Vec<Cap> = if self.0.full() {
            vec![
                Cap::CreateDeleteVolume,
                Cap::PublishUnpublishVolume,
                Cap::ListVolumes,
                Cap::GetCapacity,
                Cap::CreateDeleteSnapshot,
                Cap::ListSnapshots,
                Cap::CloneVolume,
                Cap::PublishReadonly,
                Cap::ExpandVolume,
                Cap::ListVolumesPublishedNodes,
                Cap::GetVolume,
                Cap::ModifyVolume,
                Cap::GetSnapshot,
            ]
        } else {
            vec![Cap::CreateDeleteVolume]
        };
        let capabilities = caps
            .into_iter()
            .map(|c| ControllerServiceCapability {
                r#type: Some(CapType::Rpc(Rpc { r#type: c as i32 })),
            })
            .collect();
        Ok(Response::new(ControllerGetCapabilitiesResponse {
            capabilities,
        }))
    }

    async fn create_volume(
        &self,
        req: Request<CreateVolumeRequest>,
    ) -> Result<Response<CreateVolumeResponse>, Status> {
        let r = req.into_inner();
        if r.name.is_empty() {
            return Err(Status::invalid_argument("name is required"));
        }
        check_caps(&r.volume_capabilities)?;
        check_mutable(&r.mutable_parameters)?;
        let (req_b, lim) = r
            .capacity_range
            .map(|c| (c.required_bytes, c.limit_bytes))
            .unwrap_or((0, 0));
        if lim > 0 && req_b > lim {
            return Err(Status::out_of_range("required_bytes exceeds limit_bytes"));
        }
        let size = if req_b > 0 {
            req_b
        } else if lim > 0 {
            lim.min(GIB)
        } else {
            GIB
        };
        if let Some(t) = &r.accessibility_requirements {
            if !t.requisite.is_empty() && !t.requisite.contains(&topology()) {
                return Err(Status::resource_exhausted(
                    "this driver only provisions in zone-a",
                ));
            }
        }
        let mut st = self.0.state.lock().unwrap();
        let (source_key, data) = match r.volume_content_source.and_then(|s| s.r#type) {
            None => (None, Data::default()),
            Some(Source::Snapshot(s)) => match st.snaps.get(&s.snapshot_id) {
                Some(snap) => (Some(format!("snap:{}", s.snapshot_id)), snap.data.clone()),
                None => {
                    return Err(Status::not_found(format!(
                        "snapshot {} does not exist",
                        s.snapshot_id
                    )))
                }
            },
            Some(Source::Volume(v)) => match st.vols.get(&v.volume_id) {
                Some(src) => (Some(format!("vol:{}", v.volume_id)), src.data.clone()),
                None => {
                    return Err(Status::not_found(format!(
                        "volume {} does not exist",
                        v.volume_id
                    )))
                }
            },
        };
        if let Some(existing) = st.vols.values().find(|v| v.name == r.name) {
            if self.0.has(Fault::CreateRetryAlreadyExists) {
                return Err(Status::already_exists("a volume with this name exists"));
            }
            if !self.0.has(Fault::CreateNotIdempotent) {
                if existing.size != size || existing.source != source_key {
                    return Err(Status::already_exists(format!(
                        "volume {} exists with other arguments",
                        r.name
                    )));
                }
                return Ok(Response::new(CreateVolumeResponse {
                    volume: Some(self.to_volume(existing)),
                }));
            }
        }
        let id = new_id();
        let vol = Vol {
            id: id.clone(),
            name: r.name,
            size,
            source: source_key,
            context: HashMap::from([("fake/created-by".to_string(), "sanity-test".to_string())]),
            data,
            published: Default::default(),
            staged: None,
            targets: Default::default(),
            publish_calls: 0,
        };
        let out = self.to_volume(&vol);
        st.vols.insert(id, vol);
        Ok(Response::new(CreateVolumeResponse { volume: Some(out) }))
    }

    async fn delete_volume(
        &self,
        req: Request<DeleteVolumeRequest>,
    ) -> Result<Response<DeleteVolumeResponse>, Status> {
        let r = req.into_inner();
        if r.volume_id.is_empty() {
            return Err(self.missing_id());
        }
        let mut st = self.0.state.lock().unwrap();
        if !st.vols.contains_key(&r.volume_id) && self.0.has(Fault::DeleteUnknownNotFound) {
            return Err(Status::not_found("no such volume"));
        }
        if !self.0.has(Fault::DeleteIsNoOp) {
            st.vols.remove(&r.volume_id);
        }
        Ok(Response::new(DeleteVolumeResponse {}))
    }

    async fn controller_publish_volume(
        &self,
        req: Request<ControllerPublishVolumeRequest>,
    ) -> Result<Response<ControllerPublishVolumeResponse>, Status> {
        let r = req.into_inner();
        if r.volume_id.is_empty() {
            return Err(self.missing_id());
        }
        if r.node_id.is_empty() {
            return Err(Status::invalid_argument("node_id is required"));
        }
        check_caps(&r.volume_capability.into_iter().collect::<Vec<_>>())?;
        let mut st = self.0.state.lock().unwrap();
        let Some(v) = st.vols.get_mut(&r.volume_id) else {
            if self.0.has(Fault::PublishUnknownVolumeOk) {
                return Ok(Response::new(ControllerPublishVolumeResponse::default()));
            }
            return Err(Status::not_found(format!(
                "volume {} does not exist",
                r.volume_id
            )));
        };
        if r.node_id != NODE_ID {
            return Err(Status::not_found(format!(
                "node {} does not exist",
                r.node_id
            )));
        }
        if let Some(ro) = v.published.get(&r.node_id) {
            if *ro != r.readonly && !self.0.has(Fault::IncompatibleRepublishOk) {
                return Err(Status::already_exists(
                    "published to this node with another readonly flag",
                ));
            }
        }
        v.published.insert(r.node_id, r.readonly);
        v.publish_calls += 1;
        let mut pc = HashMap::from([("devicePath".to_string(), format!("/dev/fake/{}", v.id))]);
        if self.0.has(Fault::PublishContextChanges) {
            pc.insert("attachment".into(), v.publish_calls.to_string());
        }
        Ok(Response::new(ControllerPublishVolumeResponse {
            publish_context: pc,
        }))
    }

    async fn controller_unpublish_volume(
        &self,
        req: Request<ControllerUnpublishVolumeRequest>,
    ) -> Result<Response<ControllerUnpublishVolumeResponse>, Status> {
        let r = req.into_inner();
        if r.volume_id.is_empty() {
            return Err(self.missing_id());
        }
        let mut st = self.0.state.lock().unwrap();
        if let Some(v) = st.vols.get_mut(&r.volume_id) {
            if r.node_id.is_empty() {
                v.published.clear();
            } else {
                v.published.remove(&r.node_id);
            }
        }
        Ok(Response::new(ControllerUnpublishVolumeResponse {}))
    }

    async fn validate_volume_capabilities(
        &self,
        req: Request<ValidateVolumeCapabilitiesRequest>,
    ) -> Result<Response<ValidateVolumeCapabilitiesResponse>, Status> {
        let r = req.into_inner();
        if r.volume_id.is_empty() {
            return Err(self.missing_id());
        }
        check_caps(&r.volume_capabilities)?;
        if !self.0.state.lock().unwrap().vols.contains_key(&r.volume_id) {
            return Err(Status::not_found(format!(
                "volume {} does not exist",
                r.volume_id
            )));
        }
        if self.0.has(Fault::ValidateNeverConfirms) {
            return Ok(Response::new(ValidateVolumeCapabilitiesResponse {
                confirmed: None,
                message: "not today".into(),
            }));
        }
        let confirmed = validate_volume_capabilities_response::Confirmed {
            volume_context: r.volume_context,
            volume_capabilities: r.volume_capabilities,
            parameters: r.parameters,
            mutable_parameters: r.mutable_parameters,
        };
        Ok(Response::new(ValidateVolumeCapabilitiesResponse {
            confirmed: Some(confirmed),
            message: String::new(),
        }))
    }

    async fn list_volumes(
        &self,
        req: Request<ListVolumesRequest>,
    ) -> Result<Response<ListVolumesResponse>, Status> {
        let r = req.into_inner();
        let st = self.0.state.lock().unwrap();
        let all: Vec<list_volumes_response::Entry> = st
            .vols
            .values()
            .map(|v| list_volumes_response::Entry {
                volume: Some(self.to_volume(v)),
                status: Some(list_volumes_response::VolumeStatus {
                    published_node_ids: v.published.keys().cloned().collect(),
                    volume_condition: None,
                }),
            })
            .collect();
        let (entries, next_token) = page(
            &all,
            r.max_entries,
            &r.starting_token,
            self.0.has(Fault::InvalidTokenAccepted),
            self.0.has(Fault::PaginationIgnored),
        )?;
        Ok(Response::new(ListVolumesResponse {
            entries,
            next_token,
        }))
    }

    async fn get_capacity(
        &self,
        _: Request<GetCapacityRequest>,
    ) -> Result<Response<GetCapacityResponse>, Status> {
        Ok(Response::new(GetCapacityResponse {
            available_capacity: 1 << 40,
            maximum_volume_size: Some(1 << 40),
            minimum_volume_size: Some(1),
        }))
    }

    async fn controller_get_volume(
        &self,
        req: Request<ControllerGetVolumeRequest>,
    ) -> Result<Response<ControllerGetVolumeResponse>, Status> {
        let r = req.into_inner();
        if r.volume_id.is_empty() {
            return Err(self.missing_id());
        }
        let st = self.0.state.lock().unwrap();
        let v = st
            .vols
            .get(&r.volume_id)
            .ok_or_else(|| Status::not_found(format!("volume {} does not exist", r.volume_id)))?;
        Ok(Response::new(ControllerGetVolumeResponse {
            volume: Some(self.to_volume(v)),
            status: Some(controller_get_volume_response::VolumeStatus {
                published_node_ids: v.published.keys().cloned().collect(),
                volume_condition: None,
            }),
        }))
    }

    async fn controller_expand_volume(
        &self,
        req: Request<ControllerExpandVolumeRequest>,
    ) -> Result<Response<ControllerExpandVolumeResponse>, Status> {
        let r = req.into_inner();
        if r.volume_id.is_empty() {
            return Err(self.missing_id());
        }
        let want = r
            .capacity_range
            .map(|c| c.required_bytes)
            .ok_or_else(|| Status::invalid_argument("capacity_range is required"))?;
        let mut st = self.0.state.lock().unwrap();
        let v = st
            .vols
            .get_mut(&r.volume_id)
            .ok_or_else(|| Status::not_found(format!("volume {} does not exist", r.volume_id)))?;
        if !self.0.has(Fault::ExpandDoesNotGrow) {
            v.size = v.size.max(want);
        }
        Ok(Response::new(ControllerExpandVolumeResponse {
            capacity_bytes: v.size,
            node_expansion_required: true,
        }))
    }

    async fn controller_modify_volume(
        &self,
        req: Request<ControllerModifyVolumeRequest>,
    ) -> Result<Response<ControllerModifyVolumeResponse>, Status> {
        let r = req.into_inner();
        if r.volume_id.is_empty() {
            return Err(self.missing_id());
        }
        check_mutable(&r.mutable_parameters)?;
        if !self.0.state.lock().unwrap().vols.contains_key(&r.volume_id) {
            return Err(Status::not_found(format!(
                "volume {} does not exist",
                r.volume_id
            )));
        }
        Ok(Response::new(ControllerModifyVolumeResponse {}))
    }

    async fn create_snapshot(
        &self,
        req: Request<CreateSnapshotRequest>,
    ) -> Result<Response<CreateSnapshotResponse>, Status> {
        let r = req.into_inner();
        if r.name.is_empty() || r.source_volume_id.is_empty() {
            return Err(Status::invalid_argument(
                "name and source_volume_id are required",
            ));
        }
        let mut st = self.0.state.lock().unwrap();
        if let Some(s) = st.snaps.values().find(|s| s.name == r.name) {
            if s.source != r.source_volume_id {
                return Err(Status::already_exists(format!(
                    "snapshot {} exists for another volume",
                    r.name
                )));
            }
            return Ok(Response::new(CreateSnapshotResponse {
                snapshot: Some(self.to_snapshot(s)),
            }));
        }
        let src = st.vols.get(&r.source_volume_id).ok_or_else(|| {
            Status::not_found(format!("volume {} does not exist", r.source_volume_id))
        })?;
        let (size, data) = (src.size, src.data.clone());
        st.clock += 1;
        let snap = Snap {
            id: new_id(),
            name: r.name,
            source: r.source_volume_id,
            size,
            created: 1_700_000_000 + st.clock,
            data,
        };
        let out = self.to_snapshot(&snap);
        st.snaps.insert(snap.id.clone(), snap);
        Ok(Response::new(CreateSnapshotResponse {
            snapshot: Some(out),
        }))
    }

    async fn delete_snapshot(
        &self,
        req: Request<DeleteSnapshotRequest>,
    ) -> Result<Response<DeleteSnapshotResponse>, Status> {
        let r = req.into_inner();
        if r.snapshot_id.is_empty() {
            return Err(Status::invalid_argument("snapshot_id is required"));
        }
        let mut st = self.0.state.lock().unwrap();
        if st.snaps.remove(&r.snapshot_id).is_none() && self.0.has(Fault::DeleteUnknownNotFound) {
            return Err(Status::not_found("no such snapshot"));
        }
        Ok(Response::new(DeleteSnapshotResponse {}))
    }

    async fn list_snapshots(
        &self,
        req: Request<ListSnapshotsRequest>,
    ) -> Result<Response<ListSnapshotsResponse>, Status> {
        let r = req.into_inner();
        let st = self.0.state.lock().unwrap();
        let all: Vec<list_snapshots_response::Entry> = st
            .snaps
            .values()
            .filter(|s| r.snapshot_id.is_empty() || s.id == r.snapshot_id)
            .filter(|s| r.source_volume_id.is_empty() || s.source == r.source_volume_id)
            .map(|s| list_snapshots_response::Entry {
                snapshot: Some(self.to_snapshot(s)),
            })
            .collect();
        let (entries, next_token) = page(
            &all,
            r.max_entries,
            &r.starting_token,
            self.0.has(Fault::InvalidTokenAccepted),
            self.0.has(Fault::PaginationIgnored),
        )?;
        Ok(Response::new(ListSnapshotsResponse {
            entries,
            next_token,
        }))
    }

    async fn get_snapshot(
        &self,
        req: Request<GetSnapshotRequest>,
    ) -> Result<Response<GetSnapshotResponse>, Status> {
        let r = req.into_inner();
        if r.snapshot_id.is_empty() {
            return Err(Status::invalid_argument("snapshot_id is required"));
        }
        let st = self.0.state.lock().unwrap();
        let s = st.snaps.get(&r.snapshot_id).ok_or_else(|| {
            Status::not_found(format!("snapshot {} does not exist", r.snapshot_id))
        })?;
        Ok(Response::new(GetSnapshotResponse {
            snapshot: Some(self.to_snapshot(s)),
        }))
    }
}

impl Controller {
    fn to_snapshot(&self, s: &Snap) -> Snapshot {
        Snapshot {
            size_bytes: s.size,
            snapshot_id: s.id.clone(),
            source_volume_id: s.source.clone(),
            creation_time: Some(prost_types::Timestamp {
                seconds: s.created,
                nanos: 0,
            }),
            ready_to_use: !self.0.has(Fault::SnapshotNeverReady),
            group_snapshot_id: String::new(),
        }
    }
}
