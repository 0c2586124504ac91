//! Reading per-packet link logs in Mahimahi's format: `mslink emulate --uplink-log` /
//! `--downlink-log` files ([`crate::linklog`]) and Mahimahi's own `mm-link` logs alike.
//!
//! Contract. [`read`] streams a log once and returns a [`LinkLogData`]: per-window sums of
//! capacity (`#`), arrivals (`+`) and departures (`-`) in bytes, per-packet delays placed at
//! the packet's arrival (`T - DELAY`, as `mm-delay-graph` does), drops, and totals. Header
//! lines start with `#`; `# base timestamp: MS` is subtracted from every time (as
//! `mm-throughput-graph` does; a log without one is read as is, with a note). Event lines are
//! `T + BYTES`, `T - BYTES DELAY`, `T # BYTES` and `T d PACKETS BYTES`, non-negative integers
//! separated by white space. A malformed line is an error naming the file, the line number and
//! what is wrong ([`LogError`]), except that a last line without its newline (a log whose
//! writer was killed) is skipped, and that with `lenient` every malformed line is skipped;
//! skipped lines are counted, with the first one's error kept for the note. Nothing here
//! panics on any input.

use std::collections::BTreeMap;
use std::io::BufRead;

/// How to read.
#[derive(Clone, Copy, Debug)]
pub struct ReadOptions {
    /// Width of the throughput windows in ms (at least 1).
    pub window_ms: u64,
    /// Skip malformed lines instead of failing.
    pub lenient: bool,
}

/// A malformed log.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}: {what}")]
pub struct LogError {
    /// The file, as named by the caller.
    pub file: String,
    /// Line number (1-based; 0 when the problem is not one line's).
    pub line: usize,
    /// What is wrong.
    pub what: String,
}

/// Sums of one window, in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Window {
    /// Capacity (`#`).
    pub capacity: u64,
    /// Arrivals (`+`).
    pub arrivals: u64,
    /// Departures (`-`).
    pub departures: u64,
}

/// Counts of a whole log.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Counts {
    /// `+` lines.
    pub arrivals: u64,
    /// Their bytes.
    pub arrival_bytes: u64,
    /// `-` lines.
    pub departures: u64,
    /// Their bytes.
    pub departure_bytes: u64,
    /// `#` lines.
    pub opportunities: u64,
    /// Their bytes.
    pub capacity_bytes: u64,
    /// Packets in `d` lines.
    pub drops: u64,
    /// Their bytes.
    pub drop_bytes: u64,
}

/// What a log says.
#[derive(Clone, Debug, Default)]
pub struct LinkLogData {
    /// The header lines (`#` lines before the first event), without the `#`.
    pub header: Vec<String>,
    /// `# base timestamp`, if the log has one.
    pub base_ms: Option<u64>,
    /// Window width in ms.
    pub window_ms: u64,
    /// Windows by index (time / window), from the first event's to the last's, empty ones
    /// included.
    pub first_window: u64,
    /// The windows.
    pub windows: Vec<Window>,
    /// Per departure: (arrival time in ms since the base, delay in ms), in file order.
    pub delays: Vec<(u64, u64)>,
    /// Earliest and latest event time in ms since the base.
    pub span_ms: Option<(u64, u64)>,
    /// Totals.
    pub counts: Counts,
    /// Lines skipped, and the first one's error.
    pub skipped: u64,
    /// The first skipped line's error.
    pub first_skipped: Option<LogError>,
}

enum Parsed {
    Comment,
    Event(u64, Kind),
}

enum Kind {
    Arrival(u64),
    Departure(u64, u64),
    Opportunity(u64),
    Drop(u64, u64),
}

fn number(field: Option<&str>, what: &str) -> Result<u64, String> {
    let f = field.ok_or_else(|| format!("missing {what}"))?;
    f.parse::<u64>()
        .map_err(|_| format!("{what} {f:?} is not a non-negative integer"))
}

