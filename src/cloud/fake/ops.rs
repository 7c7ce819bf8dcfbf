//! The fake's operations (call counters, error injection) and its timing defaults.

use std::time::Duration;

/// How often a fake wait looks again. Tests run with a paused tokio clock, so this costs no
/// real time; it only bounds how many observations a wait makes per simulated second.
pub const FAKE_POLL_INTERVAL: Duration = Duration::from_millis(100);

/// Default number of observations an object stays in a transitional state.
pub const DEFAULT_SETTLE_AFTER: u32 = 2;

/// Every operation of the port, for call counters and error injection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Op {
    Check,
    CreateVolume,
    GetVolume,
    ListVolumes,
    DeleteVolume,
    ExtendVolume,
    RetypeVolume,
    WaitVolume,
    GetVolumeType,
    CreateSnapshot,
    GetSnapshot,
    ListSnapshots,
    DeleteSnapshot,
    WaitSnapshot,
    BackupsSupported,
    CreateBackup,
    GetBackup,
    ListBackups,
    DeleteBackup,
    WaitBackup,
    AvailabilityZones,
    Capacity,
    GetServer,
    AttachVolume,
    DetachVolume,
    ListAttachments,
}
