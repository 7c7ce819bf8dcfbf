use std::sync::Mutex as StdMutex;

use super::*;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use crate::cloud::fake::FakeCloud;
use crate::cloud::Clouds;
use crate::cloud::{CloudError, Op};
use crate::driver::node::{NodeCore, NodeHealth, NodeOptions};
use crate::host::fake::FakeHost;
use crate::host::metadata::{InstanceMetadata, Metadata, MetadataError};

#[derive(Default)]
struct Seen(StdMutex<Vec<(String, bool)>>);

impl CloudHealthObserver for Seen {
    fn observe(&self, cloud: &str, up: bool) {
        self.0.lock().unwrap().push((cloud.to_string(), up));
    }
}

fn unavailable() -> CloudError {
    CloudError::Unavailable {
        message: "keystone: connection refused".into(),
        request_id: Default::default(),
    }
}

#[tokio::test]
async fn monitor_reports_each_cloud_without_asking_on_read() {
    let a = FakeCloud::new();
    let b = FakeCloud::new();
    let seen = Arc::new(Seen::default());
    let monitor = CloudMonitor::new(
        Clouds::new([a.cloud(""), b.cloud("east")]),
        Some(seen.clone()),
    );
    let not = monitor.check().await.unwrap_err();
    assert!(not.reason.contains("not checked yet"), "{not:?}");

    assert!(monitor.check_all().await);
    monitor.check().await.unwrap();
    // Reading the state makes no request.
    for _ in 0..5 {
        monitor.check().await.unwrap();
    }
    assert_eq!((a.calls(Op::VolumeList), b.calls(Op::VolumeList)), (1, 1));

    // One region down: only that cloud is reported, the other stays up.
    b.fail_next(Op::VolumeList, unavailable());
    assert!(!monitor.check_all().await);
    let not = monitor.check().await.unwrap_err();
    assert!(not.transient);
    assert!(
        not.reason.contains("cloud \"east\" is not reachable")
            && not.reason.contains("connection refused")
            && !not.reason.contains("[Global]"),
        "{not:?}"
    );

    assert!(monitor.check_all().await);
    monitor.check().await.unwrap();
    let seen = seen.0.lock().unwrap().clone();
    assert_eq!(
        seen,
        vec![
            ("".to_string(), true),
            ("east".to_string(), true),
            ("".to_string(), true),
            ("east".to_string(), false),
            ("".to_string(), true),
            ("east".to_string(), true),
        ]
    );
}

struct NoMetadata;

#[async_trait]
impl Metadata for NoMetadata {
    async fn instance(&self) -> Result<InstanceMetadata, MetadataError> {
        Err(MetadataError::Unavailable(
            "metadata service: connection refused".into(),
        ))
    }
}

#[tokio::test]
async fn node_health_is_local_tools_only() {
    let fake = FakeHost::new();
    let core = NodeCore::new(
        fake.host(),
        Arc::new(NoMetadata),
        NodeOptions {
            kubelet_dir: "/var/lib/kubelet".into(),
            kubelet_dir_resolved: None,
            block_storage: Default::default(),
            with_topology: true,
            additional_topology: vec![],
        },
    );
    let health = NodeHealth::new(core, Duration::ZERO);
    // The metadata service being down does not make the plugin unhealthy.
    health.check().await.unwrap();
    fake.state().missing_tools = vec!["mkfs.ext4".into()];
    // Probe answers from the last lookup and refreshes it in the background.
    let mut not = health.check().await;
    for _ in 0..200 {
        if not.is_err() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
        not = health.check().await;
    }
    let not = not.unwrap_err();
    assert!(!not.transient);
    assert!(
        not.reason
            .contains("mkfs.ext4 not installed in the plugin's image"),
        "{not:?}"
    );
}
