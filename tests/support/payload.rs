//! Data that tests write and read back to tell whether it survived.

use std::os::unix::fs::FileExt;
use std::path::Path;

/// A deterministic, incompressible-looking pattern of `len` bytes.
pub fn pattern(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

/// Write `data` to `path` and make it durable (what a careful application does).
pub fn write_durable(path: &Path, data: &[u8]) {
    let f = std::fs::File::create(path).unwrap();
    f.write_all_at(data, 0).unwrap();
    f.sync_all().unwrap();
}
