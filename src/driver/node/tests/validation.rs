//! Unit tests (fake host) of the node's input validation: path lengths, where stats/expand
//! look, mount flags at stage and publish, and one target for SINGLE_NODE_SINGLE_WRITER.

use std::path::Path;

use super::super::*;
use super::*;
use crate::driver::types::{AccessMode, AccessType, VolumeCapability};
use crate::driver::{Error, Invalid, NodeRefusal, Result};
use crate::host::fake::FakeHost;
use crate::host::Content;

fn with_flags(flags: &[&str]) -> VolumeCapability {
    VolumeCapability {
        access_type: AccessType::Mount {
            fs_type: Some("ext4".into()),
            mount_flags: flags.iter().map(|f| f.to_string()).collect(),
            volume_mount_group: None,
        },
        access_mode: AccessMode::SingleNodeWriter,
    }
}

#[test]
fn paths_longer_than_linux_allows_are_invalid_argument() {
    let kubelet = Path::new(KUBELET);
    let deep: String = (0..50).map(|_| format!("/{}", "d".repeat(200))).collect();
    let wide = format!("{KUBELET}/pods/{}", "w".repeat(256));
    for raw in [format!("{KUBELET}{deep}"), wide] {
        let err = params::kubelet_path("target_path", &raw, kubelet).unwrap_err();
        assert!(
            matches!(err, Error::Invalid(Invalid::PathTooLong { .. })),
            "{err}"
        );
        assert!(err.to_string().contains("shorter path"), "{err}");
    }
    let ok = format!("{KUBELET}/pods/{}", "w".repeat(255));
    params::kubelet_path("target_path", &ok, kubelet).unwrap();
}

#[test]
fn a_volume_path_where_no_volume_can_be_is_not_found() {
    let kubelet = Path::new(KUBELET);
    for raw in ["some/path", "/mnt/elsewhere", "relative"] {
        let err = params::volume_path("v", "volume_path", raw, kubelet).unwrap_err();
        assert!(matches!(err, Error::VolumeNotAtPath { .. }), "{raw}: {err}");
    }
    for raw in ["", "/var/lib/kubelet/a/../b"] {
        let err = params::volume_path("v", "volume_path", raw, kubelet).unwrap_err();
        assert!(matches!(err, Error::Invalid(_)), "{raw:?}: {err}");
    }
}

#[test]
fn quoted_selinux_contexts_stay_one_option() {
    let ctx = "context=\"system_u:object_r:container_file_t:s0:c0,c1\"";
    params::check_mount_flags(crate::host::FsKind::Ext4, &[format!("noatime,{ctx}")]).unwrap();
    // Unquoted, `c1` is a flag of its own, which ext4 does not know.
    let bare = "context=system_u:object_r:container_file_t:s0:c0,c1".to_string();
    params::check_mount_flags(crate::host::FsKind::Ext4, &[bare]).unwrap_err();
}

/// With the chart's `csiDriver.seLinuxMount: true`, kubelet passes the pod's SELinux context
/// as a mount flag to NodeStage and NodePublish: stage mounts with it, publish accepts it.
#[tokio::test]
async fn selinux_context_flags_stage_and_publish() {
    let fake = FakeHost::new();
    fake.attach("v1", 1 << 30, Content::Blank);
    let c = core(&fake);
    let ctx = "context=\"system_u:object_r:container_file_t:s0:c0,c1\"";
    c.stage(stage_req("v1", with_flags(&[ctx])), soon())
        .await
        .unwrap();
    let mount = fake
        .calls()
        .into_iter()
        .find(|c| c.starts_with("mount /dev/fake0"))
        .unwrap();
    assert!(mount.ends_with(&format!("[{ctx}]")), "{mount}");
    c.publish(publish_req("v1", with_flags(&[ctx]), false))
        .await
        .unwrap();
}

