//! The live view of `mslink emulate`: per class (link service) and direction, throughput,
//! loss, queue delay and retransmissions, from the hop's live counters.
//!
//! Contract. [`View::frame`] turns one [`Summary`] from `EmulatedHop::live_summary` (with the
//! time it was taken) into text lines, remembering what it needs for the next: the line of
//! both directions' counters `--stats-interval` has always printed, then per class the throughput
//! delivered since the previous frame (Mbit/s of IP packets), the loss so far (packets lost on
//! the air or abandoned by the service, of those the service accepted; a packet counts only
//! once the hop has settled without it, so the figure never goes down), the median time
//! packets spent in the direction's queue during the interval (the queue is shared by the
//! classes: one figure per direction) and the retransmissions so far. [`View::draw`] writes a
//! frame to a terminal in place (a title, the counters a row per direction, moving the cursor
//! back over the previous frame, with auto-wrap off so a row wider than the terminal is cut,
//! not wrapped) or, on anything else, as plain lines prefixed with the time. Pure apart from
//! the writer it is given.

use std::io::Write;

use crate::Summary;
use mslink_channel::queue::SojournStats;

/// Names of the two directions, as the summary line spells them.
const DIRS: [&str; 2] = ["L->R", "R->L"];

/// What the previous frame saw, to turn counters into rates.
struct Previous {
    t_s: f64,
    /// Per direction, per class: bytes delivered.
    bytes: [Vec<u64>; 2],
    /// Per direction: the queue's sojourn histogram.
    sojourn: [SojournStats; 2],
}

/// The live view's state between frames.
pub struct View {
    in_place: bool,
    prev: Option<Previous>,
    lines_drawn: usize,
}

/// Median of the sojourns recorded between `before` and `now` (None if none was).
fn interval_median_s(before: &SojournStats, now: &SojournStats) -> Option<f64> {
    let count = now.count.saturating_sub(before.count);
    if count == 0 {
        return None;
    }
    let histogram: Vec<u64> = now
        .histogram
        .iter()
        .enumerate()
        .map(|(k, n)| n.saturating_sub(before.histogram.get(k).copied().unwrap_or(0)))
        .collect();
    let diff = SojournStats {
        count,
        sum_ns: now.sum_ns.saturating_sub(before.sum_ns),
        max_ns: now.max_ns,
        histogram,
    };
    Some(diff.quantile_s(0.5))
}

/// The per-direction counters line (`--stats-interval`'s, and the exit summary's).
pub fn counters_line(s: &Summary) -> String {
    let d = |i: usize| {
        let p = &s.directions[i].packets;
        // Drops by an outage in drop mode show only when there are any.
        let outage = match p.dropped_outage {
            0 => String::new(),
            n => format!(" offdrop {n}"),
        };
        format!(
            "in {} out {} lost {} abandoned {} qdrop {}{outage} inflight {} qdelay p50 {:.1} ms",
            p.received,
            p.delivered,
            p.lost_channel,
            p.abandoned,
            p.dropped_queue + p.dropped_service_queue,
            p.in_flight,
            s.directions[i].queue.sojourn.quantile_s(0.5) * 1e3
        )
    };
    format!("L->R {} | R->L {}", d(0), d(1))
}

impl View {
    /// A view drawn in place (a terminal) or as plain lines.
    pub fn new(in_place: bool) -> View {
        View {
            in_place,
            prev: None,
            lines_drawn: 0,
        }
    }

    /// The lines of one frame at `t_s` seconds (hop time).
    pub fn frame(&mut self, t_s: f64, live: &Summary) -> Vec<String> {
        let mut lines = vec![counters_line(live)];
        let width = live
            .directions
            .iter()
            .flat_map(|d| &d.services)
            .map(|c| c.name.len() + c.scheme.len() + 3)
            .max()
            .unwrap_or(0);
        for (i, d) in live.directions.iter().enumerate() {
            let prev = self.prev.as_ref();
            let dt = prev.map(|p| t_s - p.t_s).filter(|dt| *dt > 0.0);
            let qdelay = match prev {
                Some(p) => interval_median_s(&p.sojourn[i], &d.queue.sojourn),
                None => interval_median_s(&SojournStats::default(), &d.queue.sojourn),
            };
            let qdelay = qdelay.map_or("-".to_string(), |s| format!("{:.1} ms", s * 1e3));
            for (k, c) in d.services.iter().enumerate() {
                let before = prev.and_then(|p| p.bytes[i].get(k).copied()).unwrap_or(0);
                let since = c.delivered_bytes.saturating_sub(before);
                let mbps = since as f64 * 8.0 / 1e6 / dt.unwrap_or(t_s.max(1e-9));
                let lost = c.lost_channel + c.abandoned;
                let pct = if c.accepted > 0 {
                    lost as f64 * 100.0 / c.accepted as f64
                } else {
                    0.0
                };
                let class = format!("{} ({})", c.name, c.scheme);
                lines.push(format!(
                    "{} {class:<width$}  {mbps:8.3} Mbit/s  loss {pct:6.2}% ({lost} of {})  qdelay p50 {qdelay}  retx {}",
                    DIRS[i], c.accepted, c.retransmissions
                ));
            }
        }
        self.prev = Some(Previous {
            t_s,
            bytes: [0, 1].map(|i| {
                live.directions[i]
                    .services
                    .iter()
                    .map(|c| c.delivered_bytes)
                    .collect()
            }),
            sojourn: [0, 1].map(|i| live.directions[i].queue.sojourn.clone()),
        });
        lines
    }

