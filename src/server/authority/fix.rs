//! The rewriting itself: `AuthorityFix` follows the client's byte stream frame by frame and
//! re-encodes each header block, with an unparsable `:authority` as `localhost`.

use std::borrow::Cow;
use std::io;

use bytes::{Buf, BytesMut};
use tonic::codegen::http::uri::Authority;

use super::frames::{
    bad, encode_literal, open_block, put_head, Block, CONTINUATION, END_HEADERS, END_STREAM,
    FRAME_HEAD, HEADERS, OUT_FRAME, PREFACE, PRIORITY,
};

/// The HPACK table size the client's encoder may use: HPACK's default, because h2 (as tonic
/// and hyper configure it) never announces SETTINGS_HEADER_TABLE_SIZE.
const CLIENT_TABLE_SIZE: usize = 4096;
/// Bounds on one header block (encoded, and decoded): h2's own list limit (16 KiB in hyper)
/// is far lower; these only cap our memory.
const MAX_BLOCK: usize = 1 << 20;
const MAX_DECODED: usize = 1 << 20;
/// What grpc-go and Kubernetes send on a Unix socket.
const UDS_AUTHORITY: &[u8] = b"localhost";

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

/// Wraps the read side of one accepted connection; writes pass through untouched.
pub struct AuthorityFix<S> {
    pub(super) inner: S,
    /// Bytes read from the client, not yet handled.
    pub(super) raw: BytesMut,
    /// Bytes ready for h2.
    pub(super) out: BytesMut,
    state: State,
    block: Option<Block>,
    hpack: loona_hpack::Decoder<'static>,
    pub(super) eof: bool,
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
    pub(super) fn step(&mut self) -> io::Result<bool> {
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
