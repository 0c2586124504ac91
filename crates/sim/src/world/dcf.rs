//! IEEE 802.11 DCF medium access of the two stations of one 802.11b hop (001 §III.A).
//!
//! Contract. [`Dcf`] is a sans-IO state machine that decides *when* each of the two stations
//! of a hop (station `i` sends direction `i`; both directions share one half-duplex medium)
//! puts its next frame on the air, and how long each exchange holds the medium; the driver
//! (`world.rs`) owns the frames. The driver calls [`Dcf::set_ready`] whenever whether a
//! station has a frame may have changed; when `now` reaches [`Dcf::poll_timeout`] it calls
//! [`Dcf::poll_start`] (the stations that start now) and then [`Dcf::transmit`] with the
//! lengths of the frames they send. The [`Exchange`] says until when the medium is busy, when
//! each data frame ends (the receiver has the frame then, plus propagation: the SIFS and the
//! MAC ACK that follow keep the medium busy but do not delay the frame), and whether the
//! frames collided. Every backoff is drawn from the station's own ChaCha8 stream (the driver
//! names it after the segment and direction), so a seed gives one history, at any `--jobs`.
//!
//! Rules, IEEE 802.11-1999 (RTS/CTS off):
//! - §9.2.5.1 basic access: a station with a frame, no backoff pending and the medium idle
//!   sends once it has sensed the medium idle for DIFS (§9.2.3.3), without backoff. The DIFS is
//!   sensed with the frame at the MAC: a frame reaching the MAC of a long-idle medium waits
//!   DIFS, then goes.
//! - §9.2.5.2 backoff: a frame that finds the medium busy (it reaches the MAC during an
//!   exchange, or the other station starts first) defers until the medium has been idle for
//!   DIFS, then backs off; every station backs off after its own transmission too
//!   (post-backoff), counting down during idle slots even with nothing to send. Counters are
//!   drawn uniformly from [0, CW] slots (§9.2.4) and decrease once per idle slot after DIFS,
//!   both stations' together; when one reaches zero that station sends, the other freezes its
//!   residue and resumes after the next DIFS. CW = CWmin after a success.
//! - Collisions: two counters reaching zero in the same slot (in this model: two starts at the
//!   same instant) collide. Both frames are lost at the MAC: each sender waits out the ACK
//!   it does not get (the medium counts as busy for the longer data frame + SIFS + ACK, the
//!   ACK timeout of §9.2.8 approximated by the ACK's own duration), doubles CW (2 CW + 1, up
//!   to CWmax, §9.2.4), backs off and sends the same frame again, up to `retry_limit` attempts
//!   (dot11ShortRetryLimit, §9.2.5.3); a frame that collides that often is given up (reported
//!   lost) and CW returns to CWmin. No EIFS: the stations transmit, they do not receive a
//!   damaged frame. Frames damaged by the segment's error model are not MAC-retried (the link
//!   layer's own ARQ, if any, repairs them) and leave CW at CWmin.

use mslink_channel::airtime::Dot11b;
use mslink_link::{Duration, Instant};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// One station's DCF state.
#[derive(Debug)]
struct Station {
    /// Backoff slots left, counted from the current idle period's end of DIFS (`None`: no
    /// backoff pending).
    backoff: Option<u32>,
    /// Contention window, slots.
    cw: u32,
    /// Failed (collided) attempts of the frame at the head.
    failures: u32,
    /// Since when the station has had a frame to send (`None`: nothing to send).
    ready: Option<Instant>,
    rng: ChaCha8Rng,
}

/// What one transmission start did to the medium.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Exchange {
    /// The medium is busy until then (the end of the MAC ACK, or of the ACK a collided
    /// sender waits for in vain).
    pub busy_until: Instant,
    /// Per station: when its data frame ends (`None`: it did not send).
    pub data_end: [Option<Instant>; 2],
    /// The two frames collided: neither arrives.
    pub collided: bool,
    /// Per station: its frame collided for the last allowed time and is given up.
    pub dropped: [bool; 2],
}

/// The DCF of one hop's two stations.
#[derive(Debug)]
pub(crate) struct Dcf {
    timing: Dot11b,
    difs: Duration,
    slot: Duration,
    /// The medium is busy before this instant and idle from it on.
    idle_from: Instant,
    /// Stations that `poll_start` chose and `transmit` has not yet served.
    starting: [bool; 2],
    st: [Station; 2],
    /// Collisions so far (for tests and reports).
    collisions: u64,
}

