//! Thin wrappers over the few system calls std does not offer: a shared file mapping
//! (`mmap(MAP_SHARED)`), futex wait/wake on a word in that mapping, `poll(2)` on one
//! descriptor, and `getrusage(RUSAGE_SELF)`.
//!
//! Contract: every `unsafe` block of the crate lives here, in `shm/ring.rs`, or in the
//! socket backends' few direct calls (`udp.rs`: sendmsg, setsockopt, the liveness probe's
//! send; `uring.rs`: buffer registration and SQEs naming memory the kernel will use), each
//! with a SAFETY comment; the wrappers return `io::Result` and never panic on a failed call.
//! None of these calls is on the shared-memory data path: the mapping is made at connect
//! time, the futex only when a waiter sleeps (000 §III: "interrupts only on
//! wait-for-completion"), `poll` only in blocking waits and liveness checks.

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::ptr::NonNull;
use std::sync::atomic::AtomicU32;
use std::time::Duration;

/// A read-write `MAP_SHARED` mapping of a whole file, unmapped on drop.
#[derive(Debug)]
pub(crate) struct SharedMap {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is plain memory; all concurrent access to it goes through atomics or
// through byte ranges that the ring protocol hands to exactly one side at a time.
unsafe impl Send for SharedMap {}

impl SharedMap {
    /// Map `len` bytes of `file` (which must be at least `len` long) shared and read-write.
    pub(crate) fn map(file: &File, len: usize) -> io::Result<Self> {
        if len == 0 {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "empty mapping"));
        }
        // SAFETY: a fresh mapping at an address the kernel chooses; it aliases no Rust object.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let ptr = NonNull::new(p.cast::<u8>()).ok_or_else(io::Error::last_os_error)?;
        Ok(Self { ptr, len })
    }

    /// Base address of the mapping.
    pub(crate) fn ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// Length of the mapping in bytes.
    pub(crate) fn len(&self) -> usize {
        self.len
    }
}

impl Drop for SharedMap {
    fn drop(&mut self) {
        // SAFETY: ptr/len come from a successful mmap and are unmapped exactly once; the ring
        // that borrows this mapping is dropped before it (it owns the SharedMap).
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast(), self.len);
        }
    }
}

/// Sleep while `*word == expected`, at most `timeout` (futex wait on a shared mapping, so
/// not FUTEX_PRIVATE). Spurious and early returns are normal; the caller re-checks.
pub(crate) fn futex_wait(word: &AtomicU32, expected: u32, timeout: Duration) {
    let ts = libc::timespec {
        tv_sec: timeout.as_secs().min(i64::MAX as u64) as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: `word` is a valid aligned u32 for the duration of the call; the kernel only
    // reads it and compares with `expected`; the timespec outlives the call.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT,
            expected,
            &ts as *const libc::timespec,
            std::ptr::null::<u32>(),
            0u32,
        );
    }
}

/// Wake every waiter sleeping on `word`.
pub(crate) fn futex_wake(word: &AtomicU32) {
    // SAFETY: `word` is a valid aligned u32; FUTEX_WAKE does not write it.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE,
            i32::MAX,
            std::ptr::null::<libc::timespec>(),
            std::ptr::null::<u32>(),
            0u32,
        );
    }
}

/// What `poll_fd` saw on a descriptor.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct PollEvents {
    /// Readable (data or end of file).
    pub readable: bool,
    /// Hang-up or error: the peer is gone.
    pub hangup: bool,
}

/// `poll(2)` one descriptor for input (and output if `want_write`), at most `timeout`.
pub(crate) fn poll_fd(fd: RawFd, want_write: bool, timeout: Duration) -> io::Result<PollEvents> {
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLIN | libc::POLLRDHUP | if want_write { libc::POLLOUT } else { 0 },
        revents: 0,
    };
    let ms = timeout.as_millis().min(i32::MAX as u128) as libc::c_int;
    // SAFETY: one valid pollfd on the stack, count 1.
    let r = unsafe { libc::poll(&mut pfd, 1, ms) };
    if r < 0 {
        let e = io::Error::last_os_error();
        if e.kind() == io::ErrorKind::Interrupted {
            return Ok(PollEvents::default());
        }
        return Err(e);
    }
    Ok(PollEvents {
        readable: pfd.revents & libc::POLLIN != 0,
        hangup: pfd.revents & (libc::POLLHUP | libc::POLLERR | libc::POLLRDHUP) != 0,
    })
}

/// CPU time consumed by this process so far (user, system), from `getrusage(RUSAGE_SELF)`.
pub fn process_cpu() -> (Duration, Duration) {
    // SAFETY: rusage is plain old data; zeroed is a valid value and getrusage fills it.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointer to a rusage owned by this frame.
    let r = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    if r != 0 {
        return (Duration::ZERO, Duration::ZERO);
    }
    let tv = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec.max(0) as u64) + Duration::from_micros(t.tv_usec.max(0) as u64)
    };
    (tv(ru.ru_utime), tv(ru.ru_stime))
}
