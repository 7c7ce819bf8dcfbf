//! Paged listings and the storage capacity a cloud reports.

/// One page of a listing. `limit == None` asks for everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PageRequest {
    pub limit: Option<u32>,
    /// Opaque to callers: the id of the last item of the previous page.
    pub marker: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page<T> {
    pub items: Vec<T>,
    /// Marker for the next page; `None` when this was the last one.
    pub next_marker: Option<String>,
}

/// Space the driver may still provision, from quota headroom (OpenStack) or free disk (local).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Capacity {
    /// `None` = unlimited.
    pub available_bytes: Option<u64>,
    /// Largest single volume, when the cloud limits it.
    pub maximum_volume_bytes: Option<u64>,
}
