//! Per-call cost tables (000 Tables 1 and 2 on today's host): BSD socket calls one at a
//! time and on an open connection, and the VI API over shared memory with both ends in this
//! process.
//!
//! Contract: every figure is a mean over `n` calls of wall time; the send/recv pair and the
//! four VI data-path calls are also timed as whole loops, so clock reads do not inflate them,
//! and those two loops also report the measuring thread's CPU per call, user and system
//! (getrusage RUSAGE_THREAD over the same calls repeated until the thread has spent at least
//! 50 ms of CPU on them, since the kernel charges CPU time by the tick; both ends run in this
//! thread).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use super::{protocol, thread_cpu, BenchError, CallRow, TIMEOUT};
use crate::{Backend, Descriptor, Nic, NicConfig, WaitMode};

type Result<T> = std::result::Result<T, BenchError>;

/// How much CPU the CPU loops gather: the kernel charges user and system time by the tick
/// (CONFIG_HZ, 4 ms here), so a loop of a few hundred microseconds reads as zero. Counted in
/// the thread's own CPU time, not wall time, so that a busy machine still gives the loop
/// enough ticks; at most `20 × CPU_WINDOW` of wall time.
const CPU_WINDOW: Duration = Duration::from_millis(50);

/// The calling thread's user and system CPU per call of `f` (µs), over calls repeated until
/// the thread has spent at least `CPU_WINDOW` of CPU on them.
fn cpu_per_call(mut f: impl FnMut() -> Result<()>) -> Result<(f64, f64)> {
    let (cpu0, t0) = (thread_cpu(), Instant::now());
    let spent = |now: (Duration, Duration)| (now.0 + now.1).saturating_sub(cpu0.0 + cpu0.1);
    let mut n = 0;
    let mut now = cpu0;
    while spent(now) < CPU_WINDOW && t0.elapsed() < 20 * CPU_WINDOW {
        for _ in 0..256 {
            f()?;
        }
        n += 256;
        now = thread_cpu();
    }
    Ok((
        mean_us(now.0.saturating_sub(cpu0.0), n),
        mean_us(now.1.saturating_sub(cpu0.1), n),
    ))
}

fn mean_us(total: Duration, n: usize) -> f64 {
    total.as_secs_f64() * 1e6 / n.max(1) as f64
}

/// 000 Table 1 today: socket calls on loopback TCP.
fn socket_costs(n: usize) -> Result<Vec<CallRow>> {
    // Each call alone, on a fresh connection per round (raw libc calls in mslink-vi).
    let mut rows: Vec<CallRow> = crate::socket_call_costs(n.min(500))?
        .into_iter()
        .map(|c| CallRow::from_runs("socket", c.call, &[c.mean.as_secs_f64() * 1e6]))
        .collect();
    // Steady state on one open connection.
    let l = TcpListener::bind("127.0.0.1:0")?;
    let at = l.local_addr()?;
    let mut a = TcpStream::connect(at)?;
    let (mut bb, _) = l.accept()?;
    a.set_nodelay(true)?;
    let (mut ts, mut tr) = (Duration::ZERO, Duration::ZERO);
    let mut one = [7u8; 1];
    for _ in 0..n {
        let t0 = Instant::now();
        a.write_all(&one)?;
        let t1 = Instant::now();
        bb.read_exact(&mut one)?;
        ts += t1 - t0;
        tr += t1.elapsed();
    }
    rows.push(CallRow::from_runs(
        "socket",
        "send() 1 B (open connection)",
        &[mean_us(ts, n)],
    ));
    rows.push(CallRow::from_runs(
        "socket",
        "recv() 1 B (open connection)",
        &[mean_us(tr, n)],
    ));
    // The pair timed as one loop (no clock read between the calls), then its CPU.
    let mut pair = || -> Result<()> {
        a.write_all(&one)?;
        bb.read_exact(&mut one)?;
        Ok(())
    };
    let t0 = Instant::now();
    for _ in 0..n {
        pair()?;
    }
    let t = t0.elapsed();
    let (usr, sys) = cpu_per_call(pair)?;
    rows.push(
        CallRow::from_runs("socket", "send()+recv() 1 B", &[mean_us(t, n)])
            .with_cpu(&[usr], &[sys]),
    );
    Ok(rows)
}

