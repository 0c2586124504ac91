//! The server side of the benchmark, and the child process a local run starts for it.
//!
//! Contract: [`serve`] answers any number of tests on one VI connection until the client's
//! quit message (it keeps `WINDOW` receives posted and returns credits); `spawn_server` starts
//! a [`ServerCommand`] (inside the server's network namespace for `--netns`, by
//! `mslink_netns::Netns::command`), reads the address it listens on from its first line
//! (`listening on ADDR`), and the returned guard reaps or kills it.

use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use super::end::End;
use super::{
    current_cpu, netns, pattern, protocol, BenchBackend, BenchError, Context, ServerCommand,
    OP_PINGPONG, OP_QUIT, OP_SINK, TAG_SEND, WINDOW,
};
use crate::{process_cpu, Completion, WaitMode, WorkQueue};

/// Options of a server.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// Backend.
    pub backend: BenchBackend,
    /// Listen address: a Unix socket path (shm) or ip:port.
    pub addr: String,
    /// Largest message the server accepts (bytes).
    pub max_size: usize,
    /// io_uring: SEND_ZC (else plain SEND).
    pub zc: bool,
}

/// Serves tests on one connection at `o.addr` until the client quits. `listening` hears the
/// address it listens on before it waits for the client (a server child tells its parent).
pub fn serve(
    o: &ServerConfig,
    listening: &mut dyn FnMut(&str) -> std::io::Result<()>,
) -> Result<(), BenchError> {
    // Slots 0..2*WINDOW: receive buffers / echo sources; slot 2*WINDOW: control replies.
    let ctl = 2 * WINDOW;
    let mut e = End::new(o.backend, o.max_size.max(64), ctl + 1, o.zc)?;
    let l = e
        .nic
        .listen(&o.addr)
        .context(|| format!("listen on {}", o.addr))?;
    listening(&e.nic.listener_addr(l)?)?;
    let mut free: Vec<usize> = (WINDOW..ctl).collect();
    for i in 0..WINDOW {
        e.post_recv(i)?;
    }
    e.nic
        .accept(l, e.vi, Duration::from_secs(60))
        .context(|| "accept".into())?;
    let no_slot = || protocol("no free slot");
    loop {
        let c = next_receive(&mut e, &mut free, ctl)?;
        let slot = c.tag as usize;
        let [op, size, count, flags, seed] = e.words::<5>(slot)?;
        if op as u32 == OP_QUIT {
            break;
        }
        e.post_recv(free.pop().ok_or_else(no_slot)?)?;
        free.push(slot);
        e.mode = if flags & 1 == 1 {
            WaitMode::Poll
        } else {
            WaitMode::Block
        };
        match op as u32 {
            OP_PINGPONG => {
                let cpu0 = process_cpu();
                let t0 = std::time::Instant::now();
                e.send(ctl, 8, 0)?; // ack
                let mut left = count;
                while left > 0 {
                    let c = next_receive(&mut e, &mut free, ctl)?;
                    let s = c.tag as usize;
                    // The echo first: posting the next receive is off the round trip.
                    e.send(s, c.len, 0)?;
                    e.post_recv(free.pop().ok_or_else(no_slot)?)?;
                    left -= 1;
                }
                // This process's CPU over the exchange, for the client's CPU columns.
                let cpu1 = process_cpu();
                let wall = t0.elapsed().as_micros() as u64;
                let on = current_cpu() as u64;
                e.put_words(ctl, &[us(cpu0.0, cpu1.0), us(cpu0.1, cpu1.1), on, wall])?;
                e.send(ctl, 32, u32::MAX)?;
            }
            OP_SINK => {
                let cpu0 = process_cpu();
                e.send(ctl, 8, 0)?; // ack: the client now holds WINDOW credits
                let (mut got, mut since_credit) = (0u64, 0u64);
                let verify = flags & 2 == 2;
                // Messages checked, messages that differed, first such message and byte.
                let (mut checked, mut bad, mut first) = (0u64, 0u64, (0u64, 0u64));
                while got < count {
                    let c = next_receive(&mut e, &mut free, ctl)?;
                    let s = c.tag as usize;
                    if c.len as u64 != size {
                        return Err(protocol(format!(
                            "sink got {} bytes, expected {size}",
                            c.len
                        )));
                    }
                    if verify {
                        if let Some(at) = pattern::check(e.slot_bytes(s, c.len)?, seed, got) {
                            if bad == 0 {
                                first = (got, at as u64);
                            }
                            bad += 1;
                        }
                        checked += 1;
                    }
                    e.post_recv(s)?;
                    got += 1;
                    since_credit += 1;
                    if since_credit == WINDOW as u64 / 2 && got < count {
                        e.send(ctl, 8, since_credit as u32)?;
                        since_credit = 0;
                    }
                }
                let cpu1 = process_cpu();
                let report = [
                    us(cpu0.0, cpu1.0),
                    us(cpu0.1, cpu1.1),
                    checked,
                    bad,
                    first.0,
                    first.1,
                ];
                e.put_words(ctl, &report)?;
                e.send(ctl, 48, u32::MAX)?;
            }
            x => return Err(protocol(format!("unknown bench op {x}"))),
        }
    }
    let _ = e.nic.disconnect(e.vi);
    Ok(())
}

