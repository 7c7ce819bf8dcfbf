//! In-memory fake of the host port for fast unit tests of the node core: a tree of paths with
//! stacked mounts, block devices with content, one-shot error injection and a call log.
//! Formatting a device that is not blank panics: that is the invariant the core must keep.

mod control;
mod devices;
mod filesystems;
mod mounter;
mod state;

pub use control::FakeHost;
pub use state::{FakeDevice, State};