fn parse_line(text: &str) -> Result<Parsed, String> {
    let t = text.trim();
    if t.is_empty() || t.starts_with('#') {
        return Ok(Parsed::Comment);
    }
    let mut f = t.split_whitespace();
    let time = number(f.next(), "timestamp")?;
    let kind = f.next().ok_or("missing event type (+, -, # or d)")?;
    let kind = match kind {
        "+" => Kind::Arrival(number(f.next(), "byte count")?),
        "#" => Kind::Opportunity(number(f.next(), "byte count")?),
        "-" => {
            let bytes = number(f.next(), "byte count")?;
            let delay = number(f.next(), "delay (a departure is `T - BYTES DELAY`)")?;
            Kind::Departure(bytes, delay)
        }
        "d" => {
            let n = number(f.next(), "packet count (a drop is `T d PACKETS BYTES`)")?;
            Kind::Drop(n, number(f.next(), "byte count")?)
        }
        other => {
            return Err(format!(
                "unknown event type {other:?} (expected +, -, # or d)"
            ))
        }
    };
    if let Some(extra) = f.next() {
        return Err(format!("unexpected {extra:?} after the event"));
    }
    Ok(Parsed::Event(time, kind))
}

/// Reads a log from `r`; `file` names it in errors.
pub fn read(mut r: impl BufRead, file: &str, opts: ReadOptions) -> Result<LinkLogData, LogError> {
    let window_ms = opts.window_ms.max(1);
    let err = |line: usize, what: String| LogError {
        file: file.to_string(),
        line,
        what,
    };
    let mut d = LinkLogData {
        window_ms,
        ..Default::default()
    };
    let mut bins: BTreeMap<u64, Window> = BTreeMap::new();
    let mut buf = Vec::new();
    let mut n = 0usize;
    let mut seen_event = false;
    loop {
        buf.clear();
        let got = r
            .read_until(b'\n', &mut buf)
            .map_err(|e| err(n, format!("reading: {e}")))?;
        if got == 0 {
            break;
        }
        n += 1;
        let complete = buf.last() == Some(&b'\n');
        let outcome = std::str::from_utf8(&buf)
            .map_err(|_| "not text (invalid UTF-8)".to_string())
            .and_then(|text| {
                let t = text.trim();
                if let Some(rest) = t.strip_prefix("# base timestamp:") {
                    let b = number(Some(rest.trim()), "base timestamp")?;
                    if d.base_ms.replace(b).is_some() {
                        return Err("a second base timestamp".into());
                    }
                    if seen_event {
                        return Err("the base timestamp comes after events".into());
                    }
                }
                if !seen_event && t.starts_with('#') {
                    d.header.push(t.trim_start_matches('#').trim().to_string());
                }
                let p = parse_line(text)?;
                if let Parsed::Event(time, kind) = &p {
                    let base = d.base_ms.unwrap_or(0);
                    if *time < base {
                        return Err(format!("time {time} is before the base timestamp {base}"));
                    }
                    if let Kind::Departure(_, delay) = kind {
                        if time - base < *delay {
                            return Err(format!(
                                "delay {delay} ms is longer than the time since the base ({} ms)",
                                time - base
                            ));
                        }
                    }
                }
                Ok(p)
            });
        let (time, kind) = match outcome {
            Ok(Parsed::Comment) => continue,
            Ok(Parsed::Event(t, k)) => (t, k),
            Err(what) => {
                let e = err(n, what);
                if opts.lenient || !complete {
                    d.skipped += 1;
                    d.first_skipped.get_or_insert(e);
                    continue;
                }
                return Err(e);
            }
        };
        seen_event = true;
        let t = time - d.base_ms.unwrap_or(0);
        d.span_ms = Some(match d.span_ms {
            None => (t, t),
            Some((a, b)) => (a.min(t), b.max(t)),
        });
        let c = &mut d.counts;
        match kind {
            Kind::Arrival(b) => {
                c.arrivals += 1;
                c.arrival_bytes += b;
                bins.entry(t / window_ms).or_default().arrivals += b;
            }
            Kind::Departure(b, delay) => {
                c.departures += 1;
                c.departure_bytes += b;
                bins.entry(t / window_ms).or_default().departures += b;
                d.delays.push((t - delay, delay));
            }
            Kind::Opportunity(b) => {
                c.opportunities += 1;
                c.capacity_bytes += b;
                bins.entry(t / window_ms).or_default().capacity += b;
            }
            Kind::Drop(p, b) => {
                c.drops += p;
                c.drop_bytes += b;
            }
        }
    }
    if let (Some((&first, _)), Some((&last, _))) = (bins.first_key_value(), bins.last_key_value()) {
        d.first_window = first;
        d.windows = (first..=last)
            .map(|k| bins.get(&k).copied().unwrap_or_default())
            .collect();
    }
    Ok(d)
}

impl LinkLogData {
    /// Seconds from the first event to the last.
    pub fn duration_s(&self) -> f64 {
        self.span_ms.map_or(0.0, |(a, b)| (b - a) as f64 / 1e3)
    }

