//! Typed sections: every key, defaults, merge, subsections, warnings, secrets.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::super::{
    load, load_optional, parse_str, AuthOptions, BlockStorageConfig, CloudConfig, EndpointType,
    GlobalConfig, Location, MetadataConfig, MetadataSource, RetypeMigrationPolicy, Secret,
    TlsOptions, WarningKind, DEFAULT_METADATA_URL,
};
use super::{conf, parse};

/// Every key upstream accepts (AuthOpts gcfg tags + `token`), plus ours.
const EVERY_KEY: &str = r#"
; every key cinder-csi reads
[Global]
auth-url = https://keystone.example:5000/v3
username = alice
password = "s3cr3t;#pw"
user-id = u-1
token = tok-1
tenant-id = p-1
tenant-name = project
tenant-domain-id = pd-1
tenant-domain-name = ProjectDomain
domain-id = d-1
domain-name = Default
user-domain-id = ud-1
user-domain-name = UserDomain
application-credential-id = ac-1
application-credential-name = appcred
application-credential-secret = ac-secret
trust-id = t-1
trustee-id = te-1
trustee-password = te-secret
region = RegionOne
os-endpoint-type = internal
ca-file = /etc/cacert/ca.pem
cert-file = /etc/tls/client.crt
key-file = /etc/tls/client.key
tls-insecure = true
use-clouds = true
clouds-file = /etc/openstack/clouds.yaml
cloud = openstack

[BlockStorage]
node-volume-attach-limit = 26
rescan-on-resize = true
ignore-volume-az = yes
ignore-volume-microversion = on
cascade-delete = 1
list-cluster-volumes-only
retype-migration-policy = on-demand

[Metadata]
search-order = metadataService, configDrive
request-timeout = 1m30s
metadata-url = http://169.254.169.254/openstack/2018-08-27/meta_data.json
"#;

fn some(s: &str) -> Option<String> {
    Some(s.to_string())
}

#[test]
fn every_key_parses_into_its_typed_field() {
    let cfg = parse(EVERY_KEY);
    assert!(cfg.warnings.is_empty(), "{:?}", cfg.warnings);
    assert_eq!(cfg.globals.len(), 1);
    let g = &cfg.globals[""];
    let want = GlobalConfig {
        auth_url: some("https://keystone.example:5000/v3"),
        auth: AuthOptions {
            username: some("alice"),
            user_id: some("u-1"),
            password: Some(Secret::new("s3cr3t;#pw")),
            token: Some(Secret::new("tok-1")),
            project_id: some("p-1"),
            project_name: some("project"),
            project_domain_id: some("pd-1"),
            project_domain_name: some("ProjectDomain"),
            domain_id: some("d-1"),
            domain_name: some("Default"),
            user_domain_id: some("ud-1"),
            user_domain_name: some("UserDomain"),
            application_credential_id: some("ac-1"),
            application_credential_name: some("appcred"),
            application_credential_secret: Some(Secret::new("ac-secret")),
            trust_id: some("t-1"),
            trustee_id: some("te-1"),
            trustee_password: Some(Secret::new("te-secret")),
        },
        region: some("RegionOne"),
        endpoint_type: Some(EndpointType::Internal),
        tls: TlsOptions {
            ca_file: Some(PathBuf::from("/etc/cacert/ca.pem")),
            cert_file: Some(PathBuf::from("/etc/tls/client.crt")),
            key_file: Some(PathBuf::from("/etc/tls/client.key")),
            insecure: Some(true),
        },
        use_clouds: true,
        clouds_file: Some(PathBuf::from("/etc/openstack/clouds.yaml")),
        cloud: some("openstack"),
        defined_at: Some(Location::at(conf(), 3)),
        origins: g.origins.clone(),
    };
    assert_eq!(*g, want);
    assert_eq!(g.origins.len(), 28, "every key records where it was set");
    assert_eq!(g.origin("auth-url"), Some(&Location::at(conf(), 4)));
    assert_eq!(g.origin("cloud"), Some(&Location::at(conf(), 31)));

    assert_eq!(
        cfg.block_storage,
        BlockStorageConfig {
            node_volume_attach_limit: 26,
            rescan_on_resize: true,
            ignore_volume_az: true,
            ignore_volume_microversion: true,
            cascade_delete: true,
            list_cluster_volumes_only: true,
            retype_migration_policy: RetypeMigrationPolicy::OnDemand,
            api_concurrency: None,
            group_type: None,
        }
    );
    assert_eq!(
        cfg.metadata,
        MetadataConfig {
            search_order: vec![MetadataSource::MetadataService, MetadataSource::ConfigDrive],
            request_timeout: Duration::from_secs(90),
            metadata_url: "http://169.254.169.254/openstack/2018-08-27/meta_data.json".into(),
        }
    );
    assert_eq!(cfg.files, [PathBuf::from(super::CONF)]);
}

