//! Generates the CSI gRPC code from proto/csi.proto with a pure-Rust protobuf compiler
//! (protox), so no system `protoc` is needed, and records the git revision for --version.

use std::path::Path;
use std::process::Command;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto/csi.proto");
    let fds = protox::compile(["proto/csi.proto"], ["proto"])?;
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .generate_default_stubs(true)
        .compile_fds(fds)?;

    // Rebuild when HEAD moves, so the revision stays true: HEAD, the index (a commit rewrites
    // it) and the branch's ref, wherever git keeps them (in a worktree `.git` is a file and
    // they live in the main repository).
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
    };
    let rev = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=CINDER_CSI_GIT_REVISION={rev}");
    let mut watch = vec!["HEAD".to_string(), "index".to_string()];
    watch.extend(git(&["symbolic-ref", "-q", "HEAD"]));
    for what in watch {
        if let Some(p) = git(&["rev-parse", "--git-path", &what]) {
            // A path that does not exist would make cargo rerun this script on every build.
            if std::path::Path::new(&p).exists() {
                println!("cargo:rerun-if-changed={p}");
            }
        }
    }
    link_args();
    Ok(())
}

/// Linker arguments of the `cinder-csi` binary.
fn link_args() {
    // A link map of the binary, for tests/harness/footprint/function-order.sh (the release binary has
    // no symbol table; the map names the function at every address of the same link).
    println!("cargo:rerun-if-env-changed=CINDER_CSI_LINK_MAP");
    if let Some(map) = std::env::var_os("CINDER_CSI_LINK_MAP") {
        println!(
            "cargo:rustc-link-arg-bins=-Wl,-Map={}",
            map.to_string_lossy()
        );
    }

    // Functions that run at startup, when idle and on the RPC paths first, in the order
    // they first run: laid out by crate (the default), the 1 MiB of code a node plugin runs
    // to answer Probe lies in 96 of the 140 64-KiB windows of .text, and the kernel's
    // fault-around maps all of every window that is touched (docs/PERFORMANCE.md
    // "Footprint"). A linker script, not --symbol-ordering-file: its patterns match the
    // `.llvm.HASH` names ThinLTO gives some functions, whose hashes differ between checkouts.
    // Release links only (a debug build's names differ); patterns this build lacks match
    // nothing.
    let order = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/function-order.ld");
    println!("cargo:rerun-if-changed={}", order.display());
    if std::env::var("PROFILE").as_deref() != Ok("release") || !order.exists() {
        return;
    }
    match lld_links() {
        Ok(()) => {
            println!("cargo:rustc-link-arg-bins=-Wl,--script={}", order.display());
            relr();
        }
        Err(why) => println!(
            "cargo:warning=release link without deploy/function-order.ld ({why}): \
             the idle RSS is about 4 MB higher"
        ),
    }
}

/// Relative relocations packed (DT_RELR): 9 KiB of relocations instead of 496 KiB of
/// `.rela.dyn`, which the dynamic loader reads whole at every start. glibc applies them from
/// 2.36 on; lld then makes the binary require `GLIBC_ABI_DT_RELR`, so an older glibc refuses
/// to load it (a clear error) instead of running it unrelocated. That symbol version comes
/// from the glibc linked against, so a build host with an older one gets no packing.
fn relr() {
    let version = Command::new("getconf")
        .arg("GNU_LIBC_VERSION")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|v| {
            let mut n = v.trim().strip_prefix("glibc ")?.split('.');
            Some((
                n.next()?.parse::<u32>().ok()?,
                n.next()?.parse::<u32>().ok()?,
            ))
        });
    match version {
        Some(v) if v >= (2, 36) => {
            println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
        }
        _ => println!(
            "cargo:warning=release link without packed relocations (the build host's glibc \
             is older than 2.36 or unknown): 0.5 MB larger binary and idle RSS"
        ),
    }
}

/// Whether the binary is linked by the lld that rustc brings (x86_64-unknown-linux-gnu
/// since Rust 1.90): the script is written for lld's default layout (`INSERT BEFORE .init`).
fn lld_links() -> Result<(), String> {
    let target = std::env::var("TARGET").unwrap_or_default();
    if target != "x86_64-unknown-linux-gnu" {
        return Err(format!(
            "target {target} does not link with rust-lld by default"
        ));
    }
    if let Ok(linker) = std::env::var("RUSTC_LINKER") {
        return Err(format!("linker {linker} configured"));
    }
    let flags = std::env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    for f in ["linker", "link-self-contained", "fuse-ld"] {
        if flags.contains(f) {
            return Err(format!("RUSTFLAGS choose the linker ({f})"));
        }
    }
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let version = Command::new(&rustc)
        .arg("-vV")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|v| {
            let v = v.lines().find_map(|l| l.strip_prefix("release: "))?;
            let mut n = v.split(['.', '-']).map(|x| x.parse::<u32>().ok());
            Some((n.next()??, n.next()??))
        });
    match version {
        Some(v) if v >= (1, 90) => Ok(()),
        Some((major, minor)) => Err(format!("rustc {major}.{minor} links with the system ld")),
        None => Err(format!("cannot tell the version of {rustc}")),
    }
}
