//! `cinder-csi demo`: the driver's whole job on the local backend, end to end, through the
//! real socket, with each step's latency. Starts `cinder-csi serve --mode all --backend local`
//! in a fresh work directory, drives it like kubelet and the sidecars do, tears everything down
//! and proves nothing was left behind (no mount, no loop device, no file).

mod attach;
mod cleanup;
mod driver;
mod observe;
mod provision;
mod report;
mod scenario;
mod state;
mod teardown;

mod run;
pub use run::*;
