//! The local backend (sparse files on loop devices, root): every role of the cloud port, data
//! through the node, group snapshots, restarts, standby controllers, mkfs and format options.
//! One binary per subject (tests/README.md); each file below was a test binary of its own.

#[path = "../support/mod.rs"]
mod support;

mod backend;
mod data;
mod format_options;
mod groups;
mod mkfs_options;
mod restart;
mod standby;
