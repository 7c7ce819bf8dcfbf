//! The wired-up source (`from_options`): search order, fallback, caching, aggregated errors,
//! with a real config drive image and a real local HTTP server.

use std::sync::Arc;
use std::time::Duration;

use cinder_csi::config::MetadataConfig;
use cinder_csi::host::metadata::chain::Chain;
use cinder_csi::host::metadata::config_drive::ConfigDrive;
use cinder_csi::host::metadata::service::{MetadataService, Retry};
use cinder_csi::host::metadata::{
    from_options, Metadata, MetadataError, MetadataOptions, Source, Timeouts,
};

use super::support::*;

const DRIVE_UUID: &str = "11111111-1111-4111-8111-111111111111";
const SERVICE_UUID: &str = "22222222-2222-4222-8222-222222222222";

/// A label dir holding a Nova config drive for DRIVE_UUID.
fn label_dir_with_drive(dir: &std::path::Path) -> std::path::PathBuf {
    let files = [(
        "openstack/latest/meta_data.json",
        meta_data(DRIVE_UUID, "drive-az"),
    )];
    let image = iso(dir, "cd", NOVA_ISO_FLAGS, &as_refs(&files));
    let labels = dir.join("by-label");
    std::fs::create_dir(&labels).unwrap();
    std::os::unix::fs::symlink(image, labels.join("config-2")).unwrap();
    labels
}

/// The default search order: the config drive, then the metadata service.
const DRIVE_FIRST: &[Source] = &[Source::ConfigDrive, Source::MetadataService];

/// The instance id and zone `md` gives, which it must.
async fn id_and_zone(md: &dyn Metadata) -> (String, Option<String>) {
    let got = md.instance().await.unwrap();
    (got.uuid, got.availability_zone)
}

fn options(labels: &std::path::Path, url: &str, order: &[Source]) -> MetadataOptions {
    MetadataOptions {
        metadata: MetadataConfig {
            search_order: order.to_vec(),
            metadata_url: url.into(),
            ..Default::default()
        },
        config_drive_label_dir: labels.to_path_buf(),
        ..Default::default()
    }
}

#[tokio::test]
async fn search_order_decides_and_the_answer_is_cached() {
    let dir = tempfile::tempdir().unwrap();
    let labels = label_dir_with_drive(dir.path());
    let server = Server::start(vec![Reply::Json(meta_data(SERVICE_UUID, "svc-az"))]).await;

    // Default order: the drive answers, the service is never asked.
    let md = from_options(options(&labels, &server.url, DRIVE_FIRST)).unwrap();
    assert_eq!(
        id_and_zone(&*md).await,
        (DRIVE_UUID.into(), Some("drive-az".into()))
    );
    assert_eq!(server.requests(), 0);

    // Service first: it answers, once, however often we ask.
    let md = from_options(options(
        &labels,
        &server.url,
        &[Source::MetadataService, Source::ConfigDrive],
    ))
    .unwrap();
    for _ in 0..5 {
        assert_eq!(
            id_and_zone(&*md).await,
            (SERVICE_UUID.into(), Some("svc-az".into()))
        );
    }
    assert_eq!(server.requests(), 1);

    // Only the service listed: the drive is ignored even though it is there.
    let md = from_options(options(&labels, &server.url, &[Source::MetadataService])).unwrap();
    assert_eq!(md.instance().await.unwrap().uuid, SERVICE_UUID);
}

#[tokio::test]
async fn no_drive_falls_back_to_the_service() {
    let empty = tempfile::tempdir().unwrap();
    let server = Server::start(vec![Reply::Json(meta_data(SERVICE_UUID, "svc-az"))]).await;
    let md = from_options(options(empty.path(), &server.url, DRIVE_FIRST)).unwrap();
    assert_eq!(md.instance().await.unwrap().uuid, SERVICE_UUID);
    assert_eq!(md.instance().await.unwrap().uuid, SERVICE_UUID);
    assert_eq!(server.requests(), 1);
}

#[tokio::test]
async fn failures_are_aggregated_and_not_cached() {
    let empty = tempfile::tempdir().unwrap();
    // Three 500s use up the first lookup's attempts; the next lookup succeeds.
    let server = Server::start(vec![
        Reply::Status(500),
        Reply::Status(500),
        Reply::Status(500),
        Reply::Json(meta_data(SERVICE_UUID, "az")),
    ])
    .await;
    let timeouts = Timeouts {
        connect: Duration::from_secs(2),
        request: Duration::from_secs(2),
    };
    let retry = Retry {
        attempts: 3,
        first_backoff: Duration::from_millis(10),
    };
    let chain = Chain::new(vec![
        (
            Source::ConfigDrive,
            Arc::new(ConfigDrive::new(
                empty.path().to_path_buf(),
                timeouts.request,
            )) as Arc<dyn Metadata>,
        ),
        (
            Source::MetadataService,
            Arc::new(MetadataService::new(&server.url, timeouts, retry).unwrap()),
        ),
    ]);
    match chain.instance().await {
        Err(MetadataError::Unavailable(m)) => {
            assert!(
                m.starts_with(
                    "no source gave the instance id (tried configDrive, metadataService): "
                ),
                "{m}"
            );
            assert!(m.contains("configDrive: no config drive: neither "), "{m}");
            assert!(
                m.contains("; metadataService: metadata service http://127.0.0.1:"),
                "{m}"
            );
            assert!(m.contains("HTTP 500"), "{m}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(server.requests(), 3);
    assert_eq!(chain.instance().await.unwrap().uuid, SERVICE_UUID);
    assert_eq!(chain.instance().await.unwrap().uuid, SERVICE_UUID);
    assert_eq!(server.requests(), 4);
}

/// `--node-id` replaces only the instance id: the zone is still the first source's.
#[tokio::test]
async fn node_id_overrides_only_the_id() {
    let dir = tempfile::tempdir().unwrap();
    let labels = label_dir_with_drive(dir.path());
    let server = Server::start(vec![Reply::Json(meta_data(SERVICE_UUID, "az"))]).await;
    let md = from_options(MetadataOptions {
        node_id: Some("my-node".into()),
        node_az: Some("flag-az".into()),
        ..options(&labels, &server.url, DRIVE_FIRST)
    })
    .unwrap();
    assert_eq!(
        id_and_zone(&*md).await,
        ("my-node".into(), Some("drive-az".into()))
    );
    assert_eq!(server.requests(), 0, "the config drive answered first");
}
