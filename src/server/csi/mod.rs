//! The gRPC surface: generated CSI code (quarantined in `pb`), the three services, proto ⇄
//! domain conversion and the error → status mapping. No proto type leaves this module.

#[allow(clippy::all, clippy::pedantic, missing_docs, rustdoc::all)]
pub mod pb {
    tonic::include_proto!("csi.v1");
}

pub mod client;
pub mod controller;
pub mod convert;
pub mod group_controller;
pub mod identity;
pub mod node;
pub mod status;
