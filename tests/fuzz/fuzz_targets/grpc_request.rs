#![no_main]
//! Arbitrary bytes into cinder_csi::tools::fuzzing::grpc_request (the first byte picks the message).
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    cinder_csi::tools::fuzzing::grpc_request(data);
});
