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
//! Why this is safe is in docs/GRPC.md.

mod fix;
mod frames;
mod stream;
#[cfg(test)]
mod tests;

pub use fix::AuthorityFix;
