//! The Controller service over real gRPC on a Unix socket, backed by the in-memory fake cloud:
//! request validation, gRPC codes, the in-flight guard, deadlines from `grpc-timeout`, and
//! secrets kept out of the logs. The core's behaviour in depth is tested in
//! `src/driver/controller/tests/`.

use std::collections::HashMap;
use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use crate::support::caps::mount_cap;
use cinder_csi::cloud::fake::FakeCloud;
use cinder_csi::cloud::Clouds;
use cinder_csi::driver::controller::{Controller, ControllerOptions};
use cinder_csi::server::csi::controller::{ControllerService, CAPABILITIES};
use cinder_csi::server::csi::pb;
use cinder_csi::server::csi::pb::controller_client::ControllerClient;
use cinder_csi::server::csi::pb::controller_server::ControllerServer;
use hyper_util::rt::TokioIo;
use tonic::transport::{Channel, Endpoint, Server, Uri};
use tonic::{Code, Request};

const GIB: i64 = 1 << 30;

/// Everything the driver logs, to check that secrets never show up.
#[derive(Clone, Default)]
struct LogBuf(Arc<Mutex<Vec<u8>>>);

impl Write for LogBuf {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn logs() -> &'static LogBuf {
    static LOGS: OnceLock<LogBuf> = OnceLock::new();
    LOGS.get_or_init(|| {
        let buf = LogBuf::default();
        let writer = buf.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_writer(move || writer.clone())
            .finish();
        tracing::subscriber::set_global_default(subscriber).expect("one subscriber");
        buf
    })
}

