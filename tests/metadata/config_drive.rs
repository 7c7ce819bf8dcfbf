//! Config drives as Nova builds them, read as plain files (no loop device, no mount).

use std::path::Path;
use std::time::Duration;

use cinder_csi::host::metadata::config_drive::{read_meta_data, ConfigDrive};
use cinder_csi::host::metadata::{InstanceMetadata, Metadata, MetadataError};

use super::support::*;

const TIMEOUT: Duration = Duration::from_secs(10);

/// Reads `image` through the adapter, as found via a `config-2` label link in a temp dir.
async fn through_label(image: &Path, link_name: &str) -> Result<InstanceMetadata, MetadataError> {
    let labels = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(image, labels.path().join(link_name)).unwrap();
    ConfigDrive::new(labels.path().to_path_buf(), TIMEOUT)
        .instance()
        .await
}

fn expect_invalid(result: Result<impl std::fmt::Debug, MetadataError>, wants: &[&str]) {
    match result {
        Err(MetadataError::Invalid(m)) => {
            for want in wants {
                assert!(m.contains(want), "{m:?} lacks {want:?}");
            }
        }
        other => panic!("expected Invalid containing {wants:?}, got {other:?}"),
    }
}

#[tokio::test]
async fn iso_in_every_name_form_nova_and_genisoimage_write() {
    let dir = tempfile::tempdir().unwrap();
    let files = standard_files(UUID, "az-1");
    let files = as_refs(&files);
    let variants: [(&str, &[&str]); 5] = [
        ("nova", NOVA_ISO_FLAGS),
        ("rr-joliet", &["-r", "-J", "-V", "config-2"]),
        ("joliet-only", &["-J", "-V", "config-2"]),
        ("rock-ridge-only", &["-r", "-V", "config-2"]),
        // Plain ISO 9660 names, long and lower-case, no extensions at all.
        (
            "plain-long",
            &[
                "-l",
                "-allow-lowercase",
                "-allow-multidot",
                "-V",
                "config-2",
            ],
        ),
    ];
    for (name, flags) in variants {
        let image = iso(dir.path(), name, flags, &files);
        let got = through_label(&image, "config-2").await;
        assert_eq!(
            got.unwrap_or_else(|e| panic!("{name}: {e}")),
            InstanceMetadata {
                uuid: UUID.into(),
                availability_zone: Some("az-1".into())
            },
            "{name}"
        );
    }
}

#[tokio::test]
async fn iso_with_only_8_3_names_cannot_name_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let files = standard_files(UUID, "az-1");
    let image = iso(dir.path(), "level1", &["-V", "config-2"], &as_refs(&files));
    expect_invalid(
        read_meta_data(&image),
        &[
            "ISO 9660",
            "has no openstack/latest/meta_data.json",
            "ISO 9660 names",
        ],
    );
}

#[tokio::test]
async fn vfat_fat12_fat16_fat32_and_both_label_spellings() {
    let dir = tempfile::tempdir().unwrap();
    let files = standard_files(UUID, "az-2");
    let files = as_refs(&files);
    // (name, KiB, mkfs flags, label, by-label link name). Nova makes a 64 MiB drive.
    let variants: [(&str, u64, &[&str], &str, &str); 4] = [
        ("fat12", 1024, &[], "CONFIG-2", "CONFIG-2"),
        ("fat16-nova", 64 * 1024, &[], "config-2", "config-2"),
        ("fat32", 64 * 1024, &["-F", "32"], "CONFIG-2", "CONFIG-2"),
        ("upper-label-lower-link", 1024, &[], "CONFIG-2", "config-2"),
    ];
    for (name, kib, flags, label, link) in variants {
        let image = vfat(dir.path(), name, kib, flags, label, &files);
        let got = through_label(&image, link).await;
        assert_eq!(
            got.unwrap_or_else(|e| panic!("{name}: {e}")),
            InstanceMetadata {
                uuid: UUID.into(),
                availability_zone: Some("az-2".into())
            },
            "{name}"
        );
    }
}

#[tokio::test]
async fn reading_never_writes_to_the_drive() {
    let dir = tempfile::tempdir().unwrap();
    let files = standard_files(UUID, "az");
    let files = as_refs(&files);
    let images = [
        iso(dir.path(), "ro", NOVA_ISO_FLAGS, &files),
        vfat(dir.path(), "ro", 1024, &[], "CONFIG-2", &files),
    ];
    for image in images {
        let before = std::fs::read(&image).unwrap();
        through_label(&image, "config-2").await.unwrap();
        assert!(
            std::fs::read(&image).unwrap() == before,
            "{image:?} changed"
        );
    }
}

