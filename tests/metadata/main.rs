//! The metadata adapters against real artefacts: config drive images made by the same tools Nova
//! uses (genisoimage; mkfs.vfat + mtools), read as plain files without mounting, and the
//! metadata service client against a local HTTP server that counts requests.

mod chain;
mod config_drive;
mod service;
mod support;
mod wiring;
