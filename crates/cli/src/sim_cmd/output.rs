//! The results folder of `mslink sim`: flows.csv, timeseries.csv (or, with `--format parquet`,
//! flows.parquet and timeseries.parquet: the same columns and values), stats.csv (each flow's
//! metrics over the repetitions, `stats_table.rs`), summary.json, timing.json and the plots.
//!
//! Contract: every file is a pure function of the runs (timing.json excepted) and is written
//! as it is produced, through a buffer, never assembled whole in memory: a moving-window
//! series of a million points costs its `TimePoint`s and nothing more (summary.json used to
//! be built as one `serde_json::Value` tree, about 1.8 KB per point: 1,000 flows for 400 s
//! peaked at 749 MB). summary.json is byte for byte what `serde_json::to_string_pretty` gives
//! for `{"events", "provenance", "runs": [{"point", "run", "sweep"}], "scenario"}` with keys
//! sorted (a
//! `Value` sorts its keys): each run is turned into a `Value` without its series, and the
//! series is written point by point in the same layout.

use std::io::{BufWriter, Write};
use std::path::Path;

use anyhow::{Context, Result};
use mslink_sim::labels::Label;
use mslink_sim::RunResult;

use super::parquet_out::{Kind, Table, Val};
use super::{csv_field, Format, Job, SimArgs};

/// Writes every result file of scenario `name` into `out` (`provenance` goes into
/// summary.json). The runs' series are taken out and put back
/// while summary.json is written (hence `&mut`); the results are unchanged on return.
#[allow(clippy::too_many_arguments)]
pub(super) fn write_results(
    args: &SimArgs,
    out: &Path,
    provenance: &serde_json::Value,
    name: &str,
    points: &[Vec<(String, String)>],
    jobs: &[Job],
    results: &mut [RunResult],
    wall: f64,
) -> Result<()> {
    // Every point sets the same keys, in the same order.
    let keys: Vec<String> = points
        .first()
        .map(|p| p.iter().map(|(k, _)| k.clone()).collect())
        .unwrap_or_default();
    let keys = &keys[..];
    // Sweep columns hold readable, typed labels ("SR (OOS RLP)", 131072); summary.json keeps
    // each point's exact TOML values.
    let labels: Vec<Vec<Label>> = points
        .iter()
        .map(|p| {
            p.iter()
                .map(|(_, v)| mslink_sim::labels::label(v))
                .collect()
        })
        .collect();
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let events: u64 = results.iter().map(|r| r.events).sum();
    match args.format {
        Format::Csv => {
            write_file(out, "flows.csv", |w| {
                write_flows(w, name, &labels, keys, jobs, results)
            })?;
            write_file(out, "timeseries.csv", |w| {
                write_timeseries(w, name, jobs, results)
            })?;
        }
        Format::Parquet => {
            write_file(out, "flows.parquet", |w| {
                write_flows_parquet(w, name, &labels, keys, jobs, results)
            })?;
            write_file(out, "timeseries.parquet", |w| {
                write_timeseries_parquet(w, name, jobs, results)
            })?;
        }
    }
    write_file(out, "stats.csv", |w| {
        super::stats_table::write_stats(w, name, &labels, keys, jobs, results)
    })?;
    write_file(out, "summary.json", |w| {
        write_summary(w, name, provenance, events, points, jobs, results)
    })?;
    write_file(out, "timing.json", |w| {
        let timing = serde_json::json!({
            "wall_s": wall,
            "events": events,
            "events_per_s": events as f64 / wall.max(1e-9),
            "runs": results.len(),
        });
        w.write_all(serde_json::to_string_pretty(&timing)?.as_bytes())?;
        Ok(())
    })?;
    if !args.no_plots {
        mslink_plot::sim::write_plots(
            out,
            &mslink_plot::sim::PlotInput {
                scenario: name,
                keys,
                points,
                runs: jobs.iter().map(|j| j.point).zip(results.iter()).collect(),
            },
        )?;
    }
    if !args.quiet {
        eprintln!(
            "{} runs, {} events in {:.2} s ({:.2} M events/s); results in {}",
            results.len(),
            events,
            wall,
            events as f64 / wall.max(1e-9) / 1e6,
            out.display()
        );
    }
    Ok(())
}