#[test]
fn defaults_when_sections_are_absent() {
    let cfg = parse("");
    assert!(cfg.globals.is_empty());
    assert_eq!(cfg.block_storage.node_volume_attach_limit, 256);
    assert!(!cfg.block_storage.cascade_delete);
    assert!(!cfg.block_storage.list_cluster_volumes_only);
    assert_eq!(
        cfg.block_storage.retype_migration_policy,
        RetypeMigrationPolicy::Never
    );
    assert_eq!(
        cfg.metadata.search_order,
        [MetadataSource::ConfigDrive, MetadataSource::MetadataService]
    );
    assert_eq!(cfg.metadata.request_timeout, Duration::from_secs(10));
    assert_eq!(cfg.metadata.metadata_url, DEFAULT_METADATA_URL);

    let g = &parse("[Global]\n").globals[""];
    assert_eq!(g.endpoint_type(), EndpointType::Public);
    assert!(!g.tls.is_insecure());
    assert!(!g.use_clouds);
}

/// Reads one value out of a parsed config, as text.
type Getter = fn(&CloudConfig) -> String;

#[test]
fn scalar_spellings() {
    let cases: &[(&str, &str, Getter)] = &[
        (
            "[Global]\nos-endpoint-type = internalURL",
            "internal",
            |c| c.globals[""].endpoint_type().to_string(),
        ),
        ("[Global]\nos-endpoint-type = ADMIN", "admin", |c| {
            c.globals[""].endpoint_type().to_string()
        }),
        ("[Global]\nos-endpoint-type = publicURL", "public", |c| {
            c.globals[""].endpoint_type().to_string()
        }),
        ("[Global]\nos-endpoint-type =", "public", |c| {
            c.globals[""].endpoint_type().to_string()
        }),
        ("[Global]\ntls-insecure = FALSE", "false", |c| {
            c.globals[""].tls.is_insecure().to_string()
        }),
        ("[Global]\ntls-insecure", "true", |c| {
            c.globals[""].tls.is_insecure().to_string()
        }),
        ("[Global]\nuse-clouds = off", "false", |c| {
            c.globals[""].use_clouds.to_string()
        }),
        (
            "[BlockStorage]\nnode-volume-attach-limit = 0x10",
            "16",
            |c| c.block_storage.node_volume_attach_limit.to_string(),
        ),
        (
            "[BlockStorage]\nnode-volume-attach-limit = 256",
            "256",
            |c| c.block_storage.node_volume_attach_limit.to_string(),
        ),
        ("[BlockStorage]\nnode-volume-attach-limit = +1", "1", |c| {
            c.block_storage.node_volume_attach_limit.to_string()
        }),
        ("[BlockStorage]\nrescan-on-resize = No", "false", |c| {
            c.block_storage.rescan_on_resize.to_string()
        }),
        ("[BlockStorage]\napi-concurrency = 12", "Some(12)", |c| {
            format!("{:?}", c.block_storage.api_concurrency)
        }),
        (
            "[BlockStorage]\nretype-migration-policy = NEVER",
            "never",
            |c| c.block_storage.retype_migration_policy.to_string(),
        ),
        ("[Metadata]\nrequest-timeout = 30", "30s", |c| {
            format!("{:?}", c.metadata.request_timeout)
        }),
        ("[Metadata]\nrequest-timeout = 250ms", "250ms", |c| {
            format!("{:?}", c.metadata.request_timeout)
        }),
        ("[Metadata]\nrequest-timeout = 1.5s", "1.5s", |c| {
            format!("{:?}", c.metadata.request_timeout)
        }),
        ("[Metadata]\nrequest-timeout = 1h2m3s", "3723s", |c| {
            format!("{:?}", c.metadata.request_timeout)
        }),
        ("[Metadata]\nrequest-timeout = 500us", "500µs", |c| {
            format!("{:?}", c.metadata.request_timeout)
        }),
        (
            "[Metadata]\nsearch-order = configdrive",
            "[ConfigDrive]",
            |c| format!("{:?}", c.metadata.search_order),
        ),
        (
            "[Metadata]\nsearch-order =",
            "[ConfigDrive, MetadataService]",
            |c| format!("{:?}", c.metadata.search_order),
        ),
        (
            "[Metadata]\nmetadata-url = https://md.example/meta.json",
            "https://md.example/meta.json",
            |c| c.metadata.metadata_url.clone(),
        ),
        ("[Metadata]\nmetadata-url =", DEFAULT_METADATA_URL, |c| {
            c.metadata.metadata_url.clone()
        }),
    ];
    for (text, want, get) in cases {
        assert_eq!(get(&parse(text)), *want, "{text:?}");
    }
}

