fn main() {
    eprintln!("cinder-csi-sanity: not built yet");
    std::process::exit(1);
}
