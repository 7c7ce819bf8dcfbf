#![no_main]
//! An arbitrary image file into the config drive reader (ISO 9660 and VFAT are told apart by
//! their signatures; the two targets differ by their seed corpus). The reader opens a path,
//! so each input is written to one file in /dev/shm first.
use std::sync::OnceLock;

static PATH: OnceLock<std::path::PathBuf> = OnceLock::new();

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let path = PATH.get_or_init(|| {
        std::env::temp_dir().join(format!("cinder-csi-fuzz-drive-{}.img", std::process::id()))
    });
    std::fs::write(path, data).expect("write the image");
    cinder_csi::tools::fuzzing::config_drive(path);
});
