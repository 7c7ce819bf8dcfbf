//! The OpenStack adapter against the real test cloud (`tests/harness/openstack/ostack`; each test says
//! "skipped" without `CINDER_CSI_OSTACK_ENV`), its fault proxy, proxy variables, and the
//! Kubernetes API client against a real kube-apiserver (`CINDER_CSI_KUBE_API_ENV`).
//! One binary per subject (tests/README.md); each file below was a test binary of its own.

#[path = "../support/mod.rs"]
mod support;

mod fault_proxy;
mod kube_claims;
mod openstack_adapter;
mod openstack_append_metadata;
mod openstack_config;
mod openstack_doctor;
mod openstack_faults;
mod openstack_group_faults;
mod openstack_groups;
mod openstack_health;
mod openstack_kill_storm;
mod openstack_lifecycle;
mod openstack_pvc_hints;
mod openstack_rotation;
mod openstack_snapshot_delete;
mod proxy_env;
