//! Unix-socket connections: an `:authority` that is not an RFC 3986 authority becomes
//! `localhost` before h2 sees it.
//!
//! On a Unix socket gRPC clients disagree on `:authority`: grpc-go sends `localhost`, grpc
//! C-core (Python, Ruby, C++) the percent-encoded socket path, grpc-java and grpc-swift the
//! raw path. h2 resets every stream whose authority does not parse (hyperium/h2#487, open), and
//! neither h2, hyper nor tonic has an option for it. So the read side of each accepted Unix
//! connection runs through [`AuthorityFix`]: it frames the client's HTTP/2 byte stream, decodes
//! every header block with its own HPACK decoder (the state of the client's encoder), swaps an
//! unparsable `:authority` for `localhost`, and hands h2 the block re-encoded with literals only
//! (never indexed, so h2's HPACK table stays empty and in step). Every other byte is copied.
//! Why this is safe is in docs/ARCHITECTURE.md ("gRPC on a Unix socket").

use std::borrow::Cow;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Buf, BufMut, BytesMut};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tonic::codegen::http::uri::Authority;

/// The client connection preface (RFC 9113 §3.4).
const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
const FRAME_HEAD: usize = 9;
const HEADERS: u8 = 0x1;
const CONTINUATION: u8 = 0x9;
const END_STREAM: u8 = 0x1;
const END_HEADERS: u8 = 0x4;
const PADDED: u8 = 0x8;
const PRIORITY: u8 = 0x20;
/// The HPACK table size the client's encoder may use: HPACK's default, because h2 (as tonic
/// and hyper configure it) never announces SETTINGS_HEADER_TABLE_SIZE.
const CLIENT_TABLE_SIZE: usize = 4096;
/// Frames we emit stay within the smallest SETTINGS_MAX_FRAME_SIZE a peer may announce.
const OUT_FRAME: usize = 16_384;
/// Bounds on one header block (encoded, and decoded): h2's own list limit (16 KiB in hyper)
/// is far lower; these only cap our memory.
const MAX_BLOCK: usize = 1 << 20;
const MAX_DECODED: usize = 1 << 20;
/// What grpc-go and Kubernetes send on a Unix socket.
const UDS_AUTHORITY: &[u8] = b"localhost";
const READ_CHUNK: usize = 16 * 1024;

enum State {
    /// Matching the preface; this many bytes matched so far.
    Preface(usize),
    /// Between frames.
    Head,
    /// Copying the rest of a frame that carries no header block.
    Copy(usize),
    /// Collecting the payload of a HEADERS or CONTINUATION frame.
    Payload {
        len: usize,
        kind: u8,
        flags: u8,
        stream: u32,
    },
    /// Not an HTTP/2 client preface: everything is copied for the server to judge.
    Raw,
}

/// A header block being collected (HEADERS, then CONTINUATION until END_HEADERS).
struct Block {
    stream: u32,
    flags: u8,
    priority: Option<[u8; 5]>,
    fragment: BytesMut,
}

/// Wraps the read side of one accepted connection; writes pass through untouched.
pub struct AuthorityFix<S> {
    inner: S,
    raw: BytesMut,
    out: BytesMut,
    state: State,
    block: Option<Block>,
    hpack: loona_hpack::Decoder<'static>,
    eof: bool,
}

impl<S> AuthorityFix<S> {
    pub fn new(inner: S) -> Self {
        let mut hpack = loona_hpack::Decoder::new();
        hpack.set_max_allowed_table_size(CLIENT_TABLE_SIZE);
        Self {
            inner,
            raw: BytesMut::new(),
            out: BytesMut::new(),
            state: State::Preface(0),
            block: None,
            hpack,
            eof: false,
        }
    }

    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// Moves what can be moved from `raw` to `out`; false when more input is needed.
    fn step(&mut self) -> io::Result<bool> {
        match self.state {
            State::Preface(n) => {
                let take = (PREFACE.len() - n).min(self.raw.len());
                if take == 0 {
                    return Ok(false);
                }
                if self.raw[..take] != PREFACE[n..n + take] {
                    self.state = State::Raw;
                    return Ok(true);
                }
                self.out.extend_from_slice(&self.raw.split_to(take));
                self.state = if n + take == PREFACE.len() {
                    State::Head
                } else {
                    State::Preface(n + take)
                };
                Ok(true)
            }
            State::Raw => {
                if self.raw.is_empty() {
                    return Ok(false);
                }
                let all = self.raw.split();
                self.out.extend_from_slice(&all);
                Ok(true)
            }
            State::Copy(left) => {
                if left == 0 {
                    self.state = State::Head;
                    return Ok(true);
                }
                let take = left.min(self.raw.len());
                if take == 0 {
                    return Ok(false);
                }
                self.out.extend_from_slice(&self.raw.split_to(take));
                self.state = State::Copy(left - take);
                Ok(true)
            }
            State::Head => {
                if self.raw.len() < FRAME_HEAD {
                    return Ok(false);
                }
                let h = &self.raw[..FRAME_HEAD];
                let len = (usize::from(h[0]) << 16) | (usize::from(h[1]) << 8) | usize::from(h[2]);
                let (kind, flags) = (h[3], h[4]);
                let stream = u32::from_be_bytes([h[5], h[6], h[7], h[8]]) & 0x7fff_ffff;
                let in_block = self.block.as_ref().map(|b| b.stream);
                let is_block = kind == HEADERS || (kind == CONTINUATION && in_block.is_some());
                if let Some(open) = in_block {
                    if kind != CONTINUATION || stream != open {
                        // RFC 9113 §6.10: a connection error; h2 would say PROTOCOL_ERROR.
                        return Err(bad("a header block was interrupted by another frame"));
                    }
                }
                if is_block {
                    self.raw.advance(FRAME_HEAD);
                    self.state = State::Payload {
                        len,
                        kind,
                        flags,
                        stream,
                    };
                } else {
                    self.out.extend_from_slice(&self.raw.split_to(FRAME_HEAD));
                    self.state = State::Copy(len);
                }
                Ok(true)
            }
            State::Payload {
                len,
                kind,
                flags,
                stream,
            } => {
                let held = self.block.as_ref().map_or(0, |b| b.fragment.len());
                if held + len > MAX_BLOCK {
                    return Err(bad("a header block of more than 1 MiB"));
                }
                if self.raw.len() < len {
                    return Ok(false);
                }
                let mut payload = self.raw.split_to(len);
                if kind == HEADERS {
                    self.block = Some(open_block(&mut payload, flags, stream)?);
                }
                let block = self.block.as_mut().expect("a header block is open");
                block.fragment.extend_from_slice(&payload);
                if flags & END_HEADERS != 0 {
                    let block = self.block.take().expect("a header block is open");
                    self.finish(block)?;
                }
                self.state = State::Head;
                Ok(true)
            }
        }
    }