/// The files an earlier `mslink sim` left in `out` (and only those), removed so that results
/// of two runs never mix; returns what was removed, for the note that says so.
pub(super) fn clear_previous(out: &Path) -> Result<Vec<String>> {
    let mut removed = Vec::new();
    for f in [
        "flows.csv",
        "flows.parquet",
        "timeseries.csv",
        "timeseries.parquet",
        "stats.csv",
        "summary.json",
        "timing.json",
    ] {
        let p = out.join(f);
        if p.is_file() {
            std::fs::remove_file(&p).with_context(|| format!("removing {}", p.display()))?;
            removed.push(f.to_string());
        }
    }
    for (sub, exts) in [("plots", &["png", "svg"][..]), ("pcap", &["pcap"][..])] {
        let d = out.join(sub);
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        let mut n = 0;
        for e in entries {
            let p = e
                .with_context(|| format!("reading {}", d.display()))?
                .path();
            if p.extension().is_some_and(|x| exts.iter().any(|e| x == *e)) {
                std::fs::remove_file(&p).with_context(|| format!("removing {}", p.display()))?;
                n += 1;
            }
        }
        if n > 0 {
            removed.push(format!("{sub}/ ({n} files)"));
        }
    }
    Ok(removed)
}

/// Creates `dir/file` and fills it through a buffer; any failure names the file.
fn write_file(
    dir: &Path,
    file: &str,
    body: impl FnOnce(&mut BufWriter<std::fs::File>) -> Result<()>,
) -> Result<()> {
    let p = dir.join(file);
    let f = std::fs::File::create(&p).with_context(|| format!("writing {}", p.display()))?;
    let mut w = BufWriter::new(f);
    body(&mut w)
        .and_then(|()| Ok(w.flush()?))
        .with_context(|| format!("writing {}", p.display()))
}

fn write_flows(
    w: &mut impl Write,
    name: &str,
    labels: &[Vec<Label>],
    keys: &[String],
    jobs: &[Job],
    results: &[RunResult],
) -> Result<()> {
    w.write_all(b"scenario,point,")?;
    for k in keys {
        write!(w, "{},", csv_field(k))?;
    }
    w.write_all(b"rep,seed,flow,app,transport,service,sent,received,duplicates,bytes,duration_s,throughput_bps,loss_rate,delay_mean_s,delay_std_s,delay_p50_s,delay_p95_s,delay_p99_s,jitter_s,playback_miss_rate,retransmits,timeouts,transactions\n")?;
    for (job, r) in jobs.iter().zip(results) {
        for f in &r.flows {
            write!(w, "{},{},", csv_field(name), job.point)?;
            for v in &labels[job.point] {
                write!(w, "{},", csv_field(&v.text()))?;
            }
            writeln!(
                w,
                "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
                r.rep,
                r.seed,
                csv_field(&f.flow),
                f.app,
                f.transport,
                csv_field(&f.service),
                f.sent,
                f.received,
                f.duplicates,
                f.bytes,
                f.duration_s,
                f.throughput_bps,
                f.loss_rate,
                f.delay_mean_s,
                f.delay_std_s,
                f.delay_p50_s,
                f.delay_p95_s,
                f.delay_p99_s,
                f.jitter_s,
                f.playback_miss_rate,
                f.retransmits,
                f.timeouts,
                f.transactions
            )?;
        }
    }
    Ok(())
}

fn write_timeseries(
    w: &mut impl Write,
    name: &str,
    jobs: &[Job],
    results: &[RunResult],
) -> Result<()> {
    w.write_all(b"scenario,point,rep,flow,time_s,throughput_bps\n")?;
    let name = csv_field(name);
    for (job, r) in jobs.iter().zip(results) {
        for p in &r.timeseries {
            writeln!(
                w,
                "{},{},{},{},{},{}",
                name,
                job.point,
                r.rep,
                csv_field(&p.flow),
                p.time_s,
                p.throughput_bps
            )?;
        }
    }
    Ok(())
}

