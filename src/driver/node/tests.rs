//! Unit tests of the node core on the in-memory fake host (no root needed).
