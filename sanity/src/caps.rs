//! What the driver advertises, asked once per run, and what each case needs from it. A case
//! whose need is not advertised is reported skipped with the missing capability as the reason.

use std::collections::HashSet;
use std::fmt;

use crate::check::describe;
use crate::client::Clients;
use crate::pb::controller_service_capability::rpc::Type as CtrlCap;
use crate::pb::node_service_capability::rpc::Type as NodeCap;
use crate::pb::plugin_capability::service::Type as ServiceCap;
use crate::pb::plugin_capability::volume_expansion::Type as ExpansionCap;
use crate::pb::{
    controller_service_capability, node_service_capability, plugin_capability,
    ControllerGetCapabilitiesRequest, GetPluginCapabilitiesRequest, NodeGetCapabilitiesRequest,
    NodeGetInfoRequest, NodeGetInfoResponse,
};

/// One thing a case needs before it can run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// The plugin advertises CONTROLLER_SERVICE.
    ControllerService,
    Ctrl(CtrlCap),
    Node(NodeCap),
    /// A `--mutable-parameters` file was given.
    MutableParameters,
}

impl fmt::Display for Need {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Need::ControllerService => write!(f, "plugin capability CONTROLLER_SERVICE"),
            Need::Ctrl(c) => write!(f, "controller capability {}", c.as_str_name()),
            Need::Node(c) => write!(f, "node capability {}", c.as_str_name()),
            Need::MutableParameters => write!(f, "--mutable-parameters"),
        }
    }
}

/// The driver's advertised capabilities. Discovery errors are kept so the cases that depend
/// on them fail with the cause instead of being silently skipped.
#[derive(Debug, Clone, Default)]
pub struct Caps {
    pub controller_service: bool,
    pub accessibility_constraints: bool,
    pub expansion: Option<ExpansionCap>,
    pub ctrl: HashSet<i32>,
    pub node: HashSet<i32>,
    pub node_info: Option<NodeGetInfoResponse>,
    pub plugin_error: Option<String>,
    pub ctrl_error: Option<String>,
    pub node_error: Option<String>,
    pub has_mutable_parameters: bool,
}

impl Caps {
    pub async fn discover(clients: &Clients, timeout: std::time::Duration) -> Self {
        let mut c = Caps::default();
        let mut id = clients.identity.clone();
        match id
            .get_plugin_capabilities(req(GetPluginCapabilitiesRequest {}, timeout))
            .await
        {
            Ok(r) => {
                for cap in r.into_inner().capabilities {
                    match cap.r#type {
                        Some(plugin_capability::Type::Service(s)) => {
                            if s.r#type == ServiceCap::ControllerService as i32 {
                                c.controller_service = true;
                            }
                            if s.r#type == ServiceCap::VolumeAccessibilityConstraints as i32 {
                                c.accessibility_constraints = true;
                            }
                        }
                        Some(plugin_capability::Type::VolumeExpansion(v)) => {
                            c.expansion = ExpansionCap::try_from(v.r#type).ok();
                        }
                        None => {}
                    }
                }
            }
            Err(s) => {
                c.plugin_error = Some(format!("GetPluginCapabilities failed: {}", describe(&s)))
            }
        }
        if c.controller_service {
            let mut ctl = clients.controller.clone();
            match ctl
                .controller_get_capabilities(req(ControllerGetCapabilitiesRequest {}, timeout))
                .await
            {
                Ok(r) => {
                    for cap in r.into_inner().capabilities {
                        if let Some(controller_service_capability::Type::Rpc(rpc)) = cap.r#type {
                            c.ctrl.insert(rpc.r#type);
                        }
                    }
                }
                Err(s) => {
                    c.ctrl_error = Some(format!(
                        "ControllerGetCapabilities failed: {}",
                        describe(&s)
                    ))
                }
            }
        }
        let mut node = clients.node.clone();
        match node
            .node_get_capabilities(req(NodeGetCapabilitiesRequest {}, timeout))
            .await
        {
            Ok(r) => {
                for cap in r.into_inner().capabilities {
                    if let Some(node_service_capability::Type::Rpc(rpc)) = cap.r#type {
                        c.node.insert(rpc.r#type);
                    }
                }
            }
            Err(s) => c.node_error = Some(format!("NodeGetCapabilities failed: {}", describe(&s))),
        }
        if let Ok(r) = node
            .node_get_info(req(NodeGetInfoRequest {}, timeout))
            .await
        {
            c.node_info = Some(r.into_inner());
        }
        c
    }

    pub fn has_ctrl(&self, cap: CtrlCap) -> bool {
        self.controller_service && self.ctrl.contains(&(cap as i32))
    }

    pub fn has_node(&self, cap: NodeCap) -> bool {
        self.node.contains(&(cap as i32))
    }

    /// `Ok(())` when every need is met, `Err(Ok(reason))` to skip, `Err(Err(reason))` to fail
    /// because discovery itself failed.
    pub fn check(&self, needs: &[Need]) -> Result<(), Result<String, String>> {
        for n in needs {
            let (met, err) = match n {
                Need::ControllerService => (self.controller_service, &self.plugin_error),
                Need::Ctrl(cap) => (
                    self.has_ctrl(*cap),
                    if self.plugin_error.is_some() {
                        &self.plugin_error
                    } else {
                        &self.ctrl_error
                    },
                ),
                Need::Node(cap) => (self.has_node(*cap), &self.node_error),
                Need::MutableParameters => (self.has_mutable_parameters, &None),
            };
            if let Some(e) = err {
                return Err(Err(format!("cannot tell whether the driver has {n}: {e}")));
            }
            if !met {
                return Err(Ok(match n {
                    Need::MutableParameters => "no --mutable-parameters file given".to_string(),
                    _ => format!("the driver does not advertise {n}"),
                }));
            }
        }
        Ok(())
    }
}

fn req<T>(msg: T, timeout: std::time::Duration) -> tonic::Request<T> {
    let mut r = tonic::Request::new(msg);
    r.set_timeout(timeout);
    r
}
