//! The client side of the benchmark: every backend, mode and size against one server per
//! backend, then the plain-socket reference and the per-call costs.
//!
//! Contract: [`run_client`] measures, for each backend over each transport (each once), a
//! ping-pong point per mode and size with a line fitted to the medians, then a throughput
//! point per mode and size; against a local server also the plain blocking-socket ping-pong
//! when TCP is among the backends; always the per-call cost tables. Sizes beyond what a UDP
//! datagram carries are left out for the UDP backends. With `quick`, the settings shrink to
//! ones that finish in seconds.
//!
//! Progress: [`run_client_with`] reports `(done, total)` after every measured point (one
//! ping-pong or throughput point per backend, mode and size, one raw-socket point per size,
//! and the call-cost tables as one last step): `total` is fixed once the backends and sizes are
//! known, `done` rises by one from 1 to `total`. It reports counts only; drawing them (and
//! timing them) is the caller's.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::time::Instant;

use super::end::End;
use super::server::spawn_server;
use super::{
    call_costs, fit_line, netns, BenchBackend, BenchError, Context, Fit, PingRow, Report,
    ThroughputRow, Transport, OP_PINGPONG, OP_QUIT, OP_SINK, TIMEOUT, WINDOW,
};
use crate::{process_cpu, WaitMode, WorkQueue};

/// How a local run starts its server: this program with these leading arguments, followed by
/// `--backend NAME --addr ADDR --max-size N` (and `--no-zc` without zero copy). The program
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

/// What a client run measures.
#[derive(Clone, Debug)]
pub struct ClientConfig {
    /// Backends to measure (each over every transport).
    pub backends: Vec<BenchBackend>,
    /// Transports of the sockets and io_uring backends (none: TCP).
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
    let mut o = o.clone();
    if o.quick {
        o.max_size = o.max_size.min(64 << 10);
        o.iters = o.iters.min(300);
        o.warmup = o.warmup.min(30);
        o.volume = o.volume.min(4 << 20);
        o.max_messages = o.max_messages.min(5_000);
        o.calls = o.calls.min(200);
    }
    let sizes: Vec<usize> = if o.sizes.is_empty() {
        std::iter::successors(Some(1usize), |s| s.checked_mul(2))
            .take_while(|&s| s <= o.max_size)
            .collect()
    } else {
        o.sizes.clone()
    };
    let max = sizes.iter().copied().max().unwrap_or(1).max(64);
    let mut rep = Report::default();
    // Every backend over every requested transport, each once.
    let transports = if o.transports.is_empty() {
        vec![Transport::Tcp]
    } else {
        o.transports.clone()
    };
    let mut backends: Vec<BenchBackend> = Vec::new();
    for &b in &o.backends {
        for &t in &transports {
            if !backends.contains(&b.over(t)) {
                backends.push(b.over(t));
            }
        }
    }
    let mut ns = match target {
        Target::Local { netns: true, .. } => Some(netns::NetnsPair::create()?),
        _ => None,
    };
    if let Some(n) = ns.as_mut() {
        n.enter_client()?;
    }
    let path = if ns.is_some() { "veth" } else { "loopback" };
    // A UDP message is one datagram: sizes beyond it are left out for UDP backends.
    let sizes_of = |b: BenchBackend| -> Vec<usize> {
        sizes
            .iter()
            .copied()
            .filter(|&s| s <= b.backend().max_message())
            .collect()
    };
    let reference = matches!(target, Target::Local { .. }) && backends.contains(&BenchBackend::Tcp);
    let floor = o.floor && matches!(target, Target::Local { .. });
    let total = backends
        .iter()
        .map(|&b| 2 * o.modes.len() * sizes_of(b).len())
        .sum::<usize>()
        + if reference { sizes.len() } else { 0 }
        + if floor { sizes.len() } else { 0 }
        + 1;
    let pin =
        |cpu: usize| crate::pin_thread_to_cpu(cpu).context(|| format!("--cpu: pin to CPU {cpu}"));
    if let Some((_, c)) = o.cpus {
        pin(c)?;
    }
    let mut done = 0usize;
    let mut step = || {
        done += 1;
        on_step(done, total);
    };
    for &b in &backends {
        let sizes = sizes_of(b);
        let max = max.min(b.backend().max_message());
        let (_child, addr) = match target {
            Target::Local { server, .. } => {
                let ns = ns.as_ref().map(|n| n.server());
                // The child inherits this thread's CPU mask: the server's CPU while it starts.
                if let Some((s, _)) = o.cpus {
                    pin(s)?;
                }
                let started = spawn_server(server, b, max, o.zc, ns);
                if let Some((_, c)) = o.cpus {
                    pin(c)?;
                }
                let (c, a) = started?;
                (Some(c), a)
            }
            Target::Remote(addr) => (None, addr.clone()),
        };
        let mut e = End::new(b.backend(), max, WINDOW + 1, o.zc)?;
        for i in 0..WINDOW {
            e.post_recv(i)?;
        }
        e.nic
            .connect(e.vi, &addr, TIMEOUT)
            .context(|| format!("connect to {addr}"))?;
        for &m in &o.modes {
            e.mode = m;
            let mut pts = Vec::new();
            for &s in &sizes {
                let mut row = pingpong(&mut e, b, m, s, o.iters, o.warmup)
                    .context(|| format!("ping-pong {b:?} {m:?} {s} B"))?;
                row.path = path;
                pts.push((s as f64, row.p50_us));
                rep.pingpong.push(row);
                step();
            }
            let (a, k) = fit_line(&pts);
            rep.rtt_fit.push(Fit {
                backend: b,
                mode: m,
                fixed_us: a,
                us_per_byte: k,
            });
            for &s in &sizes {
                let mut row = throughput(&mut e, b, m, s, o.volume, o.max_messages)
                    .context(|| format!("throughput {b:?} {m:?} {s} B"))?;
                row.path = path;
                rep.throughput.push(row);
                step();
            }
        }
        control(&mut e, [OP_QUIT as u64, 0, 0, 0], false)?;
        let _ = e.nic.disconnect(e.vi);
    }
    if reference {
        // Reference: the same ping-pong with plain blocking sockets and no VI framing, to
        // show what the VI layer adds on the TCP path.
        let mut pts = Vec::new();
        for &s in &sizes {
            let row = raw_socket_pingpong(s, o.iters, o.warmup)
                .context(|| format!("raw socket ping-pong {s} B"))?;
            pts.push((s as f64, row.p50_us));
            rep.pingpong.push(row);
            step();
        }
        let (a, k) = fit_line(&pts);
        rep.rtt_fit.push(Fit {
            backend: BenchBackend::Sock,
            mode: WaitMode::Block,
            fixed_us: a,
            us_per_byte: k,
        });
    }
    if floor {
        // The machine's floor for the same ping-pong (C, two processes, same CPUs).
        for &s in &sizes {
            let row = super::floor_pingpong(s, o.iters, o.warmup, o.cpus)
                .context(|| format!("floor ping-pong {s} B"))?;
            rep.pingpong.push(row);
            step();
        }
    }
    rep.callcost = call_costs(o.calls)?;
    step();
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
    Ok(rep)
}

