//! The TLS crypto provider of every HTTPS client (Keystone, Cinder, Nova, the metadata
//! service): rustls on `ring`.
//!
//! `ring` instead of rustls' default `aws-lc-rs`: 2.0 MiB less binary and no C/CMake build of
//! aws-lc in every release build (docs/PERFORMANCE.md, "Footprint"). What it lacks: the
//! post-quantum hybrid key exchange X25519MLKEM768 (X25519, P-256 and P-384 remain) and P-521
//! certificates and key exchange; RSA, P-256, P-384 and Ed25519 certificates verify as before.

/// Make `ring` the process's rustls provider, the one every `ClientConfig` is built with.
/// Idempotent: every client builder calls it, and tests build clients in any order.
pub fn install_provider() {
    // Err only means a provider is already installed: ours, by an earlier call.
    let _ = rustls::crypto::ring::default_provider().install_default();
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_provider_is_ring_and_installing_twice_is_harmless() {
        super::install_provider();
        super::install_provider();
        let provider = rustls::crypto::CryptoProvider::get_default().expect("installed");
        let ring = rustls::crypto::ring::default_provider();
        let names = |p: &rustls::crypto::CryptoProvider| {
            p.kx_groups
                .iter()
                .map(|g| format!("{:?}", g.name()))
                .collect::<Vec<_>>()
        };
        assert_eq!(names(provider), names(&ring));
    }
}
