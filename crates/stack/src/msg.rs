//! x-kernel message objects (002 §4.1): user data plus protocol headers, with headers pushed on
//! the way down and popped on the way up **without copying the payload**.
//!
//! Contract: a [`Message`] is one contiguous buffer with a movable front (`head`) and back
//! (`tail`). [`Message::push`] claims `n` bytes of headroom in front of the current data and
//! returns them for the header to be written; [`Message::pop`] consumes `n` bytes from the front
//! and returns them. Neither moves the payload; only when the headroom runs out does `push`
//! grow the buffer at the front (one copy, counted in [`Message::regrows`]). [`Message::truncate`]
//! shortens the data from the back (link-layer padding, IP total length). No method panics on
//! lengths supplied by a peer: `pop` and `peek` return `None` when too few bytes are present.

/// Headroom reserved in front of user data by [`Message::with_headroom`]: enough for Ethernet with
/// the DAA extension (24), IPv4 with options (60) and UDP (8), rounded up.
pub const DEFAULT_HEADROOM: usize = 96;

/// A message: data plus headroom for headers, all in one buffer.
#[derive(Clone, Debug, Default)]
pub struct Message {
    buf: Vec<u8>,
    head: usize,
    tail: usize,
    regrows: u32,
}

impl Message {
    /// A message holding a copy of `data` with [`DEFAULT_HEADROOM`] bytes free in front (the one
    /// copy from the application buffer into the stack, as in a conventional send path).
    pub fn with_headroom(data: &[u8]) -> Self {
        Self::with_headroom_n(data, DEFAULT_HEADROOM)
    }

    /// Like [`Message::with_headroom`] with `headroom` bytes free in front.
    pub fn with_headroom_n(data: &[u8], headroom: usize) -> Self {
        // 64 bytes of tailroom so Ethernet padding never reallocates.
        let mut buf = Vec::with_capacity(headroom + data.len() + 64);
        buf.resize(headroom, 0);
        buf.extend_from_slice(data);
        let tail = buf.len();
        Message {
            buf,
            head: headroom,
            tail,
            regrows: 0,
        }
    }

    /// A received frame: the bytes as the device handed them over, no headroom.
    pub fn from_frame(frame: &[u8]) -> Self {
        Message {
            buf: frame.to_vec(),
            head: 0,
            tail: frame.len(),
            regrows: 0,
        }
    }

    /// The current data (headers not yet popped, plus payload).
    pub fn bytes(&self) -> &[u8] {
        &self.buf[self.head..self.tail]
    }

    /// The current data, mutable.
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        &mut self.buf[self.head..self.tail]
    }

    /// Length of the current data.
    pub fn len(&self) -> usize {
        self.tail - self.head
    }

    /// True when no data is left.
    pub fn is_empty(&self) -> bool {
        self.head == self.tail
    }

    /// Free bytes in front of the data.
    pub fn headroom(&self) -> usize {
        self.head
    }

    /// How many times `push` had to grow the buffer at the front (each one a payload copy).
    pub fn regrows(&self) -> u32 {
        self.regrows
    }

    /// Claims `n` bytes in front of the data for a header and returns them (zeroed only if the
    /// buffer had to grow; the caller writes every byte).
    pub fn push(&mut self, n: usize) -> &mut [u8] {
        if self.head < n {
            let extra = n - self.head + DEFAULT_HEADROOM;
            let mut nb = Vec::with_capacity(self.buf.len() + extra + 64);
            nb.resize(extra, 0);
            nb.extend_from_slice(&self.buf);
            self.buf = nb;
            self.head += extra;
            self.tail += extra;
            self.regrows += 1;
        }
        self.head -= n;
        &mut self.buf[self.head..self.head + n]
    }

    /// Consumes `n` bytes from the front and returns them; `None` (and no change) if fewer are
    /// present.
    pub fn pop(&mut self, n: usize) -> Option<&[u8]> {
        if self.len() < n {
            return None;
        }
        let h = self.head;
        self.head += n;
        Some(&self.buf[h..h + n])
    }

    /// The first `n` bytes without consuming them.
    pub fn peek(&self, n: usize) -> Option<&[u8]> {
        self.bytes().get(..n)
    }

    /// Keeps only the first `len` bytes of the data (no-op if already shorter).
    pub fn truncate(&mut self, len: usize) {
        if len < self.len() {
            self.tail = self.head + len;
        }
    }

    /// Appends `n` zero bytes at the back (link-layer padding).
    pub fn pad(&mut self, n: usize) {
        self.buf.truncate(self.tail);
        self.buf.resize(self.tail + n, 0);
        self.tail += n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_pop_do_not_move_payload() {
        let mut m = Message::with_headroom(b"payload");
        let before = m.bytes().as_ptr();
        m.push(8).copy_from_slice(b"HEADER01");
        m.push(4).copy_from_slice(b"ETH!");
        assert_eq!(m.bytes(), b"ETH!HEADER01payload");
        assert_eq!(m.pop(4).unwrap(), b"ETH!");
        assert_eq!(m.pop(8).unwrap(), b"HEADER01");
        assert_eq!(m.bytes(), b"payload");
        assert_eq!(m.bytes().as_ptr(), before);
        assert_eq!(m.regrows(), 0);
    }

    #[test]
    fn push_past_headroom_grows_once() {
        let mut m = Message::with_headroom_n(b"xy", 2);
        m.push(2).copy_from_slice(b"ab");
        m.push(3).copy_from_slice(b"123");
        assert_eq!(m.bytes(), b"123abxy");
        assert_eq!(m.regrows(), 1);
    }

    #[test]
    fn pop_too_much_is_none_and_harmless() {
        let mut m = Message::from_frame(b"abc");
        assert!(m.pop(4).is_none());
        assert_eq!(m.bytes(), b"abc");
        m.truncate(2);
        assert_eq!(m.bytes(), b"ab");
        m.truncate(10);
        assert_eq!(m.bytes(), b"ab");
        m.pad(2);
        assert_eq!(m.bytes(), b"ab\0\0");
    }
}
