//! `ctl capabilities`: plugin capabilities, and the controller's, group controller's and
//! node's when served.

use serde_json::{json, Value};
use tonic::Code;

use super::client::Client;
use super::rpc::{call_rpc, rpc_err, CtlError};
use crate::csi::pb;

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
    let controller = match call_rpc!(
        c,
        controller,
        controller_get_capabilities,
        "ControllerGetCapabilities",
        pb::ControllerGetCapabilitiesRequest {}
    ) {
        Ok(r) => json!(r
            .capabilities
            .iter()
            .filter_map(|cap| match &cap.r#type {
                Some(pb::controller_service_capability::Type::Rpc(rpc)) =>
                    pb::controller_service_capability::rpc::Type::try_from(rpc.r#type)
                        .ok()
                        .map(|t| t.as_str_name()),
                None => None,
            })
            .collect::<Vec<_>>()),
        Err(CtlError::Rpc { status, .. }) if status.code() == Code::Unimplemented => {
            json!("not served")
        }
        Err(e) => return Err(e),
    };
    let group_controller = match call_rpc!(
        c,
        group_controller,
        group_controller_get_capabilities,
        "GroupControllerGetCapabilities",
        pb::GroupControllerGetCapabilitiesRequest {}
    ) {
        Ok(r) => json!(r
            .capabilities
            .iter()
            .filter_map(|cap| match &cap.r#type {
                Some(pb::group_controller_service_capability::Type::Rpc(rpc)) =>
                    pb::group_controller_service_capability::rpc::Type::try_from(rpc.r#type)
                        .ok()
                        .map(|t| t.as_str_name()),
                None => None,
            })
            .collect::<Vec<_>>()),
        Err(CtlError::Rpc { status, .. }) if status.code() == Code::Unimplemented => {
            json!("not served")
        }
        Err(e) => return Err(e),
    };
    let node = match call_rpc!(
        c,
        node,
        node_get_capabilities,
        "NodeGetCapabilities",
        pb::NodeGetCapabilitiesRequest {}
    ) {
        Ok(r) => json!(r
            .capabilities
            .iter()
            .filter_map(|cap| match &cap.r#type {
                Some(pb::node_service_capability::Type::Rpc(rpc)) =>
                    pb::node_service_capability::rpc::Type::try_from(rpc.r#type)
                        .ok()
                        .map(|t| t.as_str_name()),
                None => None,
            })
            .collect::<Vec<_>>()),
        Err(CtlError::Rpc { status, .. }) if status.code() == Code::Unimplemented => {
            json!("not served")
        }
        Err(e) => return Err(e),
    };
    Ok(json!({"plugin": plugin, "controller": controller,
        "group_controller": group_controller, "node": node}))
}
