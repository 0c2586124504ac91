//! Forward error correction codecs: GF(2^8) arithmetic and Reed-Solomon codes (003 §4), XOR
//! parity (004 §III.D).
//!
//! Contract: pure functions over caller-provided buffers, no I/O, no allocation on the encode
//! and decode paths (tables are built when a codec is made), no panics on any received bytes.
//! The Reed-Solomon FEC *service* that frames packets into 255-byte blocks lives in
//! [`crate::service::rs_fec`]; this module only knows codewords.

mod decode;
pub mod gf256;
pub mod rs;
mod simd;
pub mod xor;

pub use rs::{RsCodec, RsError, RsKernel};
