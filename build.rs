//! Generates the CSI gRPC code from proto/csi.proto with a pure-Rust protobuf compiler
//! (protox), so no system `protoc` is needed, and records the git revision for --version.

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
    Ok(())
}
