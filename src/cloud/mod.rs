//! The cloud port: what the controller core needs from a block-storage cloud (Cinder) and a
//! compute cloud (Nova). Adapters: `openstack` (Keystone + Cinder + Nova) and `local`
//! (sparse files + loop devices on this machine).

mod clouds;
mod error;
mod model;
pub mod openstack;
mod poll;
mod port;
mod types;

#[cfg(any(test, feature = "test-support"))]
pub mod fake;
pub mod local;

pub use clouds::{Cloud, Clouds};
pub use error::{CloudError, CloudResult, RequestId, Resource};
pub use port::*;
pub use types::*;