    /// Draws a frame on `out`: in place over the previous one, or as lines prefixed with the
    /// time.
    pub fn draw(&mut self, out: &mut dyn Write, t_s: f64, live: &Summary) -> std::io::Result<()> {
        let lines = self.frame(t_s, live);
        let mut text = String::new();
        if self.in_place {
            // Auto-wrap off while drawing: a line wider than the terminal is cut at its edge
            // instead of taking two rows, so moving back up by the lines drawn stays right.
            text.push_str("\x1b[?7l");
            if self.lines_drawn > 0 {
                // Back to the first line of the previous frame.
                text.push_str(&format!("\x1b[{}A", self.lines_drawn));
            }
            let mut rows = vec![format!("mslink emulate at {t_s:.1} s")];
            // The counters one direction a row (the plain line holds both).
            rows.extend(lines[0].split(" | ").map(str::to_string));
            rows.extend(lines[1..].iter().cloned());
            for r in &rows {
                text.push_str("\x1b[2K\r");
                text.push_str(r);
                text.push('\n');
            }
            text.push_str("\x1b[?7h");
            self.lines_drawn = rows.len();
        } else {
            for (n, l) in lines.iter().enumerate() {
                let indent = if n == 0 { "" } else { "  " };
                text.push_str(&format!("[{t_s:8.3}s] {indent}{l}\n"));
            }
        }
        out.write_all(text.as_bytes())?;
        out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ClassCounts;

    fn summary(bytes: u64, accepted: u64, lost: u64, retx: u64) -> Summary {
        let mut s = Summary::default();
        for d in &mut s.directions {
            d.services = vec![
                ClassCounts {
                    name: "tcp".into(),
                    scheme: "selective_repeat".into(),
                    accepted,
                    delivered: accepted - lost,
                    delivered_bytes: bytes,
                    abandoned: lost,
                    retransmissions: retx,
                    ..Default::default()
                },
                ClassCounts {
                    name: "udp".into(),
                    scheme: "raw".into(),
                    ..Default::default()
                },
            ];
        }
        s
    }

    #[test]
    fn throughput_is_per_interval_and_loss_is_cumulative() {
        let mut v = View::new(false);
        let first = v.frame(1.0, &summary(1_000_000, 100, 1, 3));
        assert_eq!(first.len(), 5, "{first:?}");
        assert!(first[0].starts_with("L->R in 0 out 0"), "{}", first[0]);
        assert!(
            first[1].starts_with("L->R tcp (selective_repeat)"),
            "{}",
            first[1]
        );
        assert!(first[1].contains("   8.000 Mbit/s"), "{}", first[1]);
        assert!(first[1].contains("loss   1.00% (1 of 100)"), "{}", first[1]);
        assert!(first[1].contains("retx 3"), "{}", first[1]);
        assert!(first[2].starts_with("L->R udp (raw)"), "{}", first[2]);
        assert!(first[3].starts_with("R->L tcp"), "{}", first[3]);
        // Half a second later, 250 kB more: 4 Mbit/s over the interval.
        let second = v.frame(1.5, &summary(1_250_000, 200, 1, 5));
        assert!(second[1].contains("   4.000 Mbit/s"), "{}", second[1]);
        assert!(
            second[1].contains("loss   0.50% (1 of 200)"),
            "{}",
            second[1]
        );
        assert!(second[1].contains("qdelay p50 -"), "{}", second[1]);
    }

    #[test]
    fn the_queue_median_is_the_interval_s() {
        let mut a = SojournStats::default();
        for _ in 0..10 {
            a.record(mslink_link::Duration::from_millis(100));
        }
        let mut b = a.clone();
        for _ in 0..30 {
            b.record(mslink_link::Duration::from_millis(2));
        }
        let m = interval_median_s(&a, &b).unwrap();
        assert!((0.0015..0.0025).contains(&m), "{m}");
        assert!(b.quantile_s(0.5) < 0.0025);
        assert_eq!(interval_median_s(&b, &b), None);
    }

    #[test]
    fn plain_lines_carry_the_time_and_a_terminal_frame_redraws_in_place() {
        let mut plain = View::new(false);
        let mut out = Vec::new();
        plain.draw(&mut out, 2.0, &summary(0, 0, 0, 0)).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text.lines().count(), 5);
        assert!(
            text.lines().all(|l| l.starts_with("[   2.000s] ")),
            "{text}"
        );
        assert!(!text.contains('\x1b'));
        let mut tty = View::new(true);
        let mut out = Vec::new();
        tty.draw(&mut out, 1.0, &summary(0, 0, 0, 0)).unwrap();
        let first = String::from_utf8_lossy(&out).to_string();
        assert!(!first.contains("A\x1b[2K"), "{first:?}");
        // A title, a row per direction's counters, four class rows.
        assert_eq!(first.matches('\n').count(), 7, "{first:?}");
        out.clear();
        tty.draw(&mut out, 2.0, &summary(0, 0, 0, 0)).unwrap();
        assert!(
            String::from_utf8_lossy(&out).starts_with("\x1b[?7l\x1b[7A"),
            "{out:?}"
        );
    }
}
