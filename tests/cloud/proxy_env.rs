//! The driver never sends loopback traffic through a proxy from the environment, as upstream
//! (Go's ProxyFromEnvironment): only HTTP(S)_PROXY/NO_PROXY are read, and loopback always goes
//! direct. In particular ALL_PROXY (which reqwest's own environment lookup would honour for
//! every host) is not used. Real binary; Keystone and the proxy are listeners here that record
//! who connects.

use crate::support::launch::Launch;

use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A listener that counts connections (and drops them: the driver then sees an error).
fn counting_listener() -> (u16, Arc<AtomicUsize>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let n = Arc::new(AtomicUsize::new(0));
    let count = n.clone();
    std::thread::spawn(move || {
        for s in l.incoming() {
            count.fetch_add(1, Ordering::SeqCst);
            drop(s);
        }
    });
    (port, n)
}

#[test]
fn all_proxy_is_not_used_for_keystone_on_loopback() {
    let (keystone, keystone_hits) = counting_listener();
    let (proxy, proxy_hits) = counting_listener();
    let tmp = tempfile::tempdir().unwrap();
    let conf = tmp.path().join("cloud.conf");
    std::fs::write(
        &conf,
        format!(
            "[Global]\nauth-url = http://127.0.0.1:{keystone}/v3\nuser-id = u\npassword = p\n\
             tenant-id = t\n"
        ),
    )
    .unwrap();
    let socket = tmp.path().join("csi.sock");
    let mut launch = Launch::new()
        .args(["--mode=controller", "--cloud-name="])
        .arg(format!("--cloud-config={}", conf.display()))
        .arg(format!("--endpoint=unix://{}", socket.display()))
        .socket(&socket);
    for var in ["HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY"] {
        launch = launch.env_remove(var).env_remove(var.to_lowercase());
    }
    let proxy_url = format!("http://127.0.0.1:{proxy}");
    let mut driver = launch
        .env("ALL_PROXY", &proxy_url)
        .env("all_proxy", &proxy_url)
        .inherit_log_level()
        .quiet()
        .spawn();
    driver.wait_for_socket(Duration::from_secs(20));
    // The background cloud check authenticates at startup.
    let deadline = Instant::now() + Duration::from_secs(30);
    while keystone_hits.load(Ordering::SeqCst) == 0 && proxy_hits.load(Ordering::SeqCst) == 0 {
        assert!(
            Instant::now() < deadline,
            "the driver never tried to reach Keystone"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        proxy_hits.load(Ordering::SeqCst),
        0,
        "Keystone on 127.0.0.1 was reached through ALL_PROXY"
    );
    assert!(keystone_hits.load(Ordering::SeqCst) > 0);
    drop(driver);
}
