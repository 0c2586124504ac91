//! The text `mslink demo` prints: the per-scheme table, the multi-service link and 004 §V.D's
//! isolation verdict, and 004's own case beside TCP in the simulator (004 §III.D, §IV-V).
//!
//! Contract: every function renders rows of [`super`]'s runs as text and returns it, each line
//! ended by a newline; nothing here prints or measures. [`report`] is the whole output in the
//! order the verb prints it.

use std::fmt::Write as _;

use super::{same_loss, ClassRow, DemoConfig, Isolation, SchemeRow, TcpCaseRow};

/// The whole demo as text: the [`header`], the [`scheme_table`], then (when they ran) the
/// [`multi_service`] link with its isolation verdict and the [`tcp_case`].
pub fn report(
    cfg: &DemoConfig,
    schemes: &[SchemeRow],
    multi: &[ClassRow],
    iso: Option<&Isolation>,
    beside_tcp: &[TcpCaseRow],
) -> String {
    let mut out = header(cfg);
    out += &scheme_table(schemes);
    if !multi.is_empty() {
        out += &multi_service(multi, iso);
    }
    if !beside_tcp.is_empty() {
        out += &tcp_case(beside_tcp);
    }
    out
}

/// What runs over what (004 §III.D, Table I WLAN), then a blank line.
pub fn header(cfg: &DemoConfig) -> String {
    format!(
        "1 Mbit/s CBR in talk spurts over a 5 Mbit/s, 3 ms hop, 1000-byte frames, {:.1}% independent frame loss each way\n\
         (004 §III.D, Table I WLAN); {} s per scheme, seed {}\n\n",
        cfg.loss * 100.0,
        cfg.seconds,
        cfg.seed
    )
}

/// One line per recovery scheme: sent, delivered, residual loss, delay (mean and mean +
/// standard deviation, 004's metric), overhead, retransmissions and recovered packets.
pub fn scheme_table(rows: &[SchemeRow]) -> String {
    let mut out = String::new();
    writeln!(
        out,
        "{:<18}{:>8}{:>11}{:>15}{:>13}{:>15}{:>10}{:>7}{:>11}",
        "scheme",
        "sent",
        "delivered",
        "residual loss",
        "delay mean",
        "mean+std (ms)",
        "overhead",
        "retx",
        "recovered"
    )
    .unwrap();
    for r in rows {
        writeln!(
            out,
            "{:<18}{:>8}{:>11}{:>14.3}%{:>11.2}ms{:>15.2}{:>9.1}%{:>7}{:>11}",
            r.scheme,
            r.sent,
            r.delivered,
            r.residual_loss * 100.0,
            r.delay_mean_ms,
            r.delay_mean_ms + r.delay_std_ms,
            r.overhead * 100.0,
            r.retransmissions,
            r.recovered
        )
        .unwrap();
    }
    out
}

/// The multi-service link (004 §IV-V): what shares it, one line per class, then the CBR
/// stream's loss beside bulk against alone ([`Isolation`], 004 §V.D) when there is one.
pub fn multi_service(rows: &[ClassRow], iso: Option<&Isolation>) -> String {
    let mut out = String::from(
        "\nOne multi-service link (004 §IV-V): bulk UDP offered at 4.5 Mbit/s on selective_repeat and the CBR\n\
         stream on oos_rlp, classified by UDP port, sharing the hop through SCFQ with static rates 3.5:1.5.\n\n",
    );
    writeln!(
        out,
        "{:<8}{:<18}{:>9}{:>11}{:>15}{:>13}{:>13}{:>15}",
        "class",
        "scheme",
        "offered",
        "delivered",
        "residual loss",
        "goodput",
        "delay mean",
        "mean+std (ms)"
    )
    .unwrap();
    for r in rows {
        writeln!(
            out,
            "{:<8}{:<18}{:>9}{:>11}{:>14.3}%{:>8.2}Mb/s{:>11.2}ms{:>15.2}",
            r.class,
            r.scheme,
            r.offered,
            r.delivered,
            r.residual_loss * 100.0,
            r.throughput_mbps,
            r.delay_mean_ms,
            r.delay_mean_ms + r.delay_std_ms
        )
        .unwrap();
    }
    out += "\nBulk takes whatever CBR leaves (its delay is its own backlog); CBR keeps a modest delay increase\n\
            next to it, and its loss:\n";
    if let Some(i) = iso {
        out += &isolation_verdict(i);
    }
    out
}

/// 004 §V.D's promise in one line: the CBR stream lost as many packets beside bulk as alone,
/// within two standard deviations, or not.
pub fn isolation_verdict(i: &Isolation) -> String {
    format!(
        "CBR on oos_rlp lost {} of {} packets beside bulk and {} alone (above): {} (2 sd = {:.1} packets){}\n",
        i.lost_beside_bulk,
        i.sent,
        i.lost_alone,
        if i.holds {
            "the same within the noise"
        } else {
            "NOT the same within the noise"
        },
        2.0 * i.sd,
        if i.holds { ", as 004 §V.D reports." } else { "." }
    )
}

