//! Cost of each BSD socket call on loopback TCP, one call at a time (000 Table 1 on today's
//! host: socket(), bind(), connect(), send()/recv() of 1 byte, close()).
//!
//! Contract: raw `libc` calls so that each call is timed alone (std fuses socket+bind+listen
//! and socket+connect); every descriptor opened here is closed here; a failing call is an
//! `io::Error`, never a panic. Each `unsafe` block is one system call on values owned by
//! this module.

use std::io;
use std::time::{Duration, Instant};

/// Mean cost of one socket call.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SocketCallCost {
    /// Call name as in 000 Table 1.
    pub call: &'static str,
    /// Mean wall time per call.
    pub mean: Duration,
}

fn check(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

fn loopback(port_be: u16) -> libc::sockaddr_in {
    libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: port_be,
        sin_addr: libc::in_addr {
            s_addr: u32::from_ne_bytes([127, 0, 0, 1]),
        },
        sin_zero: [0; 8],
    }
}

const SIN_LEN: libc::socklen_t = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;

fn tcp_socket() -> io::Result<libc::c_int> {
    // SAFETY: socket(2) takes plain integers and returns a new descriptor we own.
    check(unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) })
}

fn close(fd: libc::c_int) {
    // SAFETY: fd was returned by socket/accept in this module and is closed exactly once.
    unsafe {
        libc::close(fd);
    }
}

/// Time `n` rounds of socket(), bind(), listen(), connect(), accept(), send() and recv() of
/// one byte, and close(), on 127.0.0.1.
pub fn socket_call_costs(n: usize) -> io::Result<Vec<SocketCallCost>> {
    let n = n.max(1);
    let mut t = [Duration::ZERO; 8];
    let one = [7u8; 1];
    let mut buf = [0u8; 1];
    for _ in 0..n {
        let t0 = Instant::now();
        let l = tcp_socket()?;
        t[0] += t0.elapsed();
        let addr = loopback(0);
        let t0 = Instant::now();
        // SAFETY: addr is a valid sockaddr_in of SIN_LEN bytes living across the call.
        let r = unsafe { libc::bind(l, (&addr as *const libc::sockaddr_in).cast(), SIN_LEN) };
        t[1] += t0.elapsed();
        let rounds = (|| -> io::Result<()> {
            check(r)?;
            // SAFETY: l is our listening-capable socket.
            check(unsafe { libc::listen(l, 8) })?;
            let mut bound = loopback(0);
            let mut len = SIN_LEN;
            // SAFETY: bound/len are valid out-parameters of the right size.
            check(unsafe {
                libc::getsockname(l, (&mut bound as *mut libc::sockaddr_in).cast(), &mut len)
            })?;
            let c = tcp_socket()?;
            let t0 = Instant::now();
            // SAFETY: bound is a valid sockaddr_in; blocking connect on loopback completes
            // once the kernel queues it on the listener.
            let r =
                unsafe { libc::connect(c, (&bound as *const libc::sockaddr_in).cast(), SIN_LEN) };
            t[2] += t0.elapsed();
            let res = (|| -> io::Result<()> {
                check(r)?;
                let t0 = Instant::now();
                // SAFETY: null address out-parameters are allowed by accept(2).
                let a =
                    check(unsafe { libc::accept(l, std::ptr::null_mut(), std::ptr::null_mut()) })?;
                t[3] += t0.elapsed();
                let t0 = Instant::now();
                // SAFETY: one valid byte from a live local buffer.
                let s = unsafe { libc::send(c, one.as_ptr().cast(), 1, 0) };
                t[4] += t0.elapsed();
                let t0 = Instant::now();
                // SAFETY: writes at most one byte into a live local buffer.
                let r = unsafe { libc::recv(a, buf.as_mut_ptr().cast(), 1, 0) };
                t[5] += t0.elapsed();
                let t0 = Instant::now();
                close(a);
                t[7] += t0.elapsed();
                if s != 1 || r != 1 {
                    return Err(io::Error::other("1-byte send/recv failed"));
                }
                Ok(())
            })();
            close(c);
            res
        })();
        close(l);
        rounds?;
    }
    t[6] = t[4] + t[5];
    let names = [
        "socket()",
        "bind()",
        "connect()",
        "accept()",
        "send() 1 B",
        "recv() 1 B",
        "send()+recv() 1 B (fresh connection)",
        "close()",
    ];
    Ok(names
        .iter()
        .zip(t)
        .map(|(&call, d)| SocketCallCost {
            call,
            mean: d / n as u32,
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_call_is_timed_and_nothing_leaks() {
        let rows = socket_call_costs(3).unwrap();
        assert_eq!(rows.len(), 8);
        assert!(rows.iter().all(|r| r.mean > Duration::ZERO));
    }
}
