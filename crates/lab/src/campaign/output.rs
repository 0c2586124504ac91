//! The results folder of `mslink sim`: flows.csv, timeseries.csv (or, with `--format parquet`,
//! flows.parquet and timeseries.parquet: the same columns and values), stats.csv (each flow's
//! metrics over the repetitions, `stats_table.rs`), summary.json, timing.json and the plots.
//!
//! Contract: every file is a pure function of the runs (timing.json excepted), written as the
//! runs finish, in job order, through a buffer ([`ResultWriter`]): a run's rows go to the
//! tables and its summary entry to `summary.json.part` as soon as it is handed over, and the
//! run is dropped, so a sweep's memory does not grow with its number of runs (what stays is
//! one sweep point's metrics for stats.csv and what the plots draw, `mslink_plot::sim::SimPlots`).
//! summary.json is byte for byte what `serde_json::to_string_pretty` gives for
//! `{"events", "provenance", "runs": [{"point", "run", "sweep"}], "scenario"}` with keys sorted
//! (a `Value` sorts its keys): each run is turned into a `Value` without its flows and series,
//! which are written item by item in the same layout (as one `Value` tree, a run of 1,000
//! flows for 400 s peaked at 749 MB); the runs go to the part file, and at the end the total
//! of events, which sorts first, is written and the part copied after it. Each run is
//! committed when it is added (the CSV tables and the part file flushed), so a kill leaves
//! every finished run readable; `journal.rs` reads the part file back for `--resume`, and
//! `store.rs` keeps each run's rendered object for `--store`.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use mslink_sim::labels::Label;
use mslink_sim::world::columns::{table_columns, Cell, ColumnType, FLOW_COLUMNS};
use mslink_sim::RunResult;

use super::parquet_out::{Kind, Table, Val};
use super::stats_table::{StatsMode, StatsTable};
use super::{csv_field, Format, Job, SimOptions};

/// Where a table's rows go.
enum TableOut {
    Csv(BufWriter<File>),
    Parquet(Box<Table<BufWriter<File>>>),
}

/// The result files of one `mslink sim` invocation, filled run by run (see the contract).
pub(crate) struct ResultWriter<'a> {
    out: &'a Path,
    name: &'a str,
    points: &'a [Vec<(String, String)>],
    /// Each point's readable, typed sweep labels ("SR (OOS RLP)", 131072).
    labels: Vec<Vec<Label>>,
    flows: TableOut,
    series: TableOut,
    stats: Option<StatsTable<BufWriter<File>>>,
    summary_part: Counted<BufWriter<File>>,
    part_path: PathBuf,
    plots: Option<mslink_plot::sim::SimPlots<'a>>,
    runs: usize,
    events: u64,
    /// The table printed at the end (`digest.rs`).
    digest: super::digest::Digest,
}

/// Creates `dir/file` behind a buffer.
fn create(dir: &Path, file: &str) -> Result<BufWriter<File>> {
    let p = dir.join(file);
    let f = File::create(&p).with_context(|| format!("writing {}", p.display()))?;
    Ok(BufWriter::new(f))
}

