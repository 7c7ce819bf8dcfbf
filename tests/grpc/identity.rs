//! The real binary on a temp socket answers every Identity RPC through a tonic client.

use crate::support::common;
use crate::support::launch::Launch;

use cinder_csi::server::csi::pb::identity_client::IdentityClient;
use cinder_csi::server::csi::pb::plugin_capability::{self, service};
use cinder_csi::server::csi::pb::{
    GetPluginCapabilitiesRequest, GetPluginInfoRequest, GetPluginInfoResponse, PluginCapability,
    ProbeRequest,
};
use common::{http_get, Driver};
use tonic::transport::Channel;

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

/// A node-mode driver on the local backend, its kubelet dir in its own temp dir, with `extra`
/// arguments.
fn start_node(extra: &[&str]) -> Driver {
    let dir = tempfile::tempdir().unwrap();
    let kubelet = dir.path().join("kubelet");
    std::fs::create_dir(&kubelet).unwrap();
    let args = node_args(&kubelet);
    let mut args: Vec<&str> = args.iter().map(String::as_str).collect();
    args.extend_from_slice(extra);
    let socket = dir.path().join("csi.sock");
    Driver::start_at(dir, socket, &args)
}

async fn plugin_info(client: &mut IdentityClient<Channel>) -> GetPluginInfoResponse {
    client
        .get_plugin_info(GetPluginInfoRequest {})
        .await
        .unwrap()
        .into_inner()
}

async fn plugin_caps(client: &mut IdentityClient<Channel>) -> Vec<PluginCapability> {
    client
        .get_plugin_capabilities(GetPluginCapabilitiesRequest {})
        .await
        .unwrap()
        .into_inner()
        .capabilities
}

