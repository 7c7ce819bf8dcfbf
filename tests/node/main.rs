//! The node path on real loop devices, filesystems and mounts (root): stage, publish,
//! paths resolved beneath the kubelet dir, request validation, recovery after crashes, faults.
//! One binary per subject (tests/README.md); each file below was a test binary of its own.

#[path = "../support/mod.rs"]
mod support;

mod failures;
mod paths;
mod recovery;
mod rpcs;
mod takeover;
mod validation;
