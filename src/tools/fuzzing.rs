//! Entry points of the fuzz targets (tests/fuzz), behind the `fuzzing` feature: each takes
//! arbitrary bytes and runs one parser or decoder the way the driver does, discarding the
//! result. A panic (or a hang) is the bug; errors are the expected answer to garbage.

use std::collections::HashMap;
use std::path::Path;

use http::HeaderMap;
use http::StatusCode;
use prost::Message;

use crate::cloud::openstack::dto;
use crate::cloud::{CopyKind, Resource, Server, ServerAttachment, Volume, VolumeType};
use crate::driver::controller::params::{MutableParams, SnapshotParams, VolumeParams};
use crate::driver::controller::tokens::{Collection, ListToken};
use crate::server::csi::controller::convert as cconv;
use crate::server::csi::{convert, pb};

/// cloud.conf (INI) text → typed configuration.
pub fn cloud_conf(text: &str) {
    let _ = crate::config::parse_str(Path::new("cloud.conf"), text);
}

/// clouds.yaml text → its `clouds` entries.
pub fn clouds_yaml(text: &str) {
    let _ = crate::config::parse_clouds_yaml(Path::new("clouds.yaml"), text);
}

/// /proc/self/mountinfo text, line by line.
pub fn mountinfo(text: &str) {
    for line in text.lines() {
        let _ = crate::host::linux::mountinfo::parse_line(line);
    }
}

/// A config drive image (ISO 9660 or VFAT) at `path` → meta_data.json (read-only).
pub fn config_drive(path: &Path) {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(contain_fatfs_panics);
    let _ = crate::host::metadata::config_drive::read_meta_data(path);
}

/// fatfs 0.3 panics on damaged images (unchecked arithmetic on cluster numbers read from the
/// image); the VFAT reader contains those panics and reports a damaged drive, which is what
/// this target checks. libFuzzer's panic hook aborts before any unwinding, so it would count
/// them as crashes: this hook lets a panic raised inside fatfs unwind to the reader and hands
/// every other panic (ours) to libFuzzer's hook, a crash as before.
fn contain_fatfs_panics() {
    let fuzzer_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let in_fatfs = info
            .location()
            .is_some_and(|l| l.file().contains("/fatfs-"));
        if !in_fatfs {
            fuzzer_hook(info);
        }
    }));
}

/// Cinder, Nova and Keystone answers: the first byte picks the document, the rest is the
/// body; decoded with the adapter's DTOs and converted to domain types.
pub fn openstack_json(data: &[u8]) {
    let Some((&kind, body)) = data.split_first() else {
        return;
    };
    fn conv<D: serde::de::DeserializeOwned, T>(body: &[u8], f: impl FnOnce(D) -> T) {
        if let Ok(d) = serde_json::from_slice::<D>(body) {
            let _ = f(d);
        }
    }
    match kind % 12 {
        0 => conv(body, |e: dto::VolumeEnvelope| Volume::from(e.volume)),
        1 => conv(body, |l: dto::VolumeList| {
            let next = dto::has_next(&l.volumes_links);
            (l.volumes.into_iter().map(Volume::from).count(), next)
        }),
        // Snapshots and backups share one wire form (2-3 and 4-5 stay apart for the corpus).
        2 | 4 => conv(body, |e: dto::CopyEnvelope| {
            e.copy.into_copy(CopyKind::Snapshot)
        }),
        3 | 5 => conv(body, |l: dto::CopyList| {
            let kind = CopyKind::Backup;
            l.copies
                .into_iter()
                .map(|c| c.into_copy(kind))
                .collect::<Vec<_>>()
        }),
        6 => conv(body, |l: dto::VolumeTypeList| {
            l.volume_types.into_iter().map(VolumeType::from).count()
        }),
        7 => conv(body, |e: dto::ServerEnvelope| Server::from(e.server)),
        8 => conv(body, |l: dto::NovaAttachmentList| {
            l.attachments
                .into_iter()
                .map(ServerAttachment::from)
                .count()
        }),
        9 => conv(body, |q: dto::QuotaSetEnvelope| format!("{q:?}")),
        10 => crate::cloud::openstack::keystone::fuzz_token(body),
        _ => {
            // An error answer of any status: message and request id extracted, then mapped.
            let status = StatusCode::from_u16(400 + u16::from(kind) % 200)
                .unwrap_or(StatusCode::BAD_REQUEST);
            let e = crate::cloud::openstack::errors::ApiError::from_response(
                status,
                &HeaderMap::new(),
                body,
            );
            let _ = e.into_cloud(Resource::Volume, "v");
        }
    }
    if let Ok(s) = std::str::from_utf8(body) {
        let _ = dto::parse_time(s);
        let _ = crate::cloud::openstack::microversion::Microversion::parse(s);
    }
}