/// Microseconds from `a` to `b`.
fn us(a: Duration, b: Duration) -> u64 {
    b.saturating_sub(a).as_micros() as u64
}

/// The next receive completion. Send completions met on the way give their slot back to
/// `free` (slots from `ctl` on are the control slot, never lent out).
fn next_receive(e: &mut End, free: &mut Vec<usize>, ctl: usize) -> Result<Completion, BenchError> {
    loop {
        let c = e.wait()?;
        if c.queue != WorkQueue::Send {
            return Ok(c);
        }
        let s = (c.tag & !TAG_SEND) as usize;
        if s < ctl {
            free.push(s);
        }
    }
}

/// A server child process; reaped (killed if still running) on drop.
pub(super) struct ServerChild(Child);

impl Drop for ServerChild {
    fn drop(&mut self) {
        // Reap the child; it exits on OP_QUIT, or is killed if the run failed.
        if let Ok(None) = self.0.try_wait() {
            std::thread::sleep(Duration::from_millis(50));
            if let Ok(None) = self.0.try_wait() {
                let _ = self.0.kill();
            }
        }
        let _ = self.0.wait();
    }
}

/// Starts a server for `b` (inside namespace `ns` if given); returns it and its address.
pub(super) fn spawn_server(
    program: &ServerCommand,
    b: BenchBackend,
    max_size: usize,
    zc: bool,
    ns: Option<&mslink_netns::Netns>,
) -> Result<(ServerChild, String), BenchError> {
    let addr = match (b, ns) {
        (BenchBackend::Shm, _) => format!("{}.sock", crate::shm::unique_name("/tmp/mslink-bench-")),
        (_, Some(_)) => format!("{}:0", netns::SERVER_IP),
        _ => "127.0.0.1:0".to_string(),
    };
    let mut cmd = match ns {
        Some(ns) => ns.command(&program.program),
        None => Command::new(&program.program),
    };
    let mut child = cmd
        .args(&program.args)
        .args(["--backend", b.name()])
        .args(["--addr", &addr, "--max-size", &max_size.to_string()])
        .args(if zc { &["--zc"][..] } else { &[][..] })
        .stdout(Stdio::piped())
        .spawn()
        .context(|| "start bench server".into())?;
    let mut out = child
        .stdout
        .take()
        .ok_or_else(|| protocol("server stdout"))?;
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    while out.read(&mut byte)? == 1 && byte[0] != b'\n' {
        line.push(byte[0]);
    }
    let line = String::from_utf8_lossy(&line);
    let at = line
        .strip_prefix("listening on ")
        .ok_or_else(|| protocol(format!("server said {line:?}")))?
        .to_string();
    Ok((ServerChild(child), at))
}
