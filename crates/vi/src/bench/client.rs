//! The client side of the benchmark: every backend, mode and size against one server per
//! backend, then the plain-socket reference and the per-call costs.
//!
//! Contract: [`run_client`] measures, for each backend over each transport (each once), a
//! ping-pong point per mode and size with a line fitted to the medians, then a throughput
//! point per mode and size; against a local server also the plain blocking-socket ping-pong
//! when TCP is among the backends; always the per-call cost tables. Every point is measured
//! `reps` times: the runs of one mode go through all sizes in turn (run 1 of every size, then
//! run 2, ...), so a slow spell of the host spreads over sizes instead of landing on one, and
//! the rows give means with 95% intervals (`report`). Sizes beyond what a UDP datagram carries
//! are left out for the UDP backends. With `quick`, the settings shrink to ones that finish in
//! seconds. With `verify`, the throughput test sends a seeded pattern (a fresh buffer per
//! message in flight, filled by the sender inside the measured interval) and the server checks
//! every byte; a mismatch fails the run with the message and byte.
//!
//! Progress: [`run_client_with`] reports `(done, total)` after every measured run of a point
//! (one ping-pong or throughput run per backend, mode, size and repetition, one raw-socket run
//! per size and repetition, and the call-cost tables as one last step): `total` is fixed once
//! the backends and sizes are known, `done` rises by one from 1 to `total`. It reports counts
//! only; drawing them (and timing them) is the caller's.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::time::Instant;

use super::end::End;
use super::server::{spawn_server, ServerChild};
use super::{
    call_costs, current_cpu, netns, pattern, protocol, thread_cpu, BenchBackend, BenchError,
    CarrierRow, Context, Fit, FloorPair, PingRow, PingRun, Report, ThroughputRow, ThroughputRun,
    Transport, FLOOR_GAP_PCT, OP_PINGPONG, OP_QUIT, OP_SINK, TIMEOUT, WINDOW,
};
use crate::{process_cpu, Completion, WaitMode, WorkQueue};

/// How a local run starts its server: this program with these leading arguments, followed by
/// `--backend NAME --addr ADDR --max-size N` (and `--zc` for zero-copy sends). The program
/// must run [`super::serve`] and print `listening on ADDR` as its first line (`mslink bench
/// server` does).
#[derive(Clone, Debug)]
pub struct ServerCommand {
    /// The program.
    pub program: PathBuf,
    /// Its leading arguments.
    pub args: Vec<String>,
}

/// Where the server is.
#[derive(Clone, Debug)]
pub enum Target {
    /// Already running at this address.
    Remote(String),
    /// Started on this host for each backend.
    Local {
        /// How to start it.
        server: ServerCommand,
        /// Run the server and the client in two fresh network namespaces joined by a veth
        /// pair ([`netns::NetnsPair`]; needs root).
        netns: bool,
    },
}

/// The backends `o` measures, each once: every backend over every transport given, or, with
/// none given, each as named (`udp` stays UDP: issue 34 found it mapped to TCP).
pub fn backends_of(o: &ClientConfig) -> Vec<BenchBackend> {
    let mut backends: Vec<BenchBackend> = Vec::new();
    for &b in &o.backends {
        let each: Vec<BenchBackend> = if o.transports.is_empty() {
            vec![b]
        } else {
            o.transports.iter().map(|&t| b.over(t)).collect()
        };
        for b in each {
            if !backends.contains(&b) {
                backends.push(b);
            }
        }
    }
    backends
}

/// What a client run measures.
#[derive(Clone, Debug)]
pub struct ClientConfig {
    /// Backends to measure (each over every transport).
    pub backends: Vec<BenchBackend>,
    /// Transports of the sockets and io_uring backends: each of them is measured over every
    /// one given (`udp` over TCP is `tcp`); none: each over the transport its name says.
    pub transports: Vec<Transport>,
    /// io_uring: SEND_ZC (else plain SEND), client and local server.
    pub zc: bool,
    /// Wait modes to measure.
    pub modes: Vec<WaitMode>,
    /// Message sizes in bytes (none: powers of two 1 B .. `max_size`).
    pub sizes: Vec<usize>,
    /// Largest message size (bytes).
    pub max_size: usize,
    /// Round trips per size (after `warmup`).
    pub iters: usize,
    /// Unrecorded round trips per size.
    pub warmup: usize,
    /// Bytes pushed per throughput point (at least 64 messages).
    pub volume: usize,
    /// Most messages per throughput point.
    pub max_messages: usize,
    /// Repetitions per call in the call-cost tables.
    pub calls: usize,
    /// Small settings that finish in seconds (CI).
    pub quick: bool,
    /// Runs of every point (at least 1); rows give means and 95% intervals over them.
    pub reps: usize,
    /// Throughput test: the sender fills every message with a seeded pattern and the server
    /// checks it.
    pub verify: bool,
    /// (server CPU, client CPU): pin a local server and this thread there (sched_setaffinity;
    /// the floor program too). The thread stays pinned after the run.
    pub cpus: Option<(usize, usize)>,
    /// Local runs: also measure the C spin-loop floor ([`super::floor_pingpong`]) at every
    /// size, as `floor` ping-pong rows.
    pub floor: bool,
}

/// Runs every test against `target` (see the module contract).
pub fn run_client(o: &ClientConfig, target: &Target) -> Result<Report, BenchError> {
    run_client_with(o, target, &mut |_, _| {})
}

