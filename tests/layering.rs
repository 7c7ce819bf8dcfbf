//! The architecture as a test: dependencies point down only.
//! - No gRPC/protobuf types below `csi/` (driver, cloud, host, metadata, config).
//! - The driver core uses no HTTP client or syscall crates (those live in adapters).
//! - Adapters never see proto types.

use std::path::{Path, PathBuf};

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(rust_files(&p));
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
    out
}

/// Lines of code outside comments that mention a forbidden path.
fn violations(dir: &str, forbidden: &[&str]) -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src").join(dir);
    let mut found = Vec::new();
    for file in rust_files(&root) {
        let text = std::fs::read_to_string(&file).unwrap();
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            for f in forbidden {
                if code.contains(f) {
                    found.push(format!(
                        "{}:{}: uses `{f}`: {}",
                        file.display(),
                        n + 1,
                        line.trim()
                    ));
                }
            }
        }
    }
    found
}

const GRPC: &[&str] = &[
    "tonic::",
    "prost::",
    "prost_types::",
    "crate::csi",
    "csi::pb",
    "super::pb",
];

#[test]
fn no_grpc_below_csi() {
    let mut all = Vec::new();
    for dir in ["driver", "cloud", "host", "metadata", "config"] {
        all.extend(violations(dir, GRPC));
    }
    assert!(all.is_empty(), "layering violations:\n{}", all.join("\n"));
}

#[test]
fn driver_core_has_no_io_crates() {
    let v = violations(
        "driver",
        &["reqwest", "nix::", "sys_mount", "libc::", "hyper::"],
    );
    assert!(
        v.is_empty(),
        "driver/ must go through ports:\n{}",
        v.join("\n")
    );
}

#[test]
fn ports_do_not_depend_on_the_core() {
    let mut all = Vec::new();
    for dir in ["cloud", "host", "metadata", "config"] {
        all.extend(violations(
            dir,
            &["crate::driver", "crate::app", "crate::server"],
        ));
    }
    assert!(
        all.is_empty(),
        "ports/adapters must not use the core:\n{}",
        all.join("\n")
    );
}

#[test]
fn the_check_itself_sees_the_tree() {
    // Guards against the scan silently finding no files (a test that cannot fail).
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    assert!(rust_files(&root.join("driver")).len() >= 3);
    assert!(
        !violations("csi", &["tonic::"]).is_empty(),
        "csi/ uses tonic, so the scan must see it"
    );
}