impl Dcf {
    /// A hop with `timing`, idle at time zero; `rngs` are the stations' backoff streams.
    pub(crate) fn new(timing: &Dot11b, rngs: [ChaCha8Rng; 2]) -> Dcf {
        let cw = timing.cw_min;
        Dcf {
            difs: timing.difs(),
            slot: timing.slot(),
            timing: timing.clone(),
            idle_from: Instant::ZERO,
            starting: [false; 2],
            st: rngs.map(|rng| Station {
                backoff: None,
                cw,
                failures: 0,
                ready: None,
                rng,
            }),
            collisions: 0,
        }
    }

    /// The medium is busy before this instant.
    pub(crate) fn busy_until(&self) -> Instant {
        self.idle_from
    }

    /// Collisions so far.
    #[cfg(test)]
    pub(crate) fn collisions(&self) -> u64 {
        self.collisions
    }

    /// Where backoff counting of the current (or coming) idle period starts: DIFS after the
    /// medium went idle.
    fn count_from(&self) -> Instant {
        self.idle_from + self.difs
    }

    /// Idle slots counted down by `t` in the current idle period.
    fn slots_by(&self, t: Instant) -> u64 {
        let from = self.count_from();
        if t < from {
            0
        } else {
            (t - from).as_nanos() / self.slot.as_nanos().max(1)
        }
    }

    /// When a counter of `r` slots reaches zero in the current idle period.
    fn expiry(&self, r: u32) -> Instant {
        self.count_from() + self.slot.saturating_mul(u64::from(r))
    }

    fn draw(&mut self, i: usize) {
        let s = &mut self.st[i];
        s.backoff = Some(s.rng.gen_range(0..=s.cw));
    }

    /// Station `i` has (`true`) or has not a frame to send at `now`. Idempotent: call it
    /// whenever it may have changed.
    pub(crate) fn set_ready(&mut self, now: Instant, i: usize, ready: bool) {
        if !ready {
            self.st[i].ready = None;
            return;
        }
        if self.st[i].ready.is_some() {
            return;
        }
        self.st[i].ready = Some(now);
        if now < self.idle_from {
            // §9.2.5.2: the frame finds the medium busy: defer, then back off (a backoff
            // already pending, a post-backoff's residue, goes on instead).
            if self.st[i].backoff.is_none() {
                self.draw(i);
            }
        } else if let Some(r) = self.st[i].backoff {
            // A post-backoff that ran out before the frame came is over: basic access.
            if self.expiry(r) < now {
                self.st[i].backoff = None;
            }
        }
    }

    /// When station `i` starts its next transmission if nothing else happens first.
    fn start_of(&self, i: usize) -> Option<Instant> {
        let s = &self.st[i];
        let ready = s.ready?;
        Some(match s.backoff {
            Some(r) => self.expiry(r),
            // §9.2.5.1: DIFS of idle medium sensed with the frame at the MAC.
            None => ready.max(self.idle_from) + self.difs,
        })
    }

    /// The next instant a station starts to transmit (`None`: neither has a frame).
    pub(crate) fn poll_timeout(&self) -> Option<Instant> {
        [self.start_of(0), self.start_of(1)]
            .into_iter()
            .flatten()
            .min()
    }

    /// At `now` (>= `poll_timeout()`), the stations that start to transmit; both means a
    /// collision. Call [`Dcf::transmit`] next with their frames' lengths.
    pub(crate) fn poll_start(&mut self, now: Instant) -> [bool; 2] {
        let at = match self.poll_timeout() {
            Some(t) if t <= now && now >= self.idle_from => t,
            _ => return [false; 2],
        };
        let who = [0, 1].map(|i| self.start_of(i) == Some(at));
        let counted = self.slots_by(now);
        for (i, starts) in who.into_iter().enumerate() {
            if starts {
                self.st[i].backoff = None;
                continue;
            }
            match self.st[i].backoff {
                // §9.2.5.2: the other station's counter freezes with its residue (one that
                // ran out with nothing to send is over).
                Some(r) if u64::from(r) > counted => {
                    self.st[i].backoff = Some(r - counted as u32);
                }
                Some(_) => self.st[i].backoff = None,
                None => {}
            }
            if self.st[i].ready.is_some() && self.st[i].backoff.is_none() {
                // A frame waiting out its DIFS finds the medium busy: it backs off.
                self.draw(i);
            }
        }
        self.starting = who;
        who
    }

