//! mslink-vi: user-level messaging after the Virtual Interface (VI) architecture of
//! 000 §III.A, with a shared-memory backend (lock-free rings, no system call on the data
//! path), io_uring backends over TCP and UDP (registered memory as fixed buffers, batched
//! submission as the doorbell, SEND_ZC), and plain TCP and UDP sockets as the baseline of
//! 000 §IV.
//!
//! Contract: the API follows the VI provider library (VipOpenNic, VipRegisterMem,
//! VipCreateCQ, VipCreateVi, VipConnectRequest/Wait/Accept, VipPostSend, VipPostRecv,
//! VipCQDone/VipCQWait, VipDisconnect, VipDestroyVi, VipCloseNic) as methods of [`Nic`].
//! Memory is registered (bounds and lifetime checked), descriptors carry scatter-gather
//! lists and a user tag, completions report a [`Status`]; transfer errors are completions,
//! never panics or silent drops. This crate is the I/O layer: unlike mslink-link it reads
//! clocks and makes system calls, but only on the control path and in blocking waits.
//! [`bench`] is the end-system benchmark of 000 §IV built on it (`mslink bench`).
//!
//! ```no_run
//! use mslink_vi::{Backend, Descriptor, Nic, NicConfig, WaitMode};
//! use std::time::Duration;
//! let mut nic = Nic::open(Backend::SharedMemory, NicConfig::default())?;
//! let cq = nic.create_cq();
//! let vi = nic.create_vi(cq, cq)?;
//! let mem = nic.register_mem(vec![0; 4096])?;
//! nic.connect(vi, "/tmp/mslink-vi.sock", Duration::from_secs(1))?;
//! let seg = nic.segment(mem, 0, 64)?;
//! nic.post_send(vi, &Descriptor::single(seg, 7))?;
//! let done = nic.cq_wait(cq, Duration::from_secs(1), WaitMode::Poll)?;
//! assert!(done.is_ok() && done.tag == 7);
//! # Ok::<(), mslink_vi::VipError>(())
//! ```

#![warn(missing_docs)]

pub mod bench;
mod desc;
mod error;
mod mem;
mod nic;
mod shm;
mod sys;
mod syscost;
mod tcp;
mod udp;
mod uring;
mod wire;

pub use desc::{Completion, DescId, DescState, Descriptor, Status, WorkQueue, MAX_SEGMENTS};
pub use error::VipError;
pub use mem::{MemHandle, Segment};
pub use nic::{
    Backend, CqHandle, ListenerHandle, Nic, NicConfig, ViHandle, ViStats, WaitMode, HEADER_BYTES,
};
pub use sys::{pin_thread_to_cpu, process_cpu};
pub use syscost::{socket_call_costs, SocketCallCost};
pub use udp::MAX_UDP_MESSAGE;
pub use uring::{DIRECT_MIN, FIXED_SLOTS};
pub use wire::Carrier;
