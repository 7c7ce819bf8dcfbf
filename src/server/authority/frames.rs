//! HTTP/2 framing and HPACK literals for [`super::AuthorityFix`]: the frame types and flags
//! it reads, a header block as it collects one, and the bytes it writes.

use std::io;

use bytes::{Buf, BufMut, BytesMut};

/// The client connection preface (RFC 9113 §3.4).
pub(super) const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
pub(super) const FRAME_HEAD: usize = 9;
pub(super) const HEADERS: u8 = 0x1;
pub(super) const CONTINUATION: u8 = 0x9;
pub(super) const END_STREAM: u8 = 0x1;
pub(super) const END_HEADERS: u8 = 0x4;
pub(super) const PADDED: u8 = 0x8;
pub(super) const PRIORITY: u8 = 0x20;
/// Frames we emit stay within the smallest SETTINGS_MAX_FRAME_SIZE a peer may announce.
pub(super) const OUT_FRAME: usize = 16_384;

/// A header block being collected (HEADERS, then CONTINUATION until END_HEADERS).
pub(super) struct Block {
    pub(super) stream: u32,
    pub(super) flags: u8,
    pub(super) priority: Option<[u8; 5]>,
    pub(super) fragment: BytesMut,
}

/// The header block of a HEADERS frame's payload: padding and priority taken off.
pub(super) fn open_block(payload: &mut BytesMut, flags: u8, stream: u32) -> io::Result<Block> {
    if flags & PADDED != 0 {
        let pad = usize::from(*payload.first().ok_or_else(|| bad("a HEADERS frame"))?);
        if pad >= payload.len() {
            return Err(bad("a HEADERS frame with more padding than payload"));
        }
        payload.advance(1);
        payload.truncate(payload.len() - pad);
    }
    let priority = if flags & PRIORITY != 0 {
        if payload.len() < 5 {
            return Err(bad("a HEADERS frame too short for its priority"));
        }
        let mut p = [0u8; 5];
        p.copy_from_slice(&payload.split_to(5));
        Some(p)
    } else {
        None
    };
    Ok(Block {
        stream,
        flags,
        priority,
        fragment: BytesMut::new(),
    })
}

pub(super) fn put_head(out: &mut BytesMut, len: usize, kind: u8, flags: u8, stream: u32) {
    out.put_uint(len as u64, 3);
    out.put_u8(kind);
    out.put_u8(flags);
    out.put_u32(stream);
}

/// RFC 7541 §6.2.3: literal header field never indexed, new name; plain (not Huffman) strings.
pub(super) fn encode_literal(out: &mut BytesMut, name: &[u8], value: &[u8]) {
    out.put_u8(0x10);
    encode_string(out, name);
    encode_string(out, value);
}

/// RFC 7541 §5.2 with §5.1's integer (7-bit prefix, H = 0).
fn encode_string(out: &mut BytesMut, s: &[u8]) {
    let mut n = s.len();
    if n < 0x7f {
        out.put_u8(n as u8);
    } else {
        out.put_u8(0x7f);
        n -= 0x7f;
        while n >= 0x80 {
            out.put_u8((n as u8 & 0x7f) | 0x80);
            n >>= 7;
        }
        out.put_u8(n as u8);
    }
    out.extend_from_slice(s);
}

pub(super) fn bad(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("HTTP/2 from the client: {what}"),
    )
}
