//! The runner against an in-process CSI driver (tests/fake): the correct driver passes every
//! case, and each deliberate misbehaviour makes exactly the cases that check that rule fail —
//! no more (the runner does not blame the wrong RPC) and no fewer (every rule is checked).

mod fake;

use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use cinder_csi_sanity::{AccessType, Config, Report, Verdict};
use fake::{Fault, Profile};

async fn run(profile: Profile, faults: &[Fault], access: AccessType) -> Report {
    let drv = fake::start(profile, faults).await;
    let mut cfg = Config::new(drv.endpoint.clone(), drv.staging_dir(), drv.mount_dir());
    cfg.access_type = access;
    cfg.timeout = Duration::from_secs(20);
    cfg.snapshot_ready_timeout = Duration::from_millis(300);
    cfg.mutable_parameters = Some(HashMap::from([("iops".to_string(), "3000".to_string())]));
    let report = cinder_csi_sanity::run(&cfg, &mut |_| {})
        .await
        .expect("the run starts");
    assert!(
        !drv.staging_dir().exists() && !drv.mount_dir().exists(),
        "the runner removes its node directories after every case"
    );
    report
}

fn failed(r: &Report) -> BTreeSet<String> {
    r.failures().into_iter().collect()
}

fn names(list: &[&str]) -> BTreeSet<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// The fake's "mounts" are directories, so read-only cannot be verified and that one case is
/// reported skipped; the fake does not advertise SINGLE_NODE_MULTI_WRITER, so the
/// single-writer-at-a-second-target case is skipped too; everything else passes.
const NOT_A_MOUNT: &str = "Node/NodePublishVolume readonly publishes a read-only target";

async fn assert_all_pass(access: AccessType) {
    let r = run(Profile::Full, &[], access).await;
    let bad: Vec<String> = r
        .cases
        .iter()
        .filter(|c| !matches!(c.verdict, Verdict::Passed))
        .map(|c| c.line())
        .collect();
    assert_eq!(r.failed(), 0, "{bad:#?}");
    assert_eq!(r.skipped(), 2, "{bad:#?}");
    assert!(
        bad.iter()
            .any(|l| l.contains("SKIP  Node/NodePublishVolume readonly")
                && l.contains("not a mount point")),
        "{bad:#?}"
    );
    assert!(
        bad.iter().any(|l| l.contains("SINGLE_NODE_SINGLE_WRITER")
            && l.contains("does not advertise node capability SINGLE_NODE_MULTI_WRITER")),
        "{bad:#?}"
    );
    assert!(r.passed() >= 100, "{}", r.summary());
}

#[tokio::test]
async fn correct_driver_passes_everything_with_mount_access() {
    assert_all_pass(AccessType::Mount).await;
}

#[tokio::test]
async fn correct_driver_passes_everything_with_block_access() {
    assert_all_pass(AccessType::Block).await;
}

#[tokio::test]
async fn unadvertised_capabilities_are_skipped_with_the_reason() {
    let r = run(Profile::Minimal, &[], AccessType::Mount).await;
    assert_eq!(r.failed(), 0, "{:#?}", r.failures());
    let skipped: Vec<(String, String)> = r
        .cases
        .iter()
        .filter_map(|c| match &c.verdict {
            Verdict::Skipped(why) => Some((c.full_name(), why.clone())),
            _ => None,
        })
        .collect();
    assert!(skipped.len() > 50, "{}", r.summary());
    for (name, why) in &skipped {
        let expected = why.starts_with("the driver does not advertise ")
            || (name.starts_with("Identity/") && why.contains("no VolumeExpansion"))
            || (name == NOT_A_MOUNT && why.contains("not a mount point"));
        assert!(expected, "{name}: {why}");
    }
    let why = |n: &str| {
        skipped
            .iter()
            .find(|(name, _)| name == n)
            .map(|(_, w)| w.as_str())
    };
    assert_eq!(
        why("Snapshot/CreateSnapshot cuts a snapshot that becomes ready_to_use"),
        Some("the driver does not advertise controller capability CREATE_DELETE_SNAPSHOT")
    );
    assert_eq!(
        why("Node/NodeStageVolume fails with InvalidArgument without a volume_id"),
        Some("the driver does not advertise node capability STAGE_UNSTAGE_VOLUME")
    );
    // Without staging, the node lifecycle still runs (publish straight from the controller).
    assert!(r
        .cases
        .iter()
        .any(|c| c.full_name().starts_with("Node/volume lifecycle keeps")
            && c.verdict == Verdict::Passed));
}

