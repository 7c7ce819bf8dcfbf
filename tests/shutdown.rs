//! Graceful shutdown: SIGTERM during a slow RPC lets it finish, then the process exits 0 and
//! the socket is gone. The slow RPC is a real one: NodeGetInfo waiting on a metadata service
//! (served here) that takes its time to answer.

mod common;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::time::{Duration, Instant};

use cinder_csi::csi::pb::node_client::NodeClient;
use cinder_csi::csi::pb::NodeGetInfoRequest;
use common::Driver;

const INSTANCE: &str = "0b5c2b1e-7c55-4b7c-9a4a-3f3c9f1d2e11";
const DELAY: Duration = Duration::from_millis(1500);

/// A metadata service that answers every request after `DELAY`.
fn slow_metadata_service() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                let _ = stream.read(&mut buf);
                std::thread::sleep(DELAY);
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
    port
}

#[tokio::test]
async fn sigterm_lets_a_slow_rpc_finish_then_removes_the_socket() {
    let port = slow_metadata_service();
    let kubelet = tempfile::tempdir().unwrap();
    let url = format!("--metadata-url=http://127.0.0.1:{port}/openstack/latest/meta_data.json");
    let kubelet_arg = format!("--kubelet-dir={}", kubelet.path().display());
    let by_id = format!("--by-id-dir={}", kubelet.path().display());
    let mut driver = Driver::start(&["--mode", "node", &url, &kubelet_arg, &by_id]);
    let socket = driver.socket.clone();

    let mut client = NodeClient::new(driver.channel().await);
    let started = Instant::now();
    let call = tokio::spawn(async move { client.node_get_info(NodeGetInfoRequest {}).await });
    tokio::time::sleep(Duration::from_millis(300)).await;

    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(driver.pid()),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();

    let reply = call
        .await
        .unwrap()
        .expect("the in-flight RPC completes after SIGTERM");
    assert_eq!(reply.into_inner().node_id, INSTANCE);
    assert!(
        started.elapsed() >= DELAY,
        "the answer really waited for the slow service"
    );

    let status = driver.child.take().unwrap().wait().unwrap();
    assert!(status.success(), "clean exit after draining: {status:?}");
    assert!(!socket.exists(), "socket removed on shutdown");
}

#[tokio::test]
async fn new_connections_are_refused_while_draining() {
    let port = slow_metadata_service();
    let kubelet = tempfile::tempdir().unwrap();
    let url = format!("--metadata-url=http://127.0.0.1:{port}/openstack/latest/meta_data.json");
    let kubelet_arg = format!("--kubelet-dir={}", kubelet.path().display());
    let by_id = format!("--by-id-dir={}", kubelet.path().display());
    let mut driver = Driver::start(&["--mode", "node", &url, &kubelet_arg, &by_id]);
    let socket = driver.socket.clone();
    let mut client = NodeClient::new(driver.channel().await);
    let call = tokio::spawn(async move { client.node_get_info(NodeGetInfoRequest {}).await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(driver.pid()),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    // Still draining (the slow RPC has ~1 s to go), yet nobody new can connect.
    assert!(std::os::unix::net::UnixStream::connect(&socket).is_err());
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
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(driver.pid()),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let status = driver.child.take().unwrap().wait().unwrap();
    let took = started.elapsed();
    assert!(status.success());
    // The grace period is 30 s; an idle connection must not use it up.
    assert!(took < Duration::from_secs(10), "shutdown took {took:?}");
    drop(client);
}
