//! Fault injection between the driver and OpenStack: a loopback HTTP proxy ([`proxy`]) with
//! rules per route and per call count ([`rules`]). Shared by tests/cloud/fault_proxy.rs (the proxy's
//! own tests against a tiny local server) and tests/cloud/openstack_faults.rs (the real test cloud).
#![allow(dead_code)] // each test file uses a different part

pub mod proxy;
pub mod rules;

pub use proxy::FaultProxy;
pub use rules::{Fault, Rule, When};
