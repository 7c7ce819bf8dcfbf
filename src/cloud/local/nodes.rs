//! The nodes (Nova's servers) an adapter over DIR can attach to: each node-mode process
//! registers itself, with its zone, in `DIR/nodes/<id>` and gets its own by-id directory.

use std::path::Path;

use super::backend::{bad_request, io_error};
use super::records::{valid_node_id, NodeRecord};
use super::store::Layout;
use crate::cloud::CloudResult;

/// Make `node_id`, in zone `zone`, known to every adapter over `dir` (node-mode processes
/// call this at startup, so a separate controller process on the same DIR can publish to
/// them), and create the directory its attached disks appear in.
pub fn register_node(dir: &Path, node_id: &str, zone: &str) -> CloudResult<()> {
    if !valid_node_id(node_id) {
        return Err(bad_request(format!(
            "node id {node_id:?} cannot be registered"
        )));
    }
    let layout = Layout::new(dir.to_path_buf());
    layout
        .create_dirs()
        .map_err(|e| io_error(format_args!("create {}", dir.display()), e))?;
    let by_id = layout.by_id_dir(node_id);
    std::fs::create_dir_all(&by_id)
        .map_err(|e| io_error(format_args!("create {}", by_id.display()), e))?;
    let path = layout.nodes_dir().join(node_id);
    let rec = NodeRecord {
        id: node_id.to_string(),
        availability_zone: zone.to_string(),
    };
    super::store::write_record(&path, &rec)
        .map_err(|e| io_error(format_args!("register node in {}", path.display()), e))
}
