//! The one place where driver errors become gRPC statuses and words. Every variant is
//! matched explicitly (no `_ =>`), so a new error kind cannot silently become `Internal`, and
//! every message is written here or in the files below (`status/`, one per kind of error):
//! the driver hands over ids, paths, statuses and sizes, and this layer says them.

mod group;
mod mismatch;
mod node;
mod refusal;
mod request;
#[cfg(test)]
mod tests;
mod words;

mod codes;
pub use codes::*;
