//! Who a local-backend process is: its node id and zone (no metadata service to ask).

use crate::app::cli::ServeArgs;

/// Zone of a local-backend node: `--node-az`, else the first of `--local-zones`.
pub fn local_node_zone(args: &ServeArgs) -> &str {
    match &args.node_az {
        Some(az) if !az.is_empty() => az,
        _ => args
            .local_zones
            .first()
            .map_or(crate::cloud::local::ZONE, String::as_str),
    }
}

/// Node id of a local-backend process: `--node-id`, else the host name.
pub fn local_node_id(args: &ServeArgs) -> String {
    args.node_id.clone().unwrap_or_else(|| {
        nix::unistd::gethostname()
            .ok()
            .and_then(|h| h.into_string().ok())
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "localhost".to_string())
    })
}
