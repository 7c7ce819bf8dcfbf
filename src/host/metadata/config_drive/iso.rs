//! ISO 9660 config drives, through `hadris-iso`. The document is looked up in every name space
//! the image has, in descriptor order: the primary tree (Rock Ridge `NM` names when present,
//! else the plain names compared without case and `;1`), then the Joliet tree (UCS-2 names).
//! Nova's `genisoimage -r -J` drive resolves in the first; Joliet-only or long plain names
//! (`-l -allow-lowercase`) resolve too. Bare 8.3 names (`OPENSTAC/META_DAT.JSO`) cannot name
//! `meta_data.json` and are reported as a missing file.

use std::fs::File;
use std::io::BufReader;

use hadris_iso::file::EntryType;
use hadris_iso::read::{DirEntry, IsoImage, RootDir};

use super::found::{too_large, Found, META_DATA_PATH};
use crate::host::metadata::document::MAX_DOCUMENT_BYTES;

/// Directory reads are scattered 2 KiB sectors; a larger buffer only costs.
const READ_BUFFER: usize = 16 * 1024;

/// Errors are messages about a damaged image.
pub(super) fn read(file: File) -> Result<Found, String> {
    let corrupt =
        |what: &str, e: &dyn std::fmt::Display| format!("ISO 9660 image is damaged: {what}: {e}");
    let image = IsoImage::open(BufReader::with_capacity(READ_BUFFER, file))
        .map_err(|e| corrupt("volume descriptors", &e))?;
    let pvd = image
        .read_pvd()
        .map_err(|e| corrupt("primary volume descriptor", &e))?;
    let label = match pvd.volume_identifier.try_to_str() {
        Ok(label) => label.to_string(),
        Err(_) => format!("{:?}", pvd.volume_identifier),
    };

    let mut searched = Vec::new();
    let mut first_error = None;
    for root in image.root_dirs().iter() {
        searched.push(namespace(root));
        match find(&image, root) {
            Ok(Some(entry)) => {
                let contents = if entry.total_size() > MAX_DOCUMENT_BYTES {
                    Err(too_large(entry.total_size()))
                } else {
                    image
                        .read_file(&entry)
                        .map_err(|e| format!("cannot read {}: {e}", META_DATA_PATH.join("/")))
                };
                return Ok(Found {
                    format: "ISO 9660",
                    label,
                    searched: searched.join(", "),
                    contents: Some(contents),
                });
            }
            Ok(None) => {}
            Err(e) => {
                first_error.get_or_insert(corrupt(namespace(root), &e));
            }
        }
    }
    // A damaged tree explains a missing file better than "not found" does.
    if let Some(e) = first_error {
        return Err(e);
    }
    Ok(Found {
        format: "ISO 9660",
        label,
        searched: searched.join(", "),
        contents: None,
    })
}

/// Walks `openstack/latest/meta_data.json` from one root; `Ok(None)` when a component is missing.
fn find<R>(image: &IsoImage<R>, root: &RootDir) -> Result<Option<DirEntry>, String>
where
    R: hadris_iso::sync::Read + hadris_iso::sync::Seek,
{
    let (file_name, dirs) = META_DATA_PATH.split_last().expect("path is not empty");
    let mut dir = root.iter(image);
    for name in dirs {
        let Some(entry) = lookup(dir.entries(), name, true)? else {
            return Ok(None);
        };
        let next = entry
            .as_dir_ref(image)
            .map_err(|e| format!("{name}: {e}"))?;
        dir = image.open_dir(next);
    }
    lookup(dir.entries(), file_name, false)
}

fn lookup<E: std::fmt::Display>(
    entries: impl Iterator<Item = Result<DirEntry, E>>,
    name: &str,
    want_dir: bool,
) -> Result<Option<DirEntry>, String> {
    for entry in entries {
        let entry = entry.map_err(|e| format!("listing the directory holding {name}: {e}"))?;
        if !entry.is_special() && entry.is_directory() == want_dir && entry.matches_name(name) {
            return Ok(Some(entry));
        }
    }
    Ok(None)
}

fn namespace(root: &RootDir) -> &'static str {
    match root.entry_type() {
        EntryType::Joliet { .. } => "Joliet names",
        EntryType::Level1 {
            supports_rrip: true,
            ..
        }
        | EntryType::Level2 {
            supports_rrip: true,
            ..
        }
        | EntryType::Level3 {
            supports_rrip: true,
            ..
        } => "Rock Ridge names",
        _ => "ISO 9660 names",
    }
}
