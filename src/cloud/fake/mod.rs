//! One stateful in-memory fake of the whole cloud port (every role) for fast tests of the
//! controller core. It behaves like Cinder and Nova where the core can tell the difference:
//! objects pass through transitional states (`creating`, `attaching`, `detaching`,
//! `extending`, `retyping`, `deleting`) and settle after a configurable number of
//! observations; operations refused by Cinder in the wrong state are refused here with the
//! same error kind; waits honour the deadline. Every operation is counted by the port's `Op`
//! (the request the real cloud would be sent) and can be made to fail once with an injected
//! error. Each role is implemented in its file: volumes, copies, servers, placement.
//!
//! Built only for tests (`cfg(test)` or the `test-support` feature), never in a release.

mod cloud;
mod copies;
mod group_state;
mod groups;
mod placement;
mod rules;
mod servers;
mod state;
mod volumes;

pub use cloud::{FakeCloud, FAKE_POLL_INTERVAL};
pub use group_state::HELPER_GROUP_PREFIX;
pub use state::DEFAULT_SETTLE_AFTER;
