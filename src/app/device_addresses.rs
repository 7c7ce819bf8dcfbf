//! The node's fallback disk lookup on OpenStack (upstream's): when no by-id link names a
//! volume, the metadata service's `devices[]` gives the disk's bus address by serial. Asked
//! fresh each time (disks attached after boot are not in the config drive, which upstream never
//! asks for this either).

use std::sync::Arc;

use super::options::metadata_options;
use crate::app::cli::{Backend, ServeArgs};
use crate::config::CloudConfig;
use crate::host::linux::by_path::{AddressOf, ByPath, BY_PATH_DIR};
use crate::host::metadata::service::{MetadataService, Retry};

/// `None` for the local backend (its links are always there) or a metadata URL that cannot
/// be used (the node's own metadata lookup reports that).
pub fn by_path(args: &ServeArgs, config: &CloudConfig) -> Option<ByPath> {
    Some(ByPath::new(BY_PATH_DIR, address_of(args, config)?))
}

/// Asks the metadata service for the bus address of the disk whose serial is the volume id.
fn address_of(args: &ServeArgs, config: &CloudConfig) -> Option<AddressOf> {
    if args.backend != Backend::Openstack {
        return None;
    }
    let opts = metadata_options(args, &config.metadata);
    let service = MetadataService::new(
        &opts.metadata.metadata_url,
        opts.timeouts(),
        Retry::default(),
    )
    .ok()?;
    // The host's lookups run on a blocking thread, where waiting on the runtime is allowed.
    let runtime = tokio::runtime::Handle::try_current().ok()?;
    let address_of: AddressOf = Arc::new(move |volume_id: &str| {
        let doc = match runtime.block_on(service.read()) {
            Ok(doc) => doc,
            Err(e) => {
                tracing::warn!(volume_id, error = %e, "no by-id link, and the metadata service cannot say where the disk is");
                return None;
            }
        };
        let disk = doc
            .devices
            .into_iter()
            .find(|d| d.kind == "disk" && d.serial.as_deref() == Some(volume_id))?;
        Some((disk.bus, disk.address?))
    });
    Some(address_of)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A metadata service answering every request with `body`.
    async fn serve(body: &'static str) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!(
            "http://{}/openstack/latest/meta_data.json",
            listener.local_addr().unwrap()
        );
        tokio::spawn(async move {
            while let Ok((mut s, _)) = listener.accept().await {
                let mut buf = [0u8; 4096];
                let _ = s.read(&mut buf).await;
                let reply = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
                     connection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = s.write_all(reply.as_bytes()).await;
            }
        });
        url
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_disk_with_the_volume_as_serial_gives_its_bus_address() {
        let url = serve(
            r#"{"uuid": "83679162-1378-4288-a2d4-70e13ec132aa", "devices": [
                {"type": "nic", "bus": "pci", "address": "0000:00:03.0", "mac": "fa:16:3e:00:00:01"},
                {"type": "disk", "bus": "scsi", "serial": "vol-b", "address": "0:0:0:2"},
                {"type": "disk", "bus": "scsi", "serial": "vol-a", "address": "0:0:0:1"}]}"#,
        )
        .await;
        let args =
            crate::app::cli::ServeArgs::try_parse_from(["cinder-csi", "--metadata-url", &url])
                .unwrap();
        let ask = address_of(&args, &CloudConfig::default()).expect("OpenStack backend");
        // It runs on a blocking thread, as the node's host work does.
        let (found, missing) =
            tokio::task::spawn_blocking(move || (ask("vol-a"), ask("no-such-volume")))
                .await
                .unwrap();
        assert_eq!(found, Some(("scsi".to_string(), "0:0:0:1".to_string())));
        assert_eq!(missing, None);
        let local =
            crate::app::cli::ServeArgs::try_parse_from(["cinder-csi", "--backend", "local"])
                .unwrap();
        assert!(by_path(&local, &CloudConfig::default()).is_none());
    }
}