/// The columns of flows.csv after the sweep keys, with their Parquet types.
const FLOW_COLUMNS: [(&str, Kind); 23] = [
    ("rep", Kind::Int),
    ("seed", Kind::UInt),
    ("flow", Kind::Str),
    ("app", Kind::Str),
    ("transport", Kind::Str),
    ("service", Kind::Str),
    ("sent", Kind::UInt),
    ("received", Kind::UInt),
    ("duplicates", Kind::UInt),
    ("bytes", Kind::UInt),
    ("duration_s", Kind::F64),
    ("throughput_bps", Kind::F64),
    ("loss_rate", Kind::F64),
    ("delay_mean_s", Kind::F64),
    ("delay_std_s", Kind::F64),
    ("delay_p50_s", Kind::F64),
    ("delay_p95_s", Kind::F64),
    ("delay_p99_s", Kind::F64),
    ("jitter_s", Kind::F64),
    ("playback_miss_rate", Kind::F64),
    ("retransmits", Kind::UInt),
    ("timeouts", Kind::UInt),
    ("transactions", Kind::UInt),
];

/// flows.parquet: the rows and columns of flows.csv (a sweep key whose values are all numbers
/// is a float column, any other a text column of labels).
fn write_flows_parquet(
    w: &mut (impl Write + Send),
    name: &str,
    labels: &[Vec<Label>],
    keys: &[String],
    jobs: &[Job],
    results: &[RunResult],
) -> Result<()> {
    let mut cols = vec![
        ("scenario".to_string(), Kind::Str),
        ("point".to_string(), Kind::Int),
    ];
    let numeric: Vec<bool> = (0..keys.len())
        .map(|i| labels.iter().all(|p| matches!(p[i], Label::Number(_))))
        .collect();
    cols.extend(
        keys.iter()
            .zip(&numeric)
            .map(|(k, n)| (k.clone(), if *n { Kind::F64 } else { Kind::Str })),
    );
    cols.extend(FLOW_COLUMNS.iter().map(|(n, k)| (n.to_string(), *k)));
    let mut t = Table::new(w, &cols)?;
    let mut row = Vec::with_capacity(cols.len());
    for (job, r) in jobs.iter().zip(results) {
        for f in &r.flows {
            row.clear();
            row.push(Val::Str(name));
            row.push(Val::Int(job.point as i64));
            row.extend(labels[job.point].iter().map(|v| match v {
                Label::Number(x) => Val::F64(*x),
                Label::Text(t) => Val::Str(t),
            }));
            row.extend([
                Val::Int(i64::from(r.rep)),
                Val::UInt(r.seed),
                Val::Str(&f.flow),
                Val::Str(&f.app),
                Val::Str(&f.transport),
                Val::Str(&f.service),
                Val::UInt(f.sent),
                Val::UInt(f.received),
                Val::UInt(f.duplicates),
                Val::UInt(f.bytes),
                Val::F64(f.duration_s),
                Val::F64(f.throughput_bps),
                Val::F64(f.loss_rate),
                Val::F64(f.delay_mean_s),
                Val::F64(f.delay_std_s),
                Val::F64(f.delay_p50_s),
                Val::F64(f.delay_p95_s),
                Val::F64(f.delay_p99_s),
                Val::F64(f.jitter_s),
                Val::F64(f.playback_miss_rate),
                Val::UInt(f.retransmits),
                Val::UInt(f.timeouts),
                Val::UInt(f.transactions),
            ]);
            t.row(&row)?;
        }
    }
    t.finish()
}

/// timeseries.parquet: the rows and columns of timeseries.csv.
fn write_timeseries_parquet(
    w: &mut (impl Write + Send),
    name: &str,
    jobs: &[Job],
    results: &[RunResult],
) -> Result<()> {
    let cols: Vec<(String, Kind)> = [
        ("scenario", Kind::Str),
        ("point", Kind::Int),
        ("rep", Kind::Int),
        ("flow", Kind::Str),
        ("time_s", Kind::F64),
        ("throughput_bps", Kind::F64),
    ]
    .iter()
    .map(|(n, k)| (n.to_string(), *k))
    .collect();
    let mut t = Table::new(w, &cols)?;
    for (job, r) in jobs.iter().zip(results) {
        for p in &r.timeseries {
            t.row(&[
                Val::Str(name),
                Val::Int(job.point as i64),
                Val::Int(i64::from(r.rep)),
                Val::Str(&p.flow),
                Val::F64(p.time_s),
                Val::F64(p.throughput_bps),
            ])?;
        }
    }
    t.finish()
}