/// [`run_client`], calling `on_step(done, total)` after every measured point (see the module
/// contract).
pub fn run_client_with(
    o: &ClientConfig,
    target: &Target,
    on_step: &mut dyn FnMut(usize, usize),
) -> Result<Report, BenchError> {
    let o = settled(o);
    let sizes = sizes_of_config(&o);
    let max = sizes.iter().copied().max().unwrap_or(1).max(64);
    let mut rep = Report::default();
    let backends = backends_of(&o);
    let mut ns = match target {
        Target::Local { netns: true, .. } => Some(netns::NetnsPair::create()?),
        _ => None,
    };
    if let Some(n) = ns.as_mut() {
        n.enter_client()?;
    }
    let path = if ns.is_some() { "veth" } else { "loopback" };
    // Plain-socket references for the transports measured (local runs only).
    let references: Vec<BenchBackend> = if matches!(target, Target::Local { .. }) {
        [BenchBackend::Sock, BenchBackend::SockUdp]
            .into_iter()
            .filter(|r| {
                backends
                    .iter()
                    .any(|b| *b != BenchBackend::Shm && b.carrier() == r.carrier())
            })
            .collect()
    } else {
        Vec::new()
    };
    let floor = o.floor && matches!(target, Target::Local { .. });
    let run = Run {
        reps: o.reps.max(1),
        o,
        target,
        sizes,
        max,
        path,
        ns,
        floor: if floor {
            Some(super::FloorProgram::build()?)
        } else {
            None
        },
    };
    let mut progress = Progress {
        done: 0,
        total: run.total_steps(&backends, &references, floor),
        on_step,
    };
    if let Some((_, c)) = run.o.cpus {
        pin(c)?;
    }
    for &b in &backends {
        run.backend(b, &mut progress, &mut rep)?;
    }
    for &r in &references {
        run.socket_reference(r, &mut progress, &mut rep)?;
    }
    if run.floor.is_some() {
        run.floor(&mut progress, &mut rep)?;
    }
    rep.callcost = call_costs(run.o.calls, run.reps)?;
    progress.step();
    set_socket_over_vi_ratio(&mut rep);
    Ok(rep)
}

/// `o` as measured: with `quick`, its settings shrunk to ones that finish in seconds.
fn settled(o: &ClientConfig) -> ClientConfig {
    let mut o = o.clone();
    if o.quick {
        o.max_size = o.max_size.min(64 << 10);
        o.iters = o.iters.min(300);
        o.warmup = o.warmup.min(30);
        o.volume = o.volume.min(4 << 20);
        o.max_messages = o.max_messages.min(5_000);
        o.calls = o.calls.min(200);
    }
    o
}

/// The sizes `o` measures: those given, or powers of two from 1 B to `max_size`.
fn sizes_of_config(o: &ClientConfig) -> Vec<usize> {
    if o.sizes.is_empty() {
        std::iter::successors(Some(1usize), |s| s.checked_mul(2))
            .take_while(|&s| s <= o.max_size)
            .collect()
    } else {
        o.sizes.clone()
    }
}

/// Pins the calling thread to `cpu` (`--cpu`).
fn pin(cpu: usize) -> Result<(), BenchError> {
    crate::pin_thread_to_cpu(cpu).context(|| format!("--cpu: pin to CPU {cpu}"))
}

/// Table 1's socket send()+recv() pair over Table 2's VI post+wait total, when the VI total
/// was measured.
fn set_socket_over_vi_ratio(rep: &mut Report) {
    let get = |api: &str, call: &str| {
        rep.callcost
            .iter()
            .find(|r| r.api == api && r.call == call)
            .map_or(0.0, |r| r.mean_us)
    };
    let vi_total = get(
        "vi",
        "total of 4 (post send + send wait + post recv + recv wait)",
    );
    if vi_total > 0.0 {
        rep.socket_over_vi_ratio = get("socket", "send()+recv() 1 B") / vi_total;
    }
}

/// The progress count of a client run (see the module contract).
struct Progress<'a> {
    done: usize,
    total: usize,
    on_step: &'a mut dyn FnMut(usize, usize),
}

impl Progress<'_> {
    /// One more measured run done: report it.
    fn step(&mut self) {
        self.done += 1;
        (self.on_step)(self.done, self.total);
    }
}

/// A client run under way: its settings (`quick` applied), where the server is, and what
/// every backend's points share.
struct Run<'a> {
    o: ClientConfig,
    target: &'a Target,
    /// Every size measured (a UDP backend takes those a datagram carries: [`Run::sizes_of`]).
    sizes: Vec<usize>,
    /// The largest size (at least 64 B): what the ends' buffers hold.
    max: usize,
    /// Runs of every point (at least 1).
    reps: usize,
    /// The rows' path: `veth` between namespaces, else `loopback`.
    path: &'static str,
    /// The namespaces of a `netns` run, the client's entered (removed when the run ends).
    ns: Option<netns::NetnsPair>,
    /// The floor program (`--floor`, local runs), compiled once: it measures the floor rows
    /// and brackets every polling point ([`Run::bracketed`]).
    floor: Option<super::FloorProgram>,
}