/// A ListVolumes/ListSnapshots `starting_token`.
pub fn list_token(text: &str) {
    for allowed in [
        &[Collection::Volumes][..],
        &[Collection::Snapshots, Collection::Backups][..],
    ] {
        if let Ok(t) = ListToken::decode(text, allowed, &["", "a", "other"]) {
            // What decodes must encode back to a token that decodes the same.
            let again = ListToken::decode(&t.encode(), allowed, &["", "a", "other"]);
            assert_eq!(
                again.ok().as_ref(),
                Some(&t),
                "token round trip of {text:?}"
            );
        }
    }
}

fn map(m: &std::collections::HashMap<String, String>) -> HashMap<String, String> {
    m.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
}

/// The kubelet dir the node parameters are checked against.
const KUBELET: &str = "/var/lib/kubelet";

/// The node core's own checks of a request (ids, paths under the kubelet dir, access type,
/// mount flags, volume_context), as its plans run them before any host call.
fn node_params(
    volume_id: &str,
    paths: &[(&'static str, &str)],
    cap: Option<&pb::VolumeCapability>,
    context: Option<&std::collections::HashMap<String, String>>,
) -> Vec<crate::driver::Error> {
    use crate::driver::node::params;
    let dir = Path::new(KUBELET);
    let mut errors = vec![];
    if let Err(e) = params::volume_id(volume_id) {
        errors.push(e);
    }
    for (field, raw) in paths {
        if let Err(e) = params::volume_path(volume_id, field, raw, dir) {
            errors.push(e);
        }
    }
    let mut fs = None;
    if let Some(Ok(c)) = cap.map(convert::capability) {
        match params::access(&c) {
            Ok(a) => {
                let _ = params::read_only_flag(&a);
                if let params::Access::Mount { fs: f, .. } = a {
                    fs = Some(f);
                }
            }
            Err(e) => errors.push(e),
        }
    }
    if let Some(ctx) = context {
        if let Err(e) = params::stage_context(ctx, fs) {
            errors.push(e);
        }
    }
    errors
}

/// Arbitrary protobuf of a CSI request (the first byte picks the RPC) → prost decode → the
/// conversions and validations the handlers (and the node core's plans) run before any side
/// effect; every error is mapped to its gRPC status, as the handlers do. Every RPC of the
/// Identity, Controller and Node services the driver serves has a kind (the ones without
/// fields are decoded only).
pub fn grpc_request(data: &[u8]) {
    let Some((&kind, body)) = data.split_first() else {
        return;
    };
    let mut errors = vec![];
    let mut check = |r: Result<(), crate::driver::Error>| {
        if let Err(e) = r {
            errors.push(e);
        }
    };
    macro_rules! decode {
        ($t:ty) => {
            match <$t>::decode(body) {
                Ok(r) => r,
                Err(_) => return,
            }
        };
    }
    match kind % 24 {
        0 => {
            let r = decode!(pb::CreateVolumeRequest);
            check(convert::required(&r.name, "name").map(drop));
            check(convert::capacity_range(r.capacity_range.as_ref()).map(drop));
            check(convert::capabilities(&r.volume_capabilities).map(drop));
            check(VolumeParams::parse(&map(&r.parameters)).map(drop));
            check(MutableParams::parse(&map(&r.mutable_parameters)).map(drop));
            check(cconv::content_source(r.volume_content_source.as_ref()).map(drop));
            let _ = convert::topology_requirement(r.accessibility_requirements.as_ref());
        }
        1 => {
            let r = decode!(pb::DeleteVolumeRequest);
            check(convert::required(&r.volume_id, "volume_id").map(drop));
        }
        2 => {
            let r = decode!(pb::ControllerPublishVolumeRequest);
            check(convert::required(&r.volume_id, "volume_id").map(drop));
            check(convert::required(&r.node_id, "node_id").map(drop));
            check(convert::required_capability(r.volume_capability.as_ref()).map(drop));
        }
        3 => {
            let r = decode!(pb::ControllerUnpublishVolumeRequest);
            check(convert::required(&r.volume_id, "volume_id").map(drop));
            let _ = cconv::optional(&r.node_id);
        }
        4 => {
            let r = decode!(pb::ValidateVolumeCapabilitiesRequest);
            check(convert::capabilities(&r.volume_capabilities).map(drop));
            check(VolumeParams::parse(&map(&r.parameters)).map(drop));
        }
        5 => {
            let r = decode!(pb::ListVolumesRequest);
            check(cconv::max_entries(r.max_entries).map(drop));
            check(ListToken::decode(&r.starting_token, &[Collection::Volumes], &[""]).map(drop));
        }
        6 => {
            let r = decode!(pb::GetCapacityRequest);
            check(convert::capabilities(&r.volume_capabilities).map(drop));
            check(VolumeParams::parse(&map(&r.parameters)).map(drop));
            let _ = cconv::zone(r.accessible_topology.as_ref());
        }
        7 => {
            let r = decode!(pb::CreateSnapshotRequest);
            check(convert::required(&r.name, "name").map(drop));
            check(convert::required(&r.source_volume_id, "source_volume_id").map(drop));
            check(SnapshotParams::parse(&map(&r.parameters)).map(drop));
        }
        8 => {
            let r = decode!(pb::ListSnapshotsRequest);
            check(cconv::max_entries(r.max_entries).map(drop));
            let allowed = [Collection::Snapshots, Collection::Backups];
            check(ListToken::decode(&r.starting_token, &allowed, &[""]).map(drop));
        }
        9 => {
            let r = decode!(pb::ControllerExpandVolumeRequest);
            check(convert::required(&r.volume_id, "volume_id").map(drop));
            check(convert::capacity_range(r.capacity_range.as_ref()).map(drop));
            if let Some(c) = r.volume_capability.as_ref() {
                check(convert::capability(c).map(drop));
            }
        }
        10 => {
            let r = decode!(pb::ControllerModifyVolumeRequest);
            check(convert::required(&r.volume_id, "volume_id").map(drop));
            check(MutableParams::parse(&map(&r.mutable_parameters)).map(drop));
        }
        11 => {
            let r = decode!(pb::NodeStageVolumeRequest);
            check(convert::required(&r.staging_target_path, "staging_target_path").map(drop));
            check(convert::required_capability(r.volume_capability.as_ref()).map(drop));
            errors.extend(node_params(
                &r.volume_id,
                &[("staging_target_path", &r.staging_target_path)],
                r.volume_capability.as_ref(),
                Some(&r.volume_context),
            ));
        }
        12 => {
            let r = decode!(pb::NodePublishVolumeRequest);
            check(convert::required(&r.target_path, "target_path").map(drop));
            check(convert::required_capability(r.volume_capability.as_ref()).map(drop));
            errors.extend(node_params(
                &r.volume_id,
                &[
                    ("target_path", &r.target_path),
                    ("staging_target_path", &r.staging_target_path),
                ],
                r.volume_capability.as_ref(),
                Some(&r.volume_context),
            ));
        }
        13 => {
            let r = decode!(pb::NodeExpandVolumeRequest);
            check(convert::required(&r.volume_path, "volume_path").map(drop));
            check(convert::capacity_range(r.capacity_range.as_ref()).map(drop));
            errors.extend(node_params(
                &r.volume_id,
                &[
                    ("volume_path", &r.volume_path),
                    ("staging_target_path", &r.staging_target_path),
                ],
                r.volume_capability.as_ref(),
                None,
            ));
        }
        14 => {
            let r = decode!(pb::NodeUnstageVolumeRequest);
            check(convert::required(&r.staging_target_path, "staging_target_path").map(drop));
            errors.extend(node_params(
                &r.volume_id,
                &[("staging_target_path", &r.staging_target_path)],
                None,
                None,
            ));
        }
        15 => {
            let r = decode!(pb::NodeUnpublishVolumeRequest);
            check(convert::required(&r.target_path, "target_path").map(drop));
            errors.extend(node_params(
                &r.volume_id,
                &[("target_path", &r.target_path)],
                None,
                None,
            ));
        }
        16 => {
            let r = decode!(pb::NodeGetVolumeStatsRequest);
            check(convert::required(&r.volume_path, "volume_path").map(drop));
            errors.extend(node_params(
                &r.volume_id,
                &[("volume_path", &r.volume_path)],
                None,
                None,
            ));
        }
        17 => {
            let r = decode!(pb::DeleteSnapshotRequest);
            check(convert::required(&r.snapshot_id, "snapshot_id").map(drop));
        }
        18 => {
            let r = decode!(pb::GetSnapshotRequest);
            check(convert::required(&r.snapshot_id, "snapshot_id").map(drop));
        }
        19 => {
            let r = decode!(pb::ControllerGetVolumeRequest);
            check(convert::required(&r.volume_id, "volume_id").map(drop));
        }
        20 => {
            let _ = decode!(pb::GetPluginInfoRequest);
            let _ = pb::GetPluginCapabilitiesRequest::decode(body);
            let _ = pb::ProbeRequest::decode(body);
        }
        21 => {
            let _ = decode!(pb::ControllerGetCapabilitiesRequest);
        }
        22 => {
            let _ = decode!(pb::NodeGetCapabilitiesRequest);
        }
        _ => {
            let _ = decode!(pb::NodeGetInfoRequest);
        }
    }
    if let Ok(s) = std::str::from_utf8(body) {
        let _ = convert::parse_grpc_timeout(s);
    }
    for e in errors {
        let _ = tonic::Status::from(e);
    }
}
