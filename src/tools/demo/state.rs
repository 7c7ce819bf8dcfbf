//! What the demo's steps share: the scenario's state (with how it shows a path and the
//! capability it asks for), what teardown must undo, a published volume, and how a failed RPC
//! or blocking call becomes a step error.

use std::path::PathBuf;

use super::report::StepError;
use crate::server::csi::pb;
use crate::tools::ctl::Client;

pub(super) const FILE_NAME: &str = "hello.txt";

/// What teardown must undo, in reverse order of creation.
pub enum Undo {
    NodeUnpublish { volume: String, target: PathBuf },
    NodeUnstage { volume: String, staging: PathBuf },
    ControllerUnpublish { volume: String, node: String },
    DeleteVolume { volume: String },
    DeleteSnapshot { snapshot: String },
}

pub struct Scenario<'a> {
    pub client: &'a Client,
    pub fs_type: String,
    /// The work directory; paths are shown relative to it.
    pub workdir: PathBuf,
    pub kubelet: PathBuf,
    pub undo: Vec<Undo>,
    /// Volume ids seen, shortened in what is shown.
    pub ids: Vec<String>,
}

pub(super) fn status(rpc: &str, s: tonic::Status) -> StepError {
    let hint = if s.code() == tonic::Code::Unimplemented {
        " (this build does not implement it yet)"
    } else {
        ""
    };
    format!("{rpc}: {:?}: {}{hint}", s.code(), s.message())
}

pub(super) fn short(id: &str) -> &str {
    &id[..id.len().min(8)]
}

impl Scenario<'_> {
    /// A path relative to the work directory, with volume ids shortened.
    pub(super) fn show(&self, p: &std::path::Path) -> String {
        let mut s = p
            .strip_prefix(&self.workdir)
            .unwrap_or(p)
            .display()
            .to_string();
        for id in &self.ids {
            s = s.replace(id.as_str(), &format!("{}…", short(id)));
        }
        s
    }

    /// The capability every demo RPC asks for: a mount of the chosen filesystem, one writer.
    pub(super) fn capability(&self) -> pb::VolumeCapability {
        use pb::volume_capability::{access_mode::Mode, AccessMode, AccessType, MountVolume};
        pb::VolumeCapability {
            access_type: Some(AccessType::Mount(MountVolume {
                fs_type: self.fs_type.clone(),
                mount_flags: vec![],
                volume_mount_group: String::new(),
            })),
            access_mode: Some(AccessMode {
                mode: Mode::SingleNodeWriter as i32,
            }),
        }
    }
}

/// A volume as kubelet holds it after publish.
pub struct Mounted {
    pub id: String,
    pub staging: PathBuf,
    pub target: PathBuf,
}

pub async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> std::io::Result<T> + Send + 'static,
) -> Result<T, StepError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())
}
