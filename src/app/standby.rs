//! Several controller replicas on one local-backend state dir (the chart runs two). The process
//! holding DIR's lock is the backend and also serves its controller services on
//! `DIR/controller.sock`; a standby passes every controller call there, untouched. Each sidecar
//! elects its own leader, and a replica restarted under the same pod name resumes its Leases,
//! so the leading sidecars may sit beside a standby: they still reach the one process that owns
//! DIR. When that process is gone the standby takes DIR over (cloud::local::LocalCloud::open_or_stand_by) and
//! serves itself; a call that finds neither is UNAVAILABLE, saying what it waits for.

use std::path::PathBuf;
use std::sync::Arc;

use tonic::transport::Server;

use crate::cloud::local::{LocalCloud, Takeover};
use crate::server::csi::controller::ControllerService;
use crate::server::csi::group_controller::GroupControllerService;
use crate::server::csi::pb::controller_server::ControllerServer;
use crate::server::csi::pb::group_controller_server::GroupControllerServer;
use crate::server::Forward;

/// The local backend as a controller opened it, holder or standby.
pub(super) struct LocalStandby {
    pub(super) cloud: Arc<LocalCloud>,
    pub(super) takeover: Takeover,
}

impl LocalStandby {
    /// Where the holder serves the standbys.
    fn socket(&self) -> PathBuf {
        self.cloud.dir().join("controller.sock")
    }

    /// `svc` while this process holds DIR, else the holder's, through its socket; the
    /// capabilities are always answered here (the sidecars ask at startup and exit on an
    /// error, and they are the same in every replica).
    pub(super) fn route<S>(&self, svc: S) -> Forward<S> {
        let cloud = self.cloud.clone();
        let socket = self.socket();
        let unreachable = format!(
            "{}; the holder's socket {} does not answer",
            self.cloud.waiting_for(),
            socket.display()
        );
        let here = move |path: &str| cloud.holds() || path.ends_with("GetCapabilities");
        Forward::new(svc, Arc::new(here), socket, unreachable)
    }

    /// Once this process holds DIR (at once, or after a takeover), serve the standbys on
    /// its socket. Resolves only if the takeover could not open DIR, with why: the process
    /// then exits, as a failed start does (it holds the lock no more). A socket that cannot be
    /// served costs only the standbys' calls (they answer UNAVAILABLE): a warning, no exit.
    pub(super) async fn serve_standbys(
        self,
        controller: ControllerServer<ControllerService>,
        group: GroupControllerServer<GroupControllerService>,
    ) -> String {
        let socket = self.socket();
        match self.takeover.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return format!("local backend: took the state dir over but: {e}"),
            Err(_) => return "local backend: the standby's thread ended without a result".into(),
        }
        // Only the lock holder binds it, so a socket there is a dead holder's.
        let failed = match crate::server::bind_unix(&socket) {
            Ok(listener) => {
                tracing::info!(socket = %socket.display(), "serving the controller to standby replicas");
                let incoming = tokio_stream::wrappers::UnixListenerStream::new(listener);
                Server::builder()
                    .add_service(controller)
                    .add_service(group)
                    .serve_with_incoming(incoming)
                    .await
                    .map_or_else(|e| e.to_string(), |()| "ended".into())
            }
            Err(e) => e,
        };
        tracing::warn!(socket = %socket.display(), error = %failed,
            "cannot serve standby replicas: their controller calls answer UNAVAILABLE");
        std::future::pending().await
    }
}
