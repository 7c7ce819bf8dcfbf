//! Health and readiness against the real OpenStack test cloud: the controller's background
//! check reaches Keystone and Cinder (`/readyz` ok, `cinder_csi_cloud_up` 1) and Probe stays
//! a local answer. Skipped unless CINDER_CSI_OSTACK_ENV points at the cloud's env file.

use crate::support::common;
use crate::support::openstack_support;

use std::time::{Duration, Instant};

use cinder_csi::server::csi::pb::identity_client::IdentityClient;
use cinder_csi::server::csi::pb::ProbeRequest;
use common::{http_get, Driver};
use openstack_support::Cloud;

#[tokio::test]
async fn controller_reports_the_real_cloud_reachable() {
    let Some(cloud) = Cloud::from_env("controller_reports_the_real_cloud_reachable") else {
        return;
    };
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let conf = format!("--cloud-config={}", cloud.var("OSTACK_CLOUD_CONF"));
    let http = format!("--http-endpoint=127.0.0.1:{port}");
    let driver = Driver::start(&["--mode=controller", "--backend=openstack", &conf, &http]);
    let mut client = IdentityClient::new(driver.channel().await);
    let probe = client.probe(ProbeRequest {}).await.unwrap().into_inner();
    assert_eq!(probe.ready, Some(true));

    let until = Instant::now() + Duration::from_secs(60);
    loop {
        let (code, body) = http_get(port, "/readyz");
        if code == 200 {
            assert_eq!(body.trim(), "ok");
            break;
        }
        assert!(
            body.contains("not checked yet") && Instant::now() < until,
            "/readyz {code}: {body}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let (_, metrics) = http_get(port, "/metrics");
    assert!(
        metrics.contains(r#"cinder_csi_cloud_up{cloud=""} 1"#),
        "{metrics}"
    );
    assert!(
        metrics.contains(r#"openstack_api_requests_total{request="volume_list"}"#),
        "{metrics}"
    );
}
