//! Semantic errors of the driver core, as data: the ids, paths, statuses, sizes and keys
//! involved, never prose. `csi::status` maps each variant to exactly one gRPC code and words
//! it; its `Display` is implemented there as well, so `to_string()` anywhere gives the text
//! the caller gets. Nothing below `csi` builds a message or a gRPC status.

mod mismatch;
mod node;
mod refusal;
mod request;
pub use mismatch::{Mismatch, VolumeDiff};
pub use node::{NodeRefusal, NotAtPath, PathRole};
pub use refusal::{Change, Cleanup, Failure, Named, Refusal};
pub use request::{Invalid, ParamClass, Range, Unsupported};

mod kinds;
pub use kinds::*;