/// 000 Table 2 today: the VI API over shared memory, both ends in this process (polling).
fn vi_costs(n: usize) -> Result<Vec<CallRow>> {
    let path = format!(
        "{}.sock",
        crate::shm::unique_name("/tmp/mslink-bench-cost-")
    );
    let mut rows = Vec::new();
    let row = |call, t, k| CallRow::from_runs("vi", call, &[mean_us(t, k)]);
    let t0 = Instant::now();
    let mut a = Nic::open(Backend::SharedMemory, NicConfig::default())?;
    let t_open = t0.elapsed();
    let cqa = a.create_cq();
    let t0 = Instant::now();
    let via = a.create_vi(cqa, cqa)?;
    let t_create = t0.elapsed();
    let t0 = Instant::now();
    let ma = a.register_mem(vec![0; 4096])?;
    let t_reg = t0.elapsed();
    let mut b = Nic::open(Backend::SharedMemory, NicConfig::default())?;
    let lb = b.listen(&path)?;
    let cqb = b.create_cq();
    let vib = b.create_vi(cqb, cqb)?;
    let mb = b.register_mem(vec![0; 4096])?;
    let acceptor = std::thread::spawn(move || -> Result<Nic> {
        b.accept(lb, vib, TIMEOUT)?;
        Ok(b)
    });
    let t0 = Instant::now();
    a.connect(via, &path, TIMEOUT)?;
    let t_connect = t0.elapsed();
    let mut b = acceptor
        .join()
        .map_err(|_| BenchError::Panicked("acceptor"))??;
    let sa = a.segment(ma, 0, 1)?;
    let sb = b.segment(mb, 0, 1)?;
    let (mut tps, mut tsw, mut tpr, mut trw) = (
        Duration::ZERO,
        Duration::ZERO,
        Duration::ZERO,
        Duration::ZERO,
    );
    for _ in 0..n {
        let t0 = Instant::now();
        b.post_recv(vib, &Descriptor::single(sb, 0))?;
        let t1 = Instant::now();
        a.post_send(via, &Descriptor::single(sa, 0))?;
        let t2 = Instant::now();
        let c = a.cq_wait(cqa, TIMEOUT, WaitMode::Poll)?;
        let t3 = Instant::now();
        let d = b.cq_wait(cqb, TIMEOUT, WaitMode::Poll)?;
        let t4 = Instant::now();
        if !c.is_ok() || !d.is_ok() {
            return Err(protocol(format!("VI call-cost loop failed: {c:?} {d:?}")));
        }
        tpr += t1 - t0;
        tps += t2 - t1;
        tsw += t3 - t2;
        trw += t4 - t3;
    }
    // The four calls timed as one loop (no clock read between them), like the socket pair,
    // then their CPU.
    let mut four = || -> Result<()> {
        b.post_recv(vib, &Descriptor::single(sb, 0))?;
        a.post_send(via, &Descriptor::single(sa, 0))?;
        let c = a.cq_wait(cqa, TIMEOUT, WaitMode::Poll)?;
        let d = b.cq_wait(cqb, TIMEOUT, WaitMode::Poll)?;
        if !c.is_ok() || !d.is_ok() {
            return Err(protocol(format!("VI call-cost loop failed: {c:?} {d:?}")));
        }
        Ok(())
    };
    let t0 = Instant::now();
    for _ in 0..n {
        four()?;
    }
    let t_total = t0.elapsed();
    let total_cpu = cpu_per_call(four)?;
    let t0 = Instant::now();
    a.disconnect(via)?;
    let t_disc = t0.elapsed();
    let t0 = Instant::now();
    a.destroy_vi(via)?;
    let t_destroy = t0.elapsed();
    let t0 = Instant::now();
    a.close();
    let t_close = t0.elapsed();
    b.close();
    rows.push(row("open NIC", t_open, 1));
    rows.push(row("register memory (4 KiB)", t_reg, 1));
    rows.push(row("create VI", t_create, 1));
    rows.push(row("connect (incl. peer accept)", t_connect, 1));
    rows.push(row("post send", tps, n));
    rows.push(row("send wait", tsw, n));
    rows.push(row("post recv", tpr, n));
    rows.push(row("recv wait", trw, n));
    rows.push(
        row(
            "total of 4 (post send + send wait + post recv + recv wait)",
            t_total,
            n,
        )
        .with_cpu(&[total_cpu.0], &[total_cpu.1]),
    );
    rows.push(row("disconnect", t_disc, 1));
    rows.push(row("destroy VI", t_destroy, 1));
    rows.push(row("close NIC", t_close, 1));
    Ok(rows)
}

/// 000 Tables 1 and 2 today: socket calls, then VI calls, each a mean over `n` calls, the
/// whole measured `reps` times (each row: the mean over the runs, with its 95% interval).
pub fn call_costs(n: usize, reps: usize) -> Result<Vec<CallRow>> {
    let mut runs: Vec<Vec<CallRow>> = Vec::new();
    for _ in 0..reps.max(1) {
        let mut rows = socket_costs(n)?;
        rows.extend(vi_costs(n)?);
        runs.push(rows);
    }
    let first = runs.first().cloned().unwrap_or_default();
    Ok(first
        .iter()
        .enumerate()
        .map(|(k, r)| {
            let of_runs = |f: fn(&CallRow) -> f64| -> Vec<f64> {
                runs.iter()
                    .filter_map(|run| run.get(k))
                    .map(f)
                    .filter(|x| x.is_finite())
                    .collect()
            };
            CallRow::from_runs(r.api, r.call, &of_runs(|x| x.mean_us))
                .with_cpu(&of_runs(|x| x.cpu_usr_us), &of_runs(|x| x.cpu_sys_us))
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Call-cost tables built at once by threads of one process (parallel tests, a
    /// benchmark and its server) each get their own rendezvous socket: with a path named
    /// by the process id alone, one thread's listen replaced or collided with another's
    /// (`AddrInUse`).
    #[test]
    fn concurrent_tables_do_not_share_a_rendezvous() {
        let go = std::sync::Arc::new(std::sync::Barrier::new(4));
        let runs: Vec<_> = (0..4)
            .map(|_| {
                let go = go.clone();
                std::thread::spawn(move || {
                    go.wait();
                    vi_costs(20).map(|rows| rows.len())
                })
            })
            .collect();
        for r in runs {
            let rows = r.join().unwrap().unwrap();
            assert!(rows > 0);
        }
    }
}
