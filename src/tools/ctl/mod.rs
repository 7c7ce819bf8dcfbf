//! `cinder-csi ctl <rpc> …`: a CSI client for operators (like `csc`), over the driver's real
//! socket. It sits on the gRPC side of the layering (it speaks the generated CSI types) and is
//! not used by the driver itself.

pub mod args;
mod capabilities;
pub mod client;
mod commands;
mod groups;
pub mod render;
mod requests;
mod rpc;
mod run;

pub use args::{CtlArgs, Output};
pub use client::Client;
pub use rpc::CtlError;
pub use run::run;
