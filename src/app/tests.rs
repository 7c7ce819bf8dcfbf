//! Startup planning and option building from flags and cloud.conf (no I/O beyond temp files).

use std::collections::BTreeMap;
use std::path::Path;

use clap::Parser;

use super::clouds::openstack_clouds;
use super::*;
use crate::app::cli::ServeArgs;
use crate::cloud::openstack::OpenStackOptions;
use crate::cloud::{openstack, MigrationPolicy};
use crate::config::{self, CloudConfig};
use crate::server::metrics::Metrics;
use crate::server::Endpoint;

fn args(extra: &[&str]) -> ServeArgs {
    let mut v = vec!["cinder-csi"];
    v.extend_from_slice(extra);
    crate::app::cli::ServeArgs::try_parse_from(v).unwrap()
}

fn controller_plan() -> Plan {
    Plan {
        endpoint: Endpoint::parse("unix:///tmp/csi.sock").unwrap(),
        controller: true,
        node: false,
        config: CloudConfig::default(),
        clouds: BTreeMap::new(),
        metadata: None,
    }
}

#[tokio::test]
async fn local_backend_builds_one_default_cloud() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display().to_string();
    let a = args(&["--backend", "local", "--local-dir", &d, "--node-id", "n1"]);
    let clouds = build_clouds(&a, &controller_plan(), &Metrics::new())
        .await
        .unwrap();
    let cloud = clouds.get("").expect("the default cloud");
    assert_eq!(clouds.len(), 1);
    assert_eq!(cloud.servers.get_server("n1").await.unwrap().id, "n1");
    assert!(cloud
        .servers
        .get_server("n2")
        .await
        .unwrap_err()
        .is_not_found());
}

#[tokio::test]
async fn local_zones_and_the_node_zone() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display().to_string();
    let base = ["--backend", "local", "--local-dir", &d, "--node-id", "n1"];
    let with = |extra: &[&str]| {
        let mut v = base.to_vec();
        v.extend_from_slice(extra);
        args(&v)
    };
    // The node's zone: --node-az, else the first configured zone (`local` by default).
    let zone = |a: &ServeArgs| local_node::local_node_zone(a).to_string();
    assert_eq!(zone(&with(&[])), "local");
    assert_eq!(zone(&with(&["--local-zones", "zone-a,zone-b"])), "zone-a");
    assert_eq!(
        zone(&with(&[
            "--local-zones",
            "zone-a,zone-b",
            "--node-az",
            "zone-b"
        ])),
        "zone-b"
    );
    let md = plan(&with(&["--mode", "node", "--node-az", "zone-b"]))
        .unwrap()
        .metadata
        .unwrap();
    assert_eq!(
        md.instance().await.unwrap().availability_zone.as_deref(),
        Some("zone-b")
    );
    for (bad, says) in [
        (vec!["--local-zones", "zone-a,zone-a"], "given twice"),
        (
            vec!["--local-zones", "zone-a, zone-b"],
            "surrounding spaces",
        ),
        (vec!["--local-zones", ""], "zone"),
        (vec!["--node-az", " zone-b"], "--node-az"),
    ] {
        let err = plan(&with(&bad)).err().expect("refused");
        assert!(err.to_string().contains(says), "{bad:?}: {err}");
    }
    let a = with(&["--local-zones", "zone-a,zone-b"]);
    let clouds = build_clouds(&a, &controller_plan(), &Metrics::new())
        .await
        .unwrap();
    let cloud = clouds.get("").unwrap();
    assert_eq!(
        cloud.placement.availability_zones().await.unwrap(),
        ["zone-a", "zone-b"]
    );
    // The process's own node, unregistered, is in the first zone.
    let s = cloud.servers.get_server("n1").await.unwrap();
    assert_eq!(s.availability_zone.as_deref(), Some("zone-a"));
}

