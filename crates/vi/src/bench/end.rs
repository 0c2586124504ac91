//! One end of a benchmark connection: a NIC with one VI, one completion queue for both work
//! queues, and one registered region cut into equal slots.
//!
//! Contract: slot `i` is bytes `i * slot .. (i + 1) * slot` of the region; a receive posted on
//! slot `i` carries tag `i`, a send from slot `i` carries tag `TAG_SEND | i`; [`End::wait`]
//! turns a failed completion into [`BenchError::Transfer`].

use crate::{Completion, CqHandle, Descriptor, MemHandle, Nic, NicConfig, ViHandle, WaitMode};

use super::{BenchBackend, BenchError, TAG_SEND, TIMEOUT};

pub(super) struct End {
    pub nic: Nic,
    pub cq: CqHandle,
    pub vi: ViHandle,
    pub mem: MemHandle,
    pub slot: usize,
    pub mode: WaitMode,
}

impl End {
    /// `b`'s NIC (io_uring: SEND_ZC if `zc`; `tcp-batch`: gathered sends) with `slots`
    /// slots of `slot` bytes.
    pub fn new(b: BenchBackend, slot: usize, slots: usize, zc: bool) -> Result<Self, BenchError> {
        let cfg = NicConfig {
            send_zc: zc,
            gather_sends: b.gathers(),
            ..NicConfig::default()
        };
        let mut nic = Nic::open(b.backend(), cfg)?;
        let cq = nic.create_cq();
        let vi = nic.create_vi(cq, cq)?;
        let mem = nic.register_mem(vec![0; slot * slots])?;
        Ok(Self {
            nic,
            cq,
            vi,
            mem,
            slot,
            mode: WaitMode::Block,
        })
    }

    pub fn post_recv(&mut self, i: usize) -> Result<(), BenchError> {
        let seg = self.nic.segment(self.mem, i * self.slot, self.slot)?;
        self.nic
            .post_recv(self.vi, &Descriptor::single(seg, i as u64))?;
        Ok(())
    }

    pub fn send(&mut self, i: usize, len: usize, imm: u32) -> Result<(), BenchError> {
        let seg = self.nic.segment(self.mem, i * self.slot, len)?;
        let mut d = Descriptor::single(seg, TAG_SEND | i as u64);
        d.immediate = imm;
        self.nic.post_send(self.vi, &d)?;
        Ok(())
    }

    pub fn send_deferred(&mut self, i: usize, len: usize, imm: u32) -> Result<(), BenchError> {
        let seg = self.nic.segment(self.mem, i * self.slot, len)?;
        let mut d = Descriptor::single(seg, TAG_SEND | i as u64);
        d.immediate = imm;
        self.nic.post_send_deferred(self.vi, &d)?;
        Ok(())
    }

    pub fn wait(&mut self) -> Result<Completion, BenchError> {
        let c = self.nic.cq_wait(self.cq, TIMEOUT, self.mode)?;
        if !c.is_ok() {
            return Err(BenchError::Transfer {
                status: c.status,
                queue: c.queue,
            });
        }
        Ok(c)
    }

    /// The first `N` little-endian words of `slot`.
    pub fn words<const N: usize>(&self, slot: usize) -> Result<[u64; N], BenchError> {
        let b = &self.nic.mem(self.mem)?[slot * self.slot..];
        let mut w = [0u64; N];
        for (k, x) in w.iter_mut().enumerate() {
            let mut le = [0u8; 8];
            le.copy_from_slice(&b[k * 8..k * 8 + 8]);
            *x = u64::from_le_bytes(le);
        }
        Ok(w)
    }

    /// Slot `i`'s bytes.
    pub fn slot_mut(&mut self, i: usize) -> Result<&mut [u8], BenchError> {
        let s = self.slot;
        Ok(&mut self.nic.mem_mut(self.mem)?[i * s..(i + 1) * s])
    }

    /// The first `len` bytes of slot `i`.
    pub fn slot_bytes(&self, i: usize, len: usize) -> Result<&[u8], BenchError> {
        Ok(&self.nic.mem(self.mem)?[i * self.slot..i * self.slot + len])
    }

    pub fn put_words(&mut self, slot: usize, w: &[u64]) -> Result<(), BenchError> {
        let s = self.slot;
        let b = &mut self.nic.mem_mut(self.mem)?[slot * s..];
        for (k, x) in w.iter().enumerate() {
            b[k * 8..k * 8 + 8].copy_from_slice(&x.to_le_bytes());
        }
        Ok(())
    }
}
