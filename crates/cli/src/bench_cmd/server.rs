//! The server side of `mslink bench` and the child process `local` starts for it.
//!
//! Contract: `serve` answers any number of tests on one VI connection until the client's
//! quit message (it keeps `WINDOW` receives posted and returns credits); `spawn_server`
//! starts `mslink bench server` (under `ip netns exec` for `--netns`), reads the address it
//! listens on from its first line, and the returned guard reaps or kills it.

use std::io::{Read, Write};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use mslink_vi::{process_cpu, WaitMode, WorkQueue};

use super::{netns, BackendArg, End, ServerOpts, OP_PINGPONG, OP_QUIT, OP_SINK, TAG_SEND, WINDOW};
// ---------------------------------------------------------------- server

pub(super) fn serve(o: &ServerOpts) -> Result<()> {
    // Slots 0..2*WINDOW: receive buffers / echo sources; slot 2*WINDOW: control replies.
    let ctl = 2 * WINDOW;
    let mut e = End::new(o.backend.backend(), o.max_size.max(64), ctl + 1, !o.no_zc)?;
    let l = e
        .nic
        .listen(&o.addr)
        .with_context(|| format!("listen on {}", o.addr))?;
    println!("listening on {}", e.nic.listener_addr(l)?);
    std::io::stdout().flush()?;
    let mut free: Vec<usize> = (WINDOW..ctl).collect();
    for i in 0..WINDOW {
        e.post_recv(i)?;
    }
    e.nic
        .accept(l, e.vi, Duration::from_secs(60))
        .context("accept")?;
    loop {
        let c = e.wait()?;
        if c.queue == WorkQueue::Send {
            let s = (c.tag & !TAG_SEND) as usize;
            if s < ctl {
                free.push(s);
            }
            continue;
        }
        let slot = c.tag as usize;
        let [op, size, count, mode] = e.words(slot)?;
        if op as u32 == OP_QUIT {
            break;
        }
        e.post_recv(free.pop().context("no free slot")?)?;
        free.push(slot);
        e.mode = if mode == 1 {
            WaitMode::Poll
        } else {
            WaitMode::Block
        };
        match op as u32 {
            OP_PINGPONG => {
                e.send(ctl, 8, 0)?; // ack
                let mut left = count;
                while left > 0 {
                    let c = e.wait()?;
                    let s = (c.tag & !TAG_SEND) as usize;
                    if c.queue == WorkQueue::Send {
                        if s < ctl {
                            free.push(s);
                        }
                        continue;
                    }
                    e.post_recv(free.pop().context("no free slot")?)?;
                    e.send(s, c.len, 0)?;
                    left -= 1;
                }
            }
            OP_SINK => {
                let cpu0 = process_cpu();
                e.send(ctl, 8, 0)?; // ack: the client now holds WINDOW credits
                let (mut got, mut since_credit) = (0u64, 0u64);
                while got < count {
                    let c = e.wait()?;
                    let s = (c.tag & !TAG_SEND) as usize;
                    if c.queue == WorkQueue::Send {
                        if s < ctl {
                            free.push(s);
                        }
                        continue;
                    }
                    if c.len as u64 != size {
                        bail!("sink got {} bytes, expected {size}", c.len);
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
                let us = |a: Duration, b: Duration| (b.saturating_sub(a)).as_micros() as u64;
                e.put_words(ctl, &[us(cpu0.0, cpu1.0), us(cpu0.1, cpu1.1)])?;
                e.send(ctl, 16, u32::MAX)?;
            }
            x => bail!("unknown bench op {x}"),
        }
    }
    let _ = e.nic.disconnect(e.vi);
    Ok(())
}

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

pub(super) fn spawn_server(
    b: BackendArg,
    max_size: usize,
    zc: bool,
    ns: Option<&str>,
) -> Result<(ServerChild, String)> {
    let addr = match (b, ns) {
        (BackendArg::Shm, _) => format!("/tmp/mslink-bench-{}.sock", std::process::id()),
        (_, Some(_)) => format!("{}:0", netns::SERVER_IP),
        _ => "127.0.0.1:0".to_string(),
    };
    // Under the Python package the process is the interpreter; its `mslink` script names itself.
    let exe = match std::env::var_os("MSLINK_EXE") {
        Some(p) => std::path::PathBuf::from(p),
        None => std::env::current_exe()?,
    };
    let mut cmd = match ns {
        Some(ns) => {
            let mut c = Command::new("ip");
            c.args(["netns", "exec", ns]).arg(exe);
            c
        }
        None => Command::new(exe),
    };
    let mut child = cmd
        .args(["bench", "server", "--backend", b.name()])
        .args(["--addr", &addr, "--max-size", &max_size.to_string()])
        .args(if zc { &[][..] } else { &["--no-zc"][..] })
        .stdout(Stdio::piped())
        .spawn()
        .context("start bench server")?;
    let mut out = child.stdout.take().context("server stdout")?;
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    while out.read(&mut byte)? == 1 && byte[0] != b'\n' {
        line.push(byte[0]);
    }
    let line = String::from_utf8(line)?;
    let at = line
        .strip_prefix("listening on ")
        .with_context(|| format!("server said {line:?}"))?
        .to_string();
    Ok((ServerChild(child), at))
}
