//! The host port: what the node core needs from the machine it runs on — mounts, block
//! devices and filesystems. Adapter: `linux` (direct syscalls, mkfs/resize tools).

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum HostError {
    #[error("{} does not exist", path.display())]
    NotFound { path: PathBuf },
    #[error("{op} {}: {source}", path.display())]
    Io {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("`{command}` failed (exit status {status:?}): {stderr}")]
    Command {
        command: String,
        status: Option<i32>,
        stderr: String,
    },
    #[error("no block device for volume {volume_id} appeared under {} in time", dir.display())]
    DeviceNotFound { volume_id: String, dir: PathBuf },
    #[error("{0}")]
    Unsupported(String),
}

pub type HostResult<T> = Result<T, HostError>;
