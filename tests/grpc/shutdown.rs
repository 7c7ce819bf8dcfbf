//! Graceful shutdown: SIGTERM during a slow RPC lets it finish, then the process exits 0 and
//! the socket is gone. The slow RPC is a real one: NodeGetInfo waiting on a metadata service
//! (served here) that takes its time to answer.

use crate::support::common;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use cinder_csi::server::csi::pb::node_client::NodeClient;
use cinder_csi::server::csi::pb::{NodeGetInfoRequest, NodeGetInfoResponse};
use common::Driver;
use tokio::task::JoinHandle;

const INSTANCE: &str = "0b5c2b1e-7c55-4b7c-9a4a-3f3c9f1d2e11";
/// The longest the service holds an answer back: well under the driver's 10 s metadata
/// request timeout, so a test that never releases still ends (and fails on what it checks).
const HOLD_MAX: Duration = Duration::from_secs(8);
/// Generous bound on what should take milliseconds (a busy 2-core CI machine).
const PATIENCE: Duration = Duration::from_secs(20);

/// A metadata service that answers each request only when the test releases it: the RPC
/// waiting on it is in flight exactly as long as the test wants, whatever the machine's load.
struct SlowMetadata {
    port: u16,
    arrived: mpsc::Receiver<()>,
    release: mpsc::Sender<()>,
}

fn slow_metadata_service() -> SlowMetadata {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (arrived_tx, arrived) = mpsc::channel();
    let (release, release_rx) = mpsc::channel::<()>();
    let release_rx = Arc::new(Mutex::new(release_rx));
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let (arrived_tx, release_rx) = (arrived_tx.clone(), release_rx.clone());
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                let _ = stream.read(&mut buf);
                let _ = arrived_tx.send(());
                if let Ok(rx) = release_rx.lock() {
                    let _ = rx.recv_timeout(HOLD_MAX);
                }
                let body =
                    format!(r#"{{"uuid":"{INSTANCE}","availability_zone":"nova","name":"n1"}}"#);
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{}",
                    body.len(),
                    body
                );
            });
        }
    });
    SlowMetadata {
        port,
        arrived,
        release,
    }
}

impl SlowMetadata {
    /// Until the driver's request reached the service (the RPC is then in flight).
    async fn wait_for_request(&self) {
        let deadline = Instant::now() + PATIENCE;
        while self.arrived.try_recv().is_err() {
            assert!(
                Instant::now() < deadline,
                "the driver never asked the metadata service"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

/// Until the driver refuses new connections (it is draining); panics after `PATIENCE`.
async fn wait_until_refused(socket: &std::path::Path) {
    let deadline = Instant::now() + PATIENCE;
    while std::os::unix::net::UnixStream::connect(socket).is_ok() {
        assert!(
            Instant::now() < deadline,
            "still accepting connections {PATIENCE:?} after SIGTERM"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn start_node(svc: &SlowMetadata, kubelet: &tempfile::TempDir) -> Driver {
    let url = format!(
        "--metadata-url=http://127.0.0.1:{}/openstack/latest/meta_data.json",
        svc.port
    );
    let kubelet_arg = format!("--kubelet-dir={}", kubelet.path().display());
    let by_id = format!("--by-id-dir={}", kubelet.path().display());
    Driver::start(&["--mode", "node", &url, &kubelet_arg, &by_id])
}

fn sigterm(driver: &Driver) {
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(driver.pid()),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
}

/// A node driver SIGTERMed while its NodeGetInfo waits on the metadata service: draining,
/// refusing new connections, the RPC still held back until the test releases it.
struct Draining {
    svc: SlowMetadata,
    driver: Driver,
    socket: std::path::PathBuf,
    call: JoinHandle<Result<tonic::Response<NodeGetInfoResponse>, tonic::Status>>,
    _kubelet: tempfile::TempDir,
}

async fn sigterm_during_a_slow_rpc() -> Draining {
    let svc = slow_metadata_service();
    let kubelet = tempfile::tempdir().unwrap();
    let driver = start_node(&svc, &kubelet);
    let socket = driver.socket.clone();
    let mut client = NodeClient::new(driver.channel().await);
    let call = tokio::spawn(async move { client.node_get_info(NodeGetInfoRequest {}).await });
    svc.wait_for_request().await;
    sigterm(&driver);
    wait_until_refused(&socket).await;
    Draining {
        svc,
        driver,
        socket,
        call,
        _kubelet: kubelet,
    }
}

#[tokio::test]
async fn sigterm_lets_a_slow_rpc_finish_then_removes_the_socket() {
    // `_kubelet` first: dropped last, after the driver.
    let Draining {
        _kubelet,
        svc,
        mut driver,
        socket,
        call,
    } = sigterm_during_a_slow_rpc().await;
    // The driver is shutting down while the RPC is still held back; only now it may finish.
    assert!(
        !call.is_finished(),
        "the RPC ended before its answer was released"
    );
    svc.release.send(()).unwrap();

    let reply = call
        .await
        .unwrap()
        .expect("the in-flight RPC completes after SIGTERM");
    assert_eq!(reply.into_inner().node_id, INSTANCE);

    let status = driver.child.take().unwrap().wait().unwrap();
    assert!(status.success(), "clean exit after draining: {status:?}");
    assert!(!socket.exists(), "socket removed on shutdown");
}

#[tokio::test]
async fn new_connections_are_refused_while_draining() {
    let Draining {
        _kubelet,
        svc,
        mut driver,
        call,
        ..
    } = sigterm_during_a_slow_rpc().await;
    // Still draining (the RPC is held until released below), yet nobody new can connect.
    assert!(
        driver.child.as_mut().unwrap().try_wait().unwrap().is_none(),
        "exited early"
    );
    svc.release.send(()).unwrap();
    assert!(call.await.unwrap().is_ok());
    assert!(driver.child.take().unwrap().wait().unwrap().success());
}

#[tokio::test]
async fn an_idle_client_connection_does_not_hold_up_shutdown() {
    let kubelet = tempfile::tempdir().unwrap();
    let kubelet_arg = format!("--kubelet-dir={}", kubelet.path().display());
    let local = format!("--local-dir={}", kubelet.path().join("local").display());
    let mut driver = Driver::start(&[
        "--mode",
        "node",
        "--backend",
        "local",
        "--node-id",
        "n1",
        &local,
        &kubelet_arg,
    ]);
    // A sidecar keeps its connection open between calls.
    let mut client = NodeClient::new(driver.channel().await);
    client
        .node_get_info(NodeGetInfoRequest {})
        .await
        .expect("NodeGetInfo");
    let started = Instant::now();
    sigterm(&driver);
    let status = driver.child.take().unwrap().wait().unwrap();
    let took = started.elapsed();
    assert!(status.success());
    // The grace period is 30 s; an idle connection must not use it up.
    assert!(took < Duration::from_secs(10), "shutdown took {took:?}");
    drop(client);
}