/// `v` as `serde_json::to_string_pretty` prints it, nested `depth` spaces deep.
fn pretty_at(v: &serde_json::Value, depth: usize) -> Result<String> {
    let text = serde_json::to_string_pretty(v)?;
    Ok(text.replace('\n', &format!("\n{:depth$}", "")))
}

/// summary.json, laid out as the pretty printer lays out the sorted-key document (see the
/// module contract).
fn write_summary(
    w: &mut impl Write,
    name: &str,
    provenance: &serde_json::Value,
    events: u64,
    points: &[Vec<(String, String)>],
    jobs: &[Job],
    results: &mut [RunResult],
) -> Result<()> {
    write!(
        w,
        "{{\n  \"events\": {events},\n  \"provenance\": {},\n  \"runs\": [",
        pretty_at(provenance, 2)?
    )?;
    for (i, (job, r)) in jobs.iter().zip(results.iter_mut()).enumerate() {
        w.write_all(if i == 0 { b"\n" } else { b",\n" })?;
        write!(
            w,
            "    {{\n      \"point\": {},\n      \"run\": ",
            job.point
        )?;
        write_run(w, r, 6)?;
        let sweep: serde_json::Map<String, serde_json::Value> = points[job.point]
            .iter()
            .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
            .collect();
        write!(
            w,
            ",\n      \"sweep\": {}\n    }}",
            pretty_at(&serde_json::Value::Object(sweep), 6)?
        )?;
    }
    w.write_all(if results.is_empty() { b"]" } else { b"\n  ]" })?;
    write!(w, ",\n  \"scenario\": {}\n}}", serde_json::to_string(name)?)?;
    Ok(())
}

/// One run as a pretty object at `depth`: every key from its `Value` but the series, which is
/// written point by point (each point's keys sorted as a `Value` sorts them).
fn write_run(w: &mut impl Write, r: &mut RunResult, depth: usize) -> Result<()> {
    // The two long lists are written item by item: as one `Value` tree a million flows cost
    // about 3.4 KB each (4.4 GB at the peak).
    let series = std::mem::take(&mut r.timeseries);
    let flows = std::mem::take(&mut r.flows);
    let value = serde_json::to_value(&*r);
    r.timeseries = series;
    r.flows = flows;
    let serde_json::Value::Object(map) = value? else {
        anyhow::bail!("a run's results did not serialise to a JSON object");
    };
    if map.is_empty() {
        w.write_all(b"{}")?;
        return Ok(());
    }
    let inner = depth + 2;
    w.write_all(b"{")?;
    for (j, (k, v)) in map.iter().enumerate() {
        w.write_all(if j == 0 { b"\n" } else { b",\n" })?;
        write!(w, "{:inner$}{}: ", "", serde_json::to_string(k)?)?;
        match k.as_str() {
            "timeseries" => write_items(w, &r.timeseries, inner)?,
            "flows" => write_items(w, &r.flows, inner)?,
            _ => w.write_all(pretty_at(v, inner)?.as_bytes())?,
        }
    }
    write!(w, "\n{:depth$}}}", "")?;
    Ok(())
}

/// A list written as the pretty printer writes it at `depth`, one item at a time (each item's
/// keys sorted as a `Value` sorts them).
fn write_items<T: serde::Serialize>(w: &mut impl Write, items: &[T], depth: usize) -> Result<()> {
    if items.is_empty() {
        w.write_all(b"[]")?;
        return Ok(());
    }
    w.write_all(b"[")?;
    let item = depth + 2;
    for (n, p) in items.iter().enumerate() {
        w.write_all(if n == 0 { b"\n" } else { b",\n" })?;
        write!(
            w,
            "{:item$}{}",
            "",
            pretty_at(&serde_json::to_value(p)?, item)?
        )?;
    }
    write!(w, "\n{:depth$}]", "")?;
    Ok(())
}
