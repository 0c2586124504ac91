//! Thin wrappers over the few system calls std does not offer: a shared file mapping
//! (`mmap(MAP_SHARED)`), pinned memory for registered regions (`memfd_create`, `mmap`,
//! `mlock`), passing a descriptor over a Unix socket (`SCM_RIGHTS`), futex wait/wake on a
//! word in that mapping, `poll(2)` on one descriptor, CPU affinity, and
//! `getrusage(RUSAGE_SELF)`.
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
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
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
        Self::map_fd(file.as_raw_fd(), len, libc::PROT_READ | libc::PROT_WRITE)
    }

    /// Map `len` bytes of `fd` shared and read-only (a peer's registered region).
    pub(crate) fn map_readonly(fd: &OwnedFd, len: usize) -> io::Result<Self> {
        Self::map_fd(fd.as_raw_fd(), len, libc::PROT_READ)
    }

    fn map_fd(fd: RawFd, len: usize, prot: libc::c_int) -> io::Result<Self> {
        if len == 0 {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "empty mapping"));
        }
        // SAFETY: a fresh mapping at an address the kernel chooses; it aliases no Rust object.
        let p = unsafe { libc::mmap(std::ptr::null_mut(), len, prot, libc::MAP_SHARED, fd, 0) };
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

/// Memory of one registered region (000 §III.A: "the memory region is pinned ... so that the
/// NIC can access it without operating-system involvement"): its own page-aligned mapping,
/// locked in RAM with `mlock(2)` and unlocked and unmapped on drop. A region that is
/// `shareable` is a sealed memfd (it cannot shrink or grow, and nobody can map it writable
/// after us), so the peer of a shared-memory connection can map it read-only and copy a
/// message straight out of it.
#[derive(Debug)]
pub(crate) struct PinnedBuf {
    ptr: NonNull<u8>,
    len: usize,
    map_len: usize,
    fd: Option<OwnedFd>,
}

// SAFETY: plain memory owned by this value; the peer may only read it (read-only mapping of a
// memfd sealed against new writable mappings).
unsafe impl Send for PinnedBuf {}

/// `mlock` refused: the bytes asked for and the process's RLIMIT_MEMLOCK (soft, bytes;
/// `None` = unlimited).
#[derive(Debug)]
pub(crate) struct LockRefused {
    pub bytes: usize,
    pub limit: Option<u64>,
    pub err: io::Error,
}

/// Why a pinned buffer could not be made.
#[derive(Debug)]
pub(crate) enum PinError {
    /// `mlock` refused (RLIMIT_MEMLOCK, or no memory to lock).
    Lock(LockRefused),
    /// memfd, mmap or sealing failed.
    Io(io::Error),
}

impl From<io::Error> for PinError {
    fn from(e: io::Error) -> Self {
        Self::Io(e)
    }
}

fn page_size() -> usize {
    // SAFETY: sysconf has no memory effects.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(p).ok().filter(|&p| p > 0).unwrap_or(4096)
}

/// The soft RLIMIT_MEMLOCK of this process in bytes (`None` when unlimited).
pub(crate) fn memlock_limit() -> Option<u64> {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: valid pointer to an rlimit owned by this frame.
    if unsafe { libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut r) } != 0
        || r.rlim_cur == libc::RLIM_INFINITY
    {
        return None;
    }
    Some(r.rlim_cur)
}

impl PinnedBuf {
    /// A zero-filled, locked buffer of `len` bytes (a memfd if `shareable`).
    pub(crate) fn new(len: usize, shareable: bool) -> Result<Self, PinError> {
        let page = page_size();
        let map_len = len
            .max(1)
            .checked_next_multiple_of(page)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "region too large"))?;
        let fd = if shareable {
            // SAFETY: a NUL-terminated name; the returned descriptor is owned below.
            let raw = unsafe {
                libc::memfd_create(
                    c"mslink-vi-region".as_ptr(),
                    libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING,
                )
            };
            if raw < 0 {
                return Err(io::Error::last_os_error().into());
            }
            // SAFETY: raw is a fresh descriptor nobody else owns.
            let fd = unsafe { OwnedFd::from_raw_fd(raw) };
            // SAFETY: ftruncate/fcntl on a descriptor we own.
            let r = unsafe {
                libc::ftruncate(fd.as_raw_fd(), map_len as libc::off_t) == 0
                    && libc::fcntl(
                        fd.as_raw_fd(),
                        libc::F_ADD_SEALS,
                        libc::F_SEAL_SHRINK | libc::F_SEAL_GROW,
                    ) == 0
            };
            if !r {
                return Err(io::Error::last_os_error().into());
            }
            Some(fd)
        } else {
            None
        };
        let (flags, raw) = match &fd {
            Some(f) => (libc::MAP_SHARED, f.as_raw_fd()),
            None => (libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1),
        };
        // SAFETY: a fresh mapping at an address the kernel chooses; it aliases no Rust object.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                flags,
                raw,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error().into());
        }
        let ptr = NonNull::new(p.cast::<u8>()).ok_or_else(io::Error::last_os_error)?;
        // From here on Drop unmaps (and munlock of unlocked pages is harmless).
        let buf = Self {
            ptr,
            len,
            map_len,
            fd,
        };
        if let Some(f) = &buf.fd {
            // Nobody (the peer included) may map it writable from now on; our mapping stays
            // writable. SAFETY: fcntl on a descriptor we own.
            if unsafe { libc::fcntl(f.as_raw_fd(), libc::F_ADD_SEALS, libc::F_SEAL_FUTURE_WRITE) }
                != 0
            {
                return Err(io::Error::last_os_error().into());
            }
        }
        // SAFETY: the whole mapping we just made.
        if unsafe { libc::mlock(buf.ptr.as_ptr().cast(), map_len) } != 0 {
            return Err(PinError::Lock(LockRefused {
                bytes: map_len,
                limit: memlock_limit(),
                err: io::Error::last_os_error(),
            }));
        }
        Ok(buf)
    }

    /// The bytes.
    pub(crate) fn as_slice(&self) -> &[u8] {
        // SAFETY: len <= map_len bytes of our live mapping; writes go through &mut self only
        // (the peer's mapping is read-only).
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    /// The bytes, writable.
    pub(crate) fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as in as_slice, and &mut self makes this the only Rust reference.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }

    /// The memfd behind a shareable buffer.
    pub(crate) fn fd(&self) -> Option<&OwnedFd> {
        self.fd.as_ref()
    }

    /// Bytes mapped (the length rounded up to whole pages).
    pub(crate) fn map_len(&self) -> usize {
        self.map_len
    }
}