/// One test per misbehaviour: run the whole suite and compare the failed cases exactly.
macro_rules! fault_test {
    ($test:ident, $fault:expr, $access:expr, [$($case:expr),* $(,)?]) => {
        #[tokio::test]
        async fn $test() {
            let r = run(Profile::Full, &[$fault], $access).await;
            let got = failed(&r);
            let want = names(&[$($case),*]);
            assert_eq!(got, want, "\nunexpected: {:#?}\nmissing: {:#?}", got.difference(&want).collect::<Vec<_>>(), want.difference(&got).collect::<Vec<_>>());
        }
    };
}

const M: AccessType = AccessType::Mount;
const B: AccessType = AccessType::Block;

fault_test!(
    missing_volume_id_gets_not_found,
    Fault::MissingVolumeIdNotFound,
    M,
    [
        "Controller/DeleteVolume fails with InvalidArgument without a volume_id",
        "Controller/ValidateVolumeCapabilities fails with InvalidArgument without a volume_id",
        "Controller/ControllerPublishVolume fails with InvalidArgument without a volume_id",
        "Controller/ControllerUnpublishVolume fails with InvalidArgument without a volume_id",
        "Controller/ControllerGetVolume fails with InvalidArgument without a volume_id",
        "Controller/ControllerExpandVolume fails with InvalidArgument without a volume_id",
        "Controller/ControllerModifyVolume fails with InvalidArgument without a volume_id",
        "Node/NodePublishVolume fails with InvalidArgument without a volume_id",
        "Node/NodeUnpublishVolume fails with InvalidArgument without a volume_id",
        "Node/NodeStageVolume fails with InvalidArgument without a volume_id",
        "Node/NodeUnstageVolume fails with InvalidArgument without a volume_id",
        "Node/NodeGetVolumeStats fails with InvalidArgument without a volume_id",
        "Node/NodeExpandVolume fails with InvalidArgument without a volume_id",
    ]
);

fault_test!(
    controller_publish_of_unknown_volume_ok,
    Fault::PublishUnknownVolumeOk,
    M,
    ["Controller/ControllerPublishVolume fails with NotFound for an unknown volume",]
);

fault_test!(create_volume_not_idempotent, Fault::CreateNotIdempotent, M, [
    "Controller/CreateVolume with an existing name and the same arguments returns the same volume",
    "Controller/CreateVolume with an existing name and another size fails with AlreadyExists",
    "Controller/CreateVolume accepts a name of the maximum length (128 bytes)",
]);

fault_test!(create_volume_retry_already_exists, Fault::CreateRetryAlreadyExists, M, [
    "Controller/CreateVolume with an existing name and the same arguments returns the same volume",
    "Controller/CreateVolume accepts a name of the maximum length (128 bytes)",
]);

fault_test!(
    publish_context_changes_between_calls,
    Fault::PublishContextChanges,
    M,
    [
        "Controller/ControllerPublishVolume is idempotent and keeps the publish_context",
        "Node/volume lifecycle is idempotent with every call repeated",
    ]
);

fault_test!(incompatible_republish_accepted, Fault::IncompatibleRepublishOk, M, [
    "Controller/ControllerPublishVolume fails with AlreadyExists when republished with another readonly flag",
    "Node/NodePublishVolume again at the target with another readonly flag fails with AlreadyExists",
    "Node/NodeStageVolume again with an incompatible capability fails with AlreadyExists",
]);

/// Every case that publishes on the node: the target left in the mount directory is caught
/// right after NodeUnpublishVolume, or when the runner removes the directory.
const PUBLISHING: &[&str] = &[
    "Node/NodeGetVolumeStats fails with NotFound for a path the volume is not at",
    "Node/volume lifecycle keeps the data written through the target across republish and restage",
    "Node/volume lifecycle is idempotent with every call repeated",
    "Node/NodePublishVolume readonly publishes a read-only target",
    "Node/NodePublishVolume again at the target with another readonly flag fails with AlreadyExists",
    "Node/NodeGetVolumeStats reports the usage of a published volume",
    "Node/NodeExpandVolume grows a published volume and is idempotent",
    "Node/a volume created from a snapshot holds the data the snapshot was cut from",
    "Node/a cloned volume holds the data of its source volume",
];

#[tokio::test]
async fn unpublish_leaves_the_target_behind() {
    for access in [M, B] {
        let r = run(Profile::Full, &[Fault::UnpublishLeavesTarget], access).await;
        assert_eq!(failed(&r), names(PUBLISHING), "{access:?}");
    }
}