    /// Decodes a complete header block and emits it re-encoded as HEADERS (+ CONTINUATION).
    fn finish(&mut self, block: Block) -> io::Result<()> {
        let mut encoded = BytesMut::with_capacity(block.fragment.len() + 64);
        let mut decoded = 0usize;
        let mut rewritten = None;
        self.hpack
            .decode_with_cb(&block.fragment, |name: Cow<[u8]>, value: Cow<[u8]>| {
                decoded += name.len() + value.len() + 32;
                if decoded > MAX_DECODED {
                    return;
                }
                let value = if &*name == b":authority" && Authority::try_from(&*value).is_err() {
                    rewritten = Some(value.len());
                    UDS_AUTHORITY
                } else {
                    &*value
                };
                encode_literal(&mut encoded, &name, value);
            })
            .map_err(|e| bad(&format!("the client's HPACK header block: {e}")))?;
        if decoded > MAX_DECODED {
            return Err(bad("a header list of more than 1 MiB"));
        }
        if let Some(len) = rewritten {
            tracing::trace!(
                stream = block.stream,
                len,
                "unparsable :authority replaced by localhost"
            );
        }
        let prio: &[u8] = block.priority.as_ref().map_or(&[], |p| &p[..]);
        let first = encoded.len().min(OUT_FRAME - prio.len());
        let rest = encoded.split_off(first);
        let mut flags = block.flags & (END_STREAM | PRIORITY);
        if rest.is_empty() {
            flags |= END_HEADERS;
        }
        put_head(
            &mut self.out,
            prio.len() + first,
            HEADERS,
            flags,
            block.stream,
        );
        self.out.extend_from_slice(prio);
        self.out.extend_from_slice(&encoded);
        let mut chunks = rest.chunks(OUT_FRAME).peekable();
        while let Some(chunk) = chunks.next() {
            let end = if chunks.peek().is_none() {
                END_HEADERS
            } else {
                0
            };
            put_head(&mut self.out, chunk.len(), CONTINUATION, end, block.stream);
            self.out.extend_from_slice(chunk);
        }
        Ok(())
    }
}

/// The header block of a HEADERS frame's payload: padding and priority taken off.
fn open_block(payload: &mut BytesMut, flags: u8, stream: u32) -> io::Result<Block> {
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

fn put_head(out: &mut BytesMut, len: usize, kind: u8, flags: u8, stream: u32) {
    out.put_uint(len as u64, 3);
    out.put_u8(kind);
    out.put_u8(flags);
    out.put_u32(stream);
}

/// RFC 7541 §6.2.3: literal header field never indexed, new name; plain (not Huffman) strings.
fn encode_literal(out: &mut BytesMut, name: &[u8], value: &[u8]) {
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

fn bad(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("HTTP/2 from the client: {what}"),
    )
}

impl<S: AsyncRead + Unpin> AsyncRead for AuthorityFix<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            if !this.out.is_empty() {
                let n = this.out.len().min(buf.remaining());
                buf.put_slice(&this.out.split_to(n));
                return Poll::Ready(Ok(()));
            }
            if this.eof {
                // A frame cut short: hand over what is left so h2 sees the truncation.
                if !this.raw.is_empty() {
                    let rest = this.raw.split();
                    this.out.extend_from_slice(&rest);
                    continue;
                }
                return Poll::Ready(Ok(()));
            }
            if this.step()? {
                continue;
            }
            let mut chunk = [0u8; READ_CHUNK];
            let mut rb = ReadBuf::new(&mut chunk);
            match Pin::new(&mut this.inner).poll_read(cx, &mut rb) {
                Poll::Ready(Ok(())) => {
                    if rb.filled().is_empty() {
                        this.eof = true;
                    } else {
                        this.raw.extend_from_slice(rb.filled());
                    }
                }
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for AuthorityFix<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

impl tonic::transport::server::Connected for AuthorityFix<tokio::net::UnixStream> {
    type ConnectInfo = <tokio::net::UnixStream as tonic::transport::server::Connected>::ConnectInfo;

    fn connect_info(&self) -> Self::ConnectInfo {
        self.inner.connect_info()
    }
}

#[cfg(test)]
#[path = "authority_tests.rs"]
mod tests;
