//! Wire formats of the multi-service link layer.
//!
//! Contract: every format here is parsed from untrusted bytes without panicking and emitted
//! byte for byte as documented in its module; unknown codepoints are kept, not rejected.

pub mod frame;
pub mod header;
pub mod seq;

pub use frame::{FrameError, LinkFormat, LinkFrame};
pub use header::{FragPos, Header, HeaderError, HeaderFormat, SeqWidth};
pub use seq::SeqSpace;
