//! The per-flow result columns, declared once: name, type, unit and meaning of every field of
//! a [`FlowResult`], with how to read it.
//!
//! Contract. [`FLOW_COLUMNS`] lists the fields of [`FlowResult`] in the order `summary.json`
//! serializes them (a test holds the two together). The flows table (flows.csv,
//! flows.parquet, the Python package's `Result.flows`) is `scenario, point, <sweep keys>, rep,
//! seed` followed by the columns with `table` set, in this order; `mslink reproduce` judges
//! any numeric column by name ([`flow_metric`]); docs/simulator.md's column table is
//! [`markdown_table`] (a test compares them). Adding a metric to the flows table is one field
//! of `FlowResult`, its computation, and one entry here.

use super::results::FlowResult;

/// The type of a column's values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColumnType {
    /// UTF-8 text.
    Text,
    /// A non-negative integer (a count).
    Count,
    /// A float (`NaN` where the value does not exist).
    Float,
    /// True or false (1 or 0 as a metric).
    Flag,
}

impl ColumnType {
    /// The name docs/simulator.md gives the type.
    pub fn name(self) -> &'static str {
        match self {
            ColumnType::Text => "text",
            ColumnType::Count => "count",
            ColumnType::Float => "float",
            ColumnType::Flag => "flag",
        }
    }
}

/// One cell of a flow's row.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Cell<'a> {
    /// Text.
    Text(&'a str),
    /// A count.
    Count(u64),
    /// A float.
    Float(f64),
    /// A flag.
    Flag(bool),
}

impl Cell<'_> {
    /// The cell as a number (a flag is 1 or 0; text has none).
    pub fn number(self) -> Option<f64> {
        match self {
            Cell::Text(_) => None,
            Cell::Count(n) => Some(n as f64),
            Cell::Float(x) => Some(x),
            Cell::Flag(b) => Some(f64::from(u8::from(b))),
        }
    }
}

/// How a column is read from a flow's results.
pub type Get = for<'a> fn(&'a FlowResult) -> Cell<'a>;

/// One column of the flow results.
#[derive(Clone, Copy)]
pub struct FlowColumn {
    /// Name: the `FlowResult` field, the CSV header, the Parquet and pandas column.
    pub name: &'static str,
    /// Type of the values.
    pub ty: ColumnType,
    /// Unit ("" for text and plain counts).
    pub unit: &'static str,
    /// What it holds, in a sentence.
    pub about: &'static str,
    /// Whether the flows table has it (the others are in summary.json only).
    pub table: bool,
    /// Reads it.
    pub get: Get,
}

impl std::fmt::Debug for FlowColumn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FlowColumn")
            .field("name", &self.name)
            .finish()
    }
}

const fn col(
    name: &'static str,
    ty: ColumnType,
    unit: &'static str,
    about: &'static str,
    get: Get,
) -> FlowColumn {
    FlowColumn {
        name,
        ty,
        unit,
        about,
        table: true,
        get,
    }
}

use ColumnType::{Count, Flag, Float, Text};

/// Every field of [`FlowResult`], in its serialization order (see the module contract).
pub const FLOW_COLUMNS: [FlowColumn; 26] = [
    col("flow", Text, "", "flow name", |f| Cell::Text(&f.flow)),
    col("app", Text, "", "application", |f| Cell::Text(&f.app)),
    col("transport", Text, "", "`udp`, or the TCP variant (`reno`, `newreno`, `sack`; `+cubic` with CUBIC)", |f| Cell::Text(&f.transport)),
    col("service", Text, "", "the services that carried it on each wireless segment, `/`-separated", |f| Cell::Text(&f.service)),
    col("sent", Count, "packets", "packets sent", |f| Cell::Count(f.sent)),
    col("received", Count, "packets", "distinct packets received", |f| Cell::Count(f.received)),
    col("duplicates", Count, "packets", "extra copies received", |f| Cell::Count(f.duplicates)),
    col("unsent", Count, "packets", "sent before the run ended and still queued or in the air then: neither received nor lost (TCP: 0)", |f| Cell::Count(f.unsent)),
    col("bytes", Count, "bytes", "bytes received (distinct packets)", |f| Cell::Count(f.bytes)),
    col("duration_s", Float, "s", "from the flow's start to its stop", |f| Cell::Float(f.duration_s)),
    col("throughput_bps", Float, "bit/s", "received bits per second over the flow's active time", |f| Cell::Float(f.throughput_bps)),
    col("loss_rate", Float, "share", "residual loss after link-layer recovery, 1 - received / (sent - unsent)", |f| Cell::Float(f.loss_rate)),
    col("delay_mean_s", Float, "s", "mean one-way delay (TCP: the sender's SRTT at the end)", |f| Cell::Float(f.delay_mean_s)),
    col("delay_std_s", Float, "s", "standard deviation of the delay (TCP: RTTVAR)", |f| Cell::Float(f.delay_std_s)),
    col("delay_min_s", Float, "s", "smallest delay of any packet (a ping's minimum round trip; TCP: 0)", |f| Cell::Float(f.delay_min_s)),
    col("delay_p50_s", Float, "s", "median one-way delay, within 1% (ftp: of the SRTT read every 100 ms; WWW: 0)", |f| Cell::Float(f.delay_p50_s)),
    col("delay_p95_s", Float, "s", "95th percentile of the one-way delay (ftp: of the SRTT)", |f| Cell::Float(f.delay_p95_s)),
    col("delay_p99_s", Float, "s", "99th percentile of the one-way delay (ftp: of the SRTT)", |f| Cell::Float(f.delay_p99_s)),
    col("jitter_s", Float, "s", "RFC 3550 §6.4.1 interarrival jitter at the end of the run (TCP: 0)", |f| Cell::Float(f.jitter_s)),
    col("delay_bound_s", Float, "s", "the most the link schedulers add to its delay beyond what it has alone, when its share covers its peak on every wireless hop; NaN otherwise", |f| Cell::Float(f.delay_bound_s.unwrap_or(f64::NAN))),
    col("playback_miss_rate", Float, "share", "share of the packets sent (less unsent) lost or later than the playback point", |f| Cell::Float(f.playback_miss_rate)),
    col("retransmits", Count, "segments", "TCP: segments retransmitted (UDP: 0)", |f| Cell::Count(f.retransmits)),
    col("timeouts", Count, "", "TCP: retransmission timeouts (UDP: 0)", |f| Cell::Count(f.timeouts)),
    FlowColumn {
        table: false,
        ..col("completed", Flag, "", "TCP: whether the last byte arrived before the run ended (UDP: true)", |f| Cell::Flag(f.completed))
    },
    FlowColumn {
        table: false,
        ..col("malformed", Count, "segments", "TCP: segments that reached an end they did not belong to, or did not parse", |f| Cell::Count(f.malformed))
    },
    col("transactions", Count, "", "WWW: transactions completed within the run (0 for other applications)", |f| Cell::Count(f.transactions)),
];

