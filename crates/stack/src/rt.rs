//! Real-time priorities for the receive threads of 002 Fig. 4 over the veth (Linux): the
//! priority field of a DAA frame becomes the priority of the thread that processes it (002
//! §4.2.2, §5.5). A driver helper like [`crate::afpacket`]; not part of the protocol core.
//!
//! Contract: [`set_fifo`] puts the *calling thread* under `SCHED_FIFO` at a priority (1..=99)
//! or returns the kernel's refusal (`EPERM` without `CAP_SYS_NICE` or with no real-time budget in
//! the cgroup); it never changes another thread. [`rt_budget`] reads the kernel's real-time
//! throttling limits (`/proc/sys/kernel/sched_rt_{runtime,period}_us`), which bound what a
//! spinning `SCHED_FIFO` thread can take from the rest of the machine. A `SCHED_FIFO` thread
//! that never blocks would hold a core for that budget; callers keep their real-time threads
//! blocking (on a socket or a channel) and their runs bounded.

// The real-time driver side of the crate: docs/architecture.md rule 1 (no clock, sleep, thread,
// socket or file) binds the protocol modules, which clippy.toml enforces; this module is I/O.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::io;

/// Puts the calling thread under `SCHED_FIFO` at `priority` (1 lowest, 99 highest).
pub fn set_fifo(priority: i32) -> io::Result<()> {
    let p = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: pid 0 is the calling thread; `p` is a valid sched_param for the call's duration.
    let r = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &p) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Puts the calling thread back under `SCHED_OTHER` (the default policy).
pub fn set_other() -> io::Result<()> {
    let p = libc::sched_param { sched_priority: 0 };
    // SAFETY: as in `set_fifo`.
    let r = unsafe { libc::sched_setscheduler(0, libc::SCHED_OTHER, &p) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The calling thread's CPU affinity mask (to restore after [`pin_to_cpu`]).
pub fn affinity() -> io::Result<libc::cpu_set_t> {
    // SAFETY: an all-zero cpu_set_t is a valid empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: pid 0 is the calling thread; `set` is valid for writing its size.
    let r = unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(set)
}

/// Sets the calling thread's CPU affinity mask.
pub fn set_affinity(set: &libc::cpu_set_t) -> io::Result<()> {
    // SAFETY: pid 0 is the calling thread; `set` is a valid cpu_set_t.
    let r = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), set) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Restricts the calling thread to CPU `cpu` (threads it spawns afterwards inherit the mask).
pub fn pin_to_cpu(cpu: usize) -> io::Result<()> {
    // SAFETY: an all-zero cpu_set_t is a valid empty set; CPU_SET writes inside it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "no such CPU"));
    }
    unsafe { libc::CPU_SET(cpu, &mut set) };
    set_affinity(&set)
}

/// The real-time throttling budget: (runtime µs, period µs); runtime −1 means unlimited.
/// `None` if the files cannot be read or parsed.
pub fn rt_budget() -> Option<(i64, i64)> {
    let read = |f: &str| -> Option<i64> {
        std::fs::read_to_string(format!("/proc/sys/kernel/{f}"))
            .ok()?
            .trim()
            .parse()
            .ok()
    };
    Some((read("sched_rt_runtime_us")?, read("sched_rt_period_us")?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fifo_is_granted_or_refused_with_a_reason_and_undone() {
        // Whatever the machine allows, the call answers, and a granted policy is undone.
        let h = std::thread::spawn(|| match set_fifo(1) {
            Ok(()) => {
                // SAFETY: pid 0 is the calling thread.
                let pol = unsafe { libc::sched_getscheduler(0) };
                assert_eq!(pol, libc::SCHED_FIFO);
                set_other().unwrap();
                // SAFETY: as above.
                assert_eq!(unsafe { libc::sched_getscheduler(0) }, libc::SCHED_OTHER);
            }
            Err(e) => assert!(e.raw_os_error().is_some(), "{e}"),
        });
        h.join().unwrap();
        assert!(
            set_fifo(0).is_err(),
            "priority 0 is not a SCHED_FIFO priority"
        );
    }

    #[test]
    fn budget_is_read() {
        if let Some((run, period)) = rt_budget() {
            assert!(period > 0);
            assert!(run == -1 || run <= period);
        }
    }
}
