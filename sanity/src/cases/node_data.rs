//! Content sources carry data: a volume made from a snapshot (or cloned from a volume) holds
//! what was written to the source before, checked by reading it back through the node.

use super::common::*;
use super::data::*;
use super::{case, Case};
use crate::caps::Need;
use crate::check::{ok, CaseResult, Stop};
use crate::context::Ctx;
use crate::ensure;
use crate::pb::controller_service_capability::rpc::Type as CtrlCap;
use crate::pb::volume_content_source::{SnapshotSource, Type as Source, VolumeSource};
use crate::pb::*;

const G: &str = "Node";
const CREATE: Need = Need::Ctrl(CtrlCap::CreateDeleteVolume);

pub fn cases() -> Vec<Case> {
    vec![
        case!(
            G,
            "a volume created from a snapshot holds the data the snapshot was cut from",
            [CREATE, Need::Ctrl(CtrlCap::CreateDeleteSnapshot)],
            from_snapshot
        ),
        case!(
            G,
            "a cloned volume holds the data of its source volume",
            [CREATE, Need::Ctrl(CtrlCap::CloneVolume)],
            from_clone
        ),
    ]
}

/// Create a volume, write a payload through the node, and take it off the node again.
async fn volume_with_data(
    ctx: &mut Ctx<'_>,
    tag: &str,
    node: &str,
) -> Result<(Volume, Vec<u8>), Stop> {
    let vol = create_volume(ctx, tag).await?;
    attach(ctx, &vol, node).await?;
    let data = payload(&vol.volume_id);
    write_data(ctx, data.clone()).await?;
    detach(ctx, &vol, node).await?;
    Ok((vol, data))
}

async fn check_copy(
    ctx: &mut Ctx<'_>,
    source: Source,
    node: &str,
    data: &[u8],
    what: &str,
) -> CaseResult {
    let mut req = ctx.create_request(&ctx.unique_name("data-copy"));
    req.volume_content_source = Some(VolumeContentSource {
        r#type: Some(source),
    });
    let copy = check_volume(
        ok(
            ctx.create_volume(req).await,
            format!("CreateVolume from {what}"),
        )?
        .volume,
        "CreateVolume",
        ctx.cfg.volume_size,
    )?;
    attach(ctx, &copy, node).await?;
    let got = read_data(ctx, data.len()).await?;
    ensure!(
        got == data,
        "the volume created from {what} does not hold the data written to the source"
    );
    detach(ctx, &copy, node).await
}

async fn from_snapshot(ctx: &mut Ctx<'_>) -> CaseResult {
    let node = node_id(ctx).await?;
    let (vol, data) = volume_with_data(ctx, "data-snap-src", &node).await?;
    let req = ctx.snapshot_request(&ctx.unique_name("data-snap"), &vol.volume_id);
    let snap = create_ready_snapshot(ctx, req).await?;
    check_copy(
        ctx,
        Source::Snapshot(SnapshotSource {
            snapshot_id: snap.snapshot_id,
        }),
        &node,
        &data,
        "a snapshot",
    )
    .await
}

async fn from_clone(ctx: &mut Ctx<'_>) -> CaseResult {
    let node = node_id(ctx).await?;
    let (vol, data) = volume_with_data(ctx, "data-clone-src", &node).await?;
    check_copy(
        ctx,
        Source::Volume(VolumeSource {
            volume_id: vol.volume_id,
        }),
        &node,
        &data,
        "a volume",
    )
    .await
}