impl<'a> ResultWriter<'a> {
    /// Opens every result file of scenario `name` swept over `keys` at `points` in `out`.
    pub(crate) fn new(
        args: &'a SimOptions,
        out: &'a Path,
        name: &'a str,
        keys: &'a [String],
        points: &'a [Vec<(String, String)>],
    ) -> Result<Self> {
        std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
        // Sweep columns hold readable, typed labels; summary.json keeps each point's exact
        // TOML values.
        let labels: Vec<Vec<Label>> = points
            .iter()
            .map(|p| {
                p.iter()
                    .map(|(_, v)| mslink_sim::labels::label(v))
                    .collect()
            })
            .collect();
        let (flows, series) = match args.format {
            Format::Csv => {
                let mut f = create(out, "flows.csv")?;
                flows_csv_header(&mut f, keys).context("writing flows.csv")?;
                let mut t = create(out, "timeseries.csv")?;
                t.write_all(b"scenario,point,rep,flow,time_s,throughput_bps\n")
                    .context("writing timeseries.csv")?;
                (TableOut::Csv(f), TableOut::Csv(t))
            }
            Format::Parquet => (
                TableOut::Parquet(Box::new(
                    Table::new(create(out, "flows.parquet")?, &flow_columns(&labels, keys))
                        .context("writing flows.parquet")?,
                )),
                TableOut::Parquet(Box::new(
                    Table::new(create(out, "timeseries.parquet")?, &series_columns())
                        .context("writing timeseries.parquet")?,
                )),
            ),
        };
        let stats = match args.stats {
            StatsMode::None => None,
            mode => Some(
                StatsTable::new(
                    create(out, "stats.csv")?,
                    name,
                    keys,
                    mode == StatsMode::Summary,
                )
                .context("writing stats.csv")?,
            ),
        };
        let part_path = out.join("summary.json.part");
        let summary_part = Counted {
            w: create(out, "summary.json.part")?,
            len: 0,
        };
        Ok(ResultWriter {
            out,
            name,
            points,
            labels,
            flows,
            series,
            stats,
            summary_part,
            part_path,
            plots: (!args.no_plots).then(|| mslink_plot::sim::SimPlots::new(name, keys, points)),
            runs: 0,
            events: 0,
            digest: Default::default(),
        })
    }

    /// Writes run `r` of `job` (jobs come in job order), commits it (`journal.rs`) and lets
    /// it go; returns where the run object, as its summary entry renders it (what `store.rs`
    /// keeps), lies in the part file ([`Self::part_path`]). The entry is written straight
    /// into the part file: a run of a million flows renders to about 900 MB, which is not
    /// held in memory.
    pub(crate) fn push(&mut self, job: &Job, mut r: RunResult) -> Result<std::ops::Range<u64>> {
        let path = &self.part_path;
        let w = &mut self.summary_part;
        let mut range = 0..0;
        (|| -> Result<()> {
            w.write_all(if self.runs == 0 { b"\n" } else { b",\n" })?;
            write!(
                w,
                "    {{\n      \"point\": {},\n      \"run\": ",
                job.point
            )?;
            range.start = w.len;
            write_run(w, &mut r, 6)?;
            range.end = w.len;
            write_entry_end(w, &self.points[job.point])
        })()
        .with_context(|| format!("writing {}", path.display()))?;
        self.add(job, &r)?;
        Ok(range)
    }

    /// The part file the summary entries are committed to.
    pub(crate) fn part_path(&self) -> &Path {
        &self.part_path
    }

    /// Writes a run kept in the result store (`store.rs`): the run object [`Self::push`] wrote.
    pub(crate) fn push_stored(&mut self, job: &Job, run: &str) -> Result<()> {
        let r = super::journal::run_from_text(run)?;
        let entry = summary_entry(job.point, &self.points[job.point], run.as_bytes())?;
        self.write_entry(&entry)?;
        self.add(job, &r)
    }

    /// Writes again a run an interrupted invocation committed (`journal.rs`): its summary
    /// entry as it was, its rows from what was read back.
    pub(crate) fn replay(&mut self, job: &Job, c: &super::journal::Committed) -> Result<()> {
        self.write_entry(c.text.as_bytes())?;
        self.add(job, &c.run)
    }

    /// Appends a rendered summary entry to the part file.
    fn write_entry(&mut self, entry: &[u8]) -> Result<()> {
        let w = &mut self.summary_part;
        w.write_all(if self.runs == 0 { b"\n" } else { b",\n" })
            .and_then(|()| w.write_all(entry))
            .with_context(|| format!("writing {}", self.part_path.display()))
    }