struct Harness {
    fake: Arc<FakeCloud>,
    client: ControllerClient<Channel>,
    _dir: tempfile::TempDir,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for Harness {
    fn drop(&mut self) {
        self.server.abort();
    }
}

async fn harness() -> Harness {
    logs();
    let fake = FakeCloud::new();
    fake.set_settle_after(0);
    fake.add_server("node-1", "nova");
    let core = Controller::new(
        Clouds::new([fake.cloud("")]),
        ControllerOptions {
            cluster: "c1".into(),
            ..Default::default()
        },
    );
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("csi.sock");
    let listener = tokio::net::UnixListener::bind(&sock).unwrap();
    let service = ControllerServer::new(ControllerService::new(Arc::new(core)));
    let server = tokio::spawn(async move {
        Server::builder()
            .add_service(service)
            .serve_with_incoming(tokio_stream::wrappers::UnixListenerStream::new(listener))
            .await
            .unwrap();
    });
    let channel = Endpoint::try_from("http://localhost")
        .unwrap()
        .connect_with_connector(tower::service_fn(move |_: Uri| {
            let sock = sock.clone();
            async move {
                Ok::<_, std::io::Error>(TokioIo::new(tokio::net::UnixStream::connect(sock).await?))
            }
        }))
        .await
        .unwrap();
    Harness {
        fake,
        client: ControllerClient::new(channel),
        _dir: dir,
        server,
    }
}

/// CreateVolume of 1 GiB that must succeed: the volume it returns.
async fn created(c: &mut ControllerClient<tonic::transport::Channel>, name: &str) -> pb::Volume {
    c.create_volume(create_req(name, GIB))
        .await
        .unwrap()
        .into_inner()
        .volume
        .unwrap()
}

/// CreateSnapshot that must succeed: the snapshot it returns.
async fn snapshotted(
    c: &mut ControllerClient<tonic::transport::Channel>,
    req: pb::CreateSnapshotRequest,
) -> pb::Snapshot {
    c.create_snapshot(req)
        .await
        .unwrap()
        .into_inner()
        .snapshot
        .unwrap()
}

fn create_req(name: &str, bytes: i64) -> pb::CreateVolumeRequest {
    pb::CreateVolumeRequest {
        name: name.into(),
        capacity_range: Some(pb::CapacityRange {
            required_bytes: bytes,
            limit_bytes: 0,
        }),
        volume_capabilities: vec![mount_cap("")],
        ..Default::default()
    }
}

fn with_timeout<T>(msg: T, timeout: &str) -> Request<T> {
    let mut r = Request::new(msg);
    r.metadata_mut()
        .insert("grpc-timeout", timeout.parse().unwrap());
    r
}

#[tokio::test]
async fn advertises_exactly_the_implemented_capabilities() {
    let mut h = harness().await;
    let caps = h
        .client
        .controller_get_capabilities(pb::ControllerGetCapabilitiesRequest {})
        .await
        .unwrap()
        .into_inner()
        .capabilities;
    assert_eq!(caps.len(), CAPABILITIES.len());
    use pb::controller_service_capability::rpc::Type;
    let have: Vec<i32> = caps
        .iter()
        .filter_map(|c| {
            let pb::controller_service_capability::Type::Rpc(r) = c.r#type.as_ref()?;
            Some(r.r#type)
        })
        .collect();
    assert!(!have.contains(&(Type::PublishReadonly as i32)));
    assert!(have.contains(&(Type::ModifyVolume as i32)));
}

#[tokio::test]
async fn create_volume_codes_and_idempotency() {
    let mut h = harness().await;
    let c = &mut h.client;
    let code =
        |r: Result<tonic::Response<pb::CreateVolumeResponse>, tonic::Status>| r.unwrap_err().code();

    assert_eq!(
        code(c.create_volume(create_req("", GIB)).await),
        Code::InvalidArgument
    );
    let mut no_caps = create_req("a", GIB);
    no_caps.volume_capabilities.clear();
    assert_eq!(code(c.create_volume(no_caps).await), Code::InvalidArgument);
    let mut typo = create_req("a", GIB);
    typo.parameters = HashMap::from([("availablity".to_string(), "nova".to_string())]);
    let err = c.create_volume(typo).await.unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    assert!(err.message().contains("availablity"), "{}", err.message());
    let mut bad_range = create_req("a", 2 * GIB);
    bad_range.capacity_range.as_mut().unwrap().limit_bytes = GIB;
    assert_eq!(code(c.create_volume(bad_range).await), Code::OutOfRange);
    let mut bad_source = create_req("a", GIB);
    bad_source.volume_content_source = Some(pb::VolumeContentSource { r#type: None });
    assert_eq!(
        code(c.create_volume(bad_source).await),
        Code::InvalidArgument
    );
    assert!(h.fake.volumes().is_empty(), "bad requests change nothing");

    let first = c
        .create_volume(create_req("a", GIB))
        .await
        .unwrap()
        .into_inner();
    let v = first.volume.clone().unwrap();
    assert_eq!(v.capacity_bytes, GIB);
    assert_eq!(v.accessible_topology.len(), 1);
    for _ in 0..10 {
        let again = c
            .create_volume(create_req("a", GIB))
            .await
            .unwrap()
            .into_inner();
        assert_eq!(again, first);
    }
    let mut bigger = create_req("a", 2 * GIB);
    bigger.capacity_range.as_mut().unwrap().limit_bytes = 2 * GIB;
    assert_eq!(code(c.create_volume(bigger).await), Code::AlreadyExists);
    let mut missing = create_req("b", GIB);
    missing.volume_content_source = Some(pb::VolumeContentSource {
        r#type: Some(pb::volume_content_source::Type::Snapshot(
            pb::volume_content_source::SnapshotSource {
                snapshot_id: "nope".into(),
            },
        )),
    });
    assert_eq!(code(c.create_volume(missing).await), Code::NotFound);
    h.fake.set_quota_gib(Some(1));
    assert_eq!(
        code(c.create_volume(create_req("c", GIB)).await),
        Code::ResourceExhausted
    );
}

#[tokio::test]
async fn busy_name_is_aborted_and_the_deadline_ends_the_wait() {
    let mut h = harness().await;
    // Cinder takes "forever" to create the volume.
    h.fake.set_settle_after(1_000_000);
    let mut slow = h.client.clone();
    let first = tokio::spawn(async move {
        slow.create_volume(with_timeout(create_req("a", GIB), "3S"))
            .await
    });
    // The second call for the same name arrives while the first waits.
    let waiting_since = std::time::Instant::now();
    let second = loop {
        tokio::time::sleep(Duration::from_millis(50)).await;
        if !h.fake.volumes().is_empty() {
            break h.client.create_volume(create_req("a", GIB)).await;
        }
        assert!(
            waiting_since.elapsed() < Duration::from_secs(60),
            "the first CreateVolume never reached the fake cloud"
        );
    };
    let err = second.unwrap_err();
    assert_eq!(err.code(), Code::Aborted);
    assert!(err.message().contains("in progress"), "{}", err.message());
    let err = first.await.unwrap().unwrap_err();
    assert_eq!(err.code(), Code::Aborted, "{}", err.message());
    assert!(
        err.message().contains("creating"),
        "carries the last status: {}",
        err.message()
    );
    // Once Cinder catches up, the retry returns the same volume.
    h.fake.set_settle_after(0);
    h.fake.settle_all();
    let v = h
        .client
        .create_volume(create_req("a", GIB))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(h.fake.volumes().len(), 1);
    assert_eq!(v.volume.unwrap().volume_id, h.fake.volumes()[0].id);
}

#[tokio::test]
async fn publish_list_validate_expand_snapshot_codes() {
    let mut h = harness().await;
    let c = &mut h.client;
    let id = c
        .create_volume(create_req("a", GIB))
        .await
        .unwrap()
        .into_inner()
        .volume
        .unwrap()
        .volume_id;
    let publish = |vol: &str, node: &str| pb::ControllerPublishVolumeRequest {
        volume_id: vol.into(),
        node_id: node.into(),
        volume_capability: Some(mount_cap("")),
        ..Default::default()
    };
    let mut no_cap = publish(&id, "node-1");
    no_cap.volume_capability = None;
    for (req, want) in [
        (no_cap, Code::InvalidArgument),
        (publish(&id, ""), Code::InvalidArgument),
        (publish("nope", "node-1"), Code::NotFound),
        (publish(&id, "node-9"), Code::NotFound),
    ] {
        let err = c.controller_publish_volume(req.clone()).await.unwrap_err();
        assert_eq!(err.code(), want, "{req:?}");
    }
    let ctx = c
        .controller_publish_volume(publish(&id, "node-1"))
        .await
        .unwrap()
        .into_inner();
    assert!(ctx.publish_context.contains_key("DevicePath"));
    for _ in 0..10 {
        assert_eq!(
            c.controller_publish_volume(publish(&id, "node-1"))
                .await
                .unwrap()
                .into_inner(),
            ctx
        );
    }
    h.fake.add_server("node-2", "nova");
    assert_eq!(
        c.controller_publish_volume(publish(&id, "node-2"))
            .await
            .unwrap_err()
            .code(),
        Code::FailedPrecondition
    );
    let del = pb::DeleteVolumeRequest {
        volume_id: id.clone(),
        ..Default::default()
    };
    assert_eq!(
        c.delete_volume(del.clone()).await.unwrap_err().code(),
        Code::FailedPrecondition
    );

    // ListVolumes: published node, bad token, negative page size.
    let list = c
        .list_volumes(pb::ListVolumesRequest::default())
        .await
        .unwrap()
        .into_inner();
    let status = list.entries[0].status.clone().unwrap();
    assert_eq!(status.published_node_ids, vec!["node-1".to_string()]);
    assert!(!status.volume_condition.unwrap().abnormal);
    let bad = pb::ListVolumesRequest {
        starting_token: "invalid-token".into(),
        ..Default::default()
    };
    assert_eq!(c.list_volumes(bad).await.unwrap_err().code(), Code::Aborted);
    let negative = pb::ListVolumesRequest {
        max_entries: -1,
        ..Default::default()
    };
    assert_eq!(
        c.list_volumes(negative).await.unwrap_err().code(),
        Code::InvalidArgument
    );

    // ValidateVolumeCapabilities: required fields, confirmation echo.
    let validate = pb::ValidateVolumeCapabilitiesRequest {
        volume_id: id.clone(),
        volume_capabilities: vec![mount_cap("")],
        ..Default::default()
    };
    let mut empty = validate.clone();
    empty.volume_capabilities.clear();
    assert_eq!(
        c.validate_volume_capabilities(empty)
            .await
            .unwrap_err()
            .code(),
        Code::InvalidArgument
    );
    let confirmed = c
        .validate_volume_capabilities(validate)
        .await
        .unwrap()
        .into_inner()
        .confirmed
        .unwrap();
    assert_eq!(confirmed.volume_capabilities, vec![mount_cap("")]);

    // Expand: capacity_range required; online extend works.
    let expand = pb::ControllerExpandVolumeRequest {
        volume_id: id.clone(),
        capacity_range: None,
        ..Default::default()
    };
    assert_eq!(
        c.controller_expand_volume(expand.clone())
            .await
            .unwrap_err()
            .code(),
        Code::InvalidArgument
    );
    let mut expand = expand;
    expand.capacity_range = Some(pb::CapacityRange {
        required_bytes: 2 * GIB,
        limit_bytes: 0,
    });
    let r = c
        .controller_expand_volume(expand)
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        (r.capacity_bytes, r.node_expansion_required),
        (2 * GIB, true)
    );

    // Snapshots: ready later, listed, deleted; bad class parameters refused.
    let snap = pb::CreateSnapshotRequest {
        source_volume_id: id.clone(),
        name: "s".into(),
        parameters: HashMap::from([("force-create".to_string(), "true".to_string())]),
        ..Default::default()
    };
    let mut bad = snap.clone();
    bad.parameters.insert("type".into(), "clone".into());
    assert_eq!(
        c.create_snapshot(bad).await.unwrap_err().code(),
        Code::InvalidArgument
    );
    let s = snapshotted(c, snap.clone()).await;
    assert!(s.creation_time.is_some());
    let by_id = pb::ListSnapshotsRequest {
        snapshot_id: s.snapshot_id.clone(),
        ..Default::default()
    };
    assert_eq!(
        c.list_snapshots(by_id)
            .await
            .unwrap()
            .into_inner()
            .entries
            .len(),
        1
    );
    let del_snap = pb::DeleteSnapshotRequest {
        snapshot_id: s.snapshot_id.clone(),
        ..Default::default()
    };
    for _ in 0..3 {
        c.delete_snapshot(del_snap.clone()).await.unwrap();
    }
    let get = pb::GetSnapshotRequest {
        snapshot_id: s.snapshot_id,
        ..Default::default()
    };
    assert_eq!(
        c.get_snapshot(get).await.unwrap_err().code(),
        Code::NotFound
    );

    // Unpublish, then delete, each repeated.
    let unpublish = pb::ControllerUnpublishVolumeRequest {
        volume_id: id.clone(),
        node_id: "node-1".into(),
        ..Default::default()
    };
    for _ in 0..10 {
        c.controller_unpublish_volume(unpublish.clone())
            .await
            .unwrap();
    }
    for _ in 0..10 {
        c.delete_volume(del.clone()).await.unwrap();
    }
    let get = pb::ControllerGetVolumeRequest { volume_id: id };
    assert_eq!(
        c.controller_get_volume(get).await.unwrap_err().code(),
        Code::NotFound
    );
    let cap = c
        .get_capacity(pb::GetCapacityRequest::default())
        .await
        .unwrap()
        .into_inner();
    assert!(cap.available_capacity > 0);
}

#[tokio::test]
async fn secrets_select_the_cloud_and_never_reach_the_logs() {
    let mut h = harness().await;
    let secret = "s3cr3t-Pa55word-never-logged";
    let mut req = create_req("a", GIB);
    req.secrets = HashMap::from([
        ("cloud".to_string(), "elsewhere".to_string()),
        ("password".to_string(), secret.to_string()),
    ]);
    let err = h.client.create_volume(req.clone()).await.unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    assert!(err.message().contains("elsewhere"));
    req.secrets.insert("cloud".into(), String::new());
    h.client.create_volume(req).await.unwrap();
    let text = String::from_utf8_lossy(&logs().0.lock().unwrap()).to_string();
    assert!(text.contains("rpc failed"), "the failure was logged at all");
    assert!(!text.contains(secret), "a secret reached the logs");
}

/// Issue 13's bad-input battery at the edge: each gets the code the CSI spec names and a
/// message saying what to fix, and nothing is created or changed.
#[tokio::test]
async fn bad_input_gets_the_spec_codes_and_changes_nothing() {
    let mut h = harness().await;
    let c = &mut h.client;
    let status =
        |r: Result<tonic::Response<pb::CreateVolumeResponse>, tonic::Status>| r.unwrap_err();
    for fs in ["notafs", "../../bin/sh", "ext4; touch X"] {
        let mut req = create_req("a", GIB);
        req.volume_capabilities = vec![mount_cap(fs)];
        let e = status(c.create_volume(req).await);
        assert_eq!(e.code(), Code::InvalidArgument, "{fs}: {}", e.message());
        assert!(e.message().contains("ext4, xfs"), "{}", e.message());
    }
    for name in [
        "nul\0name".to_string(),
        "x".repeat(10 * 1024),
        "bell\u{7}".into(),
    ] {
        let e = status(c.create_volume(create_req(&name, GIB)).await);
        assert_eq!(e.code(), Code::InvalidArgument, "{}", e.message());
        assert!(e.message().contains("volume name"), "{}", e.message());
    }
    let mut nowhere = create_req("a", GIB);
    nowhere.accessibility_requirements = Some(pb::TopologyRequirement {
        requisite: vec![pb::Topology {
            segments: HashMap::from([(
                "topology.cinder.csi.openstack.org/zone".to_string(),
                "no-such-zone".to_string(),
            )]),
        }],
        preferred: vec![],
    });
    let e = status(c.create_volume(nowhere).await);
    assert_eq!(e.code(), Code::ResourceExhausted, "{}", e.message());
    assert!(e.message().contains("no-such-zone"), "{}", e.message());
    let e = status(c.create_volume(create_req("a", 4 << 60)).await);
    assert_eq!(e.code(), Code::OutOfRange, "{}", e.message());
    assert!(h.fake.volumes().is_empty(), "bad requests change nothing");

    let v = created(c, "a").await;
    let validated = c
        .validate_volume_capabilities(pb::ValidateVolumeCapabilitiesRequest {
            volume_id: v.volume_id.clone(),
            volume_capabilities: vec![mount_cap("notafs")],
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert!(validated.confirmed.is_none());
    assert!(
        validated.message.contains("\"notafs\""),
        "{}",
        validated.message
    );

    for name in ["nul\0name".to_string(), "s".repeat(256)] {
        let e = c
            .create_snapshot(pb::CreateSnapshotRequest {
                name,
                source_volume_id: v.volume_id.clone(),
                ..Default::default()
            })
            .await
            .unwrap_err();
        assert_eq!(e.code(), Code::InvalidArgument, "{}", e.message());
    }
    assert!(h.fake.snapshots().is_empty());

    let e = c
        .controller_expand_volume(pb::ControllerExpandVolumeRequest {
            volume_id: v.volume_id.clone(),
            capacity_range: Some(pb::CapacityRange {
                required_bytes: 4 << 60,
                limit_bytes: 0,
            }),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::OutOfRange, "{}", e.message());
    assert_eq!(h.fake.volume(&v.volume_id).unwrap().size_gib, 1);
}

/// What stock csi-sanity (no mutable-parameters file) sends: empty `mutable_parameters`.
#[tokio::test]
async fn modify_with_empty_parameters_is_not_found_or_ok() {
    let mut h = harness().await;
    let c = &mut h.client;
    let modify = |id: &str| pb::ControllerModifyVolumeRequest {
        volume_id: id.into(),
        ..Default::default()
    };
    let e = c
        .controller_modify_volume(modify("nope"))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::NotFound, "{}", e.message());
    let v = created(c, "a").await;
    let before = h.fake.volume(&v.volume_id).unwrap();
    c.controller_modify_volume(modify(&v.volume_id))
        .await
        .unwrap();
    assert_eq!(h.fake.volume(&v.volume_id).unwrap(), before);
}

/// VolumeAttributesClass `appendVolumeMetadata` through the gRPC surface: the pairs reach the
/// volume's metadata; a bad value is InvalidArgument naming the class, and changes nothing.
#[tokio::test]
async fn modify_sets_metadata_from_the_attributes_class() {
    let mut h = harness().await;
    let c = &mut h.client;
    let v = created(c, "a").await;
    let modify = |value: &str| pb::ControllerModifyVolumeRequest {
        volume_id: v.volume_id.clone(),
        mutable_parameters: [("appendVolumeMetadata".to_string(), value.to_string())].into(),
        ..Default::default()
    };
    let before = h.fake.volume(&v.volume_id).unwrap();
    let e = c
        .controller_modify_volume(modify(r#"{"billing": 1}"#))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument, "{}", e.message());
    assert!(
        e.message()
            .contains("VolumeAttributesClass appendVolumeMetadata"),
        "{}",
        e.message()
    );
    assert_eq!(h.fake.volume(&v.volume_id).unwrap(), before);
    c.controller_modify_volume(modify(r#"{"billing": "team-a"}"#))
        .await
        .unwrap();
    let after = h.fake.volume(&v.volume_id).unwrap().metadata;
    assert_eq!(after["billing"], "team-a");
    assert_eq!(after.len(), before.metadata.len() + 1);
}

/// DeleteSnapshot right after CreateSnapshot, while the cloud still says `creating`.
#[tokio::test]
async fn delete_snapshot_right_after_create_succeeds() {
    let mut h = harness().await;
    let c = &mut h.client;
    let v = created(c, "a").await;
    h.fake.set_settle_after(3);
    let s = snapshotted(
        c,
        pb::CreateSnapshotRequest {
            name: "s".into(),
            source_volume_id: v.volume_id.clone(),
            ..Default::default()
        },
    )
    .await;
    assert!(!s.ready_to_use);
    c.delete_snapshot(with_timeout(
        pb::DeleteSnapshotRequest {
            snapshot_id: s.snapshot_id.clone(),
            ..Default::default()
        },
        "30S",
    ))
    .await
    .unwrap();
    assert!(h.fake.snapshots().is_empty());
}

/// csi-sanity's request for "volume lifecycle should work" on a node that reports a topology
/// without our zone key: the node's `accessible_topology` comes back as both requisite and
/// preferred. A term without `topology.cinder.csi.openstack.org/zone` is met in any zone
/// (CSI), so the volume goes to Cinder's default zone instead of ResourceExhausted.
#[tokio::test]
async fn sanity_request_shape_with_a_zoneless_node_topology() {
    let mut h = harness().await;
    let c = &mut h.client;
    let node_topologies = [
        pb::Topology::default(),
        pb::Topology {
            segments: HashMap::from([(
                "topology.kubernetes.io/region".to_string(),
                "r1".to_string(),
            )]),
        },
    ];
    for (i, node) in node_topologies.into_iter().enumerate() {
        let mut req = create_req(&format!("sanity-{i}"), GIB);
        req.accessibility_requirements = Some(pb::TopologyRequirement {
            requisite: vec![node.clone()],
            preferred: vec![node],
        });
        for _ in 0..2 {
            let v = c
                .create_volume(req.clone())
                .await
                .unwrap()
                .into_inner()
                .volume
                .unwrap();
            assert_eq!(
                v.accessible_topology,
                vec![pb::Topology {
                    segments: HashMap::from([(
                        "topology.cinder.csi.openstack.org/zone".to_string(),
                        "nova".to_string(),
                    )]),
                }]
            );
        }
    }
    assert_eq!(h.fake.volumes().len(), 2);
}

/// The requests the sidecars send for in-tree `kubernetes.io/cinder` volumes after CSI
/// migration, field for field as csi-provisioner v6.4 / csi-attacher v4.13 / csi-resizer
/// v2.3 logged them on the test cloud (tests/harness/k8s/intree.sh): the in-tree class's `type` and
/// `availability` passed through as they are (`fsType` became the capability's fs_type), a
/// ReadWriteOnce PV as SINGLE_NODE_MULTI_WRITER, no volume_context (the translation sets
/// volumeAttributes `{}`), and a readOnly PV attached with readonly false (the attacher clears
/// it for a driver without PUBLISH_READONLY).
#[tokio::test]
async fn in_tree_migration_request_shapes() {
    use pb::volume_capability::{access_mode::Mode, AccessMode, AccessType, MountVolume};
    let mut h = harness().await;
    h.fake.add_volume_type("standard-alt", false);
    let c = &mut h.client;
    let zone = || pb::Topology {
        segments: HashMap::from([(
            "topology.cinder.csi.openstack.org/zone".to_string(),
            "nova".to_string(),
        )]),
    };
    let cap = |fs: &str| pb::VolumeCapability {
        access_type: Some(AccessType::Mount(MountVolume {
            fs_type: fs.into(),
            ..Default::default()
        })),
        access_mode: Some(AccessMode {
            mode: Mode::SingleNodeMultiWriter as i32,
        }),
    };
    let name = "pvc-d7bd7468-999c-4bbe-8693-53eb70336367";
    let create = pb::CreateVolumeRequest {
        name: name.into(),
        capacity_range: Some(pb::CapacityRange {
            required_bytes: GIB,
            limit_bytes: 0,
        }),
        volume_capabilities: vec![cap("xfs")],
        parameters: [
            ("csi.storage.k8s.io/pv/name", name),
            ("csi.storage.k8s.io/pvc/name", "made"),
            ("csi.storage.k8s.io/pvc/namespace", "cinder-csi-intree"),
            ("type", "standard-alt"),
            ("availability", "nova"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect(),
        accessibility_requirements: Some(pb::TopologyRequirement {
            requisite: vec![zone()],
            preferred: vec![zone()],
        }),
        ..Default::default()
    };
    let v = c
        .create_volume(create.clone())
        .await
        .unwrap()
        .into_inner()
        .volume
        .unwrap();
    assert_eq!(v.capacity_bytes, GIB);
    assert_eq!(v.accessible_topology, vec![zone()]);
    assert!(v.volume_context.is_empty(), "{:?}", v.volume_context);
    let made = h.fake.volume(&v.volume_id).unwrap();
    assert_eq!(made.volume_type.as_deref(), Some("standard-alt"));
    assert_eq!(made.availability_zone, "nova");
    assert_eq!(
        made.metadata
            .get("csi.storage.k8s.io/pvc/name")
            .map(String::as_str),
        Some("made")
    );
    // The provisioner's retry after a lost answer: the same volume.
    let again = c.create_volume(create).await.unwrap().into_inner().volume;
    assert_eq!(again.unwrap().volume_id, v.volume_id);

    // Attach, as for the ext4 PV, its readOnly PV and the xfs one (PV or inline volume).
    for fs in ["ext4", "xfs"] {
        let publish = pb::ControllerPublishVolumeRequest {
            volume_id: v.volume_id.clone(),
            node_id: "node-1".into(),
            volume_capability: Some(cap(fs)),
            readonly: false,
            ..Default::default()
        };
        let ctx = c
            .controller_publish_volume(publish)
            .await
            .unwrap()
            .into_inner();
        assert!(ctx.publish_context.contains_key("DevicePath"));
        c.controller_unpublish_volume(pb::ControllerUnpublishVolumeRequest {
            volume_id: v.volume_id.clone(),
            node_id: "node-1".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    }

    let expanded = c
        .controller_expand_volume(pb::ControllerExpandVolumeRequest {
            volume_id: v.volume_id.clone(),
            capacity_range: Some(pb::CapacityRange {
                required_bytes: 2 * GIB,
                limit_bytes: 0,
            }),
            volume_capability: Some(cap("xfs")),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(expanded.capacity_bytes, 2 * GIB);
    assert!(expanded.node_expansion_required);
    assert_eq!(h.fake.volume(&v.volume_id).unwrap().size_gib, 2);

    c.delete_volume(pb::DeleteVolumeRequest {
        volume_id: v.volume_id.clone(),
        ..Default::default()
    })
    .await
    .unwrap();
    assert!(h.fake.volume(&v.volume_id).is_none());
}
