//! The host's side of one GPU's bursts ([`HostIo`]): the mapped pinned buffers the injection goes
//! up in and the read-back comes down in, the device copy of the injection, and the host vectors
//! a burst's output is sorted into. `staging.rs` fills and reads them.

use std::time::Instant;

use cudarc::driver::CudaSlice;

use crate::backend::cuda::burst::resident::{Resident, PHASES};
use crate::backend::cuda::layout::DEAD;

use crate::backend::cuda::memory::Pinned;

/// Read-back entries from which a dense burst output is ranked by a bitmap rather than sorted.
const RANK_MIN: usize = 256;

/// The injection's and the read-back's buffers of one GPU.
pub(crate) struct HostIo {
    pub host_in: Pinned,
    /// Device copy of the injection (the GPU reading mapped host memory block by block is slow).
    pub dev_in: CudaSlice<u8>,
    pub host_out: Pinned,
    /// Read-back entries a burst's output has room for.
    pub out_cap: usize,
    pub out_ids: Vec<u32>,
    pub out_v: Vec<i64>,
    /// Orders the read-back entries of a burst.
    pub order: ReadOrder,
    /// The read-back entries of a burst, copied out of the mapped buffer.
    pub rb_raw: Vec<u64>,
    /// Some: where the host's time goes (NEUROBURST_CUDA_TRACE=1).
    pub trace: Option<Trace>,
}

/// Where the host's time of a burst goes (NEUROBURST_CUDA_TRACE=1), summed until reported.
#[derive(Debug, Default)]
pub(crate) struct Trace {
    pub bursts: u64,
    pub write_s: f64,
    pub launch_s: f64,
    pub wait_s: f64,
    pub post_s: f64,
    /// The part of `post_s` that reads the output (before sorting it).
    pub read_s: f64,
    pub spins: u64,
}

impl Trace {
    /// The means per burst of what was traced, and with `resident` parked its block 0's device
    /// time ahead of the bursts by phase.
    pub fn summary(&self, resident: Option<&Resident>, tiled: bool) -> String {
        let n = self.bursts.max(1) as f64;
        let device = match resident.and_then(|r| r.phases()) {
            Some((us, bursts)) if bursts > 0 => {
                let tiled = if tiled { " (tiled: binning)" } else { "" };
                let each = PHASES.iter().zip(us).filter(|(_, t)| *t > 0.0);
                let each: Vec<String> =
                    each.map(|(name, t)| format!("{name}{} {t:.1} us", if *name == "propagation" { tiled } else { "" })).collect();
                format!("; device, block 0 a burst: {}", each.join(", "))
            }
            _ => String::new(),
        };
        let h = resident.map(|r| r.handovers()).unwrap_or_default();
        format!(
            "per burst: write {:.1} us, launch {:.1} us, wait {:.1} us, post {:.1} us (read {:.1}), spins {:.0}; commands while the kernel worked ahead {}, injections sent ahead {}, large ones read where they lie {}{device}",
            self.write_s / n * 1e6,
            self.launch_s / n * 1e6,
            self.wait_s / n * 1e6,
            self.post_s / n * 1e6,
            self.read_s / n * 1e6,
            self.spins as f64 / n,
            h.written_ahead,
            h.sent_ahead,
            h.read_where_they_lie
        )
    }
}

impl HostIo {
    /// The `rb` read-back entries in `rb_raw` (ids, then potentials; a DEAD id is a slot the
    /// early step's `fix` emptied) into `out_ids` and `out_v`, ascending by id. Returns when the
    /// ordering began (the trace's read time ends there).
    pub fn sort_read_back(&mut self, rb: usize) -> Instant {
        let o = &mut self.order;
        o.ids.clear();
        o.vals.clear();
        for i in 0..rb {
            let (id, v) = (self.rb_raw[i] as u32, self.rb_raw[rb + i]);
            if id != DEAD {
                o.ids.push(id);
                // the potential's 48 low bits, sign-extended (|v| < 2^47)
                o.vals.push(((v << 16) as i64) >> 16);
            }
        }
        let t_read = Instant::now();
        o.order(&mut self.out_ids, &mut self.out_v);
        t_read
    }
}

