//! What differs between the clouds the adapters stand for.

/// The knobs of Cinder's rules an adapter sets once (a `const` beside its code).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Profile {
    /// Operations finish before they return: an object left `deleting` is a delete that
    /// failed half way, and another delete finishes it. Otherwise (Cinder, the fake) it is a
    /// delete under way, and a second one is refused.
    pub instant: bool,
    /// A snapshot of an in-use volume needs `force` (Cinder before microversion 3.66).
    pub snapshot_in_use_needs_force: bool,
    /// Nova's `[cinder] cross_az_attach`: when false, a volume attaches only to servers of
    /// its own availability zone.
    pub cross_az_attach: bool,
    /// A new volume from a snapshot, volume or backup not ready is a bad request (Cinder's
    /// 400 InvalidInput), not a conflict of states.
    pub source_not_ready_is_bad_request: bool,
    /// Attaching an in-use multiattach volume without asking for multiattach is a conflict
    /// (Cinder's reserve), not a bad request.
    pub multiattach_not_asked_is_conflict: bool,
}
