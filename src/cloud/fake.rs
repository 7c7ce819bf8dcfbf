//! In-memory fake of the cloud port for fast tests (built by the controller work).
