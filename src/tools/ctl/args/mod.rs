//! `cinder-csi ctl` command line: one subcommand per CSI RPC, flags named after the request
//! fields. Secrets are parsed without ever echoing their values.

mod command;
mod common;
mod controller;
mod groups;
mod node;
mod values;

pub use command::{CtlArgs, Output, Rpc};
pub use common::{
    AccessMode, Capability, Listing, Secrets, SnapshotWithSecrets, VolumeId, VolumeWithSecrets,
};
pub use controller::{
    CreateSnapshot, CreateVolume, Expand, GetCapacity, ListSnapshots, ModifyVolume, Publish,
    Unpublish, Validate,
};
pub use groups::{CreateGroupSnapshot, GroupSnapshotId};
pub use node::{NodeExpand, NodePublish, NodeUnpublish, Stage, Stats, Unstage};
pub use values::{parse_kv, parse_secret, parse_segments, parse_size};
