//! The Kubernetes API port: the annotations of one PersistentVolumeClaim, read for
//! `--pvc-annotations` (Cinder scheduler hints). The adapter is one authenticated GET through
//! the adapters' HTTP client, not an informer: a CreateVolume reads the PVC it is for, and a
//! controller without the flag builds nothing here (no memory, no connection).
//! This file only declares the modules and what they export; none of them uses it.

mod access;
mod claims;
mod kubeconfig;
mod port;

pub use access::{ApiAccess, Credentials, IN_CLUSTER_DIR};
pub use claims::ApiClaims;
pub use port::*;