/// 004's own case in the simulator (004 §V): one line per case (loss, delay, p95 delay, the
/// schedulers' bound, playback miss, TCP goodput), then each case beside TCP against the
/// media alone (the first row), and the simulator's first note. Empty for no rows.
pub fn tcp_case(rows: &[TcpCaseRow]) -> String {
    let Some(alone) = rows.first() else {
        return String::new();
    };
    let mut out = String::from(
        "\n004's own case in the simulator (§V): the media on oos_rlp beside a TCP Reno file transfer on\n\
         selective_repeat, through SCFQ at 004's rates 4:1 (the media's share is its 1 Mbit/s peak before\n\
         link overhead) and at 3.9:1.1 (a share that covers the overhead), against the media alone.\n\n",
    );
    writeln!(
        out,
        "{:<31}{:>14}{:>13}{:>12}{:>15}{:>16}{:>10}",
        "media", "residual loss", "delay mean", "p95 delay", "sched. bound", "playback miss", "TCP"
    )
    .unwrap();
    for r in rows {
        writeln!(
            out,
            "{:<31}{:>13.3}%{:>11.1}ms{:>10.1}ms{:>15}{:>15.2}%{:>5.2}Mb/s",
            r.case,
            r.residual_loss * 100.0,
            r.delay_mean_ms,
            r.delay_p95_ms,
            if r.tcp_mbps == 0.0 {
                "-".to_string()
            } else {
                r.delay_bound_ms
                    .map_or("none".to_string(), |b| format!("+{b:.1} ms"))
            },
            r.playback_miss_rate * 100.0,
            r.tcp_mbps
        )
        .unwrap();
    }
    for r in &rows[1..] {
        out += &beside_alone(alone, r);
    }
    if let Some(n) = rows.iter().flat_map(|r| &r.notes).next() {
        writeln!(out, "The simulator's note for 004's rates: {n}").unwrap();
    }
    out
}

/// One case beside TCP against the media alone: its loss (the same within the noise, below,
/// or not the same) and its mean delay against the schedulers' bound, or that none bounds it.
fn beside_alone(alone: &TcpCaseRow, r: &TcpCaseRow) -> String {
    let ratio = r.delay_mean_ms / alone.delay_mean_ms.max(1e-9);
    let counts = format!(
        "{} lost against {} alone, of about {} packets",
        r.lost, alone.lost, r.sent
    );
    let loss = if same_loss(alone, r) {
        format!("loss as alone ({counts}, within the noise)")
    } else if r.lost < alone.lost {
        format!("loss below alone's ({counts})")
    } else {
        format!("loss NOT as alone ({counts})")
    };
    match r.delay_bound_ms {
        None => format!(
            "{}: {loss};\n  but the mean delay is {ratio:.1} x alone and nothing bounds it: the media needs more than its\n  \
             share on the air (playback miss at 250 ms: {:.2}% against {:.2}% alone).\n",
            r.case,
            r.playback_miss_rate * 100.0,
            alone.playback_miss_rate * 100.0
        ),
        Some(b) => format!(
            "{}: {loss};\n  mean delay {ratio:.1} x alone, {:.1} ms more: {} the schedulers' bound of {b:.1} ms.\n",
            r.case,
            r.delay_mean_ms - alone.delay_mean_ms,
            if r.delay_mean_ms - alone.delay_mean_ms <= b { "within" } else { "BEYOND" }
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(name: &str, lost: u64, delay_mean_ms: f64, bound: Option<f64>) -> TcpCaseRow {
        TcpCaseRow {
            case: name.into(),
            sent: 1000,
            lost,
            residual_loss: lost as f64 / 1000.0,
            delay_mean_ms,
            delay_p95_ms: 2.0 * delay_mean_ms,
            playback_miss_rate: 0.0,
            delay_bound_ms: bound,
            notes: Vec::new(),
            tcp_mbps: if bound.is_some() { 3.0 } else { 0.0 },
        }
    }

    #[test]
    fn demo_tcp_case_is_empty_without_rows_and_judges_each_case_against_alone() {
        assert_eq!(tcp_case(&[]), "");
        let text = tcp_case(&[
            case("alone", 10, 5.0, None),
            case("beside", 10, 7.0, Some(4.0)),
        ]);
        assert!(text.contains("beside: loss as alone (10 lost against 10 alone"));
        assert!(text.contains("1.4 x alone, 2.0 ms more: within the schedulers' bound of 4.0 ms."));
        assert!(text.ends_with('\n'));
    }

    #[test]
    fn demo_isolation_verdict_says_whether_it_holds() {
        let mut i = Isolation {
            sent: 100,
            lost_alone: 3,
            lost_beside_bulk: 4,
            sd: 1.5,
            holds: true,
        };
        assert!(isolation_verdict(&i)
            .contains("the same within the noise (2 sd = 3.0 packets), as 004 §V.D reports."));
        i.holds = false;
        assert!(isolation_verdict(&i).contains("NOT the same within the noise"));
    }
}
