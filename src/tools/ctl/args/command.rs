//! The command line itself: endpoint, output, deadline, and one subcommand per CSI RPC.

use clap::{Args, Subcommand, ValueEnum};

use super::common::{Listing, SnapshotWithSecrets, VolumeId, VolumeWithSecrets};
use super::controller::{
    CreateSnapshot, CreateVolume, Expand, GetCapacity, ListSnapshots, ModifyVolume, Publish,
    Unpublish, Validate,
};
use super::groups::{CreateGroupSnapshot, GroupSnapshotId};
use super::node::{NodeExpand, NodePublish, NodeUnpublish, Stage, Stats, Unstage};

#[derive(Debug, Clone, Args)]
pub struct CtlArgs {
    /// Driver endpoint: unix:///abs/path.sock or tcp://host:port.
    #[arg(long, env = "CSI_ENDPOINT", default_value = "unix:///csi/csi.sock")]
    pub endpoint: String,

    /// Output format.
    #[arg(long, short = 'o', value_enum, default_value_t = Output::Text)]
    pub output: Output,

    /// Deadline of the RPC in seconds (sent as grpc-timeout, like the sidecars do).
    #[arg(long, default_value_t = 60, value_name = "SECONDS")]
    pub timeout: u64,

    #[command(subcommand)]
    pub rpc: Rpc,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Output {
    Text,
    Json,
}

#[derive(Debug, Clone, Subcommand)]
pub enum Rpc {
    /// GetPluginInfo.
    Info,
    /// Probe.
    Probe,
    /// Plugin, controller, group controller and node capabilities (services that are not
    /// served say so).
    Capabilities,
    /// CreateVolume.
    CreateVolume(CreateVolume),
    /// DeleteVolume.
    DeleteVolume(VolumeWithSecrets),
    /// ControllerGetVolume.
    GetVolume(VolumeId),
    /// ListVolumes.
    ListVolumes(Listing),
    /// ValidateVolumeCapabilities.
    Validate(Validate),
    /// ControllerPublishVolume.
    Publish(Publish),
    /// ControllerUnpublishVolume.
    Unpublish(Unpublish),
    /// ControllerExpandVolume.
    Expand(Expand),
    /// ControllerModifyVolume.
    ModifyVolume(ModifyVolume),
    /// GetCapacity.
    GetCapacity(GetCapacity),
    /// CreateSnapshot.
    CreateSnapshot(CreateSnapshot),
    /// DeleteSnapshot.
    DeleteSnapshot(SnapshotWithSecrets),
    /// GetSnapshot.
    GetSnapshot(SnapshotWithSecrets),
    /// ListSnapshots.
    ListSnapshots(ListSnapshots),
    /// CreateVolumeGroupSnapshot (GroupController).
    CreateGroupSnapshot(CreateGroupSnapshot),
    /// DeleteVolumeGroupSnapshot (GroupController).
    DeleteGroupSnapshot(GroupSnapshotId),
    /// GetVolumeGroupSnapshot (GroupController).
    GetGroupSnapshot(GroupSnapshotId),
    /// NodeStageVolume.
    Stage(Stage),
    /// NodeUnstageVolume.
    Unstage(Unstage),
    /// NodePublishVolume.
    NodePublish(NodePublish),
    /// NodeUnpublishVolume.
    NodeUnpublish(NodeUnpublish),
    /// NodeExpandVolume.
    NodeExpand(NodeExpand),
    /// NodeGetVolumeStats.
    Stats(Stats),
    /// NodeGetInfo.
    NodeInfo,
}
