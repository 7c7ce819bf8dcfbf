//! One round of the watcher: the background task that, while anybody waits, takes every
//! watched volume, refreshes them with as few requests as it can (time-filtered lists, else
//! GETs) and hands each waiter its volume's fresh observation.

use std::collections::HashMap;
use std::sync::Arc;

use chrono::{DateTime, DurationRound, TimeDelta, Utc};
use futures::stream::{self, StreamExt};
use tokio::time::{sleep_until, Instant};

use super::pace::{GET_CONCURRENCY, LIST_HORIZON};
use super::state::{moved, Inner, Known, Obs};
use crate::cloud::openstack::api::Request;
use crate::cloud::openstack::dto::{has_next, ChangeMark, VolumeDto, VolumeEnvelope, VolumeList};
use crate::cloud::openstack::ids::encode_segment;
use crate::cloud::openstack::microversion::CINDER_TIME_FILTERS;
use crate::cloud::{CloudError, CloudResult, Op, Resource};

impl Inner {
    /// The single polling task: runs while anyone waits.
    pub(super) async fn run(self: Arc<Self>) {
        loop {
            let notified = self.wake.notified();
            let next_due = {
                let mut st = self.lock();
                if st.entries.is_empty() {
                    st.running = false;
                    return;
                }
                st.entries.values().map(|e| e.due).min()
            };
            if let Some(due) = next_due.filter(|d| *d > Instant::now()) {
                tokio::select! {
                    _ = sleep_until(due) => {}
                    _ = notified => {}
                }
                continue;
            }
            let (round, batch, time_filter_off) = {
                let mut st = self.lock();
                st.rounds += 1;
                let newest = st.seen.values().map(|k| k.mark.time()).max();
                let recent = |k: &Known| newest.is_none_or(|n| k.mark.time() >= n - LIST_HORIZON);
                let batch: Vec<(String, Option<Known>)> = st
                    .entries
                    .iter()
                    .map(|(id, e)| (id.clone(), e.known.clone().filter(recent)))
                    .collect();
                (st.rounds, batch, st.no_time_filter)
            };
            let (results, listed) = self.refresh(batch, time_filter_off).await;
            let now = Instant::now();
            let mut st = self.lock();
            let mut progress = false;
            for (id, obs) in results {
                let known = match &obs {
                    Obs::Seen(dto) => Known::of(dto),
                    _ => None,
                };
                if let Some(k) = &known {
                    st.seen.insert(id.clone(), k.clone());
                }
                if let Some(e) = st.entries.get_mut(&id) {
                    if known.is_some() {
                        e.known = known;
                    }
                    progress |= moved(&e.tx.borrow().1, &obs);
                    e.tx.send_replace((round, obs));
                }
            }
            for e in st.entries.values_mut() {
                e.reschedule(round, listed, progress, now);
            }
        }
    }