#[test]
fn options_from_flags() {
    let a = args(&["--cluster", "c1", "--with-topology=false"]);
    let bs = config::BlockStorageConfig {
        ignore_volume_az: true,
        cascade_delete: true,
        list_cluster_volumes_only: true,
        retype_migration_policy: config::RetypeMigrationPolicy::OnDemand,
        ..Default::default()
    };
    let o = controller_options(&a, &bs);
    assert_eq!(o.cluster, "c1");
    assert!(!o.with_topology);
    assert_eq!(o.block_storage, bs, "the section is handed over whole");
    let o = controller_options(&a, &config::BlockStorageConfig::default());
    assert_eq!(
        o.block_storage.retype_migration_policy,
        MigrationPolicy::Never
    );
    assert!(!o.block_storage.cascade_delete);
}

#[test]
fn cloud_conf_sections_become_adapter_options() {
    let text = "[Global]\nauth-url = https://keystone.example/v3\nusername = demo\n\
                password = s3cret\nuser-domain-name = Default\ntenant-name = demo\n\
                tenant-domain-id = default\nregion = RegionTwo\nos-endpoint-type = internal\n\
                ca-file = /etc/ssl/ca.pem\n\
                [Global \"east\"]\nauth-url = http://k:5000\napplication-credential-id = ac\n\
                application-credential-secret = appsecret\n\
                [BlockStorage]\nignore-volume-microversion = true\n";
    let cfg = config::parse_str(Path::new("cloud.conf"), text).unwrap();
    let clouds = cfg
        .resolve_clouds(
            &["".to_string(), "east".to_string()],
            &config::FixedEnv::default(),
        )
        .unwrap();
    let o = OpenStackOptions::from_config(clouds[""].clone(), cfg.block_storage.clone());
    let g = &o.global;
    assert_eq!(g.auth_url.as_deref(), Some("https://keystone.example/v3"));
    assert_eq!(g.auth.username.as_deref(), Some("demo"));
    assert_eq!(g.auth.password.as_ref().map(|p| p.expose()), Some("s3cret"));
    assert_eq!(g.auth.project_name.as_deref(), Some("demo"));
    assert_eq!(g.auth.project_domain_id.as_deref(), Some("default"));
    assert_eq!(g.region.as_deref(), Some("RegionTwo"));
    assert_eq!(g.endpoint_type(), openstack::Interface::Internal);
    assert_eq!(g.tls.ca_file.as_deref(), Some(Path::new("/etc/ssl/ca.pem")));
    assert!(!g.tls.is_insecure());
    assert!(o.block_storage.ignore_volume_microversion);
    assert_eq!(o.api_concurrency(), 4, "the adapter's default when unset");
    assert!(!format!("{o:?}").contains("s3cret"));
    let east = OpenStackOptions::from_config(clouds["east"].clone(), cfg.block_storage.clone());
    assert_eq!(
        east.global.auth.application_credential_id.as_deref(),
        Some("ac")
    );
}

#[tokio::test]
async fn every_section_becomes_a_cloud_without_a_request() {
    let text = "[Global]\nauth-url = http://127.0.0.1:9/v3\nuser-id = u\npassword = p\n\
                tenant-id = t\n[Global \"b\"]\nauth-url = http://127.0.0.1:9/v3\n\
                token = tok\ntenant-id = t\n";
    let config = config::parse_str(Path::new("cloud.conf"), text).unwrap();
    let clouds = config
        .resolve_clouds(&["".into(), "b".into()], &config::FixedEnv::default())
        .unwrap();
    let plan = Plan {
        endpoint: Endpoint::parse("unix:///tmp/x.sock").unwrap(),
        controller: true,
        node: false,
        config,
        clouds,
        metadata: None,
    };
    let (clouds, api) = openstack_clouds(&plan, &Metrics::new()).await.unwrap();
    assert_eq!(clouds.names().collect::<Vec<_>>(), vec!["", "b"]);
    assert_eq!(api.snapshot().requests(crate::cloud::Service::Keystone), 0);
}
