//! StorageClass `mkfsOptions` (upstream PR #3084) on real loop devices through the real socket:
//! CreateVolume → volume context → NodeStage → mkfs. Each option leaves its trace in the
//! filesystem (dumpe2fs, xfs_info) or in the loop device's discard counter; a restage, and a
//! disk that already holds data, are never formatted; bad options are InvalidArgument at
//! CreateVolume with nothing created.

use crate::support::local_rig;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use cinder_csi::server::csi::pb;
use local_rig::*;

async fn create_with(
    c: &cinder_csi::tools::ctl::Client,
    name: &str,
    fs: &str,
    mkfs_options: &str,
) -> Result<pb::Volume, tonic::Status> {
    let req = pb::CreateVolumeRequest {
        parameters: HashMap::from([("mkfsOptions".to_string(), mkfs_options.to_string())]),
        ..create_req(name, GIB, fs)
    };
    c.controller()
        .create_volume(c.req(req))
        .await
        .map(|r| r.into_inner().volume.unwrap())
}

/// The device mounted at `path` (from mountinfo).
fn device_at(path: &Path) -> PathBuf {
    let text = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    text.lines()
        .find_map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            let sep = f.iter().position(|x| *x == "-")?;
            (Path::new(f[4]) == path).then(|| PathBuf::from(f[sep + 2]))
        })
        .unwrap_or_else(|| panic!("nothing mounted at {}", path.display()))
}

