//! The `local` backend: the cloud port on this machine. A volume is a sparse file of whole
//! GiB in one of the configured zones, attaching it to a server (a node id) of its zone binds a
//! loop device and links `DIR/by-id/<server>/virtio-<id[:20]>` to it (that node searches its
//! directory instead of /dev/disk/by-id). Snapshots, clones, backups and
//! restores are sparse copies. Each object has a JSON record written atomically, so a crash
//! loses nothing; a reconcile pass at startup puts loop devices and links back in line.
//!
//! Concurrency: mutations are serialised by one `ops` mutex held across their record I/O and
//! loop ioctls (milliseconds; a detach or delete whose device someone else holds open waits
//! for the kernel, at most `LocalOptions::release_within`); data copies run outside it, protected by the new object's
//! `creating` status (its source cannot be deleted meanwhile). Reads take only the in-memory
//! state lock, which is never held across I/O, so they run on the async runtime.
//!
//! Each role of the port is implemented in the file holding its code: `volumes` (with
//! `sources`), `copies` (with `snapshots` and `backups`), `attach` (servers, with `nodes`), `backend`
//! (placement, health). `copy` is the sparse file copy they all use. `standby` is a second
//! controller on a DIR another process holds, waiting to take it over.

mod attach;
mod backend;
mod backups;
mod copies;
pub mod copy;
mod data;
mod freeze;
mod group_create;
mod groups;
pub mod loopdev;
mod nodes;
mod paging;
mod placement;
mod reconcile;
mod reconcile_report;
mod records;
mod rules;
mod snapshots;
mod sources;
mod standby;
mod state;
pub mod store;
mod volumes;

pub use backend::{LocalCloud, LocalOptions, RELEASE_WITHIN};
pub use groups::GROUP_TYPE;
pub use nodes::register_node;
pub use reconcile_report::ReconcileReport;
pub use records::{TYPE_DEFAULT, TYPE_MULTIATTACH, ZONE};
pub use standby::Takeover;
