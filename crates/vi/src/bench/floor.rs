//! The machine's floor for the shared-memory ping-pong (`mslink bench --floor`): a tiny C
//! program (`floor.c`, shipped in the crate) in which two processes on two CPUs spin on
//! sequence words in a shared mapping and move each message with one `memcpy` — the same
//! cross-core ping-pong as the VI shared-memory backend with none of the VI layer.
//!
//! Contract: [`FloorProgram::build`] compiles `floor.c` with the C compiler (`$CC`, else
//! `cc`) into a fresh private temporary folder; [`FloorProgram::run`] runs it once for one
//! message size ([`floor_pingpong`]: both) with the same
//! iterations, warm-up and CPUs as the VI rows, and returns a [`PingRun`] that the client
//! turns into a `floor` row (mode `poll`) exactly as it does the VI runs (same clock:
//! CLOCK_MONOTONIC, same percentiles, same repetitions). The run's CPU is both processes'
//! (the program and the server it forks, from `RUSAGE_CHILDREN`), reported on the client
//! side; the server side's CPU is unknown (NaN, `null` in JSON). No compiler, a failed compile or a
//! failed run is a [`BenchError`] naming the command and its stderr; the folder is removed in
//! every case.

use std::path::PathBuf;
use std::process::Command;

use super::{protocol, BenchError, PingRun};

/// The C source of the floor program.
pub const FLOOR_C: &str = include_str!("floor.c");

/// A temporary folder removed on drop.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn temp_dir() -> Result<TempDir, BenchError> {
    use std::os::unix::fs::DirBuilderExt;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let p = std::env::temp_dir().join(format!("mslink-floor-{}-{nanos}", std::process::id()));
    std::fs::DirBuilder::new().mode(0o700).create(&p)?;
    Ok(TempDir(p))
}

/// The floor program, compiled once into its own private folder (removed on drop).
pub struct FloorProgram {
    /// Holds the folder (removed when the program is dropped).
    _dir: TempDir,
    exe: PathBuf,
}

impl FloorProgram {
    /// Compiles `floor.c` with `$CC` (else `cc`).
    ///
    /// # Errors
    /// No compiler, or a failed compile, naming the command and its stderr.
    pub fn build() -> Result<FloorProgram, BenchError> {
        let dir = temp_dir()?;
        let src = dir.0.join("floor.c");
        let exe = dir.0.join("floor");
        std::fs::write(&src, FLOOR_C)?;
        let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
        let out = Command::new(&cc)
            .args(["-O2", "-std=c11", "-o"])
            .arg(&exe)
            .arg(&src)
            .output()
            .map_err(|e| {
                protocol(format!(
                    "--floor needs a C compiler: running `{cc}` failed ({e}); install one (e.g. \
                     apt-get install gcc) or set CC"
                ))
            })?;
        if !out.status.success() {
            return Err(protocol(format!(
                "--floor: `{cc} -O2 -std=c11 floor.c` failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        Ok(FloorProgram { _dir: dir, exe })
    }

    /// One run: round trip of `size`-byte messages between a client on `cpus.1` and a server
    /// on `cpus.0` (unpinned if `None`), `iters` recorded after `warmup`.
    pub fn run(
        &self,
        size: usize,
        iters: usize,
        warmup: usize,
        cpus: Option<(usize, usize)>,
    ) -> Result<PingRun, BenchError> {
        run_program(&self.exe, size, iters, warmup, cpus)
    }
}

/// Round trip of `size`-byte messages between a client on `cpus.1` and a server on `cpus.0`
/// (unpinned if `None`), `iters` recorded after `warmup`: [`FloorProgram::build`] then one
/// [`FloorProgram::run`].
pub fn floor_pingpong(
    size: usize,
    iters: usize,
    warmup: usize,
    cpus: Option<(usize, usize)>,
) -> Result<PingRun, BenchError> {
    FloorProgram::build()?.run(size, iters, warmup, cpus)
}

fn run_program(
    exe: &std::path::Path,
    size: usize,
    iters: usize,
    warmup: usize,
    cpus: Option<(usize, usize)>,
) -> Result<PingRun, BenchError> {
    let (s, c) = cpus.map_or((-1, -1), |(s, c)| (s as i64, c as i64));
    let before = children_cpu();
    let start = std::time::Instant::now();
    let out = Command::new(exe)
        .args([size, iters, warmup].map(|x| x.to_string()))
        .args([s, c].map(|x| x.to_string()))
        .output()?;
    if !out.status.success() {
        return Err(protocol(format!(
            "floor program failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let rtts = text
        .lines()
        .map(|l| l.trim().parse::<u64>())
        .collect::<Result<Vec<u64>, _>>()
        .map_err(|e| protocol(format!("floor program printed a bad round trip: {e}")))?;
    if rtts.len() != iters {
        return Err(protocol(format!(
            "floor program printed {} round trips, expected {iters}",
            rtts.len()
        )));
    }
    let seconds = start.elapsed().as_secs_f64();
    let after = children_cpu();
    Ok(PingRun {
        rtts_ns: rtts,
        seconds,
        round_trips: iters + warmup,
        client_cpu: (after.0 - before.0, after.1 - before.1),
        server_cpu: (f64::NAN, f64::NAN),
        server_seconds: seconds,
        cpus: (s, c),
        echoes_checked: 0,
        floor: None,
    })
}

/// User and system CPU (s) of this process's waited-for children so far.
fn children_cpu() -> (f64, f64) {
    // SAFETY: rusage is plain old data; zeroed is a valid value and getrusage fills it.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointer to a rusage owned by this frame.
    if unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) } != 0 {
        return (0.0, 0.0);
    }
    let s = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (s(ru.ru_utime), s(ru.ru_stime))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shipped program compiles, runs on two CPUs, and yields one round trip per
    /// iteration, each longer than zero (the cross-core exchange cannot be free).
    #[test]
    fn floor_program_measures_every_round_trip() {
        let r = floor_pingpong(64, 200, 20, None).unwrap();
        assert_eq!((r.rtts_ns.len(), r.round_trips), (200, 220));
        assert!(r.rtts_ns.iter().all(|&t| t > 0));
        // Two processes spinning: some CPU was spent.
        assert!(r.client_cpu.0 + r.client_cpu.1 > 0.0, "{r:?}");
    }

    /// A compiler that does not exist is a clear error naming it, not a panic.
    #[test]
    fn missing_compiler_is_a_clear_error() {
        // Only this test sets CC, through a child process, so parallel tests are unaffected.
        if std::env::var_os("MSLINK_FLOOR_CHILD").is_none() {
            let st = Command::new(std::env::current_exe().unwrap())
                .args([
                    "bench::floor::tests::missing_compiler_is_a_clear_error",
                    "--exact",
                ])
                .env("MSLINK_FLOOR_CHILD", "1")
                .env("CC", "/nonexistent/mslink-cc")
                .status()
                .unwrap();
            assert!(st.success());
            return;
        }
        let e = floor_pingpong(64, 10, 0, None).unwrap_err().to_string();
        assert!(
            e.contains("/nonexistent/mslink-cc") && e.contains("C compiler"),
            "{e}"
        );
    }
}
