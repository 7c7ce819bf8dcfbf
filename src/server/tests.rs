//! The endpoint, the socket, serving and draining, and the RPC span layer.

use std::path::PathBuf;

use super::*;

#[test]
fn parses_endpoints() {
    assert_eq!(
        Endpoint::parse("unix:///csi/csi.sock").unwrap(),
        Endpoint::Unix("/csi/csi.sock".into())
    );
    assert_eq!(
        Endpoint::parse("unix:/csi/csi.sock").unwrap(),
        Endpoint::Unix("/csi/csi.sock".into())
    );
    assert_eq!(
        Endpoint::parse("tcp://127.0.0.1:10000").unwrap(),
        Endpoint::Tcp("127.0.0.1:10000".into())
    );
    assert!(Endpoint::parse("/csi/csi.sock").is_err());
    assert!(Endpoint::parse("unix:csi.sock").is_err());
    assert!(Endpoint::parse("unix://").is_err());
    assert!(Endpoint::parse("unix:///").is_err());
    assert!(Endpoint::parse("ünix://x").is_err());
    assert!(Endpoint::parse("tcp://").is_err());
}

/// Upstream's `CSI_ENDPOINT=unix://csi/csi.sock` and its other spellings, as Go's net/url
/// + path.Join read them.
#[test]
fn parses_upstream_endpoint_forms() {
    for (given, want) in [
        ("unix://csi/csi.sock", "/csi/csi.sock"),
        ("unix:///csi/csi.sock", "/csi/csi.sock"),
        ("unix:////csi//csi.sock", "/csi/csi.sock"),
        ("UNIX://csi/csi.sock", "/csi/csi.sock"),
        ("unix://relative.sock", "/relative.sock"),
        (
            "unix:///var/lib/kubelet/plugins/x/./csi.sock",
            "/var/lib/kubelet/plugins/x/csi.sock",
        ),
        ("unix:///a/b/../csi.sock", "/a/csi.sock"),
        ("unix:///../csi.sock", "/csi.sock"),
    ] {
        assert_eq!(
            Endpoint::parse(given).unwrap(),
            Endpoint::Unix(PathBuf::from(want)),
            "{given}"
        );
    }
    assert_eq!(
        Endpoint::parse("TCP://127.0.0.1:10000").unwrap(),
        Endpoint::Tcp("127.0.0.1:10000".into())
    );
}

#[test]
fn refuses_to_remove_non_socket() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("x.sock");
    std::fs::write(&f, b"data").unwrap();
    assert!(prepare_socket_path(&f)
        .unwrap_err()
        .contains("not a socket"));
    assert!(f.exists());
}

#[test]
fn creates_parent_dir() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("a/b/csi.sock");
    prepare_socket_path(&sock).unwrap();
    assert!(sock.parent().unwrap().is_dir());
}
