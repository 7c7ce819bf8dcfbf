#![no_main]
//! Arbitrary text into cinder_csi::tools::fuzzing::clouds_yaml (a panic is the bug).
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        cinder_csi::tools::fuzzing::clouds_yaml(text);
    }
});
