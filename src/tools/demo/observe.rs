//! Looking at a volume from the pod's side: the file we wrote, and the filesystem's size as
//! NodeGetVolumeStats reports it.

use std::path::Path;

use super::report::{Report, StepError};
use super::state::{blocking, status, Mounted, Scenario, FILE_NAME};
use crate::server::csi::pb;

impl Scenario<'_> {
    pub(super) async fn check_file(
        &self,
        r: &mut Report,
        step: &str,
        dir: &Path,
        want: &str,
    ) -> Result<(), StepError> {
        let path = dir.join(FILE_NAME);
        let want = want.to_string();
        r.step(step, async move {
            let got = blocking(move || std::fs::read_to_string(&path)).await?;
            if got == want {
                Ok(((), format!("{} bytes match", got.len())))
            } else {
                Err(format!("content differs: {got:?}"))
            }
        })
        .await
    }

    /// Filesystem size as NodeGetVolumeStats reports it.
    pub(super) async fn fs_size(&self, m: &Mounted) -> Result<i64, StepError> {
        let c = self.client;
        let msg = pb::NodeGetVolumeStatsRequest {
            volume_id: m.id.clone(),
            volume_path: m.target.display().to_string(),
            staging_target_path: m.staging.display().to_string(),
        };
        let stats = c
            .node()
            .node_get_volume_stats(c.req(msg))
            .await
            .map_err(|s| status("NodeGetVolumeStats", s))?
            .into_inner();
        stats
            .usage
            .iter()
            .find(|u| u.unit == pb::volume_usage::Unit::Bytes as i32)
            .map(|u| u.total)
            .ok_or_else(|| "NodeGetVolumeStats reported no byte usage".to_string())
    }
}
