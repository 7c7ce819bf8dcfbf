//! Generates the CSI gRPC code from the workspace's proto/csi.proto with a pure-Rust protobuf
//! compiler (protox), so no system `protoc` is needed. The runner compiles its own copy rather
//! than depending on the driver crate, so it stays usable against any CSI driver.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=../proto/csi.proto");
    let fds = protox::compile(["../proto/csi.proto"], ["../proto"])?;
    tonic_prost_build::configure()
        .build_client(true)
        // The server half serves the in-process test drivers in tests/.
        .build_server(true)
        .generate_default_stubs(true)
        .compile_fds(fds)?;
    Ok(())
}
