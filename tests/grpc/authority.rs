//! The real binary on a Unix socket answers a request whatever `:authority` the client sends:
//! `localhost` (grpc-go), the percent-encoded socket path (grpc C-core: Python, C++, Ruby) and
//! the raw path (grpc-java, grpc-swift). h2 alone resets the last two (hyperium/h2#487).
//! The request is written as raw HTTP/2 frames, since no HTTP/2 client library lets its user
//! send an authority that is not one.

use crate::support::common;

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use common::Driver;

const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = payload.len() as u32;
    let mut f = len.to_be_bytes()[1..].to_vec();
    f.extend([kind, flags]);
    f.extend(stream.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

/// Sends one unary Identity/Probe with `authority` on a fresh connection; returns the
/// grpc-status of the response, or what went wrong at the HTTP/2 level.
fn probe(sock: &Path, authority: &str) -> Result<String, String> {
    let mut s = UnixStream::connect(sock).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut enc = loona_hpack::Encoder::new();
    let headers = [
        (":method", "POST"),
        (":scheme", "http"),
        (":path", "/csi.v1.Identity/Probe"),
        (":authority", authority),
        ("content-type", "application/grpc"),
        ("te", "trailers"),
    ];
    let block = enc.encode(headers.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes())));
    let mut out = PREFACE.to_vec();
    out.extend(frame(0x4, 0, 0, &[])); // SETTINGS
    out.extend(frame(0x1, 0x4, 1, &block)); // HEADERS, END_HEADERS
    out.extend(frame(0x0, 0x1, 1, &[0, 0, 0, 0, 0])); // DATA, END_STREAM: an empty ProbeRequest
    s.write_all(&out).unwrap();

    let mut dec = loona_hpack::Decoder::new();
    let mut status = None;
    loop {
        let mut head = [0u8; 9];
        s.read_exact(&mut head)
            .map_err(|e| format!("connection ended: {e}"))?;
        let len = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
        let (kind, flags) = (head[3], head[4]);
        let mut payload = vec![0u8; len];
        s.read_exact(&mut payload).unwrap();
        match kind {
            0x4 if flags & 0x1 == 0 => s.write_all(&frame(0x4, 0x1, 0, &[])).unwrap(),
            0x3 => {
                let code = u32::from_be_bytes(payload[..4].try_into().unwrap());
                return Err(format!("RST_STREAM with error code {code}"));
            }
            0x7 => return Err(format!("GOAWAY: {payload:?}")),
            0x1 => {
                assert_eq!(flags & 0x4, 0x4, "the test reads one-frame header blocks");
                for (n, v) in dec.decode(&payload).unwrap() {
                    if n == b"grpc-status" {
                        status = Some(String::from_utf8(v).unwrap());
                    }
                }
                if flags & 0x1 != 0 {
                    return status.ok_or_else(|| "no grpc-status".to_string());
                }
            }
            _ => {}
        }
    }
}

#[test]
fn any_authority_grpc_clients_send_on_a_unix_socket_is_served() {
    let tmp = tempfile::tempdir().unwrap();
    let local = tmp.path().join("local");
    let kubelet = tmp.path().display().to_string();
    let local = local.display().to_string();
    let driver = Driver::start(&[
        "--mode",
        "node",
        "--backend",
        "local",
        "--local-dir",
        &local,
        "--node-id",
        "n1",
        "--kubelet-dir",
        &kubelet,
    ]);
    let raw = driver.socket.display().to_string();
    let encoded = raw.replace('/', "%2F");
    for authority in ["localhost", "csi.example:1234", &encoded, &raw, ""] {
        assert_eq!(
            probe(&driver.socket, authority).as_deref(),
            Ok("0"),
            "Probe with :authority {authority:?}"
        );
    }
}