/// Send a control message from the client's spare slot and wait for the 8-byte ack.
fn control(e: &mut End, w: [u64; 4], want_ack: bool) -> Result<(), BenchError> {
    let spare = WINDOW;
    e.put_words(spare, &w)?;
    e.send(spare, 32, 0)?;
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

fn pingpong(
    e: &mut End,
    b: BenchBackend,
    m: WaitMode,
    size: usize,
    iters: usize,
    warmup: usize,
) -> Result<PingRow, BenchError> {
    let total = iters + warmup;
    let mode = u64::from(m == WaitMode::Poll);
    control(
        e,
        [OP_PINGPONG as u64, size as u64, total as u64, mode],
        true,
    )?;
    let mut rtts = Vec::with_capacity(iters);
    for i in 0..total {
        let t0 = Instant::now();
        e.send(WINDOW, size, 0)?;
        let (mut sent, mut back) = (false, false);
        while !(sent && back) {
            let c = e.wait()?;
            match c.queue {
                WorkQueue::Send => sent = true,
                WorkQueue::Recv => {
                    back = true;
                    if i >= warmup {
                        rtts.push(t0.elapsed().as_nanos() as u64);
                    }
                    e.post_recv(c.tag as usize)?;
                }
            }
        }
    }
    Ok(PingRow::from_rtts(b, m, size, iters, rtts))
}

/// Ping-pong over plain blocking TCP sockets (write_all / read_exact), echo in a thread.
fn raw_socket_pingpong(size: usize, iters: usize, warmup: usize) -> Result<PingRow, BenchError> {
    let l = TcpListener::bind("127.0.0.1:0")?;
    let at = l.local_addr()?;
    let total = iters + warmup;
    let echo = std::thread::spawn(move || -> std::io::Result<()> {
        let (mut s, _) = l.accept()?;
        s.set_nodelay(true)?;
        let mut buf = vec![0u8; size];
        for _ in 0..total {
            s.read_exact(&mut buf)?;
            s.write_all(&buf)?;
        }
        Ok(())
    });
    let mut c = TcpStream::connect(at)?;
    c.set_nodelay(true)?;
    c.set_read_timeout(Some(TIMEOUT))?;
    let mut buf = vec![0u8; size];
    let mut rtts = Vec::with_capacity(iters);
    for i in 0..total {
        let t0 = Instant::now();
        c.write_all(&buf)?;
        c.read_exact(&mut buf)?;
        if i >= warmup {
            rtts.push(t0.elapsed().as_nanos() as u64);
        }
    }
    echo.join()
        .map_err(|_| BenchError::Panicked("echo thread"))??;
    Ok(PingRow::from_rtts(
        BenchBackend::Sock,
        WaitMode::Block,
        size,
        iters,
        rtts,
    ))
}

fn throughput(
    e: &mut End,
    b: BenchBackend,
    m: WaitMode,
    size: usize,
    volume: usize,
    max_messages: usize,
) -> Result<ThroughputRow, BenchError> {
    let count = (volume / size.max(1)).clamp(64, max_messages.max(64));
    let mode = u64::from(m == WaitMode::Poll);
    control(e, [OP_SINK as u64, size as u64, count as u64, mode], true)?;
    let zc0 = e.nic.vi_stats(e.vi)?;
    let cpu0 = process_cpu();
    let t0 = Instant::now();
    let (mut credits, mut sent, mut server_cpu) = (WINDOW, 0usize, None);
    let mut sends_done = 0usize;
    while server_cpu.is_none() || sends_done < count {
        // Post every credited message, then ring the doorbell once (000 §III.A): a
        // provider may hand the batch to the kernel in one call (io_uring: one
        // io_uring_enter, one gathered SENDMSG over TCP); the sockets backends still make
        // one system call per message.
        let posted = sent;
        while credits > 0 && sent < count {
            e.send_deferred(WINDOW, size, 0)?;
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
                    let w = e.words(slot)?;
                    server_cpu = Some((w[0] as f64 / 1e6, w[1] as f64 / 1e6));
                } else {
                    credits += c.immediate as usize;
                }
                e.post_recv(slot)?;
            }
        }
    }
    let secs = t0.elapsed().as_secs_f64();
    let cpu1 = process_cpu();
    let zc1 = e.nic.vi_stats(e.vi)?;
    let (su, ss) = server_cpu.unwrap_or_default();
    let cu = cpu1.0.saturating_sub(cpu0.0).as_secs_f64();
    let cs = cpu1.1.saturating_sub(cpu0.1).as_secs_f64();
    let bytes = (count * size) as f64;
    Ok(ThroughputRow {
        backend: b,
        mode: m,
        size,
        messages: count,
        seconds: secs,
        mbit_s: bytes * 8.0 / secs / 1e6,
        client_user_s: cu,
        client_sys_s: cs,
        server_user_s: su,
        server_sys_s: ss,
        cpu_s_per_gb: (cu + cs + su + ss) / (bytes / 1e9),
        client_cpu_ns_per_byte: (cu + cs) * 1e9 / bytes,
        server_cpu_ns_per_byte: (su + ss) * 1e9 / bytes,
        zc_sends: zc1.zc_sends.saturating_sub(zc0.zc_sends),
        zc_copied: zc1.zc_copied.saturating_sub(zc0.zc_copied),
        path: "loopback",
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::{serve, ServerConfig};

    /// The progress callback counts every point once, by one, up to a fixed total: two sizes
    /// times one mode, ping-pong and throughput, and the call-cost tables (a remote target has
    /// no raw-socket reference).
    #[test]
    fn progress_counts_every_point_up_to_the_total() {
        let (tx, rx) = std::sync::mpsc::channel();
        let server = std::thread::spawn(move || {
            let o = ServerConfig {
                backend: BenchBackend::Tcp,
                addr: "127.0.0.1:0".into(),
                max_size: 64,
                zc: false,
            };
            serve(&o, &mut |a| {
                tx.send(a.to_string()).unwrap();
                Ok(())
            })
        });
        let addr = rx.recv().unwrap();
        let o = ClientConfig {
            backends: vec![BenchBackend::Tcp],
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
            cpus: None,
            floor: false,
        };
        let mut seen = Vec::new();
        let r = run_client_with(&o, &Target::Remote(addr), &mut |d, t| seen.push((d, t)));
        server.join().unwrap().unwrap();
        let r = r.unwrap();
        assert_eq!((r.pingpong.len(), r.throughput.len()), (2, 2));
        let want: Vec<(usize, usize)> = (1..=5).map(|d| (d, 5)).collect();
        assert_eq!(seen, want);
    }
}
