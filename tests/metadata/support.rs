//! Image builders and a scripted HTTP server. Everything lives in temp dirs or tasks that are
//! removed/aborted on drop.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

pub const UUID: &str = "83679162-1378-4288-a2d4-70e13ec132aa";

pub fn meta_data(uuid: &str, az: &str) -> String {
    format!(
        r#"{{"uuid": "{uuid}", "availability_zone": "{az}", "name": "node-1",
            "hostname": "node-1.novalocal", "launch_index": 0,
            "meta": {{"k": "v"}}, "public_keys": {{}},
            "devices": [{{"type": "disk", "bus": "virtio", "serial": "vol-1",
                          "address": "0000:00:05.0", "tags": ["data"]}}]}}"#
    )
}

/// Runs a tool; a missing tool fails the test loudly (tests/ci/install-deps.sh installs them).
pub fn run(cmd: &mut Command) {
    let out = cmd
        .env("MTOOLS_SKIP_CHECK", "1")
        .output()
        .unwrap_or_else(|e| panic!("{cmd:?}: {e} (run tests/ci/install-deps.sh)"));
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A config drive tree: `files` are (path under the root, contents).
pub fn tree(dir: &Path, files: &[(&str, &str)]) -> PathBuf {
    let root = dir.join("tree");
    std::fs::create_dir_all(root.join("openstack/latest")).unwrap();
    for (path, contents) in files {
        let p = root.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, contents).unwrap();
    }
    root
}

/// `genisoimage <flags> -o dir/NAME.iso <tree>`.
pub fn iso(dir: &Path, name: &str, flags: &[&str], files: &[(&str, &str)]) -> PathBuf {
    let src = tree(&dir.join(name), files);
    let out = dir.join(format!("{name}.iso"));
    run(Command::new("genisoimage")
        .arg("-quiet")
        .args(flags)
        .arg("-o")
        .arg(&out)
        .arg(&src));
    out
}

/// Nova's exact command (nova/virt/configdrive.py).
pub const NOVA_ISO_FLAGS: &[&str] = &[
    "-ldots",
    "-allow-lowercase",
    "-allow-multidot",
    "-l",
    "-publisher",
    "OpenStack Compute",
    "-J",
    "-r",
    "-V",
    "config-2",
];

/// `mkfs.vfat <mkfs_flags> -n LABEL` on a sparse file of `kib` KiB, then mtools copies `files`.
pub fn vfat(
    dir: &Path,
    name: &str,
    kib: u64,
    mkfs_flags: &[&str],
    label: &str,
    files: &[(&str, &str)],
) -> PathBuf {
    let src = tree(&dir.join(name), files);
    let img = dir.join(format!("{name}.img"));
    run(Command::new("mkfs.vfat")
        .args(mkfs_flags)
        .args(["-n", label, "-C"])
        .arg(&img)
        .arg(kib.to_string()));
    for (path, _) in files {
        let mut parents = PathBuf::new();
        let parent_dirs: Vec<_> = Path::new(path).parent().unwrap().components().collect();
        for c in parent_dirs {
            parents.push(c);
            let target = format!("::{}", parents.display());
            // mmd fails when the directory exists; create only what is new.
            let exists = Command::new("mdir")
                .env("MTOOLS_SKIP_CHECK", "1")
                .arg("-i")
                .arg(&img)
                .arg(&target)
                .output()
                .unwrap()
                .status
                .success();
            if !exists {
                run(Command::new("mmd").arg("-i").arg(&img).arg(&target));
            }
        }
        run(Command::new("mcopy")
            .arg("-i")
            .arg(&img)
            .arg(src.join(path))
            .arg(format!("::{path}")));
    }
    img
}

pub fn standard_files(uuid: &str, az: &str) -> Vec<(&'static str, String)> {
    vec![
        ("openstack/latest/meta_data.json", meta_data(uuid, az)),
        ("openstack/latest/user_data", "#cloud-config\n".into()),
        (
            "openstack/2012-08-10/meta_data.json",
            meta_data("00000000-0000-4000-8000-000000000000", "old"),
        ),
        ("ec2/latest/meta-data.json", "{}".into()),
    ]
}

pub fn as_refs<'a>(files: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    files.iter().map(|(p, c)| (*p, c.as_str())).collect()
}

/// What the scripted server answers to one request.
#[derive(Clone)]
pub enum Reply {
    Json(String),
    Status(u16),
    /// Wait this long before answering at all.
    Slow(Duration, String),
    /// Send headers promising a body, then stall.
    StalledBody(Duration),
    /// Headers only, claiming this Content-Length.
    Claims(u64),
}

/// An HTTP/1.1 server on 127.0.0.1:0 answering from a script (the last reply repeats).
pub struct Server {
    pub url: String,
    requests: Arc<AtomicUsize>,
    paths: Arc<Mutex<Vec<String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Server {
    pub async fn start(script: Vec<Reply>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!(
            "http://{}/openstack/latest/meta_data.json",
            listener.local_addr().unwrap()
        );
        let requests = Arc::new(AtomicUsize::new(0));
        let paths = Arc::new(Mutex::new(Vec::new()));
        let script = Arc::new(Mutex::new(script));
        let (r, p) = (requests.clone(), paths.clone());
        let task = tokio::spawn(async move {
            loop {
                let Ok((mut conn, _)) = listener.accept().await else {
                    return;
                };
                let (r, p, script) = (r.clone(), p.clone(), script.clone());
                tokio::spawn(async move {
                    let mut head = Vec::new();
                    let mut buf = [0u8; 1024];
                    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                        match conn.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => head.extend_from_slice(&buf[..n]),
                        }
                    }
                    r.fetch_add(1, Ordering::SeqCst);
                    p.lock()
                        .unwrap()
                        .push(String::from_utf8_lossy(&head).into_owned());
                    let reply = {
                        let mut s = script.lock().unwrap();
                        if s.len() > 1 {
                            s.remove(0)
                        } else {
                            s[0].clone()
                        }
                    };
                    let response = match reply {
                        Reply::Json(body) => ok(&body),
                        Reply::Status(code) => format!(
                            "HTTP/1.1 {code} X\r\nContent-Length: 5\r\nConnection: close\r\n\r\nerror"
                        ),
                        Reply::Slow(delay, body) => {
                            tokio::time::sleep(delay).await;
                            ok(&body)
                        }
                        Reply::StalledBody(delay) => {
                            let head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\
                                        Content-Length: 100\r\nConnection: close\r\n\r\n{\"uu";
                            let _ = conn.write_all(head.as_bytes()).await;
                            tokio::time::sleep(delay).await;
                            return;
                        }
                        Reply::Claims(n) => format!(
                            "HTTP/1.1 200 OK\r\nContent-Length: {n}\r\nConnection: close\r\n\r\n"
                        ),
                    };
                    let _ = conn.write_all(response.as_bytes()).await;
                    let _ = conn.shutdown().await;
                });
            }
        });
        Self {
            url,
            requests,
            paths,
            task,
        }
    }

    pub fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }

    /// The raw request heads received so far.
    pub fn heads(&self) -> Vec<String> {
        self.paths.lock().unwrap().clone()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn ok(body: &str) -> String {
    format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    )
}
