//! The fake driver's memory: volumes, snapshots, and where each volume is on the node.

use std::collections::{BTreeMap, HashMap};

use tonic::Status;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Mount,
    Block,
}

#[derive(Debug, Clone, Default)]
pub struct Data {
    /// Files of the simulated file system (mount access).
    pub files: BTreeMap<String, Vec<u8>>,
    /// The first bytes of the simulated device (block access).
    pub block: Vec<u8>,
}

#[derive(Debug, Clone)]
pub struct Vol {
    pub id: String,
    pub name: String,
    pub size: i64,
    pub source: Option<String>,
    pub context: HashMap<String, String>,
    pub data: Data,
    /// node id → readonly
    pub published: BTreeMap<String, bool>,
    pub staged: Option<(String, Access)>,
    /// target path → (readonly, access)
    pub targets: BTreeMap<String, (bool, Access)>,
    pub publish_calls: u64,
}

#[derive(Debug, Clone)]
pub struct Snap {
    pub id: String,
    pub name: String,
    pub source: String,
    pub size: i64,
    pub created: i64,
    pub data: Data,
}

#[derive(Debug, Default)]
pub struct State {
    pub vols: BTreeMap<String, Vol>,
    pub snaps: BTreeMap<String, Snap>,
    pub clock: i64,
}

pub fn new_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// Page through `items` with csi-style tokens: `page-<offset>`.
pub fn page<T: Clone>(
    items: &[T],
    max: i32,
    token: &str,
    accept_bad: bool,
    ignore_max: bool,
) -> Result<(Vec<T>, String), Status> {
    if max < 0 {
        return Err(Status::invalid_argument("max_entries must not be negative"));
    }
    let start = if token.is_empty() {
        0
    } else {
        match token
            .strip_prefix("page-")
            .and_then(|n| n.parse::<usize>().ok())
        {
            Some(n) if n <= items.len() => n,
            _ if accept_bad => 0,
            _ => return Err(Status::aborted(format!("invalid starting_token {token:?}"))),
        }
    };
    if max == 0 || ignore_max {
        return Ok((items[start..].to_vec(), String::new()));
    }
    let end = (start + max as usize).min(items.len());
    let next = if end < items.len() {
        format!("page-{end}")
    } else {
        String::new()
    };
    Ok((items[start..end].to_vec(), next))
}