#[tokio::test]
async fn missing_document_is_reported_with_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let files = [
        ("openstack/latest/user_data", "x"),
        ("openstack/latest/vendor_data.json", "{}"),
    ];
    let image = iso(dir.path(), "nometa", NOVA_ISO_FLAGS, &files);
    expect_invalid(
        read_meta_data(&image),
        &[
            "nometa.iso",
            "(ISO 9660)",
            "has no openstack/latest/meta_data.json",
            "Rock Ridge names",
            "Joliet names",
        ],
    );
    let image = vfat(dir.path(), "nometa", 1024, &[], "CONFIG-2", &files);
    expect_invalid(
        read_meta_data(&image),
        &[
            "nometa.img",
            "(FAT)",
            "has no openstack/latest/meta_data.json",
        ],
    );
    // An empty drive: not even the openstack directory.
    let image = vfat(dir.path(), "empty", 1024, &[], "CONFIG-2", &[]);
    expect_invalid(
        read_meta_data(&image),
        &["has no openstack/latest/meta_data.json"],
    );
}

#[tokio::test]
async fn wrong_label_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let files = standard_files(UUID, "az");
    let files = as_refs(&files);
    let image = iso(dir.path(), "cidata", &["-r", "-J", "-V", "cidata"], &files);
    expect_invalid(
        through_label(&image, "config-2").await,
        &["volume label is \"cidata\", not config-2"],
    );
    let image = vfat(dir.path(), "cidata", 1024, &[], "CIDATA", &files);
    expect_invalid(
        read_meta_data(&image),
        &["(FAT)", "volume label is \"CIDATA\", not config-2"],
    );
}

#[tokio::test]
async fn unusable_document_on_a_good_drive() {
    let dir = tempfile::tempdir().unwrap();
    let image = iso(
        dir.path(),
        "badjson",
        NOVA_ISO_FLAGS,
        &[("openstack/latest/meta_data.json", "{\"uuid\": ")],
    );
    expect_invalid(
        through_label(&image, "config-2").await,
        &[
            "config drive",
            "badjson.iso",
            "not a meta_data.json document",
        ],
    );
    let big = format!(
        "{{\"uuid\":\"{UUID}\",\"pad\":\"{}\"}}",
        "x".repeat(1 << 20)
    );
    let image = iso(
        dir.path(),
        "big",
        NOVA_ISO_FLAGS,
        &[("openstack/latest/meta_data.json", &big)],
    );
    expect_invalid(read_meta_data(&image), &["bytes, more than the 1048576"]);
    let image = vfat(
        dir.path(),
        "big",
        4096,
        &[],
        "CONFIG-2",
        &[("openstack/latest/meta_data.json", &big)],
    );
    expect_invalid(read_meta_data(&image), &["bytes, more than the 1048576"]);
}

#[tokio::test]
async fn corrupt_images_give_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    // Neither format.
    let junk = dir.path().join("junk.img");
    std::fs::write(&junk, pseudo_random(64 * 1024, 7)).unwrap();
    expect_invalid(read_meta_data(&junk), &["neither ISO 9660 nor FAT"]);
    let empty = dir.path().join("empty.img");
    std::fs::write(&empty, b"").unwrap();
    expect_invalid(read_meta_data(&empty), &["neither ISO 9660 nor FAT"]);

    let files = standard_files(UUID, "az");
    let files = as_refs(&files);
    // ISO cut after the volume descriptors: the directories are gone.
    let image = iso(dir.path(), "cut", NOVA_ISO_FLAGS, &files);
    let bytes = std::fs::read(&image).unwrap();
    let cut = dir.path().join("cut-short.iso");
    std::fs::write(&cut, &bytes[..20 * 2048]).unwrap();
    expect_invalid(
        read_meta_data(&cut),
        &["cut-short.iso", "ISO 9660 image is damaged"],
    );

    // FAT whose boot sector is garbage but keeps its signature.
    let image = vfat(dir.path(), "badbpb", 1024, &[], "CONFIG-2", &files);
    let mut bytes = std::fs::read(&image).unwrap();
    bytes[11..62].copy_from_slice(&pseudo_random(51, 3));
    std::fs::write(&image, &bytes).unwrap();
    expect_invalid(read_meta_data(&image), &["FAT file system is damaged"]);

    // FAT32 whose FAT sizes overflow 32-bit sector arithmetic (fatfs panicked on it; found by
    // fuzzing, tests/fuzz/corpus/config_drive_vfat/crash-fat-size-overflow).
    let image = vfat(
        dir.path(),
        "fatsize",
        64 * 1024,
        &["-F", "32"],
        "CONFIG-2",
        &files,
    );
    let good = std::fs::read(&image).unwrap();
    for (fats, sectors_per_fat) in [(2u8, 0xffff_ffe0u32), (255, 0x0100_0000), (1, 0x0200_0000)] {
        let mut bytes = good.clone();
        bytes[16] = fats;
        bytes[36..40].copy_from_slice(&sectors_per_fat.to_le_bytes());
        std::fs::write(&image, &bytes).unwrap();
        expect_invalid(
            read_meta_data(&image),
            &["FAT file system is damaged: boot sector", "FAT"],
        );
    }

    // A directory entry whose cluster is below 2: fatfs subtracted with overflow (a panic in
    // this debug build; found by fuzzing). The reader contains fatfs's panics.
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz/corpus/config_drive_vfat");
    let crash = std::fs::read(corpus.join("crash-fat-cluster-underflow")).unwrap();
    let image = dir.path().join("cluster-underflow.img");
    std::fs::write(&image, crash).unwrap();
    expect_invalid(read_meta_data(&image), &["FAT file system is damaged"]);
}