impl Run<'_> {
    /// The sizes measured on backend `b`: a UDP message is one datagram, so sizes beyond it
    /// are left out for UDP backends.
    fn sizes_of(&self, b: BenchBackend) -> Vec<usize> {
        self.sizes
            .iter()
            .copied()
            .filter(|&s| s <= b.backend().max_message())
            .collect()
    }

    /// Measured runs in all, the call-cost tables counting as one.
    fn total_steps(
        &self,
        backends: &[BenchBackend],
        references: &[BenchBackend],
        floor: bool,
    ) -> usize {
        let (sizes, reps) = (self.sizes.len(), self.reps);
        backends
            .iter()
            .map(|&b| 2 * self.o.modes.len() * self.sizes_of(b).len() * reps)
            .sum::<usize>()
            + references
                .iter()
                .map(|&r| self.sizes_of(r).len() * reps)
                .sum::<usize>()
            + if floor { sizes * reps } else { 0 }
            + 1
    }

    /// `measure(rep, size)` at every size, `reps` times over: run 1 of every size, then run
    /// 2, ... (see the module contract), one progress step each. Returns the runs by size.
    fn runs_by_size<R: Clone>(
        &self,
        sizes: &[usize],
        progress: &mut Progress,
        mut measure: impl FnMut(usize, usize) -> Result<R, BenchError>,
    ) -> Result<Vec<Vec<R>>, BenchError> {
        let mut runs: Vec<Vec<R>> = vec![Vec::new(); sizes.len()];
        for r in 0..self.reps {
            for (k, &s) in sizes.iter().enumerate() {
                runs[k].push(measure(r, s)?);
                progress.step();
            }
        }
        Ok(runs)
    }

    /// Backend `b` against its own server (started here for a local target): for each mode,
    /// a ping-pong point per size with its fitted line, then a throughput point per size.
    fn backend(
        &self,
        b: BenchBackend,
        progress: &mut Progress,
        rep: &mut Report,
    ) -> Result<(), BenchError> {
        let o = &self.o;
        let sizes = self.sizes_of(b);
        let max = self.max.min(b.backend().max_message());
        let (_child, addr) = self.server(b, max)?;
        // The client's slots: WINDOW receives, the spare (control and ping-pong sends), and
        // with verify WINDOW send buffers (one per message in flight, so a pattern is never
        // rewritten under a send the kernel has not finished).
        let slots = if o.verify { 2 * WINDOW + 1 } else { WINDOW + 1 };
        let mut e = End::new(b, max, slots, o.zc)?;
        for i in 0..WINDOW {
            e.post_recv(i)?;
        }
        e.nic
            .connect(e.vi, &addr, TIMEOUT)
            .context(|| format!("connect to {addr}"))?;
        let carrier = e.nic.carrier(e.vi)?;
        rep.carriers.push(checked_carrier(b, carrier)?);
        for &m in &o.modes {
            e.mode = m;
            let runs = self.runs_by_size(&sizes, progress, |_, s| {
                self.bracketed(m, s, || pingpong(&mut e, m, s, o.iters, o.warmup))
                    .context(|| format!("ping-pong {b:?} {m:?} {s} B"))
            })?;
            let rows: Vec<PingRow> = (sizes.iter().zip(runs))
                .map(|(&s, r)| PingRow::from_runs(b, m, self.path, s, o.iters, r))
                .collect();
            rep.rtt_fit.push(fit_of(b, m, &rows));
            rep.pingpong.extend(rows);
            let runs = self.runs_by_size(&sizes, progress, |r, s| {
                let seed = o.verify.then_some(seed_of(r, s));
                throughput(&mut e, m, s, o.volume, o.max_messages, seed, None)
                    .context(|| format!("throughput {b:?} {m:?} {s} B"))
            })?;
            for (&s, r) in sizes.iter().zip(runs) {
                rep.throughput
                    .push(ThroughputRow::from_runs(b, m, self.path, s, &r));
            }
        }
        control(&mut e, [OP_QUIT as u64, 0, 0, 0, 0], false)?;
        let _ = e.nic.disconnect(e.vi);
        Ok(())
    }

    /// The server of backend `b` (messages up to `max` bytes): started here for a local
    /// target (its child process, kept until the backend is done), else the remote address.
    fn server(
        &self,
        b: BenchBackend,
        max: usize,
    ) -> Result<(Option<ServerChild>, String), BenchError> {
        Ok(match self.target {
            Target::Local { server, .. } => {
                let ns = self.ns.as_ref().map(|n| n.server());
                // The child inherits this thread's CPU mask: the server's CPU while it starts.
                if let Some((s, _)) = self.o.cpus {
                    pin(s)?;
                }
                let started = spawn_server(server, b, max, self.o.zc, ns);
                if let Some((_, c)) = self.o.cpus {
                    pin(c)?;
                }
                let (c, a) = started?;
                (Some(c), a)
            }
            Target::Remote(addr) => (None, addr.clone()),
        })
    }

    /// Reference `b` (`sock` or `sock-udp`): the same ping-pong with plain blocking sockets
    /// and no VI framing, to show what the VI layer adds on the TCP or the UDP path.
    fn socket_reference(
        &self,
        b: BenchBackend,
        progress: &mut Progress,
        rep: &mut Report,
    ) -> Result<(), BenchError> {
        let o = &self.o;
        let sizes = self.sizes_of(b);
        let mut seen = None;
        let runs = self.runs_by_size(&sizes, progress, |_, s| {
            let (run, carrier) =
                raw_socket_pingpong(b.carrier(), s, o.iters, o.warmup, o.cpus.map(|c| c.0))
                    .context(|| format!("raw socket ping-pong ({}) {s} B", b.name()))?;
            seen = Some(checked_carrier(b, Some(carrier))?);
            Ok(run)
        })?;
        rep.carriers.extend(seen);
        let m = WaitMode::Block;
        let rows: Vec<PingRow> = (sizes.iter().zip(runs))
            .map(|(&s, r)| PingRow::from_runs(b, m, "loopback", s, o.iters, r))
            .collect();
        rep.rtt_fit.push(fit_of(b, m, &rows));
        rep.pingpong.extend(rows);
        Ok(())
    }

    /// One run of a ping-pong point (`measure`), with `--floor` in polling mode between two
    /// floor runs of the same size, iterations and CPUs, just before and just after it. When
    /// the two floors differ by more than [`FLOOR_GAP_PCT`] the placement of the processes
    /// changed under the run: it is measured again (both floors too), at most
    /// [`FLOOR_RETRIES`] times, and kept with its floors (flagged in the row) if they still
    /// differ.
    fn bracketed(
        &self,
        m: WaitMode,
        size: usize,
        mut measure: impl FnMut() -> Result<PingRun, BenchError>,
    ) -> Result<PingRun, BenchError> {
        let Some(fp) = self.floor.as_ref().filter(|_| m == WaitMode::Poll) else {
            return measure();
        };
        let o = &self.o;
        let floor = || -> Result<[f64; 3], BenchError> {
            let r = fp.run(size, o.iters, o.warmup, o.cpus)?;
            Ok(super::report::floor_quantiles(&r.rtts_ns))
        };
        let mut repeats = 0;
        loop {
            let before = floor().context(|| format!("floor before, {size} B"))?;
            let mut run = measure()?;
            let after = floor().context(|| format!("floor after, {size} B"))?;
            let pair = FloorPair {
                before,
                after,
                repeats,
            };
            if pair.gap_pct() <= FLOOR_GAP_PCT || repeats == FLOOR_RETRIES {
                run.floor = Some(pair);
                return Ok(run);
            }
            repeats += 1;
        }
    }

    /// The machine's floor for the same ping-pong (C, two processes, same CPUs).
    fn floor(&self, progress: &mut Progress, rep: &mut Report) -> Result<(), BenchError> {
        let o = &self.o;
        let fp = self.floor.as_ref().expect("built when --floor is on");
        let runs = self.runs_by_size(&self.sizes, progress, |_, s| {
            fp.run(s, o.iters, o.warmup, o.cpus)
                .context(|| format!("floor ping-pong {s} B"))
        })?;
        let (b, m) = (BenchBackend::Floor, WaitMode::Poll);
        rep.pingpong.extend(
            (self.sizes.iter().zip(runs))
                .map(|(&s, r)| PingRow::from_runs(b, m, "loopback", s, o.iters, r)),
        );
        Ok(())
    }
}

