//! `ctl capabilities`: plugin capabilities, and the controller's, group controller's and
//! node's when served.

use serde_json::{json, Value};
use tonic::Code;

use super::client::Client;
use super::rpc::{call_rpc, rpc_err, CtlError};
use crate::server::csi::pb;

/// The RPC capability names of a `*GetCapabilities` answer; `$service` is the capability's
/// message module (the controller, group controller and node ones have the same shape).
macro_rules! rpc_names {
    ($answer:expr, $service:ident) => {
        $answer.map(|r| {
            r.capabilities
                .iter()
                .filter_map(|cap| match &cap.r#type {
                    Some(pb::$service::Type::Rpc(rpc)) => {
                        pb::$service::rpc::Type::try_from(rpc.r#type)
                            .ok()
                            .map(|t| t.as_str_name())
                    }
                    None => None,
                })
                .collect::<Vec<_>>()
        })
    };
}

/// Plugin capabilities, then controller and node ones when those services answer.
pub async fn run(c: &Client) -> Result<Value, CtlError> {
    use pb::plugin_capability::Type as P;
    let plugin = call_rpc!(
        c,
        identity,
        get_plugin_capabilities,
        "GetPluginCapabilities",
        pb::GetPluginCapabilitiesRequest {}
    )?;
    let plugin: Vec<String> = plugin
        .capabilities
        .iter()
        .filter_map(|cap| match &cap.r#type {
            Some(P::Service(s)) => pb::plugin_capability::service::Type::try_from(s.r#type)
                .ok()
                .map(|t| t.as_str_name().to_string()),
            Some(P::VolumeExpansion(e)) => {
                pb::plugin_capability::volume_expansion::Type::try_from(e.r#type)
                    .ok()
                    .map(|t| format!("VOLUME_EXPANSION_{}", t.as_str_name()))
            }
            None => None,
        })
        .collect();
    let controller = served(rpc_names!(
        call_rpc!(
            c,
            controller,
            controller_get_capabilities,
            "ControllerGetCapabilities",
            pb::ControllerGetCapabilitiesRequest {}
        ),
        controller_service_capability
    ))?;
    let group_controller = served(rpc_names!(
        call_rpc!(
            c,
            group_controller,
            group_controller_get_capabilities,
            "GroupControllerGetCapabilities",
            pb::GroupControllerGetCapabilitiesRequest {}
        ),
        group_controller_service_capability
    ))?;
    let node = served(rpc_names!(
        call_rpc!(
            c,
            node,
            node_get_capabilities,
            "NodeGetCapabilities",
            pb::NodeGetCapabilitiesRequest {}
        ),
        node_service_capability
    ))?;
    Ok(json!({"plugin": plugin, "controller": controller,
        "group_controller": group_controller, "node": node}))
}

/// A service's capability names, or "not served" where the plugin does not implement it.
fn served(answer: Result<Vec<&'static str>, CtlError>) -> Result<Value, CtlError> {
    match answer {
        Ok(names) => Ok(json!(names)),
        Err(CtlError::Rpc { status, .. }) if status.code() == Code::Unimplemented => {
            Ok(json!("not served"))
        }
        Err(e) => Err(e),
    }
}