fn output(program: &str, args: &[&str]) -> String {
    let out = Command::new(program).args(args).output().unwrap();
    assert!(out.status.success(), "{program} {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn fs_uuid(device: &Path) -> String {
    output(
        "blkid",
        &["-s", "UUID", "-o", "value", &device.display().to_string()],
    )
    .trim()
    .to_string()
}

/// Sectors the loop device discarded (/sys/block/loopN/stat, field 14: discard sectors).
fn discarded_sectors(device: &Path) -> u64 {
    let name = device.file_name().unwrap().to_str().unwrap();
    let stat = std::fs::read_to_string(format!("/sys/block/{name}/stat")).unwrap();
    stat.split_whitespace()
        .nth(13)
        .map(|v| v.parse().unwrap())
        .unwrap_or(0)
}

/// Sectors the rig's only loop device discarded during NodeStage + NodePublish (the kernel's
/// counters outlive a loop device's earlier uses, so this is a difference).
async fn stage_counting_discards(
    rig: &Rig,
    c: &cinder_csi::tools::ctl::Client,
    p: &InPod,
    fs: &str,
) -> u64 {
    let devs = rig.loop_devices();
    assert_eq!(devs.len(), 1, "{devs:?}");
    let before = discarded_sectors(&devs[0]);
    stage_and_publish(c, p, fs).await;
    discarded_sectors(&devs[0]) - before
}

#[tokio::test]
async fn ext4_options_leave_their_trace_and_restage_never_reformats() {
    let mut rig = Rig::new();
    let c = rig.start().await;
    let v = create_with(&c, "ext", "ext4", "-O ^metadata_csum,-i 65536,-E nodiscard")
        .await
        .unwrap();
    assert_eq!(
        v.volume_context.get("mkfsOptions").map(String::as_str),
        Some("-O ^metadata_csum,-i 65536,-E nodiscard"),
        "carried in the volume context"
    );
    let p = attach(&rig, &c, &v, "ext4", "pod-ext").await;
    let discarded = stage_counting_discards(&rig, &c, &p, "ext4").await;
    let dev = device_at(&p.staging);
    let head = output("dumpe2fs", &["-h", &dev.display().to_string()]);
    let features = head
        .lines()
        .find(|l| l.starts_with("Filesystem features:"))
        .unwrap();
    assert!(!features.contains("metadata_csum"), "{features}");
    let inodes: u64 = head
        .lines()
        .find_map(|l| l.strip_prefix("Inode count:"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // 1 GiB at one inode per 64 KiB: 16384 (the default ratio would give 65536).
    assert!((15_000..=20_000).contains(&inodes), "inode count {inodes}");
    eprintln!("discarded sectors with -E nodiscard: {discarded}");
    assert_eq!(discarded, 0, "-E nodiscard: nothing discarded");
    let argv = rig
        .log()
        .lines()
        .find(|l| l.contains("formatting a blank disk"))
        .unwrap()
        .to_string();
    assert!(argv.contains("\"^metadata_csum\""), "{argv}");

    // Data, then unstage and restage (also with other options in the context): the same
    // filesystem, the data still there.
    let uuid = fs_uuid(&dev);
    write_durable(&p.target.join("keep"), b"data");
    unmount(&c, &p).await;
    stage_and_publish(&c, &p, "ext4").await;
    let mut other = InPod {
        context: p.context.clone(),
        ..p
    };
    assert_eq!(
        fs_uuid(&device_at(&other.staging)),
        uuid,
        "restage did not format"
    );
    unmount(&c, &other).await;
    other
        .context
        .insert("mkfsOptions".into(), "-O ^has_journal".into());
    stage_and_publish(&c, &other, "ext4").await;
    assert_eq!(fs_uuid(&device_at(&other.staging)), uuid);
    assert_eq!(std::fs::read(other.target.join("keep")).unwrap(), b"data");
    assert_eq!(
        rig.log().matches("formatting a blank disk").count(),
        1,
        "one format in all"
    );

    unmount_and_detach(&c, &other).await;
    delete(&c, &v.volume_id).await;
    assert!(rig.stop());
}

#[tokio::test]
async fn discard_follows_the_option() {
    let mut rig = Rig::new();
    let c = rig.start().await;
    // The driver's default is nodiscard; mkfsOptions come after it, so `-E discard` wins.
    let v = create_with(&c, "disc", "ext4", "-E discard").await.unwrap();
    let p = attach(&rig, &c, &v, "ext4", "pod-disc").await;
    let n = stage_counting_discards(&rig, &c, &p, "ext4").await;
    eprintln!("discarded sectors with -E discard: {n}");
    // 1 GiB is 2 Mi sectors: mkfs discarded the whole device.
    assert!(n >= 2 << 20, "-E discard: mkfs discarded only {n} sectors");
    unmount_and_detach(&c, &p).await;
    delete(&c, &v.volume_id).await;
    assert!(rig.stop());
}

#[tokio::test]
async fn xfs_inode_size_reaches_mkfs() {
    let mut rig = Rig::new();
    let c = rig.start().await;
    let v = create_with(&c, "xfs", "xfs", "-i size=1024").await.unwrap();
    let p = attach_and_mount(&rig, &c, &v, "xfs", "pod-xfs").await;
    let info = output("xfs_info", &[&p.staging.display().to_string()]);
    assert!(info.contains("isize=1024"), "{info}");
    unmount_and_detach(&c, &p).await;
    delete(&c, &v.volume_id).await;
    assert!(rig.stop());
}

#[tokio::test]
async fn bad_options_are_invalid_argument_and_create_nothing() {
    let mut rig = Rig::new();
    let c = rig.start().await;
    for (fs, opts, names) in [
        ("ext4", "-F", "\"-F\""),
        ("ext4", "/dev/sda", "\"/dev/sda\""),
        ("ext4", "-E nodiscard /dev/sda", "\"/dev/sda\""),
        ("xfs", "-d name=/dev/sda", "\"name\""),
        ("xfs", "-f", "\"-f\""),
        ("ext4", "--version", "\"--version\""),
    ] {
        let err = create_with(&c, "bad", fs, opts).await.unwrap_err();
        assert_eq!(err.code(), tonic::Code::InvalidArgument, "{opts}: {err:?}");
        assert!(err.message().contains(names), "{opts}: {}", err.message());
        assert!(err.message().contains("mkfsOptions"), "{}", err.message());
    }
    assert!(rig.data_files().is_empty(), "nothing created");
    assert!(rig.stop());
}