/// The round-trip line of one backend and mode (000 §IV.C.2) through its rows' mean medians,
/// with the lines of each run alone for the intervals.
fn fit_of(b: BenchBackend, m: WaitMode, rows: &[PingRow]) -> Fit {
    let sizes: Vec<usize> = rows.iter().map(|r| r.size).collect();
    let means: Vec<f64> = rows.iter().map(|r| r.p50_us).collect();
    let reps = rows.first().map_or(0, |r| r.runs.len());
    let per_run: Vec<Vec<(f64, f64)>> = (0..reps)
        .map(|k| {
            rows.iter()
                .filter_map(|r| {
                    let h = super::histogram(r.runs.get(k)?);
                    Some((r.size as f64, h.value_at_quantile(0.5) as f64 / 1e3))
                })
                .collect()
        })
        .collect();
    Fit::from_runs(b, m, &sizes, &means, &per_run)
}

/// The content pattern's seed of run `rep` of a `size`-byte point.
fn seed_of(rep: usize, size: usize) -> u64 {
    0x6d73_6c69_6e6b_0000 ^ ((rep as u64) << 40) ^ size as u64
}

/// Send a control message from the client's spare slot and wait for the 8-byte ack.
fn control(e: &mut End, w: [u64; 5], want_ack: bool) -> Result<(), BenchError> {
    let spare = WINDOW;
    e.put_words(spare, &w)?;
    e.send(spare, 40, 0)?;
    if !want_ack {
        // Wait for the send only.
        loop {
            if e.wait()?.queue == WorkQueue::Send {
                return Ok(());
            }
        }
    }
    let mut acked = false;
    let mut sent = false;
    while !(acked && sent) {
        let c = e.wait()?;
        match c.queue {
            WorkQueue::Send => sent = true,
            WorkQueue::Recv => {
                e.post_recv(c.tag as usize)?;
                acked = true;
            }
        }
    }
    Ok(())
}

/// Control flags: bit 0 poll, bit 1 verify.
fn flags(m: WaitMode, verify: bool) -> u64 {
    u64::from(m == WaitMode::Poll) | (u64::from(verify) << 1)
}

fn secs(a: std::time::Duration, b: std::time::Duration) -> f64 {
    b.saturating_sub(a).as_secs_f64()
}

/// One run of a ping-pong point: `warmup + iters` round trips, the last `iters` recorded, and
/// both processes' CPU over the whole exchange (the server reports its own at the end).
fn pingpong(
    e: &mut End,
    m: WaitMode,
    size: usize,
    iters: usize,
    warmup: usize,
) -> Result<PingRun, BenchError> {
    let total = iters + warmup;
    control(
        e,
        [
            OP_PINGPONG as u64,
            size as u64,
            total as u64,
            flags(m, false),
            0,
        ],
        true,
    )?;
    let mut rtts = Vec::with_capacity(iters);
    // What each echo must be: a seeded pattern, its first bytes the round's number.
    let mut want = vec![0u8; size];
    pattern::fill(&mut want, seed_of(0, size), 0);
    e.slot_mut(WINDOW)?[..size].copy_from_slice(&want);
    let cpu0 = process_cpu();
    let start = Instant::now();
    // The server's CPU report follows its last echo; it may come before the last send's own
    // completion (VI orders completions within a work queue, not across the two: the
    // provider can read the echo and the report in one pass and see the send acknowledged
    // in the next), so it is taken wherever it comes.
    let mut report = None;
    for i in 0..total {
        stamp(&mut want, i);
        stamp(&mut e.slot_mut(WINDOW)?[..size], i);
        let t0 = Instant::now();
        e.send(WINDOW, size, 0)?;
        let (mut sent, mut back) = (false, false);
        while !(sent && back) {
            let c = e.wait()?;
            match round_event(&c, back, i, total)? {
                RoundEvent::Sent => sent = true,
                RoundEvent::Report => report = Some(server_report(e, &c)?),
                RoundEvent::Echo => {
                    back = true;
                    if i >= warmup {
                        rtts.push(t0.elapsed().as_nanos() as u64);
                    }
                    let got = e.slot_bytes(c.tag as usize, c.len)?;
                    check_echo(got, &want, i)?;
                    e.post_recv(c.tag as usize)?;
                }
            }
        }
    }
    let seconds = start.elapsed().as_secs_f64();
    let cpu1 = process_cpu();
    let on = current_cpu();
    let w = loop {
        if let Some(w) = report {
            break w;
        }
        let c = e.wait()?;
        if c.queue == WorkQueue::Recv {
            report = Some(server_report(e, &c)?);
        }
    };
    let (server_cpu, server_on, server_seconds) = (
        (w[0] as f64 / 1e6, w[1] as f64 / 1e6),
        w[2] as i64,
        w[3] as f64 / 1e6,
    );
    Ok(PingRun {
        rtts_ns: rtts,
        seconds,
        round_trips: total,
        client_cpu: (secs(cpu0.0, cpu1.0), secs(cpu0.1, cpu1.1)),
        server_cpu,
        server_seconds,
        cpus: (on, server_on),
        echoes_checked: total as u64,
        floor: None,
    })
}