    /// Everything but the summary entry, shared by `push`, `push_stored` and `replay`: the
    /// tables' rows, stats.csv, the plots and the digest; then the commit.
    fn add(&mut self, job: &Job, r: &RunResult) -> Result<()> {
        let labels = &self.labels[job.point];
        match &mut self.flows {
            TableOut::Csv(w) => flows_csv_run(w, self.name, job.point, labels, r),
            TableOut::Parquet(t) => flows_parquet_run(t, self.name, job.point, labels, r),
        }
        .context("writing the flows table")?;
        match &mut self.series {
            TableOut::Csv(w) => series_csv_run(w, self.name, job.point, r),
            TableOut::Parquet(t) => series_parquet_run(t, self.name, job.point, r),
        }
        .context("writing the time series table")?;
        if let Some(st) = &mut self.stats {
            st.push(job.point, labels, r).context("writing stats.csv")?;
        }
        if let Some(p) = &mut self.plots {
            p.add(job.point, r);
        }
        self.digest.push(job.point, job.scenario, r);
        self.runs += 1;
        self.events += r.events;
        self.commit()
    }

    /// Flushes what one run wrote, so a kill after this leaves it readable: the CSV tables'
    /// rows and the summary entry (a Parquet table is readable only once finished; the entry
    /// is what `--resume` reads).
    fn commit(&mut self) -> Result<()> {
        for t in [&mut self.flows, &mut self.series] {
            if let TableOut::Csv(w) = t {
                w.flush()
                    .with_context(|| format!("writing {}", self.out.display()))?;
            }
        }
        self.summary_part
            .flush()
            .with_context(|| format!("writing {}", self.part_path.display()))
    }

    /// Completes every file: the tables, stats.csv, summary.json (with `provenance`),
    /// timing.json (`wall` seconds of running) and the plots.
    pub(crate) fn finish(self, provenance: &serde_json::Value, wall: f64) -> Result<String> {
        let ResultWriter {
            out,
            name,
            flows,
            series,
            stats,
            summary_part,
            part_path,
            plots,
            runs,
            events,
            digest,
            labels,
            ..
        } = self;
        for (t, what) in [
            (flows, "the flows table"),
            (series, "the time series table"),
        ] {
            match t {
                TableOut::Csv(mut w) => w.flush().map_err(anyhow::Error::from),
                TableOut::Parquet(t) => t.finish(),
            }
            .with_context(|| format!("writing {what} in {}", out.display()))?;
        }
        if let Some(st) = stats {
            st.finish().context("writing stats.csv")?;
        }
        summary_part
            .w
            .into_inner()
            .map_err(|e| e.into_error())
            .with_context(|| format!("writing {}", part_path.display()))?;
        let mut w = create(out, "summary.json")?;
        write!(
            w,
            "{{\n  \"events\": {events},\n  \"provenance\": {},\n  \"runs\": [",
            pretty_at(provenance, 2)?
        )
        .context("writing summary.json")?;
        let mut part =
            File::open(&part_path).with_context(|| format!("reading {}", part_path.display()))?;
        std::io::copy(&mut part, &mut w).context("writing summary.json")?;
        w.write_all(if runs == 0 { b"]" } else { b"\n  ]" })?;
        write!(w, ",\n  \"scenario\": {}\n}}", serde_json::to_string(name)?)?;
        w.flush().context("writing summary.json")?;
        std::fs::remove_file(&part_path)
            .with_context(|| format!("removing {}", part_path.display()))?;
        write_file(out, "timing.json", |w| {
            let timing = serde_json::json!({
                "wall_s": wall,
                "events": events,
                "events_per_s": events as f64 / wall.max(1e-9),
                "runs": runs,
            });
            w.write_all(serde_json::to_string_pretty(&timing)?.as_bytes())?;
            Ok(())
        })?;
        if let Some(p) = plots {
            p.write(out)?;
        }
        Ok(format!(
            "{} runs, {} events in {:.2} s ({:.2} M events/s); results in {}\n{}",
            runs,
            events,
            wall,
            events as f64 / wall.max(1e-9) / 1e6,
            out.display(),
            digest.render(&labels)
        ))
    }
}

