//! Reading the trace files a configuration names: the I/O the channel and simulator crates
//! leave to their drivers.
//!
//! Contract: [`read_trace_file`] returns a file's whole text (what the emulator's configuration
//! takes); [`read_error_trace`] streams an error trace line by line into a
//! [`PackedTrace`], so a trace costs its packed size (never more than the file, a quarter of
//! it for one outcome per line) and never its text; [`error_trace_held`] tells from a sample
//! of a file what it will take once read, for the simulator's estimate; [`read_period_trace`] parses a period
//! trace (`model = "period_trace"`, a few lines of Good and Bad periods); [`TraceFiles`] loads
//! each error or period trace a simulation names once, on first use, and hands every run and
//! link direction the same shared copy. Every error names the file, and a malformed line its
//! number.

use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use mslink_channel::config::{TraceLoadError, TraceLoader};
use mslink_channel::fading::PeriodTrace;
use mslink_channel::trace::{PackedTrace, TraceParser};

/// How the drivers read a trace file named in a configuration: its text, or an error whose
/// message names the file (the configuration crates themselves do no I/O; `mslink emulate`
/// and the Python package pass this to them as `load`).
pub fn read_trace_file(path: &Path) -> std::io::Result<String> {
    std::fs::read_to_string(path).map_err(|e| cannot_read(path, e))
}

fn cannot_read(path: &Path, e: std::io::Error) -> std::io::Error {
    std::io::Error::new(e.kind(), format!("cannot read {}: {e}", path.display()))
}

/// Reads the error trace at `path` (docs/traces.md) line by line into a packed trace, never
/// holding more than one line of its text.
pub fn read_error_trace(path: &Path) -> Result<PackedTrace, TraceLoadError> {
    let file = std::fs::File::open(path).map_err(|e| cannot_read(path, e))?;
    let mut reader = std::io::BufReader::with_capacity(1 << 16, file);
    let mut parser = TraceParser::new();
    let mut line = String::new();
    loop {
        line.clear();
        let n = reader.read_line(&mut line).map_err(|e| {
            let at = format!("line {}: {e}", parser.lines() + 1);
            cannot_read(path, std::io::Error::new(e.kind(), at))
        })?;
        if n == 0 {
            return Ok(parser.finish());
        }
        let text = line.strip_suffix('\n').unwrap_or(&line);
        parser.push_line(text.strip_suffix('\r').unwrap_or(text))?;
    }
}

/// Bytes of a trace file [`error_trace_held`] reads to see how it packs.
pub const HELD_SAMPLE_BYTES: u64 = 1 << 20;

/// The memory the error trace at `path` will take once read ([`read_error_trace`]), for an
/// estimate made before reading it: its first [`HELD_SAMPLE_BYTES`] are packed, and the
/// packed bytes per byte of text scale to the whole file, rounded up to the power of two the
/// packed buffer grows to (the whole trace's packed size when the file is no longer than the
/// sample). `None` when the file cannot be read or its first lines are not an error trace.
pub fn error_trace_held(path: &Path) -> Option<u64> {
    let file = std::fs::File::open(path).ok()?;
    let len = file.metadata().ok()?.len();
    let mut reader = std::io::BufReader::with_capacity(1 << 16, file);
    let mut parser = TraceParser::new();
    let (mut line, mut read) = (String::new(), 0u64);
    while read < HELD_SAMPLE_BYTES {
        line.clear();
        let n = reader.read_line(&mut line).ok()?;
        if n == 0 {
            break;
        }
        read += n as u64;
        let text = line.strip_suffix('\n').unwrap_or(&line);
        parser
            .push_line(text.strip_suffix('\r').unwrap_or(text))
            .ok()?;
    }
    let packed = parser.finish().heap_bytes() as u64;
    if read >= len || read == 0 {
        return Some(packed);
    }
    let scaled = (packed as f64 * len as f64 / read as f64).ceil() as u64;
    Some(scaled.max(1).next_power_of_two())
}

/// Reads and parses the period trace at `path` (docs/traces.md, "Error models").
pub fn read_period_trace(path: &Path) -> Result<PeriodTrace, TraceLoadError> {
    Ok(PeriodTrace::parse(&read_trace_file(path)?)?)
}

/// The error traces of one simulation, read from `dir` on first use and shared: a trace named
/// by every run and both directions of a link is read and held once.
pub struct TraceFiles {
    dir: PathBuf,
    loaded: Cache<PackedTrace>,
    periods: Cache<PeriodTrace>,
}

impl TraceFiles {
    /// Traces named relative to `dir` (the scenario's folder).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        TraceFiles {
            dir: dir.into(),
            loaded: Mutex::new(BTreeMap::new()),
            periods: Mutex::new(BTreeMap::new()),
        }
    }

    /// Where the trace `file` (as the configuration names it) is read from.
    pub fn path(&self, file: &str) -> PathBuf {
        self.dir.join(file)
    }
}

/// Files already read, by name: each one's content or the message it failed with.
type Cache<T> = Mutex<BTreeMap<String, Result<Arc<T>, String>>>;

/// `file` from `cache`, read with `read` on first use. The lock is held while a file loads, so
/// two runs starting together read it once; a file that failed fails every run that names
/// it, with the same message.
fn cached<T>(
    cache: &Cache<T>,
    file: &str,
    read: impl FnOnce() -> Result<T, TraceLoadError>,
) -> Result<Arc<T>, TraceLoadError> {
    let mut loaded = cache.lock().unwrap_or_else(|e| e.into_inner());
    loaded
        .entry(file.to_string())
        .or_insert_with(|| read().map(Arc::new).map_err(|e| e.to_string()))
        .clone()
        .map_err(|msg| TraceLoadError::Read(std::io::Error::other(msg)))
}

