//! What the ISO 9660 and VFAT readers look for and report back.

use crate::host::metadata::document::MAX_DOCUMENT_BYTES;

/// The document's path on the drive.
pub const META_DATA_PATH: [&str; 3] = ["openstack", "latest", "meta_data.json"];

/// What a format reader found: the label, and the file unless it is missing.
pub struct Found {
    pub format: &'static str,
    pub label: String,
    /// Which name spaces were searched, for the "missing file" message.
    pub searched: String,
    /// `None`: no such file. `Some(Err)`: there, but unusable (too large, unreadable).
    pub contents: Option<Result<Vec<u8>, String>>,
}

/// The message for a document over [`MAX_DOCUMENT_BYTES`];
/// both format readers refuse to read one.
pub fn too_large(size: u64) -> String {
    format!(
        "{} is {size} bytes, more than the {} a meta_data.json may have",
        META_DATA_PATH.join("/"),
        MAX_DOCUMENT_BYTES
    )
}
