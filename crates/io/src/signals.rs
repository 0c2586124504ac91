//! The signals a real-time driver listens to, caught once for every driver.
//!
//! Contract. [`install`] sets a handler for the given signals that only stores to atomics
//! (async-signal-safe): SIGUSR1 raises the "dump counters" flag that [`take_dump`] reads and
//! clears; any other signal raises the stop flag ([`stop_requested`]) and records its number
//! ([`stop_signal`], for the exit status 128 + signal). The handler is installed with
//! `SA_RESTART`: the driver's `ppoll(2)` is interrupted all the same (it is never restarted,
//! signal(7)), so the loop sees the flag at once, while other blocking calls resume.

use std::io;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

static STOP: AtomicBool = AtomicBool::new(false);
static SIGNAL: AtomicI32 = AtomicI32::new(0);
static DUMP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(sig: libc::c_int) {
    if sig == libc::SIGUSR1 {
        DUMP.store(true, Ordering::SeqCst);
    } else {
        SIGNAL.store(sig, Ordering::SeqCst);
        STOP.store(true, Ordering::SeqCst);
    }
}

/// Catches `signals` (see the module contract).
pub fn install(signals: &[libc::c_int]) -> io::Result<()> {
    for &sig in signals {
        // SAFETY: a zeroed sigaction with a plain handler that only stores to atomics.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
            sa.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut sa.sa_mask);
            if libc::sigaction(sig, &sa, std::ptr::null_mut()) != 0 {
                return Err(io::Error::last_os_error());
            }
        }
    }
    Ok(())
}

/// True once a stop signal arrived.
pub fn stop_requested() -> bool {
    STOP.load(Ordering::SeqCst)
}

/// The stop signal that arrived, if one did.
pub fn stop_signal() -> Option<i32> {
    Some(SIGNAL.load(Ordering::SeqCst)).filter(|&s| s != 0)
}

/// True if SIGUSR1 arrived since the last call.
pub fn take_dump() -> bool {
    DUMP.swap(false, Ordering::SeqCst)
}
