//! `--pvc-annotations` end to end on the real test cloud and a real Kubernetes API server
//! (tests/harness/kube-api/apiserver): the driver reads each PVC through the API server with the
//! chart's RBAC and the PVC's annotations place the volumes on Cinder's backends, as Cinder's
//! own API reports them (`os-vol-host-attr:host`). The test cloud's az2 has two backends,
//! fake-b and fake-c, and Cinder's scheduler runs SameBackendFilter/DifferentBackendFilter;
//! without hints every az2 volume goes to fake-b (the control run), so a volume on fake-c is
//! the hint's doing. Runs with CINDER_CSI_OSTACK_ENV and CINDER_CSI_KUBE_API_ENV; with the
//! first but not the second it fails (the CI stage sets both).

use crate::support::kube_api_support;
use crate::support::openstack_support;
use crate::support::scratch;

use std::path::Path;

use cinder_csi::server::csi::pb;
use kube_api_support::KubeApi;
use openstack_support::requests;
use openstack_support::{call, Cloud, CloudObjects, Controller, Driver, MountGuard};

const AFFINITY: &str = "cinder.csi.openstack.org/affinity";
const ANTI_AFFINITY: &str = "cinder.csi.openstack.org/anti-affinity";

/// CreateVolume as external-provisioner with --extra-create-metadata sends it for `pvc`.
fn create_req(name: &str, ns: &str, pvc: &str) -> pb::CreateVolumeRequest {
    requests::create_req(
        name,
        &[
            ("availability", "az2"),
            ("csi.storage.k8s.io/pvc/name", pvc),
            ("csi.storage.k8s.io/pvc/namespace", ns),
            ("csi.storage.k8s.io/pv/name", name),
        ],
    )
}

/// The Cinder backend volume `id` is on, from Cinder's admin view (`host@backend#pool`).
fn backend(cloud: &Cloud, id: &str) -> String {
    let v = cloud
        .api(true, "block-storage", "GET", &format!("/volumes/{id}"))
        .expect("the volume exists");
    let host = v["volume"]["os-vol-host-attr:host"]
        .as_str()
        .unwrap_or_else(|| panic!("no os-vol-host-attr:host: {v}"));
    host.split_once('@')
        .and_then(|(_, rest)| rest.split('#').next())
        .unwrap_or_else(|| panic!("host {host:?} is not host@backend#pool"))
        .to_string()
}