fault_test!(unstage_leaves_the_staging_mount_behind, Fault::UnstageLeavesStaging, M, [
    "Node/NodeGetVolumeStats fails with NotFound for a path the volume is not at",
    "Node/volume lifecycle keeps the data written through the target across republish and restage",
    "Node/volume lifecycle is idempotent with every call repeated",
    "Node/NodePublishVolume fails with FailedPrecondition without the staging_target_path",
    "Node/NodePublishVolume readonly publishes a read-only target",
    "Node/NodePublishVolume again at the target with another readonly flag fails with AlreadyExists",
    "Node/NodeStageVolume again with an incompatible capability fails with AlreadyExists",
    "Node/NodeGetVolumeStats reports the usage of a published volume",
    "Node/NodeGetVolumeStats reports the usage at the staging path",
    "Node/NodeExpandVolume grows a published volume and is idempotent",
    "Node/a volume created from a snapshot holds the data the snapshot was cut from",
    "Node/a cloned volume holds the data of its source volume",
]);

fault_test!(snapshot_never_ready_to_use, Fault::SnapshotNeverReady, M, [
    "Controller/CreateVolume from a snapshot succeeds",
    "Snapshot/CreateSnapshot cuts a snapshot that becomes ready_to_use",
    "Snapshot/CreateSnapshot with an existing name and the same source returns the same snapshot",
    "Snapshot/CreateSnapshot with an existing name and another source fails with AlreadyExists",
    "Snapshot/CreateSnapshot accepts a name of the maximum length (128 bytes)",
    "Snapshot/DeleteSnapshot deletes the snapshot and is idempotent",
    "Snapshot/GetSnapshot returns the created snapshot",
    "Snapshot/ListSnapshots by snapshot_id returns exactly that snapshot",
    "Snapshot/ListSnapshots by source_volume_id returns only that volume's snapshots",
    "Snapshot/ListSnapshots shows new snapshots and drops deleted ones",
    "Snapshot/ListSnapshots pages with max_entries and next_token through every snapshot once",
    "Node/a volume created from a snapshot holds the data the snapshot was cut from",
]);

fault_test!(
    pagination_ignores_max_entries,
    Fault::PaginationIgnored,
    M,
    [
        "Controller/ListVolumes pages with max_entries and next_token through every volume once",
        "Snapshot/ListSnapshots pages with max_entries and next_token through every snapshot once",
    ]
);

fault_test!(
    invalid_starting_token_accepted,
    Fault::InvalidTokenAccepted,
    M,
    [
        "Controller/ListVolumes fails with Aborted for an invalid starting_token",
        "Snapshot/ListSnapshots fails with Aborted for an invalid starting_token",
    ]
);

fault_test!(
    delete_of_unknown_gets_not_found,
    Fault::DeleteUnknownNotFound,
    M,
    [
        "Controller/DeleteVolume succeeds for an unknown volume",
        "Controller/DeleteVolume deletes the volume and is idempotent",
        "Snapshot/DeleteSnapshot succeeds for an unknown snapshot",
        "Snapshot/DeleteSnapshot deletes the snapshot and is idempotent",
        "Node/volume lifecycle is idempotent with every call repeated",
    ]
);

fault_test!(
    delete_volume_is_a_no_op,
    Fault::DeleteIsNoOp,
    M,
    [
        "Controller/DeleteVolume deletes the volume and is idempotent",
        "Controller/ListVolumes shows new volumes and drops deleted ones",
    ]
);

const DATA_LOSS: &[&str] = &[
    "Node/volume lifecycle keeps the data written through the target across republish and restage",
    "Node/a volume created from a snapshot holds the data the snapshot was cut from",
    "Node/a cloned volume holds the data of its source volume",
];

#[tokio::test]
async fn stage_formats_a_volume_holding_data() {
    for access in [M, B] {
        let r = run(Profile::Full, &[Fault::StageFormats], access).await;
        assert_eq!(failed(&r), names(DATA_LOSS), "{access:?}");
    }
}

fault_test!(
    empty_vendor_version,
    Fault::EmptyVendorVersion,
    M,
    ["Identity/GetPluginInfo returns a valid name and a non-empty vendor_version",]
);

fault_test!(
    expand_does_not_grow,
    Fault::ExpandDoesNotGrow,
    B,
    [
        "Controller/ControllerExpandVolume grows the volume and is idempotent",
        "Node/NodeExpandVolume grows a published volume and is idempotent",
    ]
);

fault_test!(validate_never_confirms, Fault::ValidateNeverConfirms, M, [
    "Controller/ValidateVolumeCapabilities confirms the capabilities the volume was created with",
]);

#[test]
fn the_read_only_case_name_is_current() {
    assert!(
        cinder_csi_sanity::list(&Config::new("unix:///x", "/s".into(), "/m".into()))
            .iter()
            .any(|(n, _)| n == NOT_A_MOUNT)
    );
}
