//! TUN devices: IP packets in and out of a network namespace through a file descriptor.
//!
//! Contract. [`Tun::create`] makes a non-persistent layer-3 TUN device (`IFF_TUN | IFF_NO_PI`:
//! each read or write is one bare IP packet) in the network namespace of the calling thread,
//! with a non-blocking descriptor. The device exists only while the descriptor is open: it
//! vanishes when the [`Tun`] is dropped or the process dies, so a crash leaves nothing behind.
//! `read` and `write` return `io::ErrorKind::WouldBlock` when the device has nothing or can
//! take nothing now; the caller polls the descriptor.
//!
//! With offloads ([`Tun::create_with_offloads`]), the device is opened with `IFF_VNET_HDR`
//! (every read and write starts with the 10-byte `struct virtio_net_hdr`, little-endian by
//! `TUNSETVNETLE`, layout in [`crate::gso`]) and `TUNSETOFFLOAD` lets the kernel hand over
//! packets with a partial checksum (`TUN_F_CSUM`) and TCP super-packets up to 64 KB
//! (`TUN_F_TSO4 | TUN_F_TSO6 | TUN_F_TSO_ECN`, plus `TUN_F_USO4 | TUN_F_USO6` for UDP where
//! the kernel has them, Linux 6.2 and later). Writes may then be GSO packets too.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// `_IOW('T', 202, int)` from linux/if_tun.h.
const TUNSETIFF: libc::c_ulong = 0x4004_54ca;
const IFF_TUN: libc::c_short = 0x0001;
const IFF_NO_PI: libc::c_short = 0x1000;
const IFF_VNET_HDR: libc::c_short = 0x4000;
/// `_IOW('T', 208, unsigned int)`.
const TUNSETOFFLOAD: libc::c_ulong = 0x4004_54d0;
/// `_IOW('T', 216, int)`.
const TUNSETVNETHDRSZ: libc::c_ulong = 0x4004_54d8;
/// `_IOW('T', 220, int)`.
const TUNSETVNETLE: libc::c_ulong = 0x4004_54dc;
const TUN_F_CSUM: libc::c_uint = 0x01;
const TUN_F_TSO4: libc::c_uint = 0x02;
const TUN_F_TSO6: libc::c_uint = 0x04;
const TUN_F_TSO_ECN: libc::c_uint = 0x08;
const TUN_F_USO4: libc::c_uint = 0x20;
const TUN_F_USO6: libc::c_uint = 0x40;

#[repr(C)]
struct IfReq {
    name: [u8; libc::IFNAMSIZ],
    flags: libc::c_short,
    _pad: [u8; 22],
}

/// One TUN device.
#[derive(Debug)]
pub struct Tun {
    fd: OwnedFd,
    name: String,
    offloads: Option<libc::c_uint>,
}

impl Tun {
    /// Creates device `name` (at most 15 bytes) in the calling thread's network namespace.
    pub fn create(name: &str) -> io::Result<Tun> {
        Tun::open(name, false)
    }

    /// Creates device `name` with a virtio-net header on every read and write and the
    /// segmentation offloads on (see the module contract).
    pub fn create_with_offloads(name: &str) -> io::Result<Tun> {
        Tun::open(name, true)
    }

    fn open(name: &str, offloads: bool) -> io::Result<Tun> {
        if name.len() >= libc::IFNAMSIZ || name.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("interface name {name:?} must have 1 to 15 bytes"),
            ));
        }
        // SAFETY: a plain open(2) of a constant NUL-terminated path.
        let fd = unsafe {
            libc::open(
                c"/dev/net/tun".as_ptr(),
                libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fd was just returned by open and is owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let mut req = IfReq {
            name: [0; libc::IFNAMSIZ],
            flags: IFF_TUN | IFF_NO_PI | if offloads { IFF_VNET_HDR } else { 0 },
            _pad: [0; 22],
        };
        req.name[..name.len()].copy_from_slice(name.as_bytes());
        // SAFETY: TUNSETIFF reads and writes a struct ifreq, which IfReq lays out (40 bytes).
        let r = unsafe { libc::ioctl(fd.as_raw_fd(), TUNSETIFF as _, &mut req) };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut tun = Tun {
            fd,
            name: name.to_string(),
            offloads: None,
        };
        if offloads {
            let size: libc::c_int = crate::gso::VNET_HDR_LEN as libc::c_int;
            let le: libc::c_int = 1;
            tun.ioctl_ptr(TUNSETVNETHDRSZ, &size)?;
            tun.ioctl_ptr(TUNSETVNETLE, &le)?;
            let tso = TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6 | TUN_F_TSO_ECN;
            // USO is Linux 6.2+: without it, the kernel segments UDP before the device.
            let flags = [tso | TUN_F_USO4 | TUN_F_USO6, tso]
                .into_iter()
                .find(|&f| tun.ioctl_value(TUNSETOFFLOAD, f as libc::c_ulong).is_ok())
                .ok_or_else(io::Error::last_os_error)?;
            tun.offloads = Some(flags);
        }
        Ok(tun)
    }

    fn ioctl_ptr(&self, req: libc::c_ulong, v: &libc::c_int) -> io::Result<()> {
        // SAFETY: these TUN ioctls read one int through the pointer.
        let r = unsafe { libc::ioctl(self.fd.as_raw_fd(), req as _, v as *const libc::c_int) };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    fn ioctl_value(&self, req: libc::c_ulong, v: libc::c_ulong) -> io::Result<()> {
        // SAFETY: TUNSETOFFLOAD takes its argument by value and touches no memory.
        let r = unsafe { libc::ioctl(self.fd.as_raw_fd(), req as _, v) };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// True if reads and writes carry a virtio-net header.
    pub fn has_vnet_hdr(&self) -> bool {
        self.offloads.is_some()
    }

    /// True if the kernel may hand over UDP super-packets (`TUN_F_USO4 | TUN_F_USO6`).
    pub fn has_uso(&self) -> bool {
        self.offloads.is_some_and(|f| f & TUN_F_USO4 != 0)
    }

    /// The interface name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Reads one packet into `buf`.
    pub fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        crate::device::read_fd(self.fd.as_raw_fd(), buf)
    }

    /// Writes one packet.
    pub fn write(&self, packet: &[u8]) -> io::Result<usize> {
        self.write_vectored(&[io::IoSlice::new(packet)])
    }

    /// Writes one packet gathered from `parts` (`writev(2)`).
    pub fn write_vectored(&self, parts: &[io::IoSlice<'_>]) -> io::Result<usize> {
        crate::device::writev_fd(self.fd.as_raw_fd(), parts)
    }

    /// Writes the first `plan.count` of `packets` as [`crate::coalesce::plan`] planned them
    /// ([`crate::device::write_planned`]).
    pub fn write_planned<'a>(
        &self,
        head: &[u8],
        plan: crate::coalesce::Plan,
        packets: impl IntoIterator<Item = &'a [u8]>,
    ) -> io::Result<(usize, usize)> {
        crate::device::write_planned(self, head, plan, packets)
    }
}

impl crate::device::Device for Tun {
    fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        Tun::read(self, buf)
    }
    fn write_vectored(&self, parts: &[io::IoSlice<'_>]) -> io::Result<usize> {
        Tun::write_vectored(self, parts)
    }
    fn has_vnet_hdr(&self) -> bool {
        Tun::has_vnet_hdr(self)
    }
}

impl AsRawFd for Tun {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}