#[tokio::test]
async fn unknown_and_forbidden_flags_are_refused_at_stage_and_publish() {
    let fake = FakeHost::new();
    fake.attach("v1", 1 << 30, Content::Blank);
    let c = core(&fake);
    for flags in [
        &["notaflag"][..],
        &["nouuid"],
        &["bind"],
        &["noatime,rshared"],
        &["no atime"],
    ] {
        let err = c
            .stage(stage_req("v1", with_flags(flags)), soon())
            .await
            .unwrap_err();
        assert!(
            matches!(
                err,
                Error::Invalid(
                    Invalid::MountFlagChars { .. }
                        | Invalid::MountFlagNotAllowed { .. }
                        | Invalid::MountFlagUnknown { .. }
                )
            ),
            "{flags:?}: {err}"
        );
        assert!(err.to_string().contains("mount flag"), "{err}");
    }
    assert!(fake.calls().is_empty(), "{:?}", fake.calls());
    c.stage(stage_req("v1", with_flags(&["noatime"])), soon())
        .await
        .unwrap();
    let before = fake.calls().len();
    for flags in [&["notaflag"][..], &["make-shared"], &["remount"]] {
        let err = c
            .publish(publish_req("v1", with_flags(flags), false))
            .await
            .unwrap_err();
        assert!(matches!(err, Error::Invalid(_)), "{flags:?}: {err}");
    }
    assert_eq!(fake.calls().len(), before, "{:?}", fake.calls());
    c.publish(publish_req(
        "v1",
        with_flags(&["noatime", "nofail", "data=ordered"]),
        false,
    ))
    .await
    .unwrap();
}

async fn publish_twice(mode: AccessMode) -> (FakeHost, Result<()>) {
    let fake = FakeHost::new();
    fake.attach("v1", 1 << 30, Content::Blank);
    let c = core(&fake);
    let cap = VolumeCapability {
        access_mode: mode,
        ..with_flags(&[])
    };
    c.stage(stage_req("v1", cap.clone()), soon()).await.unwrap();
    c.publish(publish_req("v1", cap.clone(), false))
        .await
        .unwrap();
    c.publish(publish_req("v1", cap.clone(), false))
        .await
        .unwrap();
    let mut second = publish_req("v1", cap, false);
    second.target_path = format!("{KUBELET}/pods/p2/volumes/kubernetes.io~csi/v1/mount");
    let res = c.publish(second).await;
    (fake, res)
}

#[tokio::test]
async fn single_node_single_writer_is_published_at_one_target() {
    let (fake, res) = publish_twice(AccessMode::SingleNodeSingleWriter).await;
    let err = res.unwrap_err();
    assert!(
        matches!(
            err,
            Error::NodeRefused(NodeRefusal::SingleWriterElsewhere { .. })
        ),
        "{err}"
    );
    assert!(err.to_string().contains(&target("v1")), "{err}");
    let p2 = format!("{KUBELET}/pods/p2/volumes/kubernetes.io~csi/v1/mount");
    assert!(
        !fake.exists(Path::new(&p2)),
        "the refused target was created"
    );
    for mode in [
        AccessMode::SingleNodeMultiWriter,
        AccessMode::SingleNodeWriter,
    ] {
        publish_twice(mode).await.1.unwrap();
    }
}

/// mkfsOptions from the volume context are refused only when they would be used: a blank disk
/// is not formatted (InvalidArgument naming the argument, nothing written), a disk that
/// already holds a filesystem (say, one upstream formatted with `-F`) stages as it is.
#[tokio::test]
async fn refused_mkfs_options_matter_only_for_a_blank_disk() {
    let fake = FakeHost::new();
    fake.attach("blank", 1 << 30, Content::Blank);
    fake.attach(
        "formatted",
        1 << 30,
        Content::Filesystem {
            kind: crate::host::FsKind::Ext4,
            size_bytes: 1 << 30,
        },
    );
    let c = core(&fake);
    let with_options = |id: &str| {
        let mut r = stage_req(id, with_flags(&[]));
        r.volume_context
            .insert("mkfsOptions".into(), "-F,-E nodiscard".into());
        r
    };
    let err = c.stage(with_options("blank"), soon()).await.unwrap_err();
    assert!(
        matches!(err, Error::Invalid(Invalid::MkfsOptions { .. })),
        "{err}"
    );
    assert!(err.to_string().contains("\"-F\""), "{err}");
    assert!(
        !fake.calls().iter().any(|c| c.starts_with("format")),
        "{:?}",
        fake.calls()
    );
    assert_eq!(fake.content("blank"), Content::Blank);
    c.stage(with_options("formatted"), soon()).await.unwrap();
}