    /// Mean over the log's duration of `bytes`, in Mbit/s (None for a log of one instant).
    pub fn mean_mbps(&self, bytes: u64) -> Option<f64> {
        let d = self.duration_s();
        (d > 0.0).then(|| bytes as f64 * 8.0 / d / 1e6)
    }

    /// (window start in s since the base, capacity, arrivals, departures in Mbit/s) per window.
    pub fn rates_mbps(&self) -> Vec<(f64, f64, f64, f64)> {
        let w = self.window_ms as f64;
        let mbps = |b: u64| b as f64 * 8.0 / (w / 1e3) / 1e6;
        self.windows
            .iter()
            .enumerate()
            .map(|(i, x)| {
                let t = (self.first_window + i as u64) as f64 * w / 1e3;
                (t, mbps(x.capacity), mbps(x.arrivals), mbps(x.departures))
            })
            .collect()
    }

    /// The `q` quantile of the per-packet delays in ms (nearest rank, as mm-throughput-graph's
    /// `$delays[0.95 * n]`).
    pub fn delay_quantile_ms(&self, q: f64) -> Option<u64> {
        if self.delays.is_empty() {
            return None;
        }
        let mut v: Vec<u64> = self.delays.iter().map(|&(_, d)| d).collect();
        v.sort_unstable();
        let i = ((q * v.len() as f64) as usize).min(v.len() - 1);
        Some(v[i])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(window_ms: u64) -> ReadOptions {
        ReadOptions {
            window_ms,
            lenient: false,
        }
    }

    fn parse(text: &str) -> Result<LinkLogData, LogError> {
        read(text.as_bytes(), "t.log", opts(500))
    }

    /// The head of a log as Mahimahi's mm-link writes it (times since its initial timestamp).
    const MAHIMAHI: &str = "\
# mahimahi mm-link (Uplink) [/usr/share/mahimahi/traces/TMobile-LTE-driving.up] > up.log
# command line: mm-link /usr/share/mahimahi/traces/TMobile-LTE-driving.up /usr/share/mahimahi/traces/TMobile-LTE-driving.down --uplink-log=up.log
# queue: infinite
# init timestamp: 1445367519416
# base timestamp: 36
36 # 1504
37 + 1500
37 # 1504
37 - 1500 0
38 + 100
600 # 1504
612 - 100 574
900 d 2 3000
";

    #[test]
    fn reads_mahimahis_own_log() {
        let d = parse(MAHIMAHI).unwrap();
        assert_eq!(d.base_ms, Some(36));
        assert_eq!(d.header.len(), 5);
        assert!(d.header[0].starts_with("mahimahi mm-link (Uplink)"));
        let c = d.counts;
        assert_eq!((c.arrivals, c.arrival_bytes), (2, 1600));
        assert_eq!((c.departures, c.departure_bytes), (2, 1600));
        assert_eq!((c.opportunities, c.capacity_bytes), (3, 3 * 1504));
        assert_eq!((c.drops, c.drop_bytes), (2, 3000));
        // Times since the base: 0..864 ms; windows of 500 ms: 0 and 1.
        assert_eq!(d.span_ms, Some((0, 864)));
        assert_eq!(d.first_window, 0);
        assert_eq!(d.windows.len(), 2);
        assert_eq!(d.windows[0].capacity, 2 * 1504);
        assert_eq!(d.windows[1].departures, 100);
        // Delays at the arrival: the 100-byte packet arrived at 38 - 36 = 2 ms.
        assert_eq!(d.delays, vec![(1, 0), (2, 574)]);
        assert_eq!(d.delay_quantile_ms(0.95), Some(574));
        assert_eq!(d.delay_quantile_ms(0.0), Some(0));
        let r = d.rates_mbps();
        // 3008 bytes in 0.5 s: 0.048128 Mbit/s.
        assert!((r[0].1 - 0.048128).abs() < 1e-9, "{r:?}");
        assert_eq!(r[1].0, 0.5);
        assert!(d.mean_mbps(c.capacity_bytes).unwrap() > 0.0);
        assert_eq!(d.skipped, 0);
    }

    #[test]
    fn errors_name_file_line_and_problem() {
        let e = |text: &str| parse(text).unwrap_err().to_string();
        assert_eq!(
            e("# base timestamp: 0\n1 + 10\n2 x 10\n"),
            "t.log:3: unknown event type \"x\" (expected +, -, # or d)"
        );
        assert!(e("1 + ten\n").starts_with("t.log:1: byte count \"ten\""));
        assert!(e("1 - 10\n").contains("t.log:1: missing delay"));
        assert!(e("-1 + 10\n").contains("timestamp \"-1\""));
        assert!(e("1 + 10 5\n").contains("unexpected \"5\""));
        assert!(e("1 d 2\n").contains("t.log:1: missing byte count"));
        assert!(e("# base timestamp: 50\n40 + 1\n").contains("t.log:2: time 40 is before"));
        assert!(e("# base timestamp: 1\n# base timestamp: 2\n").contains("t.log:2: a second"));
        assert!(e("5 - 10 9\n").contains("delay 9 ms is longer"));
        assert!(e("1 +\n").contains("missing byte count"));
        let bad_utf8 = read(&b"1 + 1\n\xff\n"[..], "t.log", opts(500)).unwrap_err();
        assert_eq!(bad_utf8.line, 2);
        assert!(bad_utf8.what.contains("UTF-8"));
    }

    #[test]
    fn a_cut_last_line_or_lenient_reading_skips_and_counts() {
        // The writer was killed mid-line: the last line has no newline.
        let d = parse("# base timestamp: 0\n1 + 100\n2 - 10").unwrap();
        assert_eq!((d.skipped, d.counts.arrivals), (1, 1));
        assert_eq!(d.first_skipped.unwrap().line, 3);
        // A complete last line that parses is kept.
        assert_eq!(parse("1 + 100\n2 # 5").unwrap().counts.capacity_bytes, 5);
        let text = "1 + 100\nnonsense\n3 + 100\n4 q 1\n";
        assert!(parse(text).is_err());
        let d = read(
            text.as_bytes(),
            "t.log",
            ReadOptions {
                window_ms: 500,
                lenient: true,
            },
        )
        .unwrap();
        assert_eq!((d.skipped, d.counts.arrivals), (2, 2));
        assert_eq!(d.first_skipped.unwrap().line, 2);
    }

    #[test]
    fn empty_and_header_only_logs_have_no_windows() {
        let d = parse("").unwrap();
        assert!(d.windows.is_empty() && d.span_ms.is_none());
        let d = parse("# base timestamp: 3\n\n").unwrap();
        assert!(d.windows.is_empty());
        assert_eq!(d.mean_mbps(100), None);
        assert_eq!(d.delay_quantile_ms(0.95), None);
        // No base timestamp: times as they are.
        let d = parse("1000 + 10\n2000 # 10\n").unwrap();
        assert_eq!((d.base_ms, d.span_ms), (None, Some((1000, 2000))));
        assert_eq!((d.first_window, d.windows.len()), (2, 3));
    }

    #[test]
    fn what_the_writer_writes_reads_back() {
        use crate::linklog::{LinkLog, LogHeader};
        use mslink_channel::capacity::Capacity;
        use mslink_link::Instant;
        let header = LogHeader {
            direction: 0,
            capacity: "12000000 bit/s".into(),
            path: "up.log".into(),
            command_line: "mslink emulate".into(),
            queue: "droptail [packets=10]".into(),
            init_unix_ms: 1,
            bytes: crate::linklog::LogBytes::Ip,
        };
        let mut log = LinkLog::new(Vec::new(), &header, &Capacity::rate(12_000_000), None).unwrap();
        for k in 0..100u64 {
            let p = vec![k as u8; 1000];
            log.arrival(Instant::from_millis(k), &p);
            log.departure(Instant::from_millis(k + 5), &p);
        }
        log.tick(Instant::from_millis(110), (3, 4500));
        let (bytes, totals) = log.finish(Instant::from_millis(120), (3, 4500)).unwrap();
        let d = read(&bytes[..], "up.log", opts(50)).unwrap();
        assert_eq!(d.counts.departure_bytes, totals.departure_bytes);
        assert_eq!(d.counts.departure_bytes, 100_000);
        assert_eq!(d.counts.arrivals, 100);
        assert_eq!(d.counts.capacity_bytes, totals.capacity_bytes);
        // 12 Mbit/s: 1500 bytes per ms, 120 ms written.
        assert_eq!(d.counts.capacity_bytes, 120 * 1500);
        assert_eq!((d.counts.drops, d.counts.drop_bytes), (3, 4500));
        assert!(d.delays.iter().all(|&(_, x)| x == 5));
        assert_eq!(d.skipped, 0);
    }
}
