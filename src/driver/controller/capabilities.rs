//! Which volume capabilities a Cinder volume can serve. Upstream provisions RWX/ROX volumes
//! without any check (#1367); here multi-node access needs a multiattach volume type, and
//! multi-node access with a writer needs raw block: a regular filesystem mounted on several
//! nodes while one of them writes is corrupted (the readers' caches and journal replay do
//! not see the writer's changes). Multi-node read-only stays allowed for mounts (the node
//! mounts those without journal recovery).

use crate::driver::types::{AccessMode, VolumeCapability};
use crate::driver::{Invalid, Result, Unsupported};

/// Why `cap` cannot be served by a volume whose type has (or lacks) `multiattach`; `None`
/// when it can.
pub fn unsupported_capability(cap: &VolumeCapability, multiattach: bool) -> Option<Unsupported> {
    let mode = cap.access_mode;
    if !mode.is_multi_node() {
        return None;
    }
    let writer = matches!(
        mode,
        AccessMode::MultiNodeMultiWriter | AccessMode::MultiNodeSingleWriter
    );
    if writer && !cap.access_type.is_block() {
        return Some(Unsupported::MultiWriterMount { mode });
    }
    if !multiattach {
        return Some(Unsupported::NoMultiattach { mode });
    }
    None
}

/// An existing volume `id` (multiattach or not) asked to serve `cap`: the request is invalid
/// when it cannot (publish and expand name the volume in the error).
pub fn volume_serves(id: &str, cap: &VolumeCapability, multiattach: bool) -> Result<()> {
    match unsupported_capability(cap, multiattach) {
        None => Ok(()),
        Some(why) => Err(Invalid::VolumeCapability {
            id: id.to_string(),
            why,
        }
        .into()),
    }
}

/// Whether any capability asks for multi-node access (so the volume type must be looked up).
pub fn wants_multi_node(caps: &[VolumeCapability]) -> bool {
    caps.iter().any(|c| c.access_mode.is_multi_node())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::types::AccessType;

    fn cap(mode: AccessMode, block: bool) -> VolumeCapability {
        VolumeCapability {
            access_type: if block {
                AccessType::Block
            } else {
                AccessType::Mount {
                    fs_type: None,
                    mount_flags: vec![],
                    volume_mount_group: None,
                }
            },
            access_mode: mode,
        }
    }

    #[test]
    fn single_node_always_multi_node_needs_multiattach() {
        for m in [
            AccessMode::SingleNodeWriter,
            AccessMode::SingleNodeReaderOnly,
            AccessMode::SingleNodeSingleWriter,
            AccessMode::SingleNodeMultiWriter,
        ] {
            assert_eq!(unsupported_capability(&cap(m, false), false), None);
        }
        let mnro = AccessMode::MultiNodeReaderOnly;
        assert!(unsupported_capability(&cap(mnro, false), false).is_some());
        assert_eq!(unsupported_capability(&cap(mnro, false), true), None);
        assert_eq!(unsupported_capability(&cap(mnro, true), true), None);
        // A writer among several nodes: block only, and multiattach.
        for m in [
            AccessMode::MultiNodeSingleWriter,
            AccessMode::MultiNodeMultiWriter,
        ] {
            assert_eq!(
                unsupported_capability(&cap(m, false), true),
                Some(Unsupported::MultiWriterMount { mode: m })
            );
            assert_eq!(unsupported_capability(&cap(m, true), true), None);
            assert!(unsupported_capability(&cap(m, true), false).is_some());
        }
    }
}
