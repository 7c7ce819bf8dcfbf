//! StorageClass `appendVolumeMetadata` (upstream PR #3162) against the real OpenStack test
//! cloud: the pairs are on the Cinder volume as Cinder's API shows it, beside the driver's
//! own; a bad value is InvalidArgument and creates nothing. Skipped unless
//! CINDER_CSI_OSTACK_ENV points at the cloud's env file.

use crate::support::openstack_support;
use crate::support::scratch;

use cinder_csi::server::csi::pb;
use openstack_support::requests::create_req;
use openstack_support::{call, Cloud, CloudObjects, Controller, Driver, MountGuard};

#[tokio::test]
async fn append_volume_metadata_is_on_the_cinder_volume() {
    let Some(cloud) = Cloud::from_env("append_volume_metadata_is_on_the_cinder_volume") else {
        return;
    };
    let (tmp, kubelet) = scratch::with_kubelet("cinder-csi-append-metadata");
    let mut objects = CloudObjects::new(&cloud);
    let _mounts = MountGuard(kubelet.clone());
    let mut driver = Driver::start(&cloud, 1, tmp.path(), &kubelet);
    let mut ctl = Controller::new(driver.connect().await);
    let name = format!("append-meta-{}", std::process::id());
    let volume_type = cloud.var("OSTACK_VOLUME_TYPE").to_string();

    let mut bad = create_req(&format!("{name}-bad"), &[("type", &volume_type)]);
    bad.parameters.insert(
        "appendVolumeMetadata".into(),
        r#"{"cinder.csi.openstack.org/cluster": "other"}"#.into(),
    );
    let err = ctl.create_volume(bad).await.unwrap_err();
    assert_eq!(err.code(), tonic::Code::InvalidArgument, "{err:?}");
    assert!(
        err.message().contains("cinder.csi.openstack.org/cluster"),
        "{}",
        err.message()
    );

    let v = call(
        "CreateVolume",
        ctl.create_volume(create_req(
            &name,
            &[
                ("type", &volume_type),
                (
                    "appendVolumeMetadata",
                    r#"{"billing": "team-a", "qos.example.com/iops": "5000"}"#,
                ),
                ("csi.storage.k8s.io/pvc/name", "data"),
            ],
        )),
    )
    .await
    .volume
    .unwrap();
    objects.volumes.push(v.volume_id.clone());

    // Through Cinder's API, not our logs.
    let vol = cloud.volume(&v.volume_id).expect("the volume exists");
    let md = &vol["metadata"];
    assert_eq!(md["billing"], "team-a", "{vol}");
    assert_eq!(md["qos.example.com/iops"], "5000", "{vol}");
    assert_eq!(
        md["cinder.csi.openstack.org/cluster"], "ostack-test",
        "{vol}"
    );
    assert_eq!(md["csi.storage.k8s.io/pvc/name"], "data", "{vol}");
    println!(
        "appendVolumeMetadata: Cinder volume {} metadata {}",
        v.volume_id, md
    );

    // Nothing was created for the refused request.
    let listed = cloud
        .api(
            false,
            "block-storage",
            "GET",
            &format!("/volumes?name={name}-bad"),
        )
        .unwrap();
    assert_eq!(
        listed["volumes"].as_array().map(Vec::len),
        Some(0),
        "{listed}"
    );

    call(
        "DeleteVolume",
        ctl.delete_volume(pb::DeleteVolumeRequest {
            volume_id: v.volume_id.clone(),
            ..Default::default()
        }),
    )
    .await;
    drop(driver);
}
