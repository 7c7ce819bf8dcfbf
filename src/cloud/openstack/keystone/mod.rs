//! Keystone v3 tokens: fetched on first use, shared by every request of the cloud, renewed
//! shortly before they expire, and dropped when a service answers 401. Fetching is
//! single-flight: whoever needs a token while one is being fetched waits for that one, so a
//! storm of RPCs costs one Keystone request. New credentials (a rotated cloud.conf) are used
//! for the next token, fetched at the next call; until Keystone accepts them the current token
//! keeps serving while it is valid, so a typo in the new Secret does not stop provisioning.

#[cfg(test)]
mod tests;

mod tokens;
pub use tokens::*;