#[test]
fn out_of_range_values_become_defaults_with_a_warning() {
    let cases: &[(&str, &str)] = &[
        (
            "[BlockStorage]\nnode-volume-attach-limit = 0",
            "0 is not between 1 and 256; using 256",
        ),
        (
            "[BlockStorage]\nnode-volume-attach-limit = -5",
            "-5 is not between 1 and 256; using 256",
        ),
        (
            "[BlockStorage]\nnode-volume-attach-limit = 300",
            "300 is not between 1 and 256; using 256",
        ),
    ];
    for (text, message) in cases {
        let cfg = parse(text);
        assert_eq!(cfg.block_storage.node_volume_attach_limit, 256, "{text:?}");
        assert_eq!(cfg.warnings.len(), 1, "{text:?}");
        assert_eq!(cfg.warnings[0].kind, WarningKind::ValueAdjusted);
        assert_eq!(
            cfg.warnings[0].to_string(),
            format!("/etc/config/cloud.conf:2: [BlockStorage] node-volume-attach-limit: {message}")
        );
    }
    let cfg = parse("[Metadata]\nrequest-timeout = 0s");
    assert_eq!(cfg.metadata.request_timeout, Duration::from_secs(10));
    assert_eq!(
        cfg.warnings[0].to_string(),
        "/etc/config/cloud.conf:2: [Metadata] request-timeout: 0 (no timeout) is not supported; using 10s"
    );
}

