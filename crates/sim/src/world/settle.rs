//! After a run ends: which of the datagrams still missing were queued, not lost.
//!
//! Contract. A run's results are taken as they stand when it ends (its time and `drain_s` are
//! up, or its transfers are done with `drain_s` after them). A datagram sent before then that
//! has not arrived is either lost or still in the network: in a link end's service queue or
//! retransmission buffer, a wired queue, a host's interface, or in the air. [`World::settle`]
//! tells the two apart. It lets the network carry on, with every source and transport stopped
//! and nothing captured, for at most [`SETTLE`] of virtual time (or until every missing packet
//! is accounted for, or nothing is left to happen), and counts as `unsent` each packet sent
//! before the end that arrives meanwhile; one still missing after that is lost. Nothing else
//! of the results moves (they were taken before: delays, throughput, link counters, events,
//! simulated time), and `loss_rate = 1 - received / (sent - unsent)`, the playback miss rate
//! likewise: packets queued when a run ends are counted apart, never as loss, whatever
//! `drain_s` is (a run that ends with its transfer and `drain_s = 0` used to count the media
//! still queued behind it as lost).

use mslink_link::{Duration, Instant};

use super::results::FlowResult;
use super::{Ev, World};

/// How long the network may carry on after the end before a missing packet counts as lost.
pub(crate) const SETTLE: Duration = Duration::from_secs(60);

/// What settling is counting: each flow's sequence numbers sent before the end, and how many
/// of the missing ones have arrived so far.
pub(super) struct Settling {
    pub(super) before_end: Vec<u32>,
    pub(super) arrived: u64,
}

impl World<'_, '_> {
    /// Counts the `unsent` packets of the datagram flows in `flows` (module docs) and sets
    /// their loss and playback miss rates from the packets that were not still queued.
    pub(super) fn settle(&mut self, end: Instant, flows: &mut [FlowResult]) {
        let datagram: Vec<usize> = (0..flows.len())
            .filter(|&i| self.tcp[i].is_none() && self.www[i].is_none())
            .collect();
        let missing: u64 = datagram
            .iter()
            .map(|&i| self.sent[i].saturating_sub(self.sinks[i].received))
            .sum();
        if missing > 0 {
            self.capture = None;
            for s in &mut self.sources {
                s.stop = s.stop.min(end);
            }
            self.settling = Some(Settling {
                before_end: self.sources.iter().map(|s| s.seq).collect(),
                arrived: 0,
            });
            let horizon = end + SETTLE;
            while self.settling.as_ref().is_some_and(|s| s.arrived < missing) {
                let Some((now, ev)) = self.q.pop_until(horizon) else {
                    break;
                };
                match ev {
                    // Sources and transports are stopped: their results are taken.
                    Ev::Send(_) | Ev::Tcp { .. } => {}
                    ev => self.handle(now, ev),
                }
            }
        }
        for i in datagram {
            let s = &self.sinks[i];
            let f = &mut flows[i];
            f.unsent = s.unsent;
            let counted = f.sent - f.unsent;
            let share = |n: u64| {
                if counted == 0 {
                    0.0
                } else {
                    n as f64 / counted as f64
                }
            };
            f.loss_rate = 1.0 - share(s.received);
            f.playback_miss_rate = 1.0 - share(s.received - s.late);
        }
    }
}
