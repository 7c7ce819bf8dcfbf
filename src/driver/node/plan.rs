//! What NodeStageVolume was asked to do, validated: the plan stage.rs and block.rs carry out.

use std::path::PathBuf;

use super::model::{NodeOptions, StageRequest};
use super::params::{self, Access, StageContext};
use crate::driver::Result;

pub struct StagePlan {
    pub volume_id: String,
    pub staging: PathBuf,
    pub access: Access,
    pub read_only: bool,
    pub context: StageContext,
}

impl StagePlan {
    pub fn new(req: StageRequest, opts: &NodeOptions) -> Result<Self> {
        let volume_id = params::volume_id(&req.volume_id)?;
        let staging =
            params::kubelet_path("staging_target_path", &req.staging_path, &opts.kubelet_dir)?;
        let access = params::access(&req.capability)?;
        let fs = match &access {
            Access::Mount { fs, .. } => Some(*fs),
            Access::Block => None,
        };
        let context = params::stage_context(&req.volume_context, fs)?;
        let read_only =
            req.capability.access_mode.is_read_only() || params::read_only_flag(&access);
        Ok(Self {
            volume_id,
            staging,
            access,
            read_only,
            context,
        })
    }
}