#[test]
fn unknown_sections_and_keys_are_warnings() {
    let cfg = parse(
        "[Global]\nauth-url = https://k/v3\nproject-id = p\nfoo = bar\n\
         [LoadBalancer]\nuse-octavia = true\n\
         [BlockStorage]\nbs-version = v3\ntrust-device-path = false\n\
         [BlockStorage \"x\"]\nrescan-on-resize = true\n\
         [Metadata]\nfoo\n",
    );
    let got: Vec<(WarningKind, String)> = cfg
        .warnings
        .iter()
        .map(|w| (w.kind, w.to_string()))
        .collect();
    let c = super::CONF;
    assert_eq!(
        got,
        [
            (WarningKind::UnknownKey, format!("{c}:3: [Global] project-id: unknown key; ignored (did you mean tenant-id?)")),
            (WarningKind::UnknownKey, format!("{c}:4: [Global] foo: unknown key; ignored")),
            (WarningKind::UnknownSection, format!("{c}:5: [LoadBalancer]: section is not used by cinder-csi; ignored")),
            (WarningKind::IgnoredKey, format!("{c}:8: [BlockStorage] bs-version: accepted for compatibility and ignored (cinder-csi always uses the Block Storage v3 API)")),
            (WarningKind::UnknownKey, format!("{c}:9: [BlockStorage] trust-device-path: unknown key; ignored")),
            (WarningKind::UnknownSection, format!("{c}:10: [BlockStorage \"x\"]: subsections are only supported for [Global]; use [BlockStorage]; section ignored")),
            (WarningKind::UnknownKey, format!("{c}:13: [Metadata] foo: unknown key; ignored")),
        ]
    );
    assert!(
        !cfg.block_storage.rescan_on_resize,
        "ignored subsection must not apply"
    );
    assert_eq!(
        cfg.globals[""].auth.project_id, None,
        "project-id is not an upstream gcfg key"
    );
}

#[test]
fn global_subsections_are_separate_clouds() {
    let cfg = parse(
        "[Global]\nauth-url = https://a/v3\nregion = A\n\
         [Global \"east\"]\nauth-url = https://e/v3\n\
         [Global \"West\"]\n",
    );
    let names: Vec<&str> = cfg.globals.keys().map(String::as_str).collect();
    assert_eq!(names, ["", "West", "east"]);
    assert_eq!(cfg.globals[""].region.as_deref(), Some("A"));
    assert_eq!(
        cfg.globals["east"].region, None,
        "no inheritance from [Global]"
    );
    assert_eq!(
        cfg.globals["east"].auth_url.as_deref(),
        Some("https://e/v3")
    );
    assert_eq!(
        cfg.globals["West"],
        GlobalConfig {
            defined_at: Some(Location::at(conf(), 6)),
            ..GlobalConfig::default()
        }
    );
}

#[test]
fn later_files_win_per_key_and_empty_values_unset() {
    let mut cfg = CloudConfig::default();
    let first = Path::new("/etc/config/cloud.conf");
    let second = Path::new("/etc/config/override.conf");
    cfg.merge_str(
        first,
        "[Global]\nauth-url = https://old/v3\nregion = R1\nca-file = /ca.pem\n\
         [Global \"east\"]\nregion = E\n\
         [BlockStorage]\nnode-volume-attach-limit = 10\nrescan-on-resize = true\n",
    )
    .unwrap();
    cfg.merge_str(
        second,
        "[Global]\nauth-url = https://new/v3\nca-file =\n\
         [BlockStorage]\nrescan-on-resize = false\n[Metadata]\nsearch-order = metadataService\n",
    )
    .unwrap();
    let g = &cfg.globals[""];
    assert_eq!(g.auth_url.as_deref(), Some("https://new/v3"));
    assert_eq!(g.region.as_deref(), Some("R1"));
    assert_eq!(g.tls.ca_file, None, "an empty value unsets the key");
    assert_eq!(g.origin("auth-url"), Some(&Location::at(second, 2)));
    assert_eq!(g.origin("region"), Some(&Location::at(first, 3)));
    assert_eq!(g.defined_at, Some(Location::at(first, 1)));
    assert_eq!(cfg.globals["east"].region.as_deref(), Some("E"));
    assert_eq!(cfg.block_storage.node_volume_attach_limit, 10);
    assert!(!cfg.block_storage.rescan_on_resize);
    assert_eq!(cfg.metadata.search_order, [MetadataSource::MetadataService]);
    assert_eq!(cfg.files, [first.to_path_buf(), second.to_path_buf()]);
}

#[test]
fn duplicate_keys_across_files_are_merges_not_errors() {
    let mut cfg = parse_str(conf(), "[Global]\nregion = A\n").unwrap();
    cfg.merge_str(conf(), "[Global]\nregion = B\n").unwrap();
    assert_eq!(cfg.globals[""].region.as_deref(), Some("B"));
}

