//! Where the real-time drivers' `tracing` events go: standard error, one line per event, as
//! `LEVEL mslink-tunnel[LABEL]: message`; under systemd (`JOURNAL_STREAM` set) each line
//! starts with its sd-daemon(3) priority prefix (`<3>` error, `<4>` warning, `<6>` info,
//! `<7>` debug) so the journal keeps the levels. Each line is written whole, so the lines of
//! two processes sharing a terminal do not interleave.

use std::fmt;

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

/// The `label` and `message` fields of an event.
#[derive(Default)]
struct Fields {
    label: String,
    message: String,
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        match field.name() {
            "label" => self.label = value.to_string(),
            "message" => self.message = value.to_string(),
            _ => {}
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        match field.name() {
            "label" => self.label = format!("{value:?}"),
            "message" => self.message = format!("{value:?}"),
            _ => {}
        }
    }
}

/// One line per event (see the module contract).
struct Line {
    journal: bool,
}

impl<S, N> FormatEvent<S, N> for Line
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        _: &FmtContext<'_, S, N>,
        mut w: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let mut f = Fields::default();
        event.record(&mut f);
        let (prefix, name) = match *event.metadata().level() {
            Level::ERROR => ("<3>", "ERROR"),
            Level::WARN => ("<4>", "WARN"),
            Level::INFO => ("<6>", "INFO"),
            _ => ("<7>", "DEBUG"),
        };
        let p = if self.journal { prefix } else { "" };
        writeln!(w, "{p}{name} mslink-tunnel[{}]: {}", f.label, f.message)
    }
}

/// Sends events at `level` and above to standard error for the rest of the process (a second
/// call keeps the first subscriber).
pub fn init(level: Level) {
    let journal = std::env::var_os("JOURNAL_STREAM").is_some();
    let _ = tracing_subscriber::fmt()
        .with_max_level(level)
        .with_writer(std::io::stderr)
        .event_format(Line { journal })
        .try_init();
}
