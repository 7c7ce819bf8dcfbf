//! Capabilities, NodeGetInfo and GetCapacity.

use super::{case, Case};
use crate::caps::Need;
use crate::check::{ok, valid_dns_like, valid_topology_key, CaseResult};
use crate::context::Ctx;
use crate::pb::controller_service_capability::rpc::Type as CtrlCap;
use crate::pb::controller_service_capability::Type as CtrlType;
use crate::pb::node_service_capability::rpc::Type as NodeCap;
use crate::pb::node_service_capability::Type as NodeType;
use crate::pb::*;
use crate::{ensure, fail};

const C: &str = "Controller";
const N: &str = "Node";
const CTRL: Need = Need::ControllerService;

pub fn cases() -> Vec<Case> {
    vec![
        case!(C, "ControllerGetCapabilities returns only known capabilities", [CTRL], controller_caps),
        case!(C, "ControllerGetCapabilities LIST_VOLUMES_PUBLISHED_NODES comes with PUBLISH_UNPUBLISH_VOLUME", [Need::Ctrl(CtrlCap::ListVolumesPublishedNodes)], published_nodes_needs_publish),
        case!(N, "NodeGetCapabilities returns only known capabilities", [], node_caps),
        case!(N, "NodeGetInfo returns a node_id, a non-negative volume limit and valid topology", [], node_info),
        case!(
            C,
            "GetCapacity succeeds without arguments",
            [Need::Ctrl(CtrlCap::GetCapacity)],
            capacity_plain
        ),
        case!(
            C,
            "GetCapacity succeeds for the test capability, parameters and topology",
            [Need::Ctrl(CtrlCap::GetCapacity)],
            capacity_filtered
        ),
    ]
}

async fn controller_caps(ctx: &mut Ctx<'_>) -> CaseResult {
    let r = ok(
        ctx.controller_get_capabilities(ControllerGetCapabilitiesRequest {})
            .await,
        "ControllerGetCapabilities",
    )?;
    for cap in r.capabilities {
        let Some(CtrlType::Rpc(rpc)) = cap.r#type else {
            return Err(fail!("a controller capability has no rpc set"));
        };
        ensure!(
            matches!(CtrlCap::try_from(rpc.r#type), Ok(t) if t != CtrlCap::Unknown),
            "unknown controller capability type {}",
            rpc.r#type
        );
    }
    Ok(())
}

async fn published_nodes_needs_publish(ctx: &mut Ctx<'_>) -> CaseResult {
    ensure!(
        ctx.caps.has_ctrl(CtrlCap::PublishUnpublishVolume),
        "LIST_VOLUMES_PUBLISHED_NODES is advertised without PUBLISH_UNPUBLISH_VOLUME (the spec requires both)"
    );
    Ok(())
}

async fn node_caps(ctx: &mut Ctx<'_>) -> CaseResult {
    let r = ok(
        ctx.node_get_capabilities(NodeGetCapabilitiesRequest {})
            .await,
        "NodeGetCapabilities",
    )?;
    for cap in r.capabilities {
        let Some(NodeType::Rpc(rpc)) = cap.r#type else {
            return Err(fail!("a node capability has no rpc set"));
        };
        ensure!(
            matches!(NodeCap::try_from(rpc.r#type), Ok(t) if t != NodeCap::Unknown),
            "unknown node capability type {}",
            rpc.r#type
        );
    }
    Ok(())
}

async fn node_info(ctx: &mut Ctx<'_>) -> CaseResult {
    let r = ok(
        ctx.node_get_info(NodeGetInfoRequest {}).await,
        "NodeGetInfo",
    )?;
    ensure!(!r.node_id.is_empty(), "node_id is REQUIRED but empty");
    ensure!(
        r.node_id.len() <= 256,
        "node_id is {} bytes; it SHALL NOT exceed 256",
        r.node_id.len()
    );
    ensure!(
        r.max_volumes_per_node >= 0,
        "max_volumes_per_node is negative: {}",
        r.max_volumes_per_node
    );
    match &r.accessible_topology {
        Some(t) => {
            ensure!(
                ctx.caps.accessibility_constraints,
                "accessible_topology is returned but the plugin does not advertise VOLUME_ACCESSIBILITY_CONSTRAINTS"
            );
            for (k, v) in &t.segments {
                ensure!(valid_topology_key(k), "topology key {k:?} is not a valid [prefix/]name");
                ensure!(valid_dns_like(v, true), "topology value {v:?} of {k:?} is not valid");
            }
        }
        None => ensure!(
            !ctx.caps.accessibility_constraints,
            "VOLUME_ACCESSIBILITY_CONSTRAINTS is advertised but NodeGetInfo returns no accessible_topology"
        ),
    }
    Ok(())
}

fn check_capacity(r: &GetCapacityResponse) -> CaseResult {
    ensure!(
        r.available_capacity >= 0,
        "available_capacity is negative: {}",
        r.available_capacity
    );
    if let Some(m) = r.maximum_volume_size {
        ensure!(m >= 0, "maximum_volume_size is negative: {m}");
    }
    if let Some(m) = r.minimum_volume_size {
        ensure!(m >= 0, "minimum_volume_size is negative: {m}");
    }
    Ok(())
}

async fn capacity_plain(ctx: &mut Ctx<'_>) -> CaseResult {
    let r = ok(
        ctx.get_capacity(GetCapacityRequest::default()).await,
        "GetCapacity",
    )?;
    check_capacity(&r)
}

async fn capacity_filtered(ctx: &mut Ctx<'_>) -> CaseResult {
    let topo = ctx
        .topology_requirement()
        .and_then(|t| t.requisite.into_iter().next());
    let req = GetCapacityRequest {
        volume_capabilities: vec![ctx.cap()],
        parameters: ctx.cfg.parameters.clone(),
        accessible_topology: topo,
    };
    let r = ok(ctx.get_capacity(req).await, "GetCapacity")?;
    check_capacity(&r)
}
