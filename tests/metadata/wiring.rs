//! How `app` turns flags and `[Metadata]` into the node's metadata source.

use std::io::Write;
use std::process::Command;
use std::time::Duration;

use cinder_csi::app::{metadata_options, plan};
use cinder_csi::host::metadata::Source;
use cinder_csi::tools::cli::Cli;
use clap::Parser;

use super::support::*;

fn args(extra: &[&str]) -> cinder_csi::app::cli::ServeArgs {
    let mut v = vec![
        "cinder-csi",
        "--mode",
        "node",
        "--endpoint",
        "unix:///tmp/x.sock",
    ];
    v.extend_from_slice(extra);
    Cli::try_parse_from(v).unwrap().serve
}

#[test]
fn metadata_section_and_flags_are_merged() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("cloud.conf");
    let mut f = std::fs::File::create(&conf).unwrap();
    writeln!(
        f,
        "[Metadata]\nsearch-order = metadataService,configDrive\nrequest-timeout = 3s\n\
         metadata-url = http://10.0.0.1/openstack/latest/meta_data.json"
    )
    .unwrap();
    let conf = conf.to_str().unwrap();

    let p = plan(&args(&["--cloud-config", conf])).unwrap();
    let o = metadata_options(&args(&["--cloud-config", conf]), &p.config.metadata);
    assert_eq!(
        o.metadata.search_order,
        vec![Source::MetadataService, Source::ConfigDrive]
    );
    assert_eq!(
        o.metadata.metadata_url,
        "http://10.0.0.1/openstack/latest/meta_data.json"
    );
    assert_eq!(o.metadata.request_timeout, Duration::from_secs(3));
    assert_eq!(o.node_id, None);
    assert!(p.metadata.is_some());

    // The flag wins over the file.
    let a = args(&[
        "--cloud-config",
        conf,
        "--metadata-url",
        "http://127.0.0.1:1/m",
    ]);
    assert_eq!(
        metadata_options(&a, &p.config.metadata)
            .metadata
            .metadata_url,
        "http://127.0.0.1:1/m"
    );

    // No config at all: upstream's defaults.
    let p = plan(&args(&[])).unwrap();
    let o = metadata_options(&args(&[]), &p.config.metadata);
    assert_eq!(
        o.metadata.search_order,
        vec![Source::ConfigDrive, Source::MetadataService]
    );
    assert_eq!(
        o.metadata.metadata_url,
        "http://169.254.169.254/openstack/latest/meta_data.json"
    );

    // Controller-only processes build no metadata source.
    let a = Cli::try_parse_from([
        "cinder-csi",
        "--mode",
        "controller",
        "--backend",
        "local",
        "--local-dir",
        "/tmp",
    ])
    .unwrap()
    .serve;
    assert!(plan(&a).unwrap().metadata.is_none());
}

#[tokio::test]
async fn node_id_flag_is_the_id_and_the_zone_is_still_looked_up() {
    let server = Server::start(vec![Reply::Json(meta_data(UUID, "az"))]).await;
    let p = plan(&args(&["--node-id", "n1", "--metadata-url", &server.url])).unwrap();
    let got = p.metadata.unwrap().instance().await.unwrap();
    assert_eq!(got.uuid, "n1");
    assert_eq!(got.availability_zone.as_deref(), Some("az"));
    assert_eq!(server.requests(), 1);
}

/// No metadata at all (nothing listens at the URL): `--node-id` and `--node-az` (or its
/// environment variable, the name the cluster helper uses) are the answer.
#[tokio::test]
async fn node_az_is_the_zone_without_metadata() {
    let dead = "http://127.0.0.1:9/openstack/latest/meta_data.json";
    let p = plan(&args(&[
        "--node-id",
        "n1",
        "--node-az",
        "zone 2",
        "--metadata-url",
        dead,
    ]))
    .unwrap();
    let got = p.metadata.unwrap().instance().await.unwrap();
    assert_eq!(got.uuid, "n1");
    assert_eq!(got.availability_zone.as_deref(), Some("zone 2"));
    let a = args(&["--node-id", "n1", "--metadata-url", dead]);
    assert_eq!(a.node_az, None);
}

#[test]
fn bad_metadata_flags_exit_64_before_binding() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("csi.sock");
    let ep = format!("unix://{}", sock.display());
    for (extra, want) in [
        (vec!["--node-id", ""], "--node-id \"\" must be non-empty"),
        (
            vec!["--node-az", " "],
            "--node-az \" \" must be a non-empty",
        ),
        (
            vec!["--metadata-url", "169.254.169.254"],
            "is not an http(s) URL",
        ),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_cinder-csi"))
            .args(["--mode", "node", "--endpoint", &ep])
            .args(&extra)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(64), "{extra:?}: {stderr}");
        assert!(stderr.contains(want), "{extra:?}: {stderr}");
        assert!(!sock.exists(), "bound before checking {extra:?}");
    }
}
