//! Where the driver listens: `--endpoint` parsed, the Unix socket prepared and bound.

use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Where to listen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    Unix(PathBuf),
    Tcp(String),
}

impl Endpoint {
    /// Parse `unix:///abs/path`, `unix:/abs/path`, `unix://dir/path` or `tcp://host:port`.
    ///
    /// `unix://csi/csi.sock` (upstream's manifests and chart) is `/csi/csi.sock`, as upstream
    /// reads it: Go's `net/url` takes `csi` as the host and `/csi.sock` as the path, joins them
    /// and roots the result. The path is cleaned lexically the same way (`//`, `.`, `..`).
    pub fn parse(s: &str) -> Result<Self, String> {
        let scheme_is = |p: &str| s.get(..p.len()).is_some_and(|h| h.eq_ignore_ascii_case(p));
        if scheme_is("unix:") {
            let rest = &s["unix:".len()..];
            let path = if let Some(after) = rest.strip_prefix("//") {
                // Host and path alike become the path (`unix://csi/csi.sock`).
                format!("/{after}")
            } else if rest.starts_with('/') {
                rest.to_string()
            } else {
                return Err(format!(
                    "--endpoint {s:?}: the socket path must be absolute, e.g. unix:///csi/csi.sock"
                ));
            };
            let path = clean_path(&path);
            if path == Path::new("/") {
                return Err(format!(
                    "--endpoint {s:?}: no socket path, e.g. unix:///csi/csi.sock"
                ));
            }
            return Ok(Self::Unix(path));
        }
        if scheme_is("tcp://") {
            let rest = &s["tcp://".len()..];
            if rest.is_empty() || !rest.contains(':') {
                return Err(format!("--endpoint {s:?}: expected tcp://host:port"));
            }
            return Ok(Self::Tcp(rest.to_string()));
        }
        Err(format!(
            "--endpoint {s:?}: expected unix:///abs/path.sock or tcp://host:port"
        ))
    }
}

/// Lexical cleaning of an absolute path, like Go's `path.Clean`: repeated `/` and `.` go,
/// `..` removes the previous element (and stays at `/`).
fn clean_path(p: &str) -> PathBuf {
    let mut parts: Vec<&str> = Vec::new();
    for part in p.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            other => parts.push(other),
        }
    }
    PathBuf::from(format!("/{}", parts.join("/")))
}

/// Socket mode: kubelet and the sidecars run as root or in the socket's group.
pub const SOCKET_MODE: u32 = 0o660;

/// Prepare a Unix socket path: create the parent directory and remove a stale socket. Any
/// other kind of file at the path is refused rather than deleted.
pub fn prepare_socket_path(path: &Path) -> Result<(), String> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| format!("cannot create socket directory {}: {e}", parent.display()))?;
    }
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_socket() => std::fs::remove_file(path)
            .map_err(|e| format!("cannot remove stale socket {}: {e}", path.display())),
        Ok(_) => Err(format!(
            "{} exists and is not a socket; refusing to remove it",
            path.display()
        )),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(format!("cannot inspect {}: {e}", path.display())),
    }
}

/// Bind the Unix listener with mode 0660.
pub fn bind_unix(path: &Path) -> Result<tokio::net::UnixListener, String> {
    prepare_socket_path(path)?;
    let listener = tokio::net::UnixListener::bind(path)
        .map_err(|e| format!("cannot listen on {}: {e}", path.display()))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(SOCKET_MODE))
        .map_err(|e| format!("cannot set mode of {}: {e}", path.display()))?;
    Ok(listener)
}

/// A bound listener.
pub enum Listener {
    Unix(PathBuf, tokio::net::UnixListener),
    Tcp(tokio::net::TcpListener),
}

impl Listener {
    pub async fn bind(endpoint: &Endpoint) -> Result<Self, String> {
        match endpoint {
            Endpoint::Unix(path) => Ok(Self::Unix(path.clone(), bind_unix(path)?)),
            Endpoint::Tcp(addr) => tokio::net::TcpListener::bind(addr)
                .await
                .map(Self::Tcp)
                .map_err(|e| format!("cannot listen on tcp://{addr}: {e}")),
        }
    }
}