/// What a completion met in ping-pong round `i` of `total` is.
#[derive(Debug, PartialEq)]
enum RoundEvent {
    /// The round's send completed.
    Sent,
    /// The round's echo (the first receive of the round).
    Echo,
    /// The server's CPU report: a receive after the last round's echo.
    Report,
}

/// Sorts completion `c` of round `i` of `total` (`back`: the round's echo came already).
fn round_event(
    c: &Completion,
    back: bool,
    i: usize,
    total: usize,
) -> Result<RoundEvent, BenchError> {
    Ok(match (c.queue, back) {
        (WorkQueue::Send, _) => RoundEvent::Sent,
        (WorkQueue::Recv, false) => RoundEvent::Echo,
        (WorkQueue::Recv, true) if i + 1 == total => RoundEvent::Report,
        (WorkQueue::Recv, true) => {
            return Err(protocol(format!(
                "ping-pong round {i}: a second message ({} bytes) after the echo",
                c.len
            )))
        }
    })
}

/// The server's CPU report of a ping-pong run, received in `c` (immediate `u32::MAX`): user
/// and system microseconds, its CPU, its wall-clock microseconds. The receive is posted again.
fn server_report(e: &mut End, c: &Completion) -> Result<[u64; 4], BenchError> {
    let w = e.words::<4>(c.tag as usize)?;
    e.post_recv(c.tag as usize)?;
    if c.immediate != u32::MAX {
        return Err(protocol(format!(
            "expected the server's CPU report, got a {}-byte message",
            c.len
        )));
    }
    Ok(w)
}

/// Writes round `i`'s number into the first bytes of a ping-pong message (as many of its 8
/// as fit), so an echo of another round differs.
fn stamp(msg: &mut [u8], i: usize) {
    let n = msg.len().min(8);
    msg[..n].copy_from_slice(&(i as u64).to_le_bytes()[..n]);
}

/// Checks the echo of round `i` against what was sent: its length, then every byte.
fn check_echo(got: &[u8], want: &[u8], i: usize) -> Result<(), BenchError> {
    if got.len() != want.len() {
        return Err(protocol(format!(
            "ping-pong round {i}: the echo has {} bytes, {} were sent",
            got.len(),
            want.len()
        )));
    }
    if let Some(at) = got.iter().zip(want).position(|(a, b)| a != b) {
        return Err(protocol(format!(
            "ping-pong round {i}: the echo differs from what was sent at byte {at}"
        )));
    }
    Ok(())
}

/// One end of the plain-socket reference: a TCP stream (`write_all` / `read_exact`) or a
/// connected UDP socket (one datagram each way).
enum Plain {
    Tcp(TcpStream),
    Udp(std::net::UdpSocket),
}

impl Plain {
    /// A connected pair (client, server) on loopback over `carrier` (TCP or UDP), with
    /// `TIMEOUT` on reads so that a lost datagram fails the run instead of hanging it.
    fn pair(carrier: crate::Carrier) -> std::io::Result<(Plain, Plain)> {
        let (c, s) = match carrier {
            crate::Carrier::Udp => {
                let a = std::net::UdpSocket::bind("127.0.0.1:0")?;
                let b = std::net::UdpSocket::bind("127.0.0.1:0")?;
                a.connect(b.local_addr()?)?;
                b.connect(a.local_addr()?)?;
                a.set_read_timeout(Some(TIMEOUT))?;
                b.set_read_timeout(Some(TIMEOUT))?;
                (Plain::Udp(a), Plain::Udp(b))
            }
            _ => {
                let l = TcpListener::bind("127.0.0.1:0")?;
                let c = TcpStream::connect(l.local_addr()?)?;
                let (s, _) = l.accept()?;
                for x in [&c, &s] {
                    x.set_nodelay(true)?;
                    x.set_read_timeout(Some(TIMEOUT))?;
                }
                (Plain::Tcp(c), Plain::Tcp(s))
            }
        };
        Ok((c, s))
    }

    fn send(&mut self, b: &[u8]) -> std::io::Result<()> {
        match self {
            Plain::Tcp(s) => s.write_all(b),
            Plain::Udp(s) => match s.send(b)? {
                n if n == b.len() => Ok(()),
                n => Err(std::io::Error::other(format!(
                    "a datagram of {} bytes went as {n}",
                    b.len()
                ))),
            },
        }
    }

    /// The next message into `b`: its length (TCP: all of `b`; UDP: the datagram's).
    fn recv(&mut self, b: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Plain::Tcp(s) => s.read_exact(b).map(|_| b.len()),
            Plain::Udp(s) => s.recv(b),
        }
    }

    fn carrier(&self) -> std::io::Result<crate::Carrier> {
        use std::os::fd::AsRawFd;
        crate::wire::ip_carrier(match self {
            Plain::Tcp(s) => s.as_raw_fd(),
            Plain::Udp(s) => s.as_raw_fd(),
        })
    }
}

/// Times a polling point is measured again when the floors around it differ by more than
/// [`FLOOR_GAP_PCT`] ([`Run::bracketed`]).
const FLOOR_RETRIES: usize = 2;