impl TraceLoader for &TraceFiles {
    fn load_trace(&mut self, file: &str) -> Result<Arc<PackedTrace>, TraceLoadError> {
        cached(&self.loaded, file, || read_error_trace(&self.path(file)))
    }

    fn load_periods(&mut self, file: &str) -> Result<Arc<PeriodTrace>, TraceLoadError> {
        cached(&self.periods, file, || read_period_trace(&self.path(file)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_memory_a_trace_will_take_is_told_from_a_sample() {
        let dir = std::env::temp_dir().join(format!("mslink-trace-held-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let block = "ok * 37\nbits 12 95 310\nloss\nok * 5\ntrunc 400\n";
        // Larger than the sample: scaled and rounded up to the packed buffer's power of two,
        // never below what reading it takes, at most twice that.
        let big = dir.join("big.trace");
        std::fs::write(
            &big,
            block.repeat(3 * HELD_SAMPLE_BYTES as usize / block.len()),
        )
        .unwrap();
        let held = error_trace_held(&big).unwrap();
        let real = read_error_trace(&big).unwrap().heap_bytes() as u64;
        assert!(held >= real && held <= 2 * real, "{held} vs {real}");
        assert!(
            held < std::fs::metadata(&big).unwrap().len(),
            "packs below its text"
        );
        // Within the sample: what reading it takes.
        let small = dir.join("small.trace");
        std::fs::write(&small, block.repeat(100)).unwrap();
        assert_eq!(
            error_trace_held(&small),
            Some(read_error_trace(&small).unwrap().heap_bytes() as u64)
        );
        // Not an error trace, or no file: no figure.
        let periods = dir.join("fade.periods");
        std::fs::write(&periods, "# mslink period trace\ngood 1.5\nbad 0.2\n").unwrap();
        assert_eq!(error_trace_held(&periods), None);
        assert_eq!(error_trace_held(&dir.join("missing")), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn streams_lines_with_either_ending_and_names_the_line_of_an_error() {
        let dir = std::env::temp_dir().join(format!("mslink-trace-files-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let ok = dir.join("ok.trace");
        std::fs::write(&ok, "# crlf\r\nok * 3\r\nloss\nbits 5,9\n\ntrunc 4").unwrap();
        let t = read_error_trace(&ok).unwrap();
        assert_eq!((t.len(), t.frames()), (4, 6));
        let bad = dir.join("bad.trace");
        std::fs::write(&bad, "ok\n\nlos\n").unwrap();
        let e = read_error_trace(&bad).unwrap_err().to_string();
        assert!(e.starts_with("line 3: unknown entry \"los\""), "{e}");
        let binary = dir.join("binary.trace");
        std::fs::write(&binary, b"ok\nok\n\xff\xfe\n").unwrap();
        let e = read_error_trace(&binary).unwrap_err().to_string();
        assert!(e.contains("binary.trace: line 3:"), "{e}");
        let e = read_error_trace(&dir.join("none.trace"))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("cannot read ") && e.contains("none.trace"),
            "{e}"
        );

        // Shared: one load per file, however many runs ask; failures repeat their message.
        let files = TraceFiles::new(&dir);
        let (a, b) = (
            (&files).load_trace("ok.trace"),
            (&files).load_trace("ok.trace"),
        );
        assert!(Arc::ptr_eq(&a.unwrap(), &b.unwrap()));
        let e1 = (&files).load_trace("bad.trace").unwrap_err().to_string();
        assert_eq!(
            e1,
            (&files).load_trace("bad.trace").unwrap_err().to_string()
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn period_traces_are_read_once_and_shared_and_errors_name_file_and_line() {
        let dir = std::env::temp_dir().join(format!("mslink-period-files-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("fade.periods"),
            "# x\r\ngood 0.5\r\nbad 0.02 * 2\n",
        )
        .unwrap();
        std::fs::write(dir.join("bad.periods"), "good 1\nbda 2\n").unwrap();
        let files = TraceFiles::new(&dir);
        let a = (&files).load_periods("fade.periods").unwrap();
        assert_eq!(a.total(), mslink_link::Duration::from_millis(540));
        let b = (&files).load_periods("fade.periods").unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        let e = (&files)
            .load_periods("bad.periods")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("line 2: unknown period \"bda\""), "{e}");
        let e = (&files)
            .load_periods("none.periods")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("cannot read ") && e.contains("none.periods"),
            "{e}"
        );

        // Through a configuration, the message names the key, the file and the line.
        let c: mslink_channel::ErrorModelConfig =
            toml::from_str("model = 'period_trace'\nfile = 'bad.periods'").unwrap();
        let e = c.build_with(&mut &files).err().unwrap().to_string();
        assert!(
            e.contains("`file`") && e.contains("bad.periods: line 2: unknown period"),
            "{e}"
        );
        let c: mslink_channel::ErrorModelConfig =
            toml::from_str("model = 'period_trace'\nfile = 'fade.periods'").unwrap();
        assert_eq!(c.trace_files(), ["fade.periods"]);
        assert!(c.build_with(&mut &files).is_ok());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_sample_period_trace_is_what_its_comments_say() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../traces/fade.periods");
        let t = read_period_trace(&path).unwrap();
        assert_eq!(t.total(), mslink_link::Duration::from_millis(2200));
        let bad = t.fraction_bad().unwrap();
        assert!((bad - 0.077).abs() < 0.0005, "{bad}");
    }
}
