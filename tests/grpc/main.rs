//! The gRPC surface of one real `cinder-csi` process over its Unix socket: Identity, the
//! controller's refusals, any client's `:authority`, startup and shutdown.
//! One binary per subject (tests/README.md); each file below was a test binary of its own.

#[path = "../support/mod.rs"]
mod support;

mod authority;
mod controller;
mod identity;
mod shutdown;
mod startup;