/// Ping-pong over plain blocking sockets of `carrier` (TCP or UDP), echo in a thread (on
/// `server_cpu` when given, as `--cpu` places the VI backends' server); CPU of each thread
/// (RUSAGE_THREAD). Returns the run and the carrier the kernel reports for the client's
/// socket.
fn raw_socket_pingpong(
    carrier: crate::Carrier,
    size: usize,
    iters: usize,
    warmup: usize,
    server_cpu: Option<usize>,
) -> Result<(PingRun, crate::Carrier), BenchError> {
    let (mut c, mut s) = Plain::pair(carrier)?;
    let seen = c.carrier()?;
    let total = iters + warmup;
    let echo = std::thread::spawn(move || -> std::io::Result<((f64, f64), i64, f64)> {
        if let Some(c) = server_cpu {
            crate::pin_thread_to_cpu(c)?;
        }
        let mut buf = vec![0u8; size];
        let mut cpu0 = None;
        for _ in 0..total {
            let n = s.recv(&mut buf)?;
            // From the first message on: the client's clock starts just before it.
            cpu0.get_or_insert_with(|| (thread_cpu(), Instant::now()));
            s.send(&buf[..n])?;
        }
        let (c0, t0) = cpu0.unwrap_or_else(|| (thread_cpu(), Instant::now()));
        let c1 = thread_cpu();
        let cpu = (secs(c0.0, c1.0), secs(c0.1, c1.1));
        Ok((cpu, current_cpu(), t0.elapsed().as_secs_f64()))
    });
    let mut want = vec![0u8; size];
    pattern::fill(&mut want, seed_of(0, size), 0);
    let mut buf = vec![0u8; size];
    let mut rtts = Vec::with_capacity(iters);
    let cpu0 = thread_cpu();
    let start = Instant::now();
    for i in 0..total {
        stamp(&mut want, i);
        let t0 = Instant::now();
        c.send(&want)?;
        let n = c.recv(&mut buf)?;
        if i >= warmup {
            rtts.push(t0.elapsed().as_nanos() as u64);
        }
        check_echo(&buf[..n], &want, i)?;
    }
    let seconds = start.elapsed().as_secs_f64();
    let cpu1 = thread_cpu();
    let on = current_cpu();
    let (server_cpu, server_on, server_seconds) = echo
        .join()
        .map_err(|_| BenchError::Panicked("echo thread"))??;
    let run = PingRun {
        rtts_ns: rtts,
        seconds,
        round_trips: total,
        client_cpu: (secs(cpu0.0, cpu1.0), secs(cpu0.1, cpu1.1)),
        server_cpu,
        server_seconds,
        cpus: (on, server_on),
        echoes_checked: total as u64,
        floor: None,
    };
    Ok((run, seen))
}

/// The carrier a backend's connection runs over, checked against the one its name promises
/// ([`BenchBackend::carrier`]): a backend over another transport is an error, never a row.
fn checked_carrier(
    b: BenchBackend,
    seen: Option<crate::Carrier>,
) -> Result<CarrierRow, BenchError> {
    match seen {
        Some(c) if c == b.carrier() => Ok(CarrierRow {
            backend: b,
            carrier: c,
        }),
        other => Err(BenchError::Protocol(format!(
            "backend {} must run over {} but its connection is {}",
            b.name(),
            b.carrier().name(),
            other.map_or("not connected", |c| c.name())
        ))),
    }
}