/// Damage every sector that matters, one at a time: each read ends (Ok or a clear error),
/// never hangs or takes the process down.
#[tokio::test]
async fn damage_anywhere_never_hangs_or_panics() {
    let dir = tempfile::tempdir().unwrap();
    let files = standard_files(UUID, "az");
    let files = as_refs(&files);
    let iso_image = iso(dir.path(), "fuzz", NOVA_ISO_FLAGS, &files);
    let fat_image = vfat(dir.path(), "fuzz", 1024, &[], "CONFIG-2", &files);
    let mut outcomes = (0, 0);
    for (image, sector_size) in [(iso_image, 2048usize), (fat_image, 512usize)] {
        let original = std::fs::read(&image).unwrap();
        let sectors = (original.len() / sector_size).min(64);
        for sector in 0..sectors {
            for seed in [1u64, 2] {
                let mut bytes = original.clone();
                let start = sector * sector_size;
                bytes[start..start + sector_size]
                    .copy_from_slice(&pseudo_random(sector_size, seed + sector as u64));
                let damaged = dir.path().join("damaged");
                std::fs::write(&damaged, &bytes).unwrap();
                let labels = tempfile::tempdir().unwrap();
                std::os::unix::fs::symlink(&damaged, labels.path().join("config-2")).unwrap();
                let drive = ConfigDrive::new(labels.path().to_path_buf(), TIMEOUT);
                match drive.instance().await {
                    Ok(got) => {
                        assert_eq!(
                            got.uuid, UUID,
                            "sector {sector}: wrong answer, not an error"
                        );
                        outcomes.0 += 1;
                    }
                    Err(MetadataError::Invalid(m)) => {
                        assert!(m.starts_with("config drive "), "{m}");
                        outcomes.1 += 1;
                    }
                    Err(e) => panic!("sector {sector}: {e}"),
                }
            }
        }
    }
    // Most sectors are padding; damage in the descriptors and directories must have shown.
    assert!(outcomes.0 > 0 && outcomes.1 > 0, "{outcomes:?}");
}

#[tokio::test]
async fn label_lookup() {
    let dir = tempfile::tempdir().unwrap();
    let files = standard_files(UUID, "az");
    let image = iso(dir.path(), "l", NOVA_ISO_FLAGS, &as_refs(&files));
    // The lower-case link is preferred when both exist.
    let labels = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(&image, labels.path().join("config-2")).unwrap();
    std::os::unix::fs::symlink("/nonexistent", labels.path().join("CONFIG-2")).unwrap();
    let drive = ConfigDrive::new(labels.path().to_path_buf(), TIMEOUT);
    assert_eq!(drive.find_device().unwrap(), labels.path().join("config-2"));
    assert_eq!(drive.instance().await.unwrap().uuid, UUID);

    // No link (a dangling one does not count): Unavailable, naming both spellings.
    let empty = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink("/nonexistent", empty.path().join("config-2")).unwrap();
    let err = ConfigDrive::new(empty.path().to_path_buf(), TIMEOUT)
        .instance()
        .await
        .unwrap_err();
    match err {
        MetadataError::Unavailable(m) => {
            assert!(m.contains("no config drive"), "{m}");
            assert!(m.contains("/config-2") && m.contains("/CONFIG-2"), "{m}");
        }
        e => panic!("{e}"),
    }
}

/// Deterministic bytes (xorshift), so failures reproduce.
fn pseudo_random(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}
