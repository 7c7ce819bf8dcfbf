use super::*;

#[test]
fn a_device_that_is_not_there_or_not_live_is_bound_to_nothing() {
    assert!(no_device(&io::Error::from_raw_os_error(libc::ENOENT)));
    assert!(no_device(&io::Error::from_raw_os_error(libc::ENXIO)));
    assert!(!no_device(&io::Error::from_raw_os_error(libc::EACCES)));
    assert!(!no_device(&io::Error::from_raw_os_error(libc::EIO)));
}

#[test]
fn struct_sizes_match_the_kernel_abi() {
    assert_eq!(std::mem::size_of::<LoopInfo64>(), 232);
    assert_eq!(std::mem::size_of::<LoopConfig>(), 304);
}

#[test]
fn parses_device_paths() {
    assert_eq!(
        LoopDevice::from_path(Path::new("/dev/loop12")),
        Some(LoopDevice(12))
    );
    assert_eq!(LoopDevice::from_path(Path::new("/dev/loop-control")), None);
    assert_eq!(LoopDevice::from_path(Path::new("/dev/sda")), None);
    assert_eq!(LoopDevice(3).path(), PathBuf::from("/dev/loop3"));
}
