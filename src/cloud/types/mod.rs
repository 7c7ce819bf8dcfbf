//! Domain types of the cloud port. Adapters convert their wire formats into these in exactly
//! one place each; nothing above the port sees Cinder/Nova JSON. This file only declares the
//! parts and re-exports them.

mod copy;
mod group;
mod listing;
mod server;
mod volume;
mod wait;

pub use copy::*;
pub use group::*;
pub use listing::*;
pub use server::*;
pub use volume::*;
pub use wait::*;
