//! A test's own directory under /var/tmp (not /tmp: the driver's state, loop-device backing files
//! and mounts live there), removed when the returned guard drops.

use std::path::PathBuf;

use tempfile::TempDir;

/// An empty directory named PREFIX… under /var/tmp.
pub fn dir(prefix: &str) -> TempDir {
    tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in("/var/tmp")
        .unwrap()
}

/// [`dir`] with its `kubelet` directory made: where a driver under test keeps its state and the
/// test's mounts go.
pub fn with_kubelet(prefix: &str) -> (TempDir, PathBuf) {
    let tmp = dir(prefix);
    let kubelet = tmp.path().join("kubelet");
    std::fs::create_dir_all(&kubelet).unwrap();
    (tmp, kubelet)
}
