//! ListSnapshots (by id, by source, paginated across clouds and from snapshots into backups)
//! and GetSnapshot. Listings show the real ready state and never the temporary snapshots
//! backups are taken from.

use super::list::stale_marker;
use super::snapshots::{copy_info, is_temporary, listable};
use super::tokens::{Collection, ListToken};
use super::{Controller, ListSnapshots, SnapshotInfo, SnapshotsPage};
use crate::cloud::{Cloud, CloudError, CopyFilter, CopyKind, CopyStatus, PageRequest};
use crate::driver::{Error, Failure, Result};

impl Controller {
    /// Look one snapshot or backup up by CSI id in `cloud`. `Err` of the inner result: it
    /// exists but is in an error state (that status).
    async fn find_snapshot(
        &self,
        cloud: &Cloud,
        id: &str,
    ) -> Result<Option<std::result::Result<SnapshotInfo, CopyStatus>>> {
        match cloud.copies.get_copy(CopyKind::Snapshot, id).await {
            Ok(s) if is_temporary(&s) || s.status == CopyStatus::Deleting => return Ok(None),
            Ok(s) if s.status.is_error() => return Ok(Some(Err(s.status))),
            Ok(s) => return Ok(Some(Ok(copy_info(&s)))),
            Err(CloudError::NotFound { .. }) => {}
            Err(e) => return Err(e.into()),
        }
        match cloud.copies.get_copy(CopyKind::Backup, id).await {
            Ok(b) if b.status == CopyStatus::Deleting => Ok(None),
            Ok(b) if b.status.is_error() => Ok(Some(Err(b.status))),
            Ok(b) => {
                if b.status == CopyStatus::Available {
                    self.drop_temporary(cloud, &b).await;
                }
                Ok(Some(Ok(copy_info(&b))))
            }
            Err(CloudError::NotFound { .. } | CloudError::Unsupported(_)) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// CSI GetSnapshot: the request's cloud, or every cloud when it names none.
    pub async fn get_snapshot(&self, id: &str, cloud: Option<&str>) -> Result<SnapshotInfo> {
        for c in self.list_clouds(cloud)? {
            match self.find_snapshot(c, id).await? {
                Some(Ok(info)) => return Ok(info),
                Some(Err(status)) => {
                    return Err(Failure::SnapshotUnusable {
                        id: id.to_string(),
                        status,
                    }
                    .into())
                }
                None => {}
            }
        }
        Err(Error::SnapshotNotFound { id: id.to_string() })
    }

    pub(super) fn list_clouds(&self, named: Option<&str>) -> Result<Vec<&Cloud>> {
        Ok(match named {
            Some(n) => vec![self.cloud(n)?],
            None => self.clouds.iter().collect(),
        })
    }

    /// CSI ListSnapshots: by id, by source volume, or all; snapshots then backups, cloud by
    /// cloud, paginated with tokens that name the cloud and the collection.
    pub async fn list_snapshots(&self, req: ListSnapshots) -> Result<SnapshotsPage> {
        let clouds = self.list_clouds(req.cloud.as_deref())?;
        if let Some(id) = &req.snapshot_id {
            for c in &clouds {
                // A snapshot in an error state is not listed (it cannot be restored).
                if let Some(found) = self.find_snapshot(c, id).await? {
                    let Ok(info) = found else {
                        break;
                    };
                    let wanted = req.source_volume_id.as_ref();
                    let entries = if wanted.is_none_or(|v| *v == info.source_volume_id) {
                        vec![info]
                    } else {
                        vec![]
                    };
                    return Ok(SnapshotsPage {
                        entries,
                        next_token: None,
                    });
                }
            }
            return Ok(SnapshotsPage::default());
        }
        let names: Vec<&str> = clouds.iter().map(|c| c.name.as_str()).collect();
        let (mut idx, mut collection, mut marker) = match req.starting_token.as_deref() {
            None | Some("") => (0, Collection::Snapshots, None),
            Some(t) => {
                let t =
                    ListToken::decode(t, &[Collection::Snapshots, Collection::Backups], &names)?;
                let idx = names.iter().position(|n| *n == t.cloud).unwrap_or(0);
                (idx, t.collection, t.marker)
            }
        };
        let limit = req.max_entries as usize;
        let mut entries = Vec::new();
        while let Some(cloud) = clouds.get(idx) {
            let page = PageRequest {
                limit: (limit > 0).then(|| (limit - entries.len()) as u32),
                marker: marker.clone(),
            };
            let had_marker = marker.is_some();
            let kind = match collection {
                Collection::Snapshots => CopyKind::Snapshot,
                _ => CopyKind::Backup,
            };
            let filter = CopyFilter {
                name: None,
                volume_id: req.source_volume_id.clone(),
            };
            let next = match cloud.copies.list_copies(kind, &filter, &page).await {
                Ok(got) => {
                    entries.extend(got.items.iter().filter(|c| listable(c)).map(copy_info));
                    got.next_marker
                }
                // A cloud without backups lists none.
                Err(CloudError::Unsupported(_)) if kind == CopyKind::Backup => None,
                Err(e) if stale_marker(&e, had_marker) => {
                    marker = None;
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
            match next {
                Some(m) => marker = Some(m),
                None => {
                    marker = None;
                    if collection == Collection::Snapshots {
                        collection = Collection::Backups;
                    } else {
                        collection = Collection::Snapshots;
                        idx += 1;
                    }
                }
            }
            if limit > 0 && entries.len() >= limit {
                entries.truncate(limit);
                let next_token = clouds.get(idx).map(|c| {
                    ListToken {
                        collection,
                        cloud: c.name.clone(),
                        marker: marker.clone(),
                    }
                    .encode()
                });
                return Ok(SnapshotsPage {
                    entries,
                    next_token,
                });
            }
        }
        Ok(SnapshotsPage {
            entries,
            next_token: None,
        })
    }
}
