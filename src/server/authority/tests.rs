use std::io;

use bytes::BytesMut;
use tokio::io::AsyncReadExt;

use super::frames::{
    put_head, CONTINUATION, END_HEADERS, END_STREAM, HEADERS, OUT_FRAME, PADDED, PREFACE, PRIORITY,
};
use super::AuthorityFix;

/// A frame: 9-byte head + payload.
fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let mut out = BytesMut::new();
    put_head(&mut out, payload.len(), kind, flags, stream);
    out.extend_from_slice(payload);
    out.to_vec()
}

/// Runs `input` through the wrapper, reading in `read_size` pieces.
async fn fix(input: Vec<u8>, read_size: usize) -> io::Result<Vec<u8>> {
    let mut w = AuthorityFix::new(&input[..]);
    let mut out = Vec::new();
    let mut buf = vec![0u8; read_size];
    loop {
        let n = w.read(&mut buf).await?;
        if n == 0 {
            return Ok(out);
        }
        out.extend_from_slice(&buf[..n]);
    }
}

/// Splits a server-bound byte stream (after the preface) into frames.
fn frames(mut b: &[u8]) -> Vec<(u8, u8, u32, Vec<u8>)> {
    let mut v = Vec::new();
    while !b.is_empty() {
        let len = (usize::from(b[0]) << 16) | (usize::from(b[1]) << 8) | usize::from(b[2]);
        let stream = u32::from_be_bytes([b[5], b[6], b[7], b[8]]);
        v.push((b[3], b[4], stream, b[9..9 + len].to_vec()));
        b = &b[9 + len..];
    }
    v
}

/// Decodes header blocks the way h2 would see them: a decoder whose table we also check
/// stays unused (all our output is literal, never indexed).
fn decode_all(out: &[u8]) -> Vec<Vec<(Vec<u8>, Vec<u8>)>> {
    assert_eq!(&out[..PREFACE.len()], PREFACE);
    let mut dec = loona_hpack::Decoder::new();
    dec.set_max_table_size(0);
    let mut lists = Vec::new();
    let mut block = Vec::new();
    for (kind, flags, _, mut payload) in frames(&out[PREFACE.len()..]) {
        match kind {
            HEADERS => {
                if flags & PRIORITY != 0 {
                    payload.drain(..5);
                }
                assert_eq!(flags & PADDED, 0, "we never emit padding");
                block = payload;
            }
            CONTINUATION => block.extend_from_slice(&payload),
            _ => continue,
        }
        if flags & END_HEADERS != 0 {
            lists.push(dec.decode(&block).expect("h2 can decode what we emit"));
        }
    }
    lists
}

fn request(authority: &str) -> Vec<(Vec<u8>, Vec<u8>)> {
    [
        (":method", "POST"),
        (":scheme", "http"),
        (":path", "/csi.v1.Identity/Probe"),
        (":authority", authority),
        ("content-type", "application/grpc"),
        ("te", "trailers"),
        (
            "user-agent",
            "grpc-python/1.85.1 grpc-c/52.0.0 (linux; chttp2)",
        ),
    ]
    .iter()
    .map(|(n, v)| (n.as_bytes().to_vec(), v.as_bytes().to_vec()))
    .collect()
}

fn with_authority(list: &[(Vec<u8>, Vec<u8>)], authority: &str) -> Vec<(Vec<u8>, Vec<u8>)> {
    list.iter()
        .map(|(n, v)| {
            if n == b":authority" {
                (n.clone(), authority.as_bytes().to_vec())
            } else {
                (n.clone(), v.clone())
            }
        })
        .collect()
}

/// The client side: loona's encoder indexes into its dynamic table, as grpc clients do, so
/// the second request refers back to entries of the first.
fn client_stream(requests: &[Vec<(Vec<u8>, Vec<u8>)>]) -> Vec<u8> {
    let mut enc = loona_hpack::Encoder::new();
    let mut input = PREFACE.to_vec();
    input.extend(frame(0x4, 0, 0, &[])); // SETTINGS
    for (i, req) in requests.iter().enumerate() {
        let stream = 1 + 2 * i as u32;
        let block = enc.encode(req.iter().map(|(n, v)| (&n[..], &v[..])));
        input.extend(frame(HEADERS, END_HEADERS, stream, &block));
        input.extend(frame(0x0, END_STREAM, stream, &[0, 0, 0, 0, 0])); // DATA
    }
    input
}

#[tokio::test]
async fn replaces_unparsable_authorities_and_keeps_the_rest() {
    for bad in [
        "%2Ftmp%2Fcsi.sock",
        "/var/lib/kubelet/plugins/x/csi.sock",
        "",
    ] {
        let reqs = vec![request(bad), request(bad), request("localhost")];
        for read_size in [1, 7, 4096] {
            let out = fix(client_stream(&reqs), read_size).await.unwrap();
            let lists = decode_all(&out);
            assert_eq!(lists.len(), 3, "{bad:?}");
            for list in &lists {
                assert_eq!(list, &with_authority(&reqs[0], "localhost"), "{bad:?}");
            }
        }
    }
}

