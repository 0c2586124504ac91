//! Wire formats of the multi-service link layer (004 §IV): the link frame with its optional
//! service tag and CRC ([`frame`]), the services' headers ([`header`]) and their sequence
//! number spaces ([`seq`]). `mslink_link::wire` is this module.
//!
//! Contract: every format here is parsed from untrusted bytes without panicking and emitted
//! byte for byte as documented in its module; unknown codepoints are kept, not rejected.

pub mod frame;
pub mod header;
pub mod seq;

pub use frame::{FrameError, LinkFormat, LinkFrame};
pub use header::{FragPos, Header, HeaderError, HeaderFormat, SeqWidth};
pub use seq::SeqSpace;
