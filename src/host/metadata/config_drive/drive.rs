//! ConfigDrive: finds the labelled device and reads meta_data.json from it.

use super::*;

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::Duration;

use async_trait::async_trait;

use super::super::document::MetaData;
use super::super::port::{InstanceMetadata, Metadata, MetadataError};

/// The label Nova gives the drive, then the upper-case spelling FAT tools often write.
pub const LABELS: [&str; 2] = ["config-2", "CONFIG-2"];

/// ISO 9660 volume descriptors start at sector 16; "CD001" follows the type byte.
pub(super) const ISO_DESCRIPTOR_OFFSET: u64 = 16 * 2048;
pub(super) const ISO_MAGIC: &[u8; 5] = b"CD001";
/// A FAT boot sector ends with 0x55 0xAA at byte 510.
pub(super) const BOOT_SIGNATURE_OFFSET: u64 = 510;

/// Reads the config drive found through `label_dir`.
pub struct ConfigDrive {
    pub(super) label_dir: PathBuf,
    pub(super) timeout: Duration,
}

impl ConfigDrive {
    /// `timeout` bounds one read (a virtual CD-ROM can stall).
    pub fn new(label_dir: PathBuf, timeout: Duration) -> Self {
        Self { label_dir, timeout }
    }

    /// The first label link that exists, e.g. `/dev/disk/by-label/config-2`.
    pub fn find_device(&self) -> Result<PathBuf, MetadataError> {
        LABELS
            .iter()
            .map(|label| self.label_dir.join(label))
            .find(|p| p.exists())
            .ok_or_else(|| {
                MetadataError::Unavailable(format!(
                    "no config drive: neither {} nor {} exists",
                    self.label_dir.join(LABELS[0]).display(),
                    self.label_dir.join(LABELS[1]).display()
                ))
            })
    }

    /// Finds the drive and parses its document, off the async runtime and bounded in time.
    pub async fn read(&self) -> Result<MetaData, MetadataError> {
        let device = self.find_device()?;
        let shown = describe(&device);
        let task = tokio::task::spawn_blocking(move || read_meta_data(&device));
        let bytes = match tokio::time::timeout(self.timeout, task).await {
            Err(_) => {
                return Err(MetadataError::Unavailable(format!(
                    "config drive {shown}: no answer within {}s",
                    self.timeout.as_secs_f64()
                )))
            }
            // The readers parse untrusted bytes; a panic there is a bad drive, not a dead node.
            Ok(Err(join)) => {
                return Err(MetadataError::Invalid(format!(
                    "config drive {shown}: reader failed: {join}"
                )))
            }
            Ok(Ok(result)) => result?,
        };
        MetaData::parse(&bytes, &format!("config drive {shown}"))
    }
}

#[async_trait]
impl Metadata for ConfigDrive {
    async fn instance(&self) -> Result<InstanceMetadata, MetadataError> {
        Ok(self.read().await?.instance())
    }
}

/// Reads `openstack/latest/meta_data.json` from a config drive image or device at `path`
/// (blocking). Checks the volume label and bounds the size; does not parse the JSON.
pub fn read_meta_data(path: &Path) -> Result<Vec<u8>, MetadataError> {
    let origin = format!("config drive {}", describe(path));
    let fail = |e: std::io::Error| MetadataError::Unavailable(format!("{origin}: {e}"));
    // Read-only: nothing here may ever write to the drive.
    let mut file = File::open(path).map_err(fail)?;
    let damaged = |m: String| MetadataError::Invalid(format!("{origin}: {m}"));
    let found = match sniff(&mut file).map_err(fail)? {
        Format::Iso9660 => iso::read(file).map_err(damaged)?,
        Format::Fat => {
            // fatfs expects the boot sector under the cursor.
            file.rewind().map_err(fail)?;
            vfat::read(file).map_err(damaged)?
        }
        Format::Unknown => {
            return Err(MetadataError::Invalid(format!(
                "{origin}: neither ISO 9660 nor FAT (no CD001 descriptor, no boot signature)"
            )))
        }
    };
    let invalid = |m: String| MetadataError::Invalid(format!("{origin} ({}): {m}", found.format));
    if !is_config_label(&found.label) {
        return Err(invalid(format!(
            "volume label is {:?}, not {}",
            found.label, LABELS[0]
        )));
    }
    match found.contents {
        Some(contents) => contents.map_err(invalid),
        None => Err(invalid(format!(
            "has no {} (looked in {})",
            META_DATA_PATH.join("/"),
            found.searched
        ))),
    }
}

pub(super) enum Format {
    Iso9660,
    Fat,
    Unknown,
}

pub(super) fn sniff(file: &mut File) -> std::io::Result<Format> {
    let mut magic = [0u8; 5];
    if read_at(file, ISO_DESCRIPTOR_OFFSET + 1, &mut magic)? && &magic == ISO_MAGIC {
        return Ok(Format::Iso9660);
    }
    let mut signature = [0u8; 2];
    if read_at(file, BOOT_SIGNATURE_OFFSET, &mut signature)? && signature == [0x55, 0xAA] {
        return Ok(Format::Fat);
    }
    Ok(Format::Unknown)
}

/// `Ok(false)` when the file ends before `buf` is full (too small to hold that structure).
pub(super) fn read_at(file: &mut File, offset: u64, buf: &mut [u8]) -> std::io::Result<bool> {
    file.seek(SeekFrom::Start(offset))?;
    match file.read_exact(buf) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(false),
        Err(e) => Err(e),
    }
}

/// Labels compare case-insensitively: FAT labels are upper-case on many tools.
pub(super) fn is_config_label(label: &str) -> bool {
    label.trim().eq_ignore_ascii_case(LABELS[0])
}

/// `/dev/disk/by-label/config-2 (/dev/sr0)` when the path is a link, else the path.
pub(super) fn describe(path: &Path) -> String {
    match std::fs::canonicalize(path) {
        Ok(real) if real != path => format!("{} ({})", path.display(), real.display()),
        _ => path.display().to_string(),
    }
}
