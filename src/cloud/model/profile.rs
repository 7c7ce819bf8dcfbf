//! What differs between the clouds the adapters stand for.

use super::voice::Voice;

/// The knobs of Cinder's rules an adapter sets once (a `const` beside its code).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Profile {
    pub voice: Voice,
    /// Operations finish before they return: an object left `deleting` is a delete that
    /// failed half way, and another delete finishes it. Otherwise (Cinder, the fake) it is a
    /// delete under way, and a second one is refused.
    pub instant: bool,
    /// A snapshot of an in-use volume needs `force` (Cinder before microversion 3.66).
    pub snapshot_in_use_needs_force: bool,
    /// Nova's `[cinder] cross_az_attach`: when false, a volume attaches only to servers of
    /// its own availability zone.
    pub cross_az_attach: bool,
}