/// Puts a burst's read-back (ids in no order, distinct, with their potentials) in id order.
///
/// A dense read-back (a GPU shard returns every fired neuron of its part) is ranked through a
/// bitmap of its span, in linear time: 25k ids of 2.5M took 645 us to sort on one thread of an
/// H100 host. A sparse one (the motor areas) is sorted.
#[derive(Default)]
pub(crate) struct ReadOrder {
    pub ids: Vec<u32>,
    pub vals: Vec<i64>,
    keys: Vec<u64>,
    bits: Vec<u64>,
    ranks: Vec<u32>,
}

impl ReadOrder {
    /// `ids` and `vals` into `out_ids` and `out_v`, ascending by id.
    pub fn order(&mut self, out_ids: &mut Vec<u32>, out_v: &mut Vec<i64>) {
        let n = self.ids.len();
        let (lo, hi) = self.ids.iter().fold((u32::MAX, 0), |(lo, hi), &id| (lo.min(id), hi.max(id)));
        let words = if n == 0 { 0 } else { ((hi - lo) as usize >> 6) + 1 };
        if n >= RANK_MIN && words <= 4 * n && self.rank(lo, words, out_ids, out_v) {
            return;
        }
        self.keys.clear();
        self.keys.extend(self.ids.iter().enumerate().map(|(i, &id)| ((id as u64) << 32) | i as u64));
        self.keys.sort_unstable();
        out_ids.clear();
        out_v.clear();
        for &k in &self.keys {
            out_ids.push((k >> 32) as u32);
            out_v.push(self.vals[(k & 0xFFFF_FFFF) as usize]);
        }
    }

    /// Each id (all >= lo, within `words` 64-bit words) and its potential at its rank in a
    /// bitmap of the ids; false (nothing written) where an id came twice.
    fn rank(&mut self, lo: u32, words: usize, out_ids: &mut Vec<u32>, out_v: &mut Vec<i64>) -> bool {
        self.bits.clear();
        self.bits.resize(words, 0);
        for &id in &self.ids {
            let k = (id - lo) as usize;
            self.bits[k >> 6] |= 1 << (k & 63);
        }
        self.ranks.clear();
        let mut below = 0u32;
        for &w in &self.bits {
            self.ranks.push(below);
            below += w.count_ones();
        }
        if below as usize != self.ids.len() {
            return false;
        }
        out_ids.resize(self.ids.len(), 0);
        out_v.resize(self.ids.len(), 0);
        for (&id, &v) in self.ids.iter().zip(&self.vals) {
            let k = (id - lo) as usize;
            let w = k >> 6;
            let at = (self.ranks[w] + (self.bits[w] & ((1u64 << (k & 63)) - 1)).count_ones()) as usize;
            (out_ids[at], out_v[at]) = (id, v);
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::ReadOrder;

    fn check(ids: Vec<u32>) {
        let vals: Vec<i64> = ids.iter().map(|&i| i as i64 * 3 - 7).collect();
        let mut want: Vec<(u32, i64)> = ids.iter().copied().zip(vals.iter().copied()).collect();
        want.sort_unstable();
        let mut o = ReadOrder { ids, vals, ..Default::default() };
        let (mut out_ids, mut out_v) = (vec![9], vec![9]);
        o.order(&mut out_ids, &mut out_v);
        let got: Vec<(u32, i64)> = out_ids.into_iter().zip(out_v).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn read_backs_come_out_in_id_order_dense_sparse_or_repeated() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        };
        for (n, span) in [(0, 10), (1, 10), (300, 1000), (5000, 200_000), (5000, 40_000_000), (3000, 3000)] {
            let mut ids: Vec<u32> = (0..n).map(|_| 1_000 + next(span) as u32).collect();
            ids.sort_unstable();
            ids.dedup();
            // shuffled, as the GPU's blocks claim their slots
            for i in (1..ids.len()).rev() {
                ids.swap(i, next(i as u64 + 1) as usize);
            }
            check(ids.clone());
            // an id twice (never from a GPU) still comes out ordered
            if let Some(&first) = ids.first() {
                ids.push(first);
                check(ids);
            }
        }
    }
}