/// One run of a throughput point. With `seed`, every message carries the pattern of
/// `(seed, its number)` from its own send buffer, and the server checks it. `corrupt`
/// (tests only) flips byte `.1` of message `.0` after filling it.
fn throughput(
    e: &mut End,
    m: WaitMode,
    size: usize,
    volume: usize,
    max_messages: usize,
    seed: Option<u64>,
    corrupt: Option<(usize, usize)>,
) -> Result<ThroughputRun, BenchError> {
    let count = (volume / size.max(1)).clamp(64, max_messages.max(64));
    let w = [
        OP_SINK as u64,
        size as u64,
        count as u64,
        flags(m, seed.is_some()),
        seed.unwrap_or(0),
    ];
    control(e, w, true)?;
    let zc0 = e.nic.vi_stats(e.vi)?;
    let cpu0 = process_cpu();
    let t0 = Instant::now();
    let (mut credits, mut sent, mut report) = (WINDOW, 0usize, None);
    let mut sends_done = 0usize;
    while report.is_none() || sends_done < count {
        // Post every credited message, then ring the doorbell once (000 §III.A): a
        // provider may hand the batch to the kernel in one call (io_uring: one
        // io_uring_enter, one gathered SENDMSG over TCP; tcp-batch: one writev); the
        // plain sockets backend makes one system call per message.
        let posted = sent;
        // With a pattern, message k goes from send buffer k mod WINDOW, reused only once
        // the send WINDOW messages earlier has completed (sends complete in order).
        while credits > 0 && sent < count && (seed.is_none() || sent - sends_done < WINDOW) {
            let slot = match seed {
                Some(sd) => {
                    let slot = WINDOW + 1 + sent % WINDOW;
                    let buf = &mut e.slot_mut(slot)?[..size];
                    pattern::fill(buf, sd, sent as u64);
                    if let Some((_, at)) = corrupt.filter(|c| c.0 == sent && c.1 < size) {
                        buf[at] ^= 1;
                    }
                    slot
                }
                None => WINDOW,
            };
            e.send_deferred(slot, size, 0)?;
            credits -= 1;
            sent += 1;
        }
        if sent > posted {
            e.nic.doorbell(e.vi)?;
        }
        let c = e.wait()?;
        match c.queue {
            WorkQueue::Send => sends_done += 1,
            WorkQueue::Recv => {
                let slot = c.tag as usize;
                if c.immediate == u32::MAX {
                    report = Some(e.words::<6>(slot)?);
                } else {
                    credits += c.immediate as usize;
                }
                e.post_recv(slot)?;
            }
        }
    }
    let seconds = t0.elapsed().as_secs_f64();
    let cpu1 = process_cpu();
    let zc1 = e.nic.vi_stats(e.vi)?;
    let [su, ss, checked, bad, first_msg, first_byte] = report.unwrap_or_default();
    if bad > 0 {
        return Err(protocol(format!(
            "content check failed: {bad} of {count} messages differ from what was sent; the \
             first is message {first_msg} (from 0), first differing byte {first_byte} of {size}"
        )));
    }
    if seed.is_some() && checked != count as u64 {
        return Err(protocol(format!(
            "content check: the server checked {checked} of {count} messages"
        )));
    }
    Ok(ThroughputRun {
        messages: count,
        seconds,
        client_cpu: (secs(cpu0.0, cpu1.0), secs(cpu0.1, cpu1.1)),
        server_cpu: (su as f64 / 1e6, ss as f64 / 1e6),
        zc: (
            zc1.zc_sends.saturating_sub(zc0.zc_sends),
            zc1.zc_copied.saturating_sub(zc0.zc_copied),
        ),
        verified: checked,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::{serve, ServerConfig};

    /// A server of `b` on a thread of this process; returns its address and its thread.
    fn server(
        b: BenchBackend,
        max_size: usize,
    ) -> (String, std::thread::JoinHandle<Result<(), BenchError>>) {
        let (tx, rx) = std::sync::mpsc::channel();
        let t = std::thread::spawn(move || {
            let o = ServerConfig {
                backend: b,
                addr: "127.0.0.1:0".into(),
                max_size,
                zc: false,
            };
            serve(&o, &mut |a| {
                tx.send(a.to_string()).unwrap();
                Ok(())
            })
        });
        (rx.recv().unwrap(), t)
    }

    fn config(b: BenchBackend, reps: usize, verify: bool) -> ClientConfig {
        ClientConfig {
            backends: vec![b],
            transports: vec![],
            zc: false,
            modes: vec![WaitMode::Block],
            sizes: vec![1, 64],
            max_size: 64,
            iters: 10,
            warmup: 2,
            volume: 64 * 64,
            max_messages: 64,
            calls: 5,
            quick: true,
            reps,
            verify,
            cpus: None,
            floor: false,
        }
    }

    /// The progress callback counts every run once, by one, up to a fixed total: two sizes
    /// times one mode times two repetitions, ping-pong and throughput, and the call-cost
    /// tables (a remote target has no raw-socket reference). The rows are one per point,
    /// each over both runs.
    #[test]
    fn progress_counts_every_run_up_to_the_total() {
        let (addr, t) = server(BenchBackend::Tcp, 64);
        let o = config(BenchBackend::Tcp, 2, false);
        let mut seen = Vec::new();
        let r = run_client_with(&o, &Target::Remote(addr), &mut |d, t| seen.push((d, t)));
        t.join().unwrap().unwrap();
        let r = r.unwrap();
        assert_eq!((r.pingpong.len(), r.throughput.len()), (2, 2));
        let want: Vec<(usize, usize)> = (1..=9).map(|d| (d, 9)).collect();
        assert_eq!(seen, want);
        for p in &r.pingpong {
            assert_eq!((p.reps, p.runs.len()), (2, 2));
            assert!(p.runs.iter().all(|r| r.len() == 10));
            assert!(p.ci95["p50_us"].is_finite(), "{:?}", p.ci95);
            // The server reported its CPU: an echo of 12 messages costs it something.
            assert!(p.server_cpu_us_per_rtt > 0.0, "{p:?}");
            // Every echo, warm-up included, was checked: 2 runs of 10 + 2 round trips.
            assert_eq!((p.echoes, p.echoes_checked), (24, 24), "{p:?}");
        }
        assert!(r
            .throughput
            .iter()
            .all(|t| t.reps == 2 && t.verified_messages == 0));
        assert!(r.callcost.iter().all(|c| c.reps == 2));
        assert_eq!(r.rtt_fit.len(), 1);
        assert_eq!(r.rtt_fit[0].residuals.len(), 2);
    }

    /// With verify, the server checks every message of every throughput run against the
    /// sender's pattern, over the plain and the gathered (tcp-batch) sockets backends.
    #[test]
    fn verify_checks_every_message() {
        for b in [BenchBackend::Tcp, BenchBackend::TcpBatch] {
            let (addr, t) = server(b, 64);
            let r = run_client(&config(b, 1, true), &Target::Remote(addr));
            t.join().unwrap().unwrap();
            let r = r.unwrap();
            for row in &r.throughput {
                assert_eq!(row.verified_messages, row.messages as u64, "{b:?} {row:?}");
                assert_eq!(row.backend, b);
            }
        }
    }

    /// A message that differs from the pattern fails the run, naming which and where.
    #[test]
    fn a_corrupted_message_fails_the_run_naming_where() {
        let (addr, t) = server(BenchBackend::Tcp, 4096);
        let mut e = End::new(BenchBackend::Tcp, 4096, 2 * WINDOW + 1, false).unwrap();
        for i in 0..WINDOW {
            e.post_recv(i).unwrap();
        }
        e.nic.connect(e.vi, &addr, TIMEOUT).unwrap();
        let clean = throughput(
            &mut e,
            WaitMode::Block,
            4096,
            4096 * 100,
            100,
            Some(7),
            None,
        )
        .unwrap();
        assert_eq!(clean.verified, 100);
        let err = throughput(
            &mut e,
            WaitMode::Block,
            4096,
            4096 * 100,
            100,
            Some(7),
            Some((37, 1000)),
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("1 of 100 messages")
                && err.contains("message 37")
                && err.contains("byte 1000"),
            "{err}"
        );
        control(&mut e, [OP_QUIT as u64, 0, 0, 0, 0], false).unwrap();
        t.join().unwrap().unwrap();
    }

    /// CI failed `mslink bench local --quick` once with "ping-pong Shm Poll 16384 B:
    /// ping-pong round 54: the echo has 32 bytes": the client's provider read the last echo
    /// and the server's CPU report in one pass and saw its own send acknowledged only in the
    /// next, and the round took the report for a second echo (15 of 60 runs under load,
    /// `bench local --backend shm --mode poll --sizes 16384,32768 --iters 50 --warmup 5`).
    /// A receive after the last round's echo is the report, before or after the send's
    /// completion; after any other round's echo it breaks the protocol.
    #[test]
    fn the_report_may_overtake_the_last_sends_completion() {
        let c = |queue| Completion {
            vi: crate::ViHandle(0),
            queue,
            id: None,
            tag: 0,
            status: crate::Status::Success,
            len: 32,
            immediate: u32::MAX,
        };
        let (send, recv) = (c(WorkQueue::Send), c(WorkQueue::Recv));
        let at = |c: &Completion, back, i| round_event(c, back, i, 55).unwrap();
        // The last round in the order CI met: echo, report, then the send.
        assert_eq!(at(&recv, false, 54), RoundEvent::Echo);
        assert_eq!(at(&recv, true, 54), RoundEvent::Report);
        assert_eq!(at(&send, true, 54), RoundEvent::Sent);
        // Any round in the usual order.
        assert_eq!(at(&send, false, 3), RoundEvent::Sent);
        assert_eq!(at(&recv, false, 3), RoundEvent::Echo);
        let err = round_event(&recv, true, 3, 55).unwrap_err().to_string();
        assert!(
            err.contains("round 3: a second message (32 bytes)"),
            "{err}"
        );
    }

    /// Issue 34: `--backend udp` (and `udp-batch`, `uring-udp`) measured TCP, because every
    /// backend was mapped over the default transport. Without `--transport` each backend is
    /// measured as named; with it, over every transport given.
    #[test]
    fn each_backend_is_measured_over_the_transport_it_names() {
        use BenchBackend::*;
        let all = [
            Shm, Tcp, TcpBatch, Udp, UdpBatch, UringTcp, UringUdp, Sock, Floor,
        ];
        for b in all {
            assert_eq!(backends_of(&config(b, 1, false)), vec![b], "{}", b.name());
        }
        let mut o = config(Udp, 1, false);
        o.backends = vec![Udp, Shm, UringTcp];
        o.transports = vec![Transport::Tcp, Transport::Udp];
        assert_eq!(backends_of(&o), vec![Tcp, Udp, Shm, UringTcp, UringUdp]);
        o.transports = vec![Transport::Udp];
        assert_eq!(backends_of(&o), vec![Udp, Shm, UringUdp]);
    }

    /// Issue 34: with `--cpu SERVER,CLIENT` the plain-socket reference's echo thread stayed on
    /// the client's CPU, so the `sock` row compared a same-CPU exchange with cross-CPU VI rows.
    #[test]
    fn the_socket_reference_echo_runs_on_the_server_cpu() {
        if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
            eprintln!("one CPU: nothing to place apart");
            return;
        }
        for carrier in [crate::Carrier::Tcp, crate::Carrier::Udp] {
            let (run, seen) = std::thread::spawn(move || {
                crate::pin_thread_to_cpu(1).unwrap();
                raw_socket_pingpong(carrier, 64, 20, 2, Some(0)).unwrap()
            })
            .join()
            .unwrap();
            assert_eq!(seen, carrier);
            assert_eq!(run.cpus, (1, 0));
            assert_eq!(run.echoes_checked, 22);
        }
    }

    /// Issue 34: a test per backend that the transport it is named for is the one that
    /// carried it, as the kernel reports the client's socket (SO_DOMAIN, SO_TYPE,
    /// SO_PROTOCOL), and that the report says so. The expectations are written here, not
    /// taken from `BenchBackend::carrier`.
    #[test]
    fn every_backend_runs_over_the_transport_it_is_named_for() {
        use crate::Carrier;
        let want = [
            (BenchBackend::Shm, Carrier::SharedMemory),
            (BenchBackend::Tcp, Carrier::Tcp),
            (BenchBackend::TcpBatch, Carrier::Tcp),
            (BenchBackend::Udp, Carrier::Udp),
            (BenchBackend::UdpBatch, Carrier::Udp),
            (BenchBackend::UringTcp, Carrier::Tcp),
            (BenchBackend::UringUdp, Carrier::Udp),
        ];
        for (b, carrier) in want {
            let (addr, t) = server(b, 64);
            let r = run_client(&config(b, 1, false), &Target::Remote(addr));
            t.join().unwrap().unwrap();
            let r = r.unwrap_or_else(|e| panic!("{}: {e}", b.name()));
            assert_eq!(
                r.carriers,
                vec![CarrierRow {
                    backend: b,
                    carrier
                }],
                "{}",
                b.name()
            );
        }
        // The plain-socket references, TCP and UDP.
        for (carrier, size) in [(Carrier::Tcp, 100), (Carrier::Udp, 65_507)] {
            let (run, seen) = raw_socket_pingpong(carrier, size, 5, 1, None).unwrap();
            assert_eq!((seen, run.echoes_checked), (carrier, 6));
        }
        // A backend whose connection is another transport is refused, naming both.
        let e = checked_carrier(BenchBackend::Udp, Some(Carrier::Tcp))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("udp must run over udp but its connection is tcp"),
            "{e}"
        );
    }

    /// A wrong echo fails the ping-pong naming the round and the byte, whatever its kind.
    #[test]
    fn an_echo_that_differs_from_what_was_sent_fails_naming_where() {
        let mut want = vec![7u8; 64];
        stamp(&mut want, 3);
        assert!(check_echo(&want, &want, 3).is_ok());
        let short = check_echo(&want[..60], &want, 3).unwrap_err().to_string();
        assert!(
            short.contains("round 3") && short.contains("60 bytes"),
            "{short}"
        );
        let mut stale = want.clone();
        stamp(&mut stale, 2);
        let e = check_echo(&stale, &want, 3).unwrap_err().to_string();
        assert!(e.contains("round 3") && e.contains("byte 0"), "{e}");
        let mut flipped = want.clone();
        flipped[40] ^= 1;
        let e = check_echo(&flipped, &want, 3).unwrap_err().to_string();
        assert!(e.contains("byte 40"), "{e}");
    }
}
