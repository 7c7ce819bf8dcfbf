//! Wire formats of Cinder and Nova, and their one conversion each into the port's domain
//! types. Deserialisation is lenient where the APIs are inconsistent across releases (null
//! names, `bootable` as a string, missing fields in older microversions). This file only
//! declares the parts and re-exports them.

mod cinder;
mod groups;
mod lenient;
mod nova;
#[cfg(test)]
mod tests;

pub use cinder::*;
pub use groups::*;
pub use lenient::{has_next, parse_time};
pub use nova::*;