    /// The stations [`Dcf::poll_start`] chose send frames of `lens` bytes (`None`: the
    /// station had nothing after all) at `now`.
    pub(crate) fn transmit(&mut self, now: Instant, lens: [Option<usize>; 2]) -> Exchange {
        let sending = [0, 1].map(|i| self.starting[i] && lens[i].is_some());
        for (i, sends) in sending.into_iter().enumerate() {
            if self.starting[i] && !sends {
                // Chosen, but the station had nothing to send after all.
                self.st[i].ready = None;
            }
        }
        self.starting = [false; 2];
        let data_end = [0, 1].map(|i| {
            lens[i]
                .filter(|_| sending[i])
                .map(|l| now + self.timing.data_frame(l))
        });
        let mut ex = Exchange {
            busy_until: self.idle_from,
            data_end,
            collided: sending[0] && sending[1],
            dropped: [false; 2],
        };
        let Some(last) = data_end.into_iter().flatten().max() else {
            // Nothing went on the air: the medium stays as it was.
            return ex;
        };
        ex.busy_until = last + self.timing.sifs() + self.timing.ack_frame();
        self.idle_from = ex.busy_until;
        if ex.collided {
            self.collisions += 1;
        }
        for (i, sent) in sending.into_iter().enumerate() {
            if !sent {
                continue;
            }
            let (cw_min, cw_max, limit) = (
                self.timing.cw_min,
                self.timing.cw_max,
                self.timing.retry_limit,
            );
            let s = &mut self.st[i];
            s.ready = None;
            if ex.collided {
                s.failures += 1;
                if s.failures >= limit {
                    // §9.2.5.3: the retry limit: the frame is given up.
                    ex.dropped[i] = true;
                    s.failures = 0;
                    s.cw = cw_min;
                } else {
                    // §9.2.4: CW doubles after a failed attempt.
                    s.cw = (2 * s.cw + 1).min(cw_max);
                }
            } else {
                s.failures = 0;
                s.cw = cw_min;
            }
            // §9.2.5.2: a backoff follows every transmission (post-backoff).
            self.draw(i);
        }
        ex
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mslink_channel::streams::stream;

    fn dcf(seed: u64) -> Dcf {
        Dcf::new(
            &Dot11b::short_preamble(),
            [0, 1].map(|d| stream(seed, &format!("test.dir{d}.dcf"))),
        )
    }

    fn us(t: u64) -> Instant {
        Instant::from_micros(t)
    }

    /// Sends what is due at `now` with frames of `len` bytes.
    fn step(d: &mut Dcf, now: Instant, len: usize) -> Exchange {
        let who = d.poll_start(now);
        d.transmit(now, who.map(|w| w.then_some(len)))
    }

    #[test]
    fn idle_medium_for_difs_means_no_backoff() {
        let mut d = dcf(1);
        let t = us(1_000);
        d.set_ready(t, 0, true);
        // DIFS sensed with the frame at the MAC, then at once: no backoff.
        assert_eq!(d.poll_timeout(), Some(t + Duration::from_micros(50)));
        let ex = step(&mut d, t + Duration::from_micros(50), 64);
        let data = Dot11b::short_preamble().data_frame(64);
        assert_eq!(ex.data_end[0], Some(t + Duration::from_micros(50) + data));
        assert!(!ex.collided);
        assert_eq!(
            ex.busy_until,
            t + Duration::from_micros(50) + Dot11b::short_preamble().busy(64)
        );
    }

    #[test]
    fn own_transmission_is_followed_by_a_post_backoff() {
        let mut d = dcf(2);
        d.set_ready(us(0), 0, true);
        let ex = step(&mut d, us(50), 1500);
        // The station has its next frame at once: it must count its post-backoff down.
        d.set_ready(us(50), 0, true);
        let r = d.st[0].backoff.expect("post-backoff drawn");
        assert!(r <= 31);
        assert_eq!(
            d.poll_timeout(),
            Some(ex.busy_until + Duration::from_micros(50 + 20 * u64::from(r)))
        );
        // A post-backoff runs during idle slots with nothing queued; once it has run out, a
        // new frame only waits DIFS.
        let mut d = dcf(2);
        d.set_ready(us(0), 0, true);
        let ex = step(&mut d, us(50), 1500);
        let late = ex.busy_until + Duration::from_micros(50 + 20 * 32);
        d.set_ready(late, 0, true);
        assert_eq!(d.poll_timeout(), Some(late + Duration::from_micros(50)));
    }

    #[test]
    fn a_frame_arriving_on_a_busy_medium_backs_off() {
        let mut d = dcf(3);
        d.set_ready(us(0), 0, true);
        let ex = step(&mut d, us(50), 1500);
        d.set_ready(us(100), 1, true);
        let r = d.st[1].backoff.expect("backoff drawn on a busy medium");
        assert_eq!(
            d.start_of(1),
            Some(ex.busy_until + Duration::from_micros(50 + 20 * u64::from(r)))
        );
    }

    #[test]
    fn the_loser_freezes_its_residue_and_resumes_after_difs() {
        // Find a seed where both stations contend with different counters.
        for seed in 0..50 {
            let mut d = dcf(seed);
            d.set_ready(us(0), 0, true);
            step(&mut d, us(50), 1500);
            d.set_ready(us(60), 0, true);
            d.set_ready(us(60), 1, true);
            let (r0, r1) = (d.st[0].backoff.unwrap(), d.st[1].backoff.unwrap());
            if r0 == r1 {
                continue;
            }
            let (win, lose) = if r0 < r1 { (0, 1) } else { (1, 0) };
            let (rw, rl) = (r0.min(r1), r0.max(r1));
            let t = d.poll_timeout().unwrap();
            let ex = step(&mut d, t, 1500);
            assert!(ex.data_end[win].is_some() && ex.data_end[lose].is_none());
            assert_eq!(d.st[lose].backoff, Some(rl - rw), "residue frozen");
            assert_eq!(
                d.start_of(lose),
                Some(ex.busy_until + Duration::from_micros(50 + 20 * u64::from(rl - rw)))
            );
            return;
        }
        panic!("no seed gave two different counters");
    }

    /// Two saturated stations: each always has a frame. Returns frames sent per station,
    /// collisions, frames given up and the end time.
    fn saturate(seed: u64, frames: usize) -> ([u64; 2], u64, u64, Instant) {
        let mut d = dcf(seed);
        let mut sent = [0u64; 2];
        let mut dropped = 0;
        let mut now = Instant::ZERO;
        d.set_ready(now, 0, true);
        d.set_ready(now, 1, true);
        while (sent[0] + sent[1]) < frames as u64 {
            now = d.poll_timeout().unwrap();
            let ex = step(&mut d, now, 1500);
            for (i, n) in sent.iter_mut().enumerate() {
                if ex.data_end[i].is_some() && !ex.collided {
                    *n += 1;
                }
                dropped += u64::from(ex.dropped[i]);
                d.set_ready(now, i, true);
            }
        }
        (sent, d.collisions(), dropped, now)
    }

    #[test]
    fn two_saturated_stations_share_the_medium() {
        let (sent, collisions, dropped, end) = saturate(7, 20_000);
        let share = sent[0] as f64 / (sent[0] + sent[1]) as f64;
        assert!((0.47..0.53).contains(&share), "shares {sent:?}");
        // With CW = 31 two counters meet in the same slot about 1 time in 20-32 contentions
        // (residues carried over make ties likelier than 1/32).
        let rate = collisions as f64 / (sent[0] + sent[1]) as f64;
        assert!((0.01..0.08).contains(&rate), "collision rate {rate}");
        assert_eq!(
            dropped, 0,
            "seven collisions in a row are next to impossible"
        );
        // Concurrent countdown: the idle time per frame is well under the mean backoff of one
        // station alone (DIFS + 15.5 slots).
        let d = Dot11b::short_preamble();
        let per_frame = end.as_secs_f64() / (sent[0] + sent[1]) as f64;
        let alone = d.exchange(1500).as_secs_f64();
        assert!(per_frame < alone, "{per_frame} vs {alone}");
        assert!(per_frame > d.busy(1500).as_secs_f64());
    }

    #[test]
    fn collisions_double_cw_and_the_retry_limit_gives_the_frame_up() {
        let timing = Dot11b {
            cw_min: 0,
            cw_max: 0,
            ..Dot11b::short_preamble()
        };
        let mut d = Dcf::new(&timing, [0, 1].map(|i| stream(1, &format!("x{i}"))));
        d.set_ready(us(0), 0, true);
        d.set_ready(us(0), 1, true);
        // CW stuck at 0: every attempt collides, until the seventh gives the frames up.
        for attempt in 1..=7 {
            let now = d.poll_timeout().unwrap();
            let ex = step(&mut d, now, 100);
            assert!(ex.collided);
            assert_eq!(ex.dropped, [attempt == 7; 2], "attempt {attempt}");
            d.set_ready(now, 0, true);
            d.set_ready(now, 1, true);
        }
        let mut d = dcf(1);
        d.set_ready(us(0), 0, true);
        d.set_ready(us(0), 1, true);
        let ex = step(&mut d, us(50), 100);
        assert!(ex.collided && ex.data_end.iter().all(Option::is_some));
        assert_eq!([d.st[0].cw, d.st[1].cw], [63, 63]);
        let long = Dot11b::short_preamble();
        assert_eq!(ex.busy_until, us(50) + long.busy(100));
    }

    #[test]
    fn same_seed_same_history() {
        assert_eq!(saturate(11, 3_000), saturate(11, 3_000));
        assert_ne!(saturate(11, 3_000).3, saturate(12, 3_000).3);
    }
}