#[tokio::test]
async fn pvc_annotations_place_volumes_on_cinder_backends() {
    let Some(cloud) = Cloud::from_env("pvc_annotations_place_volumes_on_cinder_backends") else {
        return;
    };
    let api = KubeApi::from_env("pvc_annotations_place_volumes_on_cinder_backends").expect(
        "set CINDER_CSI_KUBE_API_ENV too (tests/harness/kube-api/apiserver up): the test cloud is here",
    );
    let ns = api.var("KUBE_API_NS").to_string();
    let tag = std::process::id();
    let (tmp, kubelet) = scratch::with_kubelet("cinder-csi-pvc-hints");
    let mut objects = CloudObjects::new(&cloud);
    let _mounts = MountGuard(kubelet.clone());
    let conf = Path::new(cloud.var("OSTACK_CLOUD_CONF")).to_path_buf();
    let sa = api.var("KUBE_API_SA").to_string();
    let mut driver = Driver::start_with_args(
        &cloud,
        1,
        tmp.path(),
        &kubelet,
        &conf,
        &["--pvc-annotations", "--kubeconfig", &sa],
    );
    let mut ctl = Controller::new(driver.connect().await);
    let pvcs = std::cell::RefCell::new(Vec::new());
    let create = |pvc: &str, annotations: &[(&str, &str)]| {
        pvcs.borrow_mut()
            .push(api.pvc(&format!("{pvc}-{tag}"), annotations));
        create_req(&format!("hints-{pvc}-{tag}"), &ns, &format!("{pvc}-{tag}"))
    };

    // Control: PVCs without hints all go to fake-b.
    let mut control = Vec::new();
    for i in 0..3 {
        let v = call(
            "CreateVolume",
            ctl.create_volume(create(&format!("control-{i}"), &[])),
        )
        .await
        .volume
        .unwrap();
        objects.volumes.push(v.volume_id.clone());
        control.push(backend(&cloud, &v.volume_id));
    }
    assert_eq!(
        control,
        ["fake-b", "fake-b", "fake-b"],
        "control run without hints"
    );

    // The first PVC, then one with anti-affinity naming the first's Cinder volume by name.
    let first = call("CreateVolume", ctl.create_volume(create("first", &[])))
        .await
        .volume
        .unwrap();
    objects.volumes.push(first.volume_id.clone());
    let first_name = format!("hints-first-{tag}");
    let second = call(
        "CreateVolume",
        ctl.create_volume(create("second", &[(ANTI_AFFINITY, &first_name)])),
    )
    .await
    .volume
    .unwrap();
    objects.volumes.push(second.volume_id.clone());
    assert_eq!(
        second.volume_context.get("anti-affinity"),
        Some(&first.volume_id),
        "upstream's volume context key, resolved to the UUID"
    );
    // Affinity with the second (by UUID) lands where only a hint puts a volume: fake-c.
    let third = call(
        "CreateVolume",
        ctl.create_volume(create("third", &[(AFFINITY, &second.volume_id)])),
    )
    .await
    .volume
    .unwrap();
    objects.volumes.push(third.volume_id.clone());
    // Affinity with the first, named in a list with stray spaces.
    let fourth = call(
        "CreateVolume",
        ctl.create_volume(create("fourth", &[(AFFINITY, &format!(" {first_name} ,"))])),
    )
    .await
    .volume
    .unwrap();
    objects.volumes.push(fourth.volume_id.clone());
    let placed = [&first, &second, &third, &fourth].map(|v| backend(&cloud, &v.volume_id));
    println!(
        "control {control:?}; first {} on {}; anti-affinity(first) {} on {}; affinity(second) {} \
         on {}; affinity(first) {} on {}",
        first.volume_id,
        placed[0],
        second.volume_id,
        placed[1],
        third.volume_id,
        placed[2],
        fourth.volume_id,
        placed[3]
    );
    assert_eq!(placed, ["fake-b", "fake-c", "fake-c", "fake-b"]);

    // A name that is no volume: InvalidArgument naming the PVC and the annotation; nothing made.
    let bad = create(
        "bad",
        &[(ANTI_AFFINITY, &format!("{first_name},no-such-volume-{tag}"))],
    );
    let err = ctl.create_volume(bad).await.unwrap_err();
    assert_eq!(err.code(), tonic::Code::InvalidArgument, "{err:?}");
    assert!(
        err.message().contains(&format!("PVC {ns}/bad-{tag}"))
            && err.message().contains(ANTI_AFFINITY)
            && err.message().contains(&format!("no-such-volume-{tag}")),
        "{}",
        err.message()
    );
    let listed = cloud
        .api(
            false,
            "block-storage",
            "GET",
            &format!("/volumes?name=hints-bad-{tag}"),
        )
        .unwrap();
    assert_eq!(
        listed["volumes"].as_array().map(Vec::len),
        Some(0),
        "{listed}"
    );

    // The service account token is in no log line.
    let token =
        std::fs::read_to_string(Path::new(api.var("KUBE_API_SA_DIR")).join("token")).unwrap();
    let log = std::fs::read_to_string(&driver.log).unwrap();
    assert!(!log.contains(token.trim()), "the token was logged");
    drop(ctl);
    drop(driver);

    // An API server that does not answer: Unavailable (the provisioner retries); nothing made.
    let dead = tmp.path().join("dead.kubeconfig");
    std::fs::write(
        &dead,
        std::fs::read_to_string(&sa).unwrap().replace(
            &format!("127.0.0.1:{}", api.var("KUBE_API_PORT")),
            "127.0.0.1:9",
        ),
    )
    .unwrap();
    let dir2 = tmp.path().join("dead");
    std::fs::create_dir_all(&dir2).unwrap();
    let dead_arg = dead.display().to_string();
    let mut driver = Driver::start_with_args(
        &cloud,
        1,
        &dir2,
        &kubelet,
        &conf,
        &["--pvc-annotations", "--kubeconfig", &dead_arg],
    );
    let mut ctl = Controller::new(driver.connect().await);
    let err = ctl
        .create_volume(create("unreachable", &[]))
        .await
        .unwrap_err();
    assert_eq!(err.code(), tonic::Code::Unavailable, "{err:?}");
    assert!(
        err.message().contains("Kubernetes API server"),
        "{}",
        err.message()
    );
    let listed = cloud
        .api(
            false,
            "block-storage",
            "GET",
            &format!("/volumes?name=hints-unreachable-{tag}"),
        )
        .unwrap();
    assert_eq!(
        listed["volumes"].as_array().map(Vec::len),
        Some(0),
        "{listed}"
    );
    drop(pvcs);
}
