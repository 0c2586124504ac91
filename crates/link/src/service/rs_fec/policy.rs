//! Error-control policies of 003 §4: how many RS blocks a frame spans and how much of each
//! block is parity.
//!
//! Contract. A [`Policy`] names one of the paper's four policies; a [`PolicyState`] turns it
//! into the parameters of the next new frame ([`PolicyState::blocks`], [`PolicyState::nsym`])
//! and, for FLEX, adapts them from what the peer's reports say. The static policies ignore
//! feedback:
//!
//! * **BOLD**: 5 blocks, no coding (pure retransmission).
//! * **LIGHT**: 5 blocks, 5% coding: 12 of 255 symbols (4.7%, t = 6).
//! * **ROBUST**: 1 block, 29% coding: 74 of 255 symbols (29.0%, t = 37).
//! * **FLEX**: 1 to 5 blocks, parity 0% to 78% (0 to 198 symbols, t up to 99), adapted
//!   independently, "according to simple heuristics" (003 §4). Ours, all documented on
//!   [`PolicyState::on_report`] and [`PolicyState::on_loss`]:
//!   - parity climbs a ladder of levels ([`FLEX_LADDER`]): up two levels above the one a
//!     frame used when that frame failed to decode, up one level when its worst block needed
//!     more than half of `t`; down one level after `relax_after` consecutive reports of frames
//!     that needed at most a quarter of `t`;
//!   - frame size: one block fewer on each truncation or loss (and on a failure at the top
//!     parity level, where more parity is not possible), one block more after `grow_after`
//!     consecutive frames that arrived whole.
//!
//! Reports arrive about frames sent a while ago, possibly at an older level; raising relative
//! to the level the reported frame used (not the current one) keeps one burst of bad frames
//! from pushing parity up once per frame.

/// Blocks per frame, at most (003 §4: "1 to 5 blocks").
pub const MAX_BLOCKS: u8 = 5;
/// LIGHT's parity: 5% of a 255-symbol block, rounded to an even count (12, t = 6).
pub const LIGHT_NSYM: u8 = 12;
/// ROBUST's parity: 29% of a 255-symbol block (74 symbols, t = 37).
pub const ROBUST_NSYM: u8 = 74;
/// FLEX's largest parity: 78% of a block, rounded down to an even count (198, t = 99).
pub const FLEX_MAX_NSYM: u8 = 198;
/// FLEX's parity levels (symbols per block), from uncoded to [`FLEX_MAX_NSYM`].
pub const FLEX_LADDER: [u8; 12] = [0, 4, 8, 12, 20, 32, 48, 74, 100, 130, 160, FLEX_MAX_NSYM];

/// One of the error-control policies of 003 §4.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Policy {
    /// Maximal frames, no coding.
    Bold,
    /// Maximal frames, 5% coding.
    Light,
    /// Minimal frames, 29% coding.
    Robust,
    /// Adapts frame size and coding from observed errors (003's best policy overall).
    #[default]
    Flex,
}

/// FLEX tuning.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FlexConfig {
    /// Consecutive lightly-corrected reports before parity drops one level.
    pub relax_after: u32,
    /// Consecutive whole frames before the frame grows one block.
    pub grow_after: u32,
    /// Blocks per frame at start.
    pub start_blocks: u8,
    /// Parity level (index into the ladder) at start.
    pub start_level: usize,
}

impl Default for FlexConfig {
    fn default() -> Self {
        FlexConfig {
            relax_after: 8,
            grow_after: 16,
            start_blocks: MAX_BLOCKS,
            // Start as LIGHT does: 12 symbols.
            start_level: 3,
        }
    }
}

/// Outcome of one frame as the sender learns it (from a report, or by inferring a loss).
pub use super::frame::Outcome;

/// A policy with its adaptation state.
#[derive(Clone, Debug)]
pub struct PolicyState {
    policy: Policy,
    flex: FlexConfig,
    level: usize,
    blocks: u8,
    clean_run: u32,
    whole_run: u32,
}

/// Index of the highest ladder level at or below `nsym`.
fn level_of(nsym: u8) -> usize {
    FLEX_LADDER.iter().rposition(|&l| l <= nsym).unwrap_or(0)
}

impl PolicyState {
    /// The starting state of `policy`.
    pub fn new(policy: Policy, flex: FlexConfig) -> Self {
        let (level, blocks) = match policy {
            Policy::Flex => (
                flex.start_level.min(FLEX_LADDER.len() - 1),
                flex.start_blocks.clamp(1, MAX_BLOCKS),
            ),
            _ => (0, MAX_BLOCKS),
        };
        PolicyState {
            policy,
            flex,
            level,
            blocks,
            clean_run: 0,
            whole_run: 0,
        }
    }

    /// The policy.
    pub fn policy(&self) -> Policy {
        self.policy
    }

    /// Blocks per new frame.
    pub fn blocks(&self) -> u8 {
        match self.policy {
            Policy::Bold | Policy::Light => MAX_BLOCKS,
            Policy::Robust => 1,
            Policy::Flex => self.blocks,
        }
    }

    /// Parity symbols per block for the next frame (new or retransmitted).
    pub fn nsym(&self) -> u8 {
        match self.policy {
            Policy::Bold => 0,
            Policy::Light => LIGHT_NSYM,
            Policy::Robust => ROBUST_NSYM,
            Policy::Flex => FLEX_LADDER[self.level],
        }
    }

