//! Health (the Identity Probe RPC and `/healthz`) and readiness (`/readyz`).
//!
//! Probe reports the plugin's own health only and never calls the cloud. The CSI sidecars
//! (csi-lib-utils `ProbeForever`, at provisioner/attacher/snapshotter/resizer startup) exit on
//! any Probe error other than DeadlineExceeded, and the livenessprobe sidecar restarts the
//! plugin when Probe fails or takes longer than its 1 s default timeout. A Probe that asked
//! Keystone or Cinder would therefore turn a cloud outage during a controller reschedule into
//! crash-looping sidecars, kill in-flight waits, and let one region's outage stop every region.
//! Cloud reachability is watched in the background by [`CloudMonitor`] instead: a warning log
//! on failure, the `cinder_csi_cloud_up` gauge, and `/readyz`.

#[cfg(test)]
mod tests;

mod readiness;
pub use readiness::*;
