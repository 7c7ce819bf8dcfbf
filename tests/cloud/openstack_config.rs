//! The configuration files `tests/harness/openstack/ostack up` writes are ones the driver accepts:
//! both cloud.conf variants parse and validate (password and application credential), and the
//! flags the openstack_* tests start `cinder-csi` with pass the startup checks (`app::plan`).
//! Runs only with CINDER_CSI_OSTACK_ENV=<state>/env.sh; prints "skipped: ..." otherwise.

use crate::support::openstack_support;

use std::path::PathBuf;

use cinder_csi::config::{self, AuthMethod};
use clap::Parser;
use openstack_support::Cloud;

#[test]
fn cloud_conf_variants_validate() {
    let Some(cloud) = Cloud::from_env("openstack_config") else {
        return;
    };
    for (var, want) in [
        ("OSTACK_CLOUD_CONF", AuthMethod::Password),
        (
            "OSTACK_CLOUD_CONF_APPCRED",
            AuthMethod::ApplicationCredential,
        ),
    ] {
        let path = PathBuf::from(cloud.var(var));
        let conf = config::load(std::slice::from_ref(&path))
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let clouds = conf
            .resolve_clouds(&[], &config::ProcessEnv)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let global = &clouds[""];
        assert_eq!(global.validate("").unwrap(), want, "{}", path.display());
        assert_eq!(global.auth_url.as_deref(), Some(cloud.var("OS_AUTH_URL")));
        assert_eq!(global.region.as_deref(), Some(cloud.var("OS_REGION_NAME")));
        assert_eq!(
            conf.metadata.search_order,
            vec![config::MetadataSource::MetadataService]
        );
    }
}

#[test]
fn driver_flags_for_a_test_node_pass_startup_checks() {
    let Some(cloud) = Cloud::from_env("openstack_config") else {
        return;
    };
    let argv = [
        "cinder-csi",
        "--mode",
        "all",
        "--backend",
        "openstack",
        "--endpoint",
        "unix:///var/tmp/cinder-csi-ostack-test.sock",
        "--cloud-config",
        cloud.var("OSTACK_CLOUD_CONF"),
        "--by-id-dir",
        cloud.node(1, "BY_ID_DIR"),
        "--metadata-url",
        cloud.node(1, "METADATA_URL"),
        "--kubelet-dir",
        "/var/tmp/kubelet-ostack-test",
    ];
    let args = cinder_csi::tools::cli::Cli::try_parse_from(argv)
        .unwrap()
        .serve;
    if let Err(e) = cinder_csi::app::plan(&args) {
        panic!("cinder-csi would refuse the test cloud's flags: {e}");
    }
}