/// The files an earlier `mslink sim` left in `out` (and only those), removed so that results
/// of two runs never mix; returns what was removed, for the note that says so. `resuming`
/// keeps the pcaps of the committed runs (and the runs to replay, which are not in the list).
pub(crate) fn clear_previous(out: &Path, resuming: bool) -> Result<Vec<String>> {
    let mut removed = Vec::new();
    if !resuming {
        let p = out.join("summary.json.part.resume");
        if p.is_file() {
            std::fs::remove_file(&p).with_context(|| format!("removing {}", p.display()))?;
        }
    }
    for f in [
        "flows.csv",
        "flows.parquet",
        "timeseries.csv",
        "timeseries.parquet",
        "stats.csv",
        "summary.json",
        "summary.json.part",
        "timing.json",
        "progress.json",
    ] {
        let p = out.join(f);
        if p.is_file() {
            std::fs::remove_file(&p).with_context(|| format!("removing {}", p.display()))?;
            removed.push(f.to_string());
        }
    }
    let subs: &[(&str, &[&str])] = if resuming {
        &[("plots", &["png", "svg"])]
    } else {
        &[("plots", &["png", "svg"]), ("pcap", &["pcap"])]
    };
    for &(sub, exts) in subs {
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

fn flows_csv_header(w: &mut impl Write, keys: &[String]) -> Result<()> {
    w.write_all(b"scenario,point,")?;
    for k in keys {
        write!(w, "{},", csv_field(k))?;
    }
    w.write_all(b"rep,seed")?;
    for c in table_columns() {
        write!(w, ",{}", c.name)?;
    }
    w.write_all(b"\n")?;
    Ok(())
}

/// The flows.csv rows of one run at a point with sweep `labels`.
fn flows_csv_run(
    w: &mut impl Write,
    name: &str,
    point: usize,
    labels: &[Label],
    r: &RunResult,
) -> Result<()> {
    let mut prefix = format!("{},{},", csv_field(name), point);
    for v in labels {
        prefix.push_str(&csv_field(&v.text()));
        prefix.push(',');
    }
    for f in &r.flows {
        w.write_all(prefix.as_bytes())?;
        write!(w, "{},{}", r.rep, r.seed)?;
        for c in table_columns() {
            match (c.get)(f) {
                Cell::Text(t) => write!(w, ",{}", csv_field(t))?,
                Cell::Count(n) => write!(w, ",{n}")?,
                Cell::Float(x) => write!(w, ",{x}")?,
                Cell::Flag(b) => write!(w, ",{b}")?,
            }
        }
        w.write_all(b"\n")?;
    }
    Ok(())
}

/// The timeseries.csv rows of one run of `point`.
fn series_csv_run(w: &mut impl Write, name: &str, point: usize, r: &RunResult) -> Result<()> {
    let name = csv_field(name);
    for p in &r.timeseries {
        writeln!(
            w,
            "{},{},{},{},{},{}",
            name,
            point,
            r.rep,
            csv_field(&p.flow),
            p.time_s,
            p.throughput_bps
        )?;
    }
    Ok(())
}

/// The Parquet type of a flow column (`mslink_sim::world::columns`).
fn kind(ty: ColumnType) -> Kind {
    match ty {
        ColumnType::Text => Kind::Str,
        ColumnType::Count | ColumnType::Flag => Kind::UInt,
        ColumnType::Float => Kind::F64,
    }
}

/// The columns of flows.parquet: those of flows.csv (a sweep key whose values are all numbers
/// is a float column, any other a text column of labels).
fn flow_columns(labels: &[Vec<Label>], keys: &[String]) -> Vec<(String, Kind)> {
    let mut cols = vec![
        ("scenario".to_string(), Kind::Str),
        ("point".to_string(), Kind::Int),
    ];
    cols.extend(keys.iter().enumerate().map(|(i, k)| {
        let numeric = labels.iter().all(|p| matches!(p[i], Label::Number(_)));
        (k.clone(), if numeric { Kind::F64 } else { Kind::Str })
    }));
    cols.push(("rep".to_string(), Kind::Int));
    cols.push(("seed".to_string(), Kind::UInt));
    cols.extend(table_columns().map(|c| (c.name.to_string(), kind(c.ty))));
    cols
}

/// The flows.parquet rows of one run of `point` (sweep `labels`).
fn flows_parquet_run(
    t: &mut Table<impl Write + Send>,
    name: &str,
    point: usize,
    labels: &[Label],
    r: &RunResult,
) -> Result<()> {
    let mut row = Vec::with_capacity(4 + labels.len() + FLOW_COLUMNS.len());
    for f in &r.flows {
        row.clear();
        row.push(Val::Str(name));
        row.push(Val::Int(point as i64));
        row.extend(labels.iter().map(|v| match v {
            Label::Number(x) => Val::F64(*x),
            Label::Text(t) => Val::Str(t),
        }));
        row.push(Val::Int(i64::from(r.rep)));
        row.push(Val::UInt(r.seed));
        row.extend(table_columns().map(|c| match (c.get)(f) {
            Cell::Text(t) => Val::Str(t),
            Cell::Count(n) => Val::UInt(n),
            Cell::Float(x) => Val::F64(x),
            Cell::Flag(b) => Val::UInt(u64::from(b)),
        }));
        t.row(&row)?;
    }
    Ok(())
}

/// The columns of timeseries.parquet: those of timeseries.csv.
fn series_columns() -> Vec<(String, Kind)> {
    [
        ("scenario", Kind::Str),
        ("point", Kind::Int),
        ("rep", Kind::Int),
        ("flow", Kind::Str),
        ("time_s", Kind::F64),
        ("throughput_bps", Kind::F64),
    ]
    .iter()
    .map(|(n, k)| (n.to_string(), *k))
    .collect()
}

/// The timeseries.parquet rows of one run of `point`.
fn series_parquet_run(
    t: &mut Table<impl Write + Send>,
    name: &str,
    point: usize,
    r: &RunResult,
) -> Result<()> {
    for p in &r.timeseries {
        t.row(&[
            Val::Str(name),
            Val::Int(point as i64),
            Val::Int(i64::from(r.rep)),
            Val::Str(&p.flow),
            Val::F64(p.time_s),
            Val::F64(p.throughput_bps),
        ])?;
    }
    Ok(())
}

/// `v` as `serde_json::to_string_pretty` prints it, nested `depth` spaces deep.
fn pretty_at(v: &serde_json::Value, depth: usize) -> Result<String> {
    let text = serde_json::to_string_pretty(v)?;
    Ok(text.replace('\n', &format!("\n{:depth$}", "")))
}

/// One entry of summary.json's `runs`, laid out as the pretty printer lays out the sorted-key
/// document, from its line `    {` to its line `    }`: sweep point `point` with values
/// `sweep`, and the rendered `run` (six spaces deep).
fn summary_entry(point: usize, sweep: &[(String, String)], run: &[u8]) -> Result<Vec<u8>> {
    let mut w = Vec::new();
    write!(w, "    {{\n      \"point\": {point},\n      \"run\": ")?;
    w.extend_from_slice(run);
    write_entry_end(&mut w, sweep)?;
    Ok(w)
}

/// The end of a summary entry after its run: the sweep values and the closing brace.
fn write_entry_end(w: &mut impl Write, sweep: &[(String, String)]) -> Result<()> {
    let sweep: serde_json::Map<String, serde_json::Value> = sweep
        .iter()
        .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
        .collect();
    write!(
        w,
        ",\n      \"sweep\": {}\n    }}",
        pretty_at(&serde_json::Value::Object(sweep), 6)?
    )?;
    Ok(())
}

/// A writer that counts the bytes it has taken.
struct Counted<W> {
    w: W,
    len: u64,
}

impl<W: Write> Write for Counted<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.w.write(buf)?;
        self.len += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.w.flush()
    }
}

/// One run as a pretty object at `depth`: every key from its `Value` but the series, which is
/// written point by point (each point's keys sorted as a `Value` sorts them). The result
/// store renders the runs it is given with this too (`store.rs`).
pub(crate) fn write_run(w: &mut impl Write, r: &mut RunResult, depth: usize) -> Result<()> {
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
