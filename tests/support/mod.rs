//! The integration tests' one support library: each test binary includes it
//! (`#[path = "../support/mod.rs"] mod support;`) and uses the parts it needs.
//! - `launch`: the one way a test starts the real `cinder-csi` as a server ([`launch::Launch`]);
//! - `common`: the real `cinder-csi` binary on a temp socket and a gRPC client to it;
//! - `caps`: the VolumeCapability builders;
//! - `blockdev`: loop-backed block devices for the node tests;
//! - `leaks`: the one leak check below a test's directory (mounts, loop devices) and cleanup;
//! - `local_rig`: a driver on the local backend in a temp dir, cleaned up through `leaks`;
//! - `openstack_support`: the test cloud's env file, its REST helper, cloud-object guards;
//! - `faults`, `faults_cloud`: the fault-injecting HTTP proxy and its test-cloud scenarios;
//! - `kube_api_support`: the standalone kube-apiserver's env;
//! - `doctor_support`: running `cinder-csi doctor`;
//! - `scratch`: a test's own directory under /var/tmp (and its kubelet directory);
//! - `payload`: the byte patterns tests write durably and read back;
//! - `seq_writer`: the ordered writer group snapshot tests check for gaps;
//! - `die_with_parent`: every spawned driver dies with the test process.
#![allow(dead_code, unused_imports)] // each binary uses a different part

pub mod blockdev;
pub mod caps;
pub mod common;
pub mod die_with_parent;
pub mod doctor_support;
pub mod faults;
pub mod faults_cloud;
pub mod kube_api_support;
pub mod launch;
pub mod leaks;
pub mod local_rig;
pub mod openstack_support;
pub mod payload;
pub mod scratch;
pub mod seq_writer;
