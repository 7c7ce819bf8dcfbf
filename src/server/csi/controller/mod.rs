//! CSI Controller service: thin handlers. Each validates and converts the request, takes the
//! in-flight guard (volume id, or the name for creates), makes one call into the controller
//! core and builds the response. Secrets are read for the `cloud` key only and never logged.

pub(crate) mod convert;

mod service;
pub use service::*;