#[test]
fn load_reads_and_merges_files_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.conf");
    let b = dir.path().join("b.conf");
    std::fs::write(&a, "[Global]\nauth-url = https://a/v3\nregion = A\n").unwrap();
    std::fs::write(&b, "\u{feff}[Global]\r\nregion = B\r\n").unwrap();
    let cfg = load(&[a.clone(), b.clone()]).unwrap();
    assert_eq!(cfg.globals[""].auth_url.as_deref(), Some("https://a/v3"));
    assert_eq!(cfg.globals[""].region.as_deref(), Some("B"));
    assert_eq!(cfg.files, [a.clone(), b.clone()]);

    let cfg = load(&[b.clone(), a.clone()]).unwrap();
    assert_eq!(cfg.globals[""].region.as_deref(), Some("A"));
}

#[test]
fn load_optional_skips_missing_files_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let present = dir.path().join("present.conf");
    let missing = dir.path().join("missing.conf");
    std::fs::write(&present, "[BlockStorage]\nrescan-on-resize = true\n").unwrap();
    let cfg = load_optional(&[missing.clone(), present.clone()]).unwrap();
    assert!(cfg.block_storage.rescan_on_resize);
    assert_eq!(cfg.files, std::slice::from_ref(&present));
    assert_eq!(cfg.warnings.len(), 1);
    assert_eq!(cfg.warnings[0].kind, WarningKind::MissingFile);
    assert_eq!(
        cfg.warnings[0].to_string(),
        format!("{}: file not found; skipped", missing.display())
    );
    // A parse error is still an error on the node.
    std::fs::write(&present, "[Global\n").unwrap();
    assert!(load_optional(&[present]).is_err());
}

#[test]
fn secrets_never_print() {
    let cfg = parse(
        "[Global]\npassword = hunter2-pw\ntoken = hunter2-tok\n\
         application-credential-secret = hunter2-ac\ntrustee-password = hunter2-tp\n",
    );
    let g = &cfg.globals[""];
    for shown in [format!("{cfg:?}"), format!("{g:?}"), format!("{g:#?}")] {
        assert!(!shown.contains("hunter2"), "secret leaked: {shown}");
        assert!(shown.contains("<redacted>"));
    }
    let secret = g.auth.password.as_ref().unwrap();
    assert_eq!(secret.to_string(), "<redacted>");
    assert_eq!(format!("{secret:?}"), "<redacted>");
    assert_eq!(secret.expose(), "hunter2-pw");
    assert_eq!(g.auth.token.as_ref().unwrap().expose(), "hunter2-tok");
    assert_eq!(
        g.auth
            .application_credential_secret
            .as_ref()
            .unwrap()
            .expose(),
        "hunter2-ac"
    );
    assert_eq!(
        g.auth.trustee_password.as_ref().unwrap().expose(),
        "hunter2-tp"
    );
    let hidden: Vec<&str> = g.auth.secrets().map(Secret::expose).collect();
    assert_eq!(
        hidden,
        ["hunter2-pw", "hunter2-tok", "hunter2-ac", "hunter2-tp"]
    );
}

#[test]
fn errors_do_not_echo_secret_values_of_other_keys() {
    // A bad value is quoted in its own error; secrets are never in other errors.
    let err = super::parse_err("[Global]\npassword = hunter2\ntls-insecure = maybe\n");
    assert!(!err.contains("hunter2"), "{err}");
}

#[test]
fn a_failed_merge_leaves_the_config_unchanged() {
    let mut cfg = parse("[Global]\nregion = A\n");
    let before = cfg.clone();
    let bad = "[Global]\nregion = B\nfoo = 1\ntls-insecure = maybe\n";
    assert!(cfg.merge_str(conf(), bad).is_err());
    assert_eq!(cfg, before);
}
