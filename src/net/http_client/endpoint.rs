//! What identifies an API endpoint to the per-endpoint bounds: scheme, host and port, the
//! default port filled in. The connection pool keys its connections the same way.

/// `scheme://host:port` of an endpoint.
pub fn key(scheme: &str, host: &str, port: Option<u16>) -> String {
    let port = port.unwrap_or(match scheme {
        "https" => 443,
        "http" => 80,
        _ => 0,
    });
    format!("{scheme}://{host}:{port}")
}

#[cfg(test)]
mod tests {
    use super::key;

    #[test]
    fn the_default_port_is_filled_in() {
        assert_eq!(key("https", "h", None), "https://h:443");
        assert_eq!(key("http", "h", None), key("http", "h", Some(80)));
        assert_ne!(key("http", "h", Some(8776)), key("http", "h", Some(8774)));
    }
}
