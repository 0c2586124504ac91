//! The two ends of a hop and the two directions between them, as types.
//!
//! Contract. A hop (the in-memory [`crate::hop::Hop`], the emulator's hop, a wireless segment
//! of the simulator) joins a [`Side::Left`] and a [`Side::Right`] end; [`Direction::LeftToRight`]
//! carries what the left side sends to the right side, [`Direction::RightToLeft`] the reverse.
//! Pairs of per-side or per-direction values stay plain arrays `[T; 2]`, indexed by either
//! type (`counts[Direction::LeftToRight]`), so a side can no longer be passed where a
//! direction is meant, or an index out of range where either is. [`Side::index`] and
//! [`Direction::index`] are 0 and 1 in that order, as the files and tables that number them.

use std::ops::{Index, IndexMut};

/// One end of a hop.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Side {
    /// Side 0 (the left namespace of the emulator; the end nearer the sender of a segment).
    Left,
    /// Side 1.
    Right,
}

/// One way across a hop.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Direction {
    /// Direction 0: from the left side to the right side.
    LeftToRight,
    /// Direction 1: from the right side to the left side.
    RightToLeft,
}

impl Side {
    /// Both sides, left first.
    pub const BOTH: [Side; 2] = [Side::Left, Side::Right];

    /// 0 for the left side, 1 for the right.
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The side with this index (0 or 1), if any.
    pub const fn from_index(i: usize) -> Option<Side> {
        match i {
            0 => Some(Side::Left),
            1 => Some(Side::Right),
            _ => None,
        }
    }

    /// The other side.
    pub const fn other(self) -> Side {
        match self {
            Side::Left => Side::Right,
            Side::Right => Side::Left,
        }
    }

    /// The direction this side sends on.
    pub const fn sending(self) -> Direction {
        match self {
            Side::Left => Direction::LeftToRight,
            Side::Right => Direction::RightToLeft,
        }
    }

    /// The direction this side receives from.
    pub const fn receiving(self) -> Direction {
        self.other().sending()
    }
}

impl Direction {
    /// Both directions, left to right first.
    pub const BOTH: [Direction; 2] = [Direction::LeftToRight, Direction::RightToLeft];

    /// 0 for left to right, 1 for right to left.
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The direction with this index (0 or 1), if any.
    pub const fn from_index(i: usize) -> Option<Direction> {
        match i {
            0 => Some(Direction::LeftToRight),
            1 => Some(Direction::RightToLeft),
            _ => None,
        }
    }

    /// The side that sends on this direction.
    pub const fn from(self) -> Side {
        match self {
            Direction::LeftToRight => Side::Left,
            Direction::RightToLeft => Side::Right,
        }
    }

    /// The side that receives from this direction.
    pub const fn to(self) -> Side {
        self.from().other()
    }

    /// The other direction.
    pub const fn reverse(self) -> Direction {
        self.to().sending()
    }
}

impl std::fmt::Display for Side {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Side::Left => "left",
            Side::Right => "right",
        })
    }
}

impl std::fmt::Display for Direction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Direction::LeftToRight => "left to right",
            Direction::RightToLeft => "right to left",
        })
    }
}

macro_rules! index_pairs {
    ($t:ty) => {
        impl<T> Index<$t> for [T; 2] {
            type Output = T;
            fn index(&self, i: $t) -> &T {
                &self[i.index()]
            }
        }
        impl<T> IndexMut<$t> for [T; 2] {
            fn index_mut(&mut self, i: $t) -> &mut T {
                &mut self[i.index()]
            }
        }
    };
}

index_pairs!(Side);
index_pairs!(Direction);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sides_and_directions_agree() {
        for s in Side::BOTH {
            assert_eq!(s.sending().from(), s);
            assert_eq!(s.receiving().to(), s);
            assert_eq!(s.other().other(), s);
            assert_eq!(Side::from_index(s.index()), Some(s));
        }
        for d in Direction::BOTH {
            assert_eq!(d.reverse().reverse(), d);
            assert_eq!(d.from().sending(), d);
            assert_eq!(Direction::from_index(d.index()), Some(d));
        }
        assert_eq!(Side::from_index(2), None);
        let mut pair = [10, 20];
        pair[Direction::RightToLeft] += 1;
        assert_eq!((pair[Side::Left], pair[Side::Right]), (10, 21));
    }
}