fn services(caps: &[PluginCapability]) -> Vec<service::Type> {
    caps.iter()
        .filter_map(|c| match &c.r#type {
            Some(plugin_capability::Type::Service(s)) => service::Type::try_from(s.r#type).ok(),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn node_mode_identity_rpcs() {
    let driver = start_node(&[]);
    let mut client = IdentityClient::new(driver.channel().await);

    let info = plugin_info(&mut client).await;
    assert_eq!(info.name, "cinder.csi.openstack.org");
    assert!(info.vendor_version.starts_with(env!("CARGO_PKG_VERSION")));
    assert!(info.vendor_version.contains('+'), "{}", info.vendor_version);

    let caps = plugin_caps(&mut client).await;
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
    let driver = start_node(&["--driver-name=example.csi.test", "--with-topology=false"]);
    let mut client = IdentityClient::new(driver.channel().await);
    let info = plugin_info(&mut client).await;
    assert_eq!(info.name, "example.csi.test");
    let caps = plugin_caps(&mut client).await;
    assert!(!services(&caps).contains(&service::Type::VolumeAccessibilityConstraints));
}

#[tokio::test]
async fn http_endpoint_serves_health_and_rpc_metrics() {
    let port = free_port();
    let driver = start_node(&[&format!("--http-endpoint=127.0.0.1:{port}")]);
    let mut client = IdentityClient::new(driver.channel().await);
    for _ in 0..3 {
        client.probe(ProbeRequest {}).await.unwrap();
    }
    let (code, body) = http_get(port, "/healthz");
    assert_eq!((code, body.trim()), (200, "ok"));
    let (code, body) = http_get(port, "/readyz");
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
    let caps = plugin_caps(&mut client).await;
    assert!(!services(&caps).contains(&service::Type::ControllerService));
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A controller whose Keystone is down still answers Probe at once and OK: the sidecars
/// (csi-lib-utils ProbeForever) would exit on an error, and the livenessprobe would restart
/// the plugin. The outage shows on /readyz, in the `cinder_csi_cloud_up` gauge and in the log.
#[tokio::test]
async fn probe_is_ok_and_fast_while_the_cloud_is_down() {
    let tmp = tempfile::tempdir().unwrap();
    let conf = tmp.path().join("cloud.conf");
    // Port 9 (discard) refuses connections: Keystone is down.
    std::fs::write(
        &conf,
        "[Global]\nauth-url = http://127.0.0.1:9/v3\nuser-id = u\npassword = p\ntenant-id = t\n\
         [Global \"east\"]\nauth-url = http://127.0.0.1:9/v3\nuser-id = u\npassword = p\ntenant-id = t\n",
    )
    .unwrap();
    let port = free_port();
    let conf_arg = format!("--cloud-config={}", conf.display());
    let http = format!("--http-endpoint=127.0.0.1:{port}");
    let driver = Driver::start(&[
        "--mode=controller",
        &conf_arg,
        "--cloud-name=",
        "--cloud-name=east",
        &http,
    ]);
    let mut client = IdentityClient::new(driver.channel().await);
    for _ in 0..5 {
        let started = std::time::Instant::now();
        let probe = client.probe(ProbeRequest {}).await.unwrap().into_inner();
        assert_eq!(probe.ready, Some(true));
        // Not a latency check (a debug build on a loaded machine may be slow): only that
        // Probe does not hang on the cloud, whose requests wait up to the 10 s connect timeout.
        let took = started.elapsed();
        assert!(
            took < std::time::Duration::from_secs(5),
            "Probe took {took:?}"
        );
    }
    let (code, body) = http_get(port, "/healthz");
    assert_eq!((code, body.trim()), (200, "ok"));
    // The background check runs at startup; wait for its first answer.
    let until = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let body = loop {
        let (code, body) = http_get(port, "/readyz");
        assert_eq!(code, 503, "{body}");
        if body.contains("not reachable") && !body.contains("not checked yet") {
            break body;
        }
        assert!(std::time::Instant::now() < until, "{body}");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    assert!(
        body.contains("the default cloud ([Global]) is not reachable")
            && body.contains("cloud \"east\" is not reachable"),
        "{body}"
    );
    let (_, metrics) = http_get(port, "/metrics");
    assert!(
        metrics.contains(r#"cinder_csi_cloud_up{cloud="east"} 0"#),
        "{metrics}"
    );
    assert!(
        metrics.contains(r#"cinder_csi_cloud_up{cloud=""} 0"#),
        "{metrics}"
    );
    // Probe still OK.
    client.probe(ProbeRequest {}).await.unwrap();
}

/// An upstream node manifest, as written: `/bin/cinder-csi-plugin` as the first argument
/// (the image's entrypoint receives it), `CSI_ENDPOINT=unix://<dir>/csi.sock` without the
/// third slash, `-v=2`, `--pvc-annotations`, and `NODE_ID` set to the Kubernetes node name.
#[tokio::test]
async fn upstream_manifest_invocation_works_and_warns() {
    use cinder_csi::server::csi::pb::node_client::NodeClient;
    use cinder_csi::server::csi::pb::NodeGetInfoRequest;

    let tmp = tempfile::tempdir().unwrap();
    let socket = tmp.path().join("csi/csi.sock");
    let endpoint = format!(
        "unix://{}",
        socket.display().to_string().trim_start_matches('/')
    );
    let log = tmp.path().join("stderr.log");
    let local = format!("--local-dir={}", tmp.path().join("local").display());
    let kubelet = format!("--kubelet-dir={}", tmp.path().display());
    let launch = Launch::new()
        .args([
            "/bin/cinder-csi-plugin",
            "-v=2",
            "--nodeid=k8s-node-1",
            "--provide-controller-service=false",
            "--pvc-annotations",
            "--backend=local",
            &local,
            &kubelet,
        ])
        .socket(&socket)
        .env("CSI_ENDPOINT", &endpoint)
        .env("NODE_ID", "k8s-node-1")
        .env_remove("CINDER_CSI_NODE_ID")
        .inherit_log_level()
        .log(&log);
    let driver = common::Driver::launch(tmp, launch);
    let mut node = NodeClient::new(driver.channel().await);
    let info = node
        .node_get_info(NodeGetInfoRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_ne!(
        info.node_id, "k8s-node-1",
        "NODE_ID must not become the node id"
    );
    let text = std::fs::read_to_string(driver.path().join("stderr.log")).unwrap();
    assert!(
        text.contains("NODE_ID environment variable is set but not used"),
        "{text}"
    );
    // --pvc-annotations is the controller's: a node built no Kubernetes client for it.
    assert!(!text.contains("Kubernetes API"), "{text}");
}