    /// Learns the outcome of a frame that carried `nsym` parity per block; `load` is its worst
    /// block's corrected symbols as a fraction of `t`, scaled to 0..=31.
    ///
    /// FLEX: *Failed* raises parity to two levels above the frame's (and, already at the top,
    /// removes a block); *Corrected* with `load > 15` (more than half of t) raises to one level
    /// above the frame's; `load <= 8` (at most a quarter of t, including clean frames) counts
    /// toward relaxing one level after `relax_after` in a row; anything in between holds.
    /// *Truncated* removes a block; any frame that arrived whole counts toward adding one after
    /// `grow_after` in a row.
    pub fn on_report(&mut self, outcome: Outcome, load: u8, nsym: u8) {
        if self.policy != Policy::Flex {
            return;
        }
        let top = FLEX_LADDER.len() - 1;
        let used = level_of(nsym);
        match outcome {
            Outcome::Failed => {
                if self.level == top && used == top {
                    self.shrink();
                }
                self.level = self.level.max((used + 2).min(top));
                self.clean_run = 0;
            }
            Outcome::Corrected if load > 15 => {
                self.level = self.level.max((used + 1).min(top));
                self.clean_run = 0;
            }
            Outcome::Clean => self.count_light(),
            Outcome::Corrected if load <= 8 => self.count_light(),
            Outcome::Corrected => self.clean_run = 0,
            Outcome::Truncated => {
                self.shrink();
                return;
            }
        }
        self.whole_run += 1;
        if self.whole_run >= self.flex.grow_after {
            self.whole_run = 0;
            self.blocks = (self.blocks + 1).min(MAX_BLOCKS);
        }
    }

    /// Learns that a frame was lost (no report in time, or a later frame's report came first).
    /// FLEX removes a block.
    pub fn on_loss(&mut self) {
        if self.policy == Policy::Flex {
            self.shrink();
        }
    }

    fn count_light(&mut self) {
        self.clean_run += 1;
        if self.clean_run >= self.flex.relax_after {
            self.level = self.level.saturating_sub(1);
            self.clean_run = 0;
        }
    }

    fn shrink(&mut self) {
        self.blocks = self.blocks.saturating_sub(1).max(1);
        self.whole_run = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(p: Policy) -> PolicyState {
        PolicyState::new(p, FlexConfig::default())
    }

    #[test]
    fn static_policies_match_003() {
        // 003 §4: BOLD 5 blocks uncoded; LIGHT 5 blocks, 5% coding; ROBUST 1 block, 29%.
        let b = state(Policy::Bold);
        assert_eq!((b.blocks(), b.nsym()), (5, 0));
        let l = state(Policy::Light);
        assert_eq!((l.blocks(), l.nsym()), (5, 12));
        assert!((12.0f64 / 255.0 - 0.05).abs() < 0.005);
        let r = state(Policy::Robust);
        assert_eq!((r.blocks(), r.nsym()), (1, 74));
        assert!((74.0f64 / 255.0 - 0.29).abs() < 0.005);
        // Feedback never moves a static policy.
        let mut r = r;
        for _ in 0..50 {
            r.on_report(Outcome::Failed, 31, 74);
            r.on_loss();
        }
        assert_eq!((r.blocks(), r.nsym()), (1, 74));
    }

    #[test]
    fn flex_range_is_zero_to_78_percent_and_one_to_five_blocks() {
        assert_eq!(FLEX_LADDER[0], 0);
        let top = *FLEX_LADDER.last().unwrap() as f64 / 255.0;
        assert!(top <= 0.78 && top > 0.77, "{top}");
        assert!(FLEX_LADDER.windows(2).all(|w| w[0] < w[1]));
        let mut f = state(Policy::Flex);
        assert_eq!((f.blocks(), f.nsym()), (5, 12));
        for _ in 0..40 {
            f.on_report(Outcome::Failed, 0, f.nsym());
        }
        assert_eq!((f.blocks(), f.nsym()), (1, FLEX_MAX_NSYM));
        for _ in 0..2000 {
            f.on_report(Outcome::Clean, 0, f.nsym());
        }
        assert_eq!((f.blocks(), f.nsym()), (5, 0));
    }

    #[test]
    fn flex_rules_step_by_step() {
        let mut f = state(Policy::Flex); // level 3 (12 symbols), 5 blocks
        f.on_report(Outcome::Corrected, 20, 12); // > half of t: one above 12 -> 20
        assert_eq!(f.nsym(), 20);
        f.on_report(Outcome::Corrected, 20, 12); // stale report of the same level: no change
        assert_eq!(f.nsym(), 20);
        f.on_report(Outcome::Failed, 0, 20); // two above 20 -> 48
        assert_eq!(f.nsym(), 48);
        f.on_report(Outcome::Corrected, 12, 48); // between a quarter and a half: hold
        for _ in 0..7 {
            f.on_report(Outcome::Corrected, 8, 48);
        }
        assert_eq!(f.nsym(), 48);
        f.on_report(Outcome::Clean, 0, 48); // eighth light report: relax one level
        assert_eq!(f.nsym(), 32);
        f.on_report(Outcome::Truncated, 0, 32);
        f.on_loss();
        assert_eq!(f.blocks(), 3);
        for _ in 0..16 {
            f.on_report(Outcome::Corrected, 10, 32);
        }
        assert_eq!(f.blocks(), 4);
    }
}