#[tokio::test]
async fn keeps_a_valid_authority_and_copies_other_frames() {
    let reqs = vec![request("csi.example:1234")];
    let input = client_stream(&reqs);
    let out = fix(input.clone(), 3).await.unwrap();
    assert_eq!(decode_all(&out), reqs);
    let (fi, fo) = (
        frames(&input[PREFACE.len()..]),
        frames(&out[PREFACE.len()..]),
    );
    assert_eq!(fi.len(), fo.len());
    for (a, b) in fi.iter().zip(&fo) {
        if a.0 != HEADERS {
            assert_eq!(a, b, "a non-header frame is copied byte for byte");
        }
    }
}

#[tokio::test]
async fn drops_padding_keeps_priority_and_joins_continuations() {
    let mut enc = loona_hpack::Encoder::new();
    let block = enc.encode(request("%2Fcsi.sock").iter().map(|(n, v)| (&n[..], &v[..])));
    let (a, b) = block.split_at(block.len() / 2);
    let mut payload = vec![3u8]; // pad length
    payload.extend_from_slice(&[0x80, 0, 0, 0, 200]); // exclusive dependency on 0, weight 200
    payload.extend_from_slice(a);
    payload.extend_from_slice(&[0, 0, 0]);
    let mut input = PREFACE.to_vec();
    input.extend(frame(HEADERS, END_STREAM | PADDED | PRIORITY, 5, &payload));
    input.extend(frame(CONTINUATION, END_HEADERS, 5, b));
    let out = fix(input, 4096).await.unwrap();
    let fo = frames(&out[PREFACE.len()..]);
    assert_eq!(fo.len(), 1);
    let (kind, flags, stream, payload) = &fo[0];
    assert_eq!(
        (*kind, *flags, *stream),
        (HEADERS, END_STREAM | PRIORITY | END_HEADERS, 5)
    );
    assert_eq!(&payload[..5], &[0x80, 0, 0, 0, 200]);
    assert_eq!(
        decode_all(&out),
        vec![with_authority(&request("x"), "localhost")]
    );
}

#[tokio::test]
async fn splits_a_large_block_into_continuations() {
    let mut req = request("%2Fcsi.sock");
    req.push((b"x-big".to_vec(), vec![b'a'; 40_000]));
    let out = fix(client_stream(&[req.clone()]), 4096).await.unwrap();
    let kinds: Vec<_> = frames(&out[PREFACE.len()..])
        .iter()
        .map(|f| (f.0, f.1 & END_HEADERS, f.3.len() <= OUT_FRAME))
        .collect();
    // SETTINGS, then the block in three frames, then DATA.
    assert_eq!(
        kinds[1..4],
        [
            (HEADERS, 0, true),
            (CONTINUATION, 0, true),
            (CONTINUATION, END_HEADERS, true)
        ]
    );
    assert_eq!(decode_all(&out), vec![with_authority(&req, "localhost")]);
}

#[tokio::test]
async fn passes_anything_but_http2_through() {
    let input = b"GET / HTTP/1.1\r\nHost: /tmp/x.sock\r\n\r\n".to_vec();
    assert_eq!(fix(input.clone(), 5).await.unwrap(), input);
}

#[tokio::test]
async fn refuses_broken_header_blocks() {
    // An interrupted block (RFC 9113 §6.10), and HPACK that does not decode.
    let mut input = PREFACE.to_vec();
    input.extend(frame(HEADERS, 0, 1, &[0x82]));
    input.extend(frame(0x0, 0, 1, &[]));
    let err = fix(input, 4096).await.unwrap_err();
    assert!(err.to_string().contains("interrupted"), "{err}");
    let mut input = PREFACE.to_vec();
    input.extend(frame(HEADERS, END_HEADERS, 1, &[0xff, 0xff, 0xff, 0xff]));
    let err = fix(input, 4096).await.unwrap_err();
    assert!(err.to_string().contains("HPACK"), "{err}");
    // A header list that would expand past the cap (a table entry referenced over and over).
    let mut block = vec![0x40, 0x01, b'x', 0x7f, 0xa1, 0x1e]; // x: 4000-byte value, indexed
    block.extend(std::iter::repeat_n(b'v', 4000));
    block.extend(std::iter::repeat_n(0xbe, 300)); // index 62, 300 times
    let mut input = PREFACE.to_vec();
    input.extend(frame(HEADERS, END_HEADERS, 1, &block));
    let err = fix(input, 4096).await.unwrap_err();
    assert!(err.to_string().contains("1 MiB"), "{err}");
}
