//! Command-line parsing: upstream flag spellings, environment, conflicts.

use std::path::PathBuf;

use clap::Parser;

use super::*;

fn parse(args: &[&str]) -> ServeArgs {
    let mut v = vec!["cinder-csi"];
    v.extend_from_slice(args);
    ServeArgs::try_parse_from(v).unwrap()
}

#[test]
fn defaults() {
    let a = parse(&[]);
    assert_eq!(a.endpoint, "unix:///csi/csi.sock");
    assert_eq!(a.mode, Mode::All);
    assert_eq!(a.backend, Backend::Openstack);
    assert!(a.with_topology);
    assert_eq!(a.driver_name, "cinder.csi.openstack.org");
}

#[test]
fn upstream_aliases_select_mode() {
    let a = parse(&["--provide-controller-service=false"]);
    assert_eq!(a.effective_mode().unwrap(), Mode::Node);
    let a = parse(&["--provide-node-service=false"]);
    assert_eq!(a.effective_mode().unwrap(), Mode::Controller);
    let a = parse(&[
        "--provide-node-service=false",
        "--provide-controller-service=false",
    ]);
    assert!(a.effective_mode().is_err());
    let a = parse(&["--mode", "node", "--provide-node-service=false"]);
    assert!(a.effective_mode().is_err());
}

#[test]
fn topology_flags() {
    let a = parse(&[
        "--with-topology=false",
        "--additional-topology",
        "topology.kubernetes.io/region=R1",
        "--additional-topology=a=b",
    ]);
    assert!(!a.with_topology);
    assert_eq!(
        a.additional_topology,
        vec![
            ("topology.kubernetes.io/region".into(), "R1".into()),
            ("a".into(), "b".into())
        ]
    );
    let mut v = vec!["cinder-csi", "--additional-topology", "novalue"];
    assert!(ServeArgs::try_parse_from(v.drain(..)).is_err());
}

#[test]
fn upstream_manifest_flags_are_accepted() {
    let a = parse(&[
        "--v=5",
        "--pvc-annotations",
        "--nodeid=x",
        "--node-service-no-os-client=true",
        "--user-agent=a",
        "--vmodule=x=4",
        "--log-flush-frequency=5s",
    ]);
    assert_eq!(a.effective_log_level(), "debug");
    assert_eq!(
        a.upstream.ignored(),
        vec![
            "--nodeid",
            "--node-service-no-os-client",
            "--user-agent",
            "--vmodule",
            "--log-flush-frequency"
        ]
    );
    let a = parse(&["--v=5", "--log-level=warn"]);
    assert_eq!(a.effective_log_level(), "warn");
    assert_eq!(parse(&[]).effective_log_level(), "info");
}

#[test]
fn upstream_binary_path_as_first_argument_is_dropped() {
    let argv = normalize_argv([
        "/usr/local/bin/cinder-csi",
        "/bin/cinder-csi-plugin",
        "--endpoint=unix://csi/csi.sock",
        "-v=2",
    ]);
    let a = ServeArgs::try_parse_from(argv).unwrap();
    assert_eq!(a.endpoint, "unix://csi/csi.sock");
    assert_eq!(a.upstream.verbosity, Some(2));
    // Invoked as the upstream name (the image's symlink): nothing to drop.
    let argv = normalize_argv(["/bin/cinder-csi-plugin", "--v=5"]);
    assert_eq!(argv.len(), 2);
    assert_eq!(
        ServeArgs::try_parse_from(argv)
            .unwrap()
            .effective_log_level(),
        "debug"
    );
    let argv = normalize_argv(["cinder-csi", "cinder-csi-plugin", "--mode=node"]);
    assert_eq!(argv, vec!["cinder-csi", "--mode=node"]);
    // Only the first argument, and only that exact name.
    let argv = normalize_argv(["cinder-csi", "--mode=node", "/bin/cinder-csi-plugin"]);
    assert_eq!(argv.len(), 3);
    let argv = normalize_argv(["cinder-csi", "/bin/cinder-csi-plugin-x"]);
    assert_eq!(argv.len(), 2);
    assert!(ServeArgs::try_parse_from(argv).is_err());
}

#[test]
fn pvc_annotations_is_a_flag_and_kubeconfig_is_ignored_without_it() {
    let a = parse(&["--pvc-annotations", "--kubeconfig=/k"]);
    assert!(a.upstream.pvc_annotations());
    assert!(
        a.upstream.ignored().is_empty(),
        "{:?}",
        a.upstream.ignored()
    );
    let a = parse(&["--pvc-annotations=false", "--kubeconfig=/k"]);
    assert!(!a.upstream.pvc_annotations());
    assert_eq!(a.upstream.ignored(), vec!["--kubeconfig"]);
    assert!(!parse(&[]).upstream.pvc_annotations());
}

#[test]
fn repeatable_cloud_flags() {
    let a = parse(&[
        "--cloud-config",
        "/a",
        "--cloud-config=/b",
        "--cloud-name",
        "r1",
    ]);
    assert_eq!(
        a.cloud_config,
        vec![PathBuf::from("/a"), PathBuf::from("/b")]
    );
    assert_eq!(a.cloud_name, vec!["r1".to_string()]);
}

#[test]
fn log_format_is_read_before_parsing() {
    let hint = |args: &[&str], env| {
        let argv: Vec<std::ffi::OsString> = args.iter().map(Into::into).collect();
        log_format_hint(&argv, env)
    };
    assert_eq!(
        hint(&["x", "--log-format", "json", "--bad"], None),
        LogFormat::Json
    );
    assert_eq!(hint(&["x", "--log-format=json"], None), LogFormat::Json);
    assert_eq!(
        hint(&["x", "--log-format=json", "--log-format=text"], None),
        LogFormat::Text
    );
    assert_eq!(hint(&["x"], Some("json")), LogFormat::Json);
    assert_eq!(
        hint(&["x", "--log-format=text"], Some("json")),
        LogFormat::Text
    );
    assert_eq!(
        hint(&["x", "--", "--log-format=json"], None),
        LogFormat::Text
    );
    assert_eq!(hint(&["x", "--log-format"], None), LogFormat::Text);
}
