//! Forward error correction codecs used by the FEC services.
//!
//! Contract: pure functions and small codec structs over caller-provided buffers; no I/O, no
//! allocation on the hot path.

pub mod xor;