impl Drop for PinnedBuf {
    fn drop(&mut self) {
        // SAFETY: ptr/map_len come from a successful mmap, unlocked and unmapped exactly once;
        // no slice of it outlives self.
        unsafe {
            libc::munlock(self.ptr.as_ptr().cast(), self.map_len);
            libc::munmap(self.ptr.as_ptr().cast(), self.map_len);
        }
    }
}

/// Send `data` with descriptor `fd` attached (`SCM_RIGHTS`) on a connected Unix socket,
/// without blocking. Returns bytes sent.
pub(crate) fn send_fd(sock: RawFd, data: &[u8], fd: RawFd) -> io::Result<usize> {
    // Room for one cmsghdr carrying one int, aligned for cmsghdr.
    let mut cbuf = [0u64; 8];
    // SAFETY: CMSG_SPACE is a pure size computation.
    let space = unsafe { libc::CMSG_SPACE(std::mem::size_of::<RawFd>() as u32) } as usize;
    let mut iov = libc::iovec {
        iov_base: data.as_ptr() as *mut libc::c_void,
        iov_len: data.len(),
    };
    // SAFETY: msghdr is plain old data; zeroed is valid and filled below.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = cbuf.as_mut_ptr().cast();
    msg.msg_controllen = space.min(std::mem::size_of_val(&cbuf)) as _;
    // SAFETY: msg points at cbuf, large enough for one header with one fd (space <= 64).
    unsafe {
        let c = libc::CMSG_FIRSTHDR(&msg);
        (*c).cmsg_level = libc::SOL_SOCKET;
        (*c).cmsg_type = libc::SCM_RIGHTS;
        (*c).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<RawFd>() as u32) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(c).cast::<RawFd>(), fd);
    }
    // SAFETY: every pointer in msg is valid for the call; data is only read.
    let n = unsafe { libc::sendmsg(sock, &msg, libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(n as usize)
}

/// Receive up to `buf.len()` bytes and at most one descriptor (`SCM_RIGHTS`) from a
/// connected Unix socket, without blocking. `Ok((0, None))` at end of stream.
pub(crate) fn recv_fd(sock: RawFd, buf: &mut [u8]) -> io::Result<(usize, Option<OwnedFd>)> {
    let mut cbuf = [0u64; 8];
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: msghdr is plain old data; zeroed is valid and filled below.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = cbuf.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&cbuf) as _;
    // SAFETY: msg's pointers are valid for the call; the kernel writes at most the lengths.
    let n = unsafe { libc::recvmsg(sock, &mut msg, libc::MSG_DONTWAIT | libc::MSG_CMSG_CLOEXEC) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut got = None;
    // SAFETY: walking the control messages the kernel wrote into cbuf.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_RIGHTS {
                let data = libc::CMSG_DATA(c).cast::<RawFd>();
                let count = ((*c).cmsg_len as usize - libc::CMSG_LEN(0) as usize)
                    / std::mem::size_of::<RawFd>();
                for k in 0..count {
                    let fd = OwnedFd::from_raw_fd(std::ptr::read_unaligned(data.add(k)));
                    if got.is_none() {
                        got = Some(fd);
                    } // further descriptors are closed by dropping them here
                }
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    Ok((n as usize, got))
}

/// Pin the calling thread to one CPU (`sched_setaffinity`), as `mslink bench --cpu` does.
pub fn pin_thread_to_cpu(cpu: usize) -> io::Result<()> {
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("CPU {cpu} is beyond CPU_SETSIZE"),
        ));
    }
    // SAFETY: cpu_set_t is plain old data; CPU_SET stays inside it (checked above).
    let r = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
