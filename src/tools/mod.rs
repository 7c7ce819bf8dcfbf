//! The operator's tools beside `serve`, on the product's top floor: nothing else uses them.
//! This file only declares them.

pub mod cli;
pub mod ctl;
pub mod demo;
pub mod doctor;

#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