/// The columns of the flows table, in order.
pub fn table_columns() -> impl Iterator<Item = &'static FlowColumn> {
    FLOW_COLUMNS.iter().filter(|c| c.table)
}

/// The column named `name`.
pub fn flow_column(name: &str) -> Option<&'static FlowColumn> {
    FLOW_COLUMNS.iter().find(|c| c.name == name)
}

/// The numeric column `name` of flow `f`, as a number (a flag is 1 or 0).
pub fn flow_metric(f: &FlowResult, name: &str) -> Option<f64> {
    flow_column(name).and_then(|c| (c.get)(f).number())
}

/// docs/simulator.md's table of the flows table's columns (`scenario, point, <sweep keys>, rep,
/// seed` first), one row per column: name, type, unit, meaning.
pub fn markdown_table() -> String {
    let mut s = String::from("| column | type | unit | meaning |\n|---|---|---|---|\n");
    s += "| `scenario` | text |  | the scenario's `sim.name` |\n";
    s += "| `point` | count |  | the sweep point, from 0 |\n";
    s += "| *sweep keys* | float or text |  | one column per `[sweep]` key: the point's value |\n";
    s += "| `rep` | count |  | the repetition, from 0 |\n";
    s += "| `seed` | count |  | the run's seed |\n";
    for c in table_columns() {
        s += &format!(
            "| `{}` | {} | {} | {} |\n",
            c.name,
            c.ty.name(),
            c.unit,
            c.about
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The columns are FlowResult's fields, in its serialization order (what summary.json holds).
    #[test]
    fn columns_are_the_fields_of_flow_result_in_order() {
        let v = serde_json::to_value(FlowResult::default()).unwrap();
        // serde_json sorts a Value's keys; the struct's order comes from serializing to text.
        let text = serde_json::to_string(&FlowResult::default()).unwrap();
        let mut fields: Vec<(usize, &str)> = v
            .as_object()
            .unwrap()
            .keys()
            .map(|k| (text.find(&format!("\"{k}\":")).unwrap(), k.as_str()))
            .collect();
        fields.sort();
        let names: Vec<&str> = fields.into_iter().map(|(_, k)| k).collect();
        let ours: Vec<&str> = FLOW_COLUMNS.iter().map(|c| c.name).collect();
        assert_eq!(ours, names);
    }

    /// Each column reads its own field: a flow whose every number is distinct gives each
    /// column the value of the field of the same name.
    #[test]
    fn every_column_reads_its_own_field() {
        let mut f = FlowResult {
            flow: "f".into(),
            app: "cbr".into(),
            transport: "udp".into(),
            service: "raw".into(),
            completed: true,
            delay_bound_s: Some(0.5),
            ..FlowResult::default()
        };
        let mut v = serde_json::to_value(&f).unwrap();
        for (i, (_, x)) in v.as_object_mut().unwrap().iter_mut().enumerate() {
            if x.is_u64() {
                *x = (100 + i as u64).into();
            } else if x.is_f64() || x.is_null() {
                *x = (0.25 + i as f64).into();
            }
        }
        f = serde_json::from_value(v.clone()).unwrap();
        for c in &FLOW_COLUMNS {
            let want = &v[c.name];
            match (c.get)(&f) {
                Cell::Text(t) => assert_eq!(want.as_str(), Some(t), "{}", c.name),
                Cell::Count(n) => assert_eq!(want.as_u64(), Some(n), "{}", c.name),
                Cell::Float(x) => assert_eq!(want.as_f64(), Some(x), "{}", c.name),
                Cell::Flag(b) => assert_eq!(want.as_bool(), Some(b), "{}", c.name),
            }
        }
    }

    /// Every metric stats.csv summarises is a numeric column that reads the same value.
    #[test]
    fn summarised_metrics_are_columns() {
        let f = FlowResult {
            throughput_bps: 1.5,
            retransmits: 7,
            ..FlowResult::default()
        };
        for (name, get) in super::super::SUMMARISED {
            assert_eq!(flow_metric(&f, name), Some(get(&f)), "{name}");
        }
    }
}
