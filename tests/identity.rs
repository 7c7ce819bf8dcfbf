//! The real binary on a temp socket answers every Identity RPC through a tonic client.

mod common;

use cinder_csi::csi::pb::identity_client::IdentityClient;
use cinder_csi::csi::pb::plugin_capability::{self, service};
use cinder_csi::csi::pb::{GetPluginCapabilitiesRequest, GetPluginInfoRequest, ProbeRequest};
use common::Driver;

fn node_args(dir: &std::path::Path) -> Vec<String> {
    vec![
        "--mode".into(),
        "node".into(),
        "--backend".into(),
        "local".into(),
        "--local-dir".into(),
        dir.join("local").display().to_string(),
        "--node-id".into(),
        "n1".into(),
        "--kubelet-dir".into(),
        dir.display().to_string(),
    ]
}

fn services(caps: &[cinder_csi::csi::pb::PluginCapability]) -> Vec<service::Type> {
    caps.iter()
        .filter_map(|c| match &c.r#type {
            Some(plugin_capability::Type::Service(s)) => service::Type::try_from(s.r#type).ok(),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn node_mode_identity_rpcs() {
    let tmp = tempfile::tempdir().unwrap();
    let args = node_args(tmp.path());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let driver = Driver::start(&args);
    let mut client = IdentityClient::new(driver.channel().await);

    let info = client
        .get_plugin_info(GetPluginInfoRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(info.name, "cinder.csi.openstack.org");
    assert!(info.vendor_version.starts_with(env!("CARGO_PKG_VERSION")));
    assert!(info.vendor_version.contains('+'), "{}", info.vendor_version);

    let caps = client
        .get_plugin_capabilities(GetPluginCapabilitiesRequest {})
        .await
        .unwrap()
        .into_inner()
        .capabilities;
    let svc = services(&caps);
    assert!(
        !svc.contains(&service::Type::ControllerService),
        "node mode must not advertise the controller: {svc:?}"
    );
    assert!(svc.contains(&service::Type::VolumeAccessibilityConstraints));
    assert!(caps.iter().any(|c| matches!(
        &c.r#type,
        Some(plugin_capability::Type::VolumeExpansion(v)) if v.r#type == plugin_capability::volume_expansion::Type::Online as i32
    )));

    let probe = client.probe(ProbeRequest {}).await.unwrap().into_inner();
    assert_eq!(probe.ready, Some(true));
}

#[tokio::test]
async fn custom_driver_name_and_no_topology() {
    let tmp = tempfile::tempdir().unwrap();
    let mut args = node_args(tmp.path());
    args.extend([
        "--driver-name=example.csi.test".into(),
        "--with-topology=false".into(),
    ]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let driver = Driver::start(&args);
    let mut client = IdentityClient::new(driver.channel().await);
    let info = client
        .get_plugin_info(GetPluginInfoRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(info.name, "example.csi.test");
    let caps = client
        .get_plugin_capabilities(GetPluginCapabilitiesRequest {})
        .await
        .unwrap()
        .into_inner()
        .capabilities;
    assert!(!services(&caps).contains(&service::Type::VolumeAccessibilityConstraints));
}

fn http_get(port: u16, path: &str) -> (u16, String) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let code = text[9..12].parse().unwrap();
    let body = text
        .split("\r\n\r\n")
        .nth(1)
        .unwrap_or_default()
        .to_string();
    (code, body)
}

#[tokio::test]
async fn http_endpoint_serves_health_and_rpc_metrics() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let tmp = tempfile::tempdir().unwrap();
    let mut args = node_args(tmp.path());
    args.push(format!("--http-endpoint=127.0.0.1:{port}"));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let driver = Driver::start(&args);
    let mut client = IdentityClient::new(driver.channel().await);
    for _ in 0..3 {
        client.probe(ProbeRequest {}).await.unwrap();
    }
    let (code, body) = http_get(port, "/healthz");
    assert_eq!((code, body.trim()), (200, "ok"));
    let (code, body) = http_get(port, "/metrics");
    assert_eq!(code, 200);
    assert!(
        body.contains(r#"cinder_csi_rpc_requests_total{method="Probe",code="Ok"} 3"#),
        "{body}"
    );
    assert_eq!(http_get(port, "/nope").0, 404);
}

/// An upstream node DaemonSet's arguments work unchanged (plus the node id, as the metadata
/// service is not reachable here).
#[tokio::test]
async fn upstream_node_arguments_are_accepted() {
    let tmp = tempfile::tempdir().unwrap();
    let kubelet = format!("--kubelet-dir={}", tmp.path().display());
    let driver = Driver::start(&[
        "--provide-controller-service=false",
        "--cloud-config=/etc/config/cloud.conf",
        "--v=1",
        "--nodeid=ignored",
        "--node-service-no-os-client=true",
        "--node-id=0b5c2b1e-7c55-4b7c-9a4a-3f3c9f1d2e11",
        &kubelet,
    ]);
    let mut client = IdentityClient::new(driver.channel().await);
    let caps = client
        .get_plugin_capabilities(GetPluginCapabilitiesRequest {})
        .await
        .unwrap()
        .into_inner()
        .capabilities;
    assert!(!services(&caps).contains(&service::Type::ControllerService));
}