    /// Fresh observations of every volume in `batch` (id, what is known of it), and whether a
    /// list served several of them.
    async fn refresh(
        &self,
        batch: Vec<(String, Option<Known>)>,
        time_filter_off: bool,
    ) -> (Vec<(String, Obs)>, bool) {
        let mut out = Vec::with_capacity(batch.len());
        let mut pending: HashMap<String, Option<Known>> = batch.into_iter().collect();
        let can_list = pending.len() > 1
            && !time_filter_off
            && self
                .api
                .cinder_version()
                .await
                .is_ok_and(|v| v.supports(CINDER_TIME_FILTERS));
        // Which kinds of mark a successful list covered (every pending volume of that kind).
        let mut covered: Vec<bool> = Vec::new();
        if can_list {
            // New volumes by creation time first: that list is short and may cover the rest.
            for created in [true, false] {
                let since = pending
                    .values()
                    .filter_map(|k| match k.as_ref().map(|k| k.mark) {
                        Some(ChangeMark::Created(t)) if created => Some(t),
                        Some(ChangeMark::Updated(t)) if !created => Some(t),
                        _ => None,
                    })
                    .min();
                let listable = pending.values().filter(|k| k.is_some()).count();
                // One volume left is cheaper as a GET.
                let (Some(since), true) = (since, listable > 1) else {
                    continue;
                };
                match self.list_since(created, since).await {
                    Ok(mut found) => {
                        covered.push(created);
                        pending.retain(|id, _| match found.remove(id) {
                            Some(dto) => {
                                out.push((id.clone(), Obs::Seen(Arc::new(dto))));
                                false
                            }
                            None => true,
                        });
                    }
                    Err(e) => {
                        if matches!(e, CloudError::BadRequest { .. }) {
                            tracing::warn!(error = %e, "Cinder refused a time filter on the volume list; the status watcher falls back to one GET per volume");
                            self.lock().no_time_filter = true;
                        } else {
                            tracing::debug!(error = %e, "status watcher list failed; trying GETs");
                        }
                        break;
                    }
                }
            }
        }
        // Our project's volumes missing from a list that covered them are gone.
        if !covered.is_empty() {
            let project = self.api.project_id().await.ok();
            pending.retain(|id, k| {
                let gone = k.as_ref().is_some_and(|k| {
                    k.project.is_some()
                        && k.project == project
                        && covered.contains(&matches!(k.mark, ChangeMark::Created(_)))
                });
                if gone {
                    out.push((id.clone(), Obs::Gone));
                }
                !gone
            });
        }
        let gets = stream::iter(pending.into_keys())
            .map(|id| async move {
                let obs = self.get(&id).await;
                (id, obs)
            })
            .buffer_unordered(GET_CONCURRENCY)
            .collect::<Vec<_>>()
            .await;
        let listed = !covered.is_empty();
        out.extend(gets);
        (out, listed)
    }

    async fn get(&self, id: &str) -> Obs {
        match self
            .api
            // Waits follow IDs the core already looked up (so validated): encode only.
            .cinder(Request::get(
                Op::VolumeGet,
                format!("volumes/{}", encode_segment(id)),
            ))
            .await
        {
            Ok(ans) => match ans.json::<VolumeEnvelope>(Op::VolumeGet) {
                Ok(env) => Obs::Seen(Arc::new(env.volume)),
                Err(e) => Obs::Failed(e.into_cloud(Resource::Volume, id)),
            },
            Err(e) => match e.into_cloud(Resource::Volume, id) {
                CloudError::NotFound { .. } => Obs::Gone,
                other => Obs::Failed(other),
            },
        }
    }

    /// Every volume of the project created (`created`) or last updated at or after `since`
    /// (all pages), by id.
    async fn list_since(
        &self,
        created: bool,
        since: DateTime<Utc>,
    ) -> CloudResult<HashMap<String, VolumeDto>> {
        let filter = if created { "created_at" } else { "updated_at" };
        let floor =
            since.duration_trunc(TimeDelta::seconds(1)).unwrap_or(since) - TimeDelta::seconds(1);
        let value = format!("gte:{}", floor.format("%Y-%m-%dT%H:%M:%S"));
        let mut found = HashMap::new();
        let mut marker: Option<String> = None;
        loop {
            let req = Request::get(Op::VolumeWatch, "volumes/detail")
                .query(filter, value.clone())
                .query_opt("marker", marker.take());
            let ans = self
                .api
                .cinder(req)
                .await
                .map_err(|e| e.into_cloud(Resource::Volume, "(list)"))?;
            let page: VolumeList = ans
                .json(Op::VolumeWatch)
                .map_err(|e| e.into_cloud(Resource::Volume, "(list)"))?;
            let more = has_next(&page.volumes_links) && !page.volumes.is_empty();
            marker = page.volumes.last().map(|v| v.id.clone());
            found.extend(page.volumes.into_iter().map(|v| (v.id.clone(), v)));
            if !more {
                return Ok(found);
            }
        }
    }
}
