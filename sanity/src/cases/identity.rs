//! Identity service: GetPluginInfo, GetPluginCapabilities, Probe.

use super::{case, Case};
use crate::check::{ok, valid_dns_like, CaseResult};
use crate::context::Ctx;
use crate::ensure;
use crate::pb::controller_service_capability::rpc::Type as CtrlCap;
use crate::pb::node_service_capability::rpc::Type as NodeCap;
use crate::pb::plugin_capability::service::Type as ServiceCap;
use crate::pb::plugin_capability::volume_expansion::Type as ExpansionCap;
use crate::pb::plugin_capability::Type as PluginCapType;
use crate::pb::{GetPluginCapabilitiesRequest, GetPluginInfoRequest, ProbeRequest};

const G: &str = "Identity";

pub fn cases() -> Vec<Case> {
    vec![
        case!(
            G,
            "GetPluginInfo returns a valid name and a non-empty vendor_version",
            [],
            plugin_info
        ),
        case!(
            G,
            "GetPluginInfo answers the same every time",
            [],
            plugin_info_stable
        ),
        case!(
            G,
            "GetPluginCapabilities returns only known capabilities",
            [],
            plugin_caps
        ),
        case!(
            G,
            "GetPluginCapabilities volume expansion comes with an EXPAND_VOLUME capability",
            [],
            expansion_consistent
        ),
        case!(G, "Probe succeeds", [], probe),
        case!(
            G,
            "Probe succeeds when called repeatedly",
            [],
            probe_repeated
        ),
    ]
}

async fn plugin_info(ctx: &mut Ctx<'_>) -> CaseResult {
    let r = ok(
        ctx.get_plugin_info(GetPluginInfoRequest {}).await,
        "GetPluginInfo",
    )?;
    ensure!(
        valid_dns_like(&r.name, false),
        "name {:?} must be 63 characters or less in domain name notation (alphanumeric at both ends, dashes and dots between)",
        r.name
    );
    ensure!(
        !r.vendor_version.is_empty(),
        "vendor_version is REQUIRED but empty"
    );
    Ok(())
}

async fn plugin_info_stable(ctx: &mut Ctx<'_>) -> CaseResult {
    let first = ok(
        ctx.get_plugin_info(GetPluginInfoRequest {}).await,
        "GetPluginInfo",
    )?;
    for i in 1..ctx.cfg.idempotent_count {
        let r = ok(
            ctx.get_plugin_info(GetPluginInfoRequest {}).await,
            format!("GetPluginInfo (call {})", i + 1),
        )?;
        ensure!(
            r.name == first.name && r.vendor_version == first.vendor_version,
            "GetPluginInfo call {} returned {}/{}, the first {}/{}",
            i + 1,
            r.name,
            r.vendor_version,
            first.name,
            first.vendor_version
        );
    }
    Ok(())
}

async fn plugin_caps(ctx: &mut Ctx<'_>) -> CaseResult {
    let r = ok(
        ctx.get_plugin_capabilities(GetPluginCapabilitiesRequest {})
            .await,
        "GetPluginCapabilities",
    )?;
    for cap in r.capabilities {
        match cap.r#type {
            Some(PluginCapType::Service(s)) => {
                let t = ServiceCap::try_from(s.r#type);
                ensure!(
                    matches!(t, Ok(t) if t != ServiceCap::Unknown),
                    "unknown service capability type {}",
                    s.r#type
                );
            }
            Some(PluginCapType::VolumeExpansion(v)) => {
                let t = ExpansionCap::try_from(v.r#type);
                ensure!(
                    matches!(t, Ok(ExpansionCap::Online | ExpansionCap::Offline)),
                    "volume expansion type {} is neither ONLINE nor OFFLINE",
                    v.r#type
                );
            }
            None => return Err(crate::fail!("a capability has no type set")),
        }
    }
    Ok(())
}

async fn expansion_consistent(ctx: &mut Ctx<'_>) -> CaseResult {
    let Some(exp) = ctx.caps.expansion else {
        return Err(crate::check::Stop::Skip(
            "the plugin advertises no VolumeExpansion".into(),
        ));
    };
    let ctrl = ctx.caps.has_ctrl(CtrlCap::ExpandVolume);
    let node = ctx.caps.has_node(NodeCap::ExpandVolume);
    match exp {
        // ONLINE: the controller or the node capability (or both).
        ExpansionCap::Online => ensure!(
            ctrl || node,
            "VolumeExpansion ONLINE is advertised, but neither the controller nor the node EXPAND_VOLUME capability"
        ),
        // OFFLINE: the controller capability, with or without the node one.
        _ => ensure!(ctrl, "VolumeExpansion OFFLINE is advertised without the controller EXPAND_VOLUME capability"),
    }
    Ok(())
}

async fn probe(ctx: &mut Ctx<'_>) -> CaseResult {
    // `ready` may be unset (ready) or false (still initialising); any error fails.
    ok(ctx.probe(ProbeRequest {}).await, "Probe")?;
    Ok(())
}

async fn probe_repeated(ctx: &mut Ctx<'_>) -> CaseResult {
    for i in 0..ctx.cfg.idempotent_count {
        ok(
            ctx.probe(ProbeRequest {}).await,
            format!("Probe (call {})", i + 1),
        )?;
    }
    Ok(())
}
