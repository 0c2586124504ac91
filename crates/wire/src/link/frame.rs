//! The multi-service frame: the service tag, the service's bytes, and an optional CRC-32.
//!
//! Contract: on a link shared by several services every frame starts with a one-byte service
//! tag (004 §IV: the scheduler "tags each frame with a service number"); this is the single
//! demultiplexing point of 002's DAA, in the lowest header. A link with one service omits it, so
//! each scheme costs exactly its own header. An optional CRC-32 (IEEE, as Ethernet) trails the
//! frame and covers tag and service bytes; it is how a receiver refuses frames the channel
//! corrupted. Parsing is a zero-copy view and never panics.
//!
//! ```text
//! | tag (1, if tagged) | service header + payload ... | CRC-32 (4, big-endian, if crc) |
//! ```

/// Link-wide framing options, agreed by both ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct LinkFormat {
    /// A one-byte service tag leads each frame (more than one service shares the link).
    pub tagged: bool,
    /// A CRC-32 trails each frame.
    pub crc: bool,
}

/// Why a link frame was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    /// Shorter than tag plus CRC.
    #[error("frame of {len} bytes is too short for its framing ({need} bytes)")]
    Truncated {
        /// Bytes present.
        len: usize,
        /// Bytes framing needs.
        need: usize,
    },
    /// The CRC does not match: the channel corrupted the frame.
    #[error("CRC-32 mismatch")]
    BadCrc,
}

/// A zero-copy view of a received link frame.
#[derive(Clone, Copy, Debug)]
pub struct LinkFrame<T: AsRef<[u8]>> {
    buffer: T,
    format: LinkFormat,
}

impl LinkFormat {
    /// Bytes of framing around the service bytes.
    pub const fn overhead(&self) -> usize {
        (self.tagged as usize) + if self.crc { 4 } else { 0 }
    }

    /// Wraps `service_bytes` (already in `buf[start..]`) with tag and CRC, in place.
    /// `buf[start - 1]` must be reserved for the tag when tagged; returns the frame range.
    pub fn seal(&self, tag: u8, buf: &mut Vec<u8>, start: usize) -> core::ops::Range<usize> {
        let begin = if self.tagged {
            assert!(start >= 1, "no room reserved for the service tag");
            buf[start - 1] = tag;
            start - 1
        } else {
            start
        };
        if self.crc {
            let crc = crc32fast::hash(&buf[begin..]);
            buf.extend_from_slice(&crc.to_be_bytes());
        }
        begin..buf.len()
    }
}

impl<T: AsRef<[u8]>> LinkFrame<T> {
    /// Checks the framing (length and CRC) and returns a view.
    pub fn new_checked(buffer: T, format: LinkFormat) -> Result<Self, FrameError> {
        let b = buffer.as_ref();
        let need = format.overhead().max(1);
        if b.len() < need {
            return Err(FrameError::Truncated { len: b.len(), need });
        }
        if format.crc {
            let (body, tail) = b.split_at(b.len() - 4);
            let want = u32::from_be_bytes([tail[0], tail[1], tail[2], tail[3]]);
            if crc32fast::hash(body) != want {
                return Err(FrameError::BadCrc);
            }
        }
        Ok(LinkFrame { buffer, format })
    }
    /// The service tag (0 on an untagged link).
    pub fn tag(&self) -> u8 {
        if self.format.tagged {
            self.buffer.as_ref()[0]
        } else {
            0
        }
    }
    /// The service header and payload.
    pub fn service_bytes(&self) -> &[u8] {
        let b = self.buffer.as_ref();
        let start = self.format.tagged as usize;
        let end = b.len() - if self.format.crc { 4 } else { 0 };
        &b[start..end]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn seal_and_parse_fixture() {
        let f = LinkFormat {
            tagged: true,
            crc: true,
        };
        let mut buf = vec![0u8, 0x01, 0x02];
        let r = f.seal(7, &mut buf, 1);
        assert_eq!(r, 0..7);
        // CRC-32/IEEE of [7, 1, 2]
        assert_eq!(&buf[3..], &crc32fast::hash(&[7, 1, 2]).to_be_bytes());
        let v = LinkFrame::new_checked(&buf[..], f).unwrap();
        assert_eq!(v.tag(), 7);
        assert_eq!(v.service_bytes(), &[1, 2]);
        let mut bad = buf.clone();
        bad[1] ^= 0x10;
        assert_eq!(
            LinkFrame::new_checked(&bad[..], f).unwrap_err(),
            FrameError::BadCrc
        );
        assert!(matches!(
            LinkFrame::new_checked(&buf[..3], f),
            Err(FrameError::Truncated { .. }) | Err(FrameError::BadCrc)
        ));
    }

    #[test]
    fn untagged_without_crc_is_transparent() {
        let f = LinkFormat::default();
        let v = LinkFrame::new_checked(&[9u8, 8][..], f).unwrap();
        assert_eq!((v.tag(), v.service_bytes()), (0, &[9u8, 8][..]));
        assert!(LinkFrame::new_checked(&[][..], f).is_err());
    }

    proptest! {
        #[test]
        fn parse_never_panics(tagged: bool, crc: bool, bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let f = LinkFormat { tagged, crc };
            if let Ok(v) = LinkFrame::new_checked(&bytes[..], f) {
                prop_assert_eq!(v.service_bytes().len() + f.overhead(), bytes.len());
            }
        }

        #[test]
        fn any_single_bit_flip_is_caught_by_crc(tag: u8, body in proptest::collection::vec(any::<u8>(), 1..200), bit in any::<usize>()) {
            let f = LinkFormat { tagged: true, crc: true };
            let mut buf = vec![0u8];
            buf.extend_from_slice(&body);
            f.seal(tag, &mut buf, 1);
            let i = bit % (buf.len() * 8);
            buf[i / 8] ^= 1 << (i % 8);
            prop_assert!(LinkFrame::new_checked(&buf[..], f).is_err());
        }
    }
}
