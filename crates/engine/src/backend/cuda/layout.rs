//! What the host and the kernels share: the device structs (`Net`, `Side`, `Peer`, `ResParams`,
//! mirrored from `kernels/common.cuh`, `propagate.cu` and `resident.cu`, and checked against them
//! by a test), the output buffer's layout and the counters' slots, and small helpers.

use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DeviceRepr};

use crate::backend::BackendError;
use crate::model::Values;

pub(super) const BLOCK: u32 = 256;
/// Neurons per thread of `step` (STEP_ITEMS in step.cu).
pub(super) const STEP_ITEMS: u32 = 4;
/// PAIRS_PER_WARP in common.cuh.
pub(crate) const PAIRS_PER_CHUNK: usize = 256;
/// Size of the output header (`OutHeader` in common.cuh): burst, fired_total, rb_count, pairs.
pub(super) const OUT_HEADER: usize = 64;
/// Slots of the `misc` counters: burst, rb_counter, ticket, counter side 0, counter side 1, bound,
/// the gathered counter, the early step's dead slots, its corrections.
pub(super) const M_BURST: usize = 0;
pub(super) const M_RB: usize = 1;
pub(super) const M_TICKET: usize = 2;
pub(super) const M_COUNTER: usize = 3;
pub(super) const M_BOUND: usize = 5;
pub(super) const M_GATHER: usize = 6;
pub(super) const M_DEAD: usize = 7;
pub(super) const M_CORR: usize = 8;
/// A fired slot `fix` emptied (the early step fired the neuron, its injection changed that).
pub(super) const DEAD: u32 = u32::MAX;
/// Flag of a read-back correction: the entry is void.
pub(super) const DEAD_RB: u32 = 0x8000_0000;

/// Mirror of `struct Net` in common.cuh: one burst's view of the device buffers.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Net {
    pub v: u64,
    pub rcc: u64,
    pub acc: u64,
    pub inj: u64,
    pub inj_mask: u64,
    pub row_ptr: u64,
    pub targets: u64,
    pub codes: u64,
    pub table: u64,
    pub areas: u64,
    pub area_end: u64,
    pub rb_lo: u64,
    pub rb_hi: u64,
    pub burst: u64,
    pub rb_counter: u64,
    pub ticket: u64,
    pub chunk_first: u64,
    pub host_in: u64,
    pub host_map: u64,
    pub host_out: u64,
    pub v_out: u64,
    pub rcc_out: u64,
    pub spec: u64,
    pub where_: u64,
    pub dead: u64,
    pub corr: u64,
    pub acc_other: u64,
    pub out_cap: u64,
    /// Bytes of the device injection buffer (`fix` reads the likely entry before the header).
    pub in_cap: u64,
    pub n: u32,
    pub n_areas: u32,
    pub n_rb: u32,
    pub count_shift: u32,
    pub base: u32,
    pub multi: u32,
    /// 1: `step` leaves the accumulators as they are (cleared before the propagation into them).
    pub acc_keep: u32,
    /// 1: the early step (the resident kernel).
    pub early: u32,
    /// The procedural mappings ([`ProcMap`]), and how many.
    pub proc_: u64,
    pub n_proc: u32,
    /// 1: the procedural synapses are binned (`procbin.cu`), not added by `propagate`.
    pub proc_binned: u32,
    /// The procedural mappings drawn row by row ([`crate::connectome::FlatRows`]): its areas
    /// (how many), maps and list.
    pub row_areas: u64,
    pub row_maps: u64,
    pub row_list: u64,
    pub n_row_areas: u32,
}

/// Mirror of `struct ProcMap` in common.cuh: a procedural mapping in closed form
/// ([`crate::connectome::ClosedForm`]).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct ProcMap {
    pub key: u64,
    /// A draw keeps its synapse when its keep draw is below this (`draws` 2).
    pub keep: u64,
    pub src_first: u32,
    pub src_count: u32,
    pub dst_first: u32,
    pub dst_count: u32,
    pub fanout: u32,
    pub contribution: i32,
    /// Draws a synapse takes: 1, or 2 with an attractivity (its target's and its keep draw).
    pub draws: u32,
}

impl From<&crate::connectome::ClosedForm> for ProcMap {
    fn from(c: &crate::connectome::ClosedForm) -> ProcMap {
        ProcMap {
            key: c.key,
            keep: c.keep.unwrap_or(0),
            src_first: c.src_first,
            src_count: c.src_count,
            dst_first: c.dst_first,
            dst_count: c.dst_count,
            fanout: c.fanout,
            contribution: c.contribution,
            draws: c.draws(),
        }
    }
}
// SAFETY: plain old data with the layout of the kernel's `Net`.
unsafe impl DeviceRepr for Net {}

/// Mirror of `struct Side` in common.cuh: a fired list, its row offsets and its counter.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Side {
    pub fired: u64,
    pub offs: u64,
    pub counter: u64,
}
// SAFETY: plain old data with the layout of the kernel's `Side`.
unsafe impl DeviceRepr for Side {}

/// Mirror of `struct Peer` in propagate.cu: another GPU's fired list.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Peer {
    pub fired: u64,
    pub counter: u64,
}

/// Mirror of `struct SumPeer` in procbin.cu: where one GPU's partial sums lie.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct SumPeer {
    pub part: u64,
    pub spill: u64,
    pub flags: u64,
}

/// Mirror of `struct ResParams` in resident.cu.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct ResParams {
    /// The bursts reading side 0 and side 1.
    pub net: [Net; 2],
    pub side: [Side; 2],
    pub ctl: u64,
    pub dev: u64,
    /// The command number before the first one the kernel is to run.
    pub last: u64,
    /// The side the first burst reads.
    pub cur: u32,
    pub inj_blocks: u32,
    pub step_blocks: u32,
    /// Bit 0: the brain learns (`learn` is set); bit 1: it has associative mappings (growth).
    pub learning: u32,
    pub learn: Learn,
    /// One GPU of several: the spike exchange (`n` 0: one GPU alone).
    pub x: Xchg,
    /// The propagation's tiles (`n_tiles` 0: direct).
    pub tiles: super::burst::tiles::TilesParams,
}
// SAFETY: plain old data with the layout of the kernel's `ResParams`.
unsafe impl DeviceRepr for ResParams {}

/// Mirror of `struct Link` in resident.cu: where this GPU's fired list goes on one GPU of the
/// brain (its inbox region and count word by exchange parity, its arrival counters).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Link {
    pub ids: [u64; 2],
    pub count: [u64; 2],
    pub arrivals: u64,
}

/// Mirror of `struct Xchg` in resident.cu: one GPU of several in the resident kernel.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Xchg {
    /// `Link`s, one per GPU of the brain (this one's included).
    pub links: u64,
    /// By parity: `Peer` tables of this GPU's inbox (where each GPU's list lands here).
    pub inbox: [u64; 2],
    /// This GPU's arrival counters (2 words).
    pub arrivals: u64,
    /// The whole brain's list of the last burst, with this GPU's row offsets.
    pub gathered: Side,
    /// Exchanges before the launch's first.
    pub done: u64,
    /// Arrivals per exchange: every resident block of every GPU.
    pub per: u64,
    /// GPUs of the brain (0: one GPU alone).
    pub n: u32,
    pub pad: u32,
}

/// Mirror of `PlasMap` (kernels/learn.cu): one plastic mapping.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct PlasMap {
    pub ltp: u32,
    pub ltd: u32,
    pub window: u32,
    pub assoc: u32,
    pub src_lo: u32,
    pub src_hi: u32,
    pub dst_lo: u32,
    pub dst_hi: u32,
    pub slot: u32,
    pub pad: u32,
    pub cap: u64,
    pub bits: u64,
}

/// Mirror of `Learn` (kernels/learn.cu): the learning state on the device.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Learn {
    pub hist: u64,
    pub now: u64,
    pub active: u64,
    pub n_active: u64,
    pub status: u64,
    pub stamps: u64,
    pub windows: u64,
    pub group_map: u64,
    pub maps: u64,
    pub exists: u64,
    pub grown: u64,
    pub burst: u64,
    pub skip: u64,
    pub toggle: u64,
    pub code_base: u32,
    pub n_total: u32,
    pub longest: u32,
    pub n_maps: u32,
    pub n_slots: u32,
    pub sweep_rows: u32,
}
// SAFETY: plain old data with the layout of the kernel's `Learn`.
unsafe impl DeviceRepr for Learn {}

pub(crate) fn dev_err(what: &str) -> impl Fn(cudarc::driver::DriverError) -> BackendError + '_ {
    move |e| BackendError::Device(format!("CUDA: {what}: {e}"))
}

pub(super) fn as_bytes<T: Copy>(v: &[T]) -> &[u8] {
    // SAFETY: any initialised plain-old-data slice can be viewed as bytes.
    unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, std::mem::size_of_val(v)) }
}

pub(super) fn dptr<T>(s: &CudaSlice<T>, stream: &CudaStream) -> u64 {
    let (p, _sync) = s.device_ptr(stream);
    p
}

/// The entry format of an input and the value the header carries: 2 = one value for all (the ids
/// alone, 4 bytes each), 0 = (id, i32 value), 1 = (id, i64 value).
pub(super) fn entry_format(values: Values<'_>) -> (u64, i64) {
    match values {
        Values::Same(p) => (2, p.0),
        Values::Each(v) => {
            let first = v.first().copied().unwrap_or(0);
            let (mut same, mut narrow) = (true, true);
            for &x in v {
                same &= x == first;
                narrow &= x == x as i32 as i64;
            }
            let fmt = if same {
                2
            } else if narrow {
                0
            } else {
                1
            };
            (fmt, first)
        }
    }
}

#[cfg(test)]
mod tests {
    use std::mem::{offset_of, size_of};

    use super::*;

    /// The fields of `struct name` in `src`, in order, with their C offsets and the struct's size
    /// (pointers and 64-bit integers 8 bytes, 32-bit ones 4; arrays of structs known by `sizes`).
    fn c_layout(src: &str, name: &str, sizes: &[(&str, usize)]) -> (Vec<(String, usize)>, usize) {
        let start = src.find(&format!("struct {name} {{")).unwrap_or_else(|| panic!("struct {name} not in the kernels"));
        let body = &src[start..src[start..].find("};").map(|e| start + e).unwrap()];
        let (mut fields, mut off, mut align_max) = (vec![], 0usize, 4usize);
        for line in body.lines().skip(1) {
            let decl = line.split("//").next().unwrap().trim();
            let Some(decl) = decl.strip_suffix(';') else { continue };
            let (ty, ident) = decl.rsplit_once([' ', '*']).unwrap();
            let (ident, count) = match ident.split_once('[') {
                Some((i, n)) => (i, n.trim_end_matches(']').parse::<usize>().unwrap()),
                None => (ident, 1),
            };
            let ty = ty.trim();
            let (size, align) = if ty.contains('*') || decl.contains('*') || ["u64", "i64"].contains(&ty) {
                (8, 8)
            } else if ["u32", "int"].contains(&ty) {
                (4, 4)
            } else {
                let s = sizes.iter().find(|(n, _)| *n == ty).unwrap_or_else(|| panic!("type {ty} of {name}.{ident}")).1;
                (s, 8)
            };
            off = off.next_multiple_of(align);
            align_max = align_max.max(align);
            fields.push((ident.to_string(), off));
            off += size * count;
        }
        (fields, off.next_multiple_of(align_max))
    }

    fn kernels() -> String {
        crate::backend::cuda::module::BURST_CU.to_string()
    }

    macro_rules! rust_layout {
        ($t:ty: $($f:ident),*) => {
            (vec![$((stringify!($f).trim_end_matches('_').to_string(), offset_of!($t, $f))),*], size_of::<$t>())
        };
    }

    #[test]
    fn the_mirrors_match_the_kernels_structs() {
        let src = kernels();
        let sizes = [
            ("Net", size_of::<Net>()),
            ("Side", size_of::<Side>()),
            ("Ctl", 64),
            ("ResDev", 96),
            ("Learn", size_of::<Learn>()),
            ("Xchg", size_of::<Xchg>()),
            ("Tiles", size_of::<super::super::burst::tiles::TilesParams>()),
        ];
        let net = rust_layout!(Net: v, rcc, acc, inj, inj_mask, row_ptr, targets, codes, table, areas, area_end, rb_lo, rb_hi,
            burst, rb_counter, ticket, chunk_first, host_in, host_map, host_out, v_out, rcc_out, spec, where_, dead, corr,
            acc_other, out_cap, in_cap, n, n_areas, n_rb, count_shift, base, multi, acc_keep, early, proc_, n_proc, proc_binned,
            row_areas, row_maps, row_list, n_row_areas);
        assert_eq!(c_layout(&src, "Net", &sizes), net, "Net");
        assert_eq!(c_layout(&src, "Side", &sizes), rust_layout!(Side: fired, offs, counter), "Side");
        assert_eq!(c_layout(&src, "Peer", &sizes), rust_layout!(Peer: fired, counter), "Peer");
        assert_eq!(c_layout(&src, "SumPeer", &sizes), rust_layout!(SumPeer: part, spill, flags), "SumPeer");
        let res = rust_layout!(ResParams: net, side, ctl, dev, last, cur, inj_blocks, step_blocks, learning, learn, x, tiles);
        use super::super::burst::tiles::TilesParams;
        let tiles = rust_layout!(TilesParams: bins, counts, flags, spill, room, n_tiles, bits, blocks, pad);
        assert_eq!(c_layout(&src, "Tiles", &sizes), tiles, "Tiles");
        assert_eq!(c_layout(&src, "ResParams", &sizes), res, "ResParams");
        assert_eq!(c_layout(&src, "Link", &sizes), rust_layout!(Link: ids, count, arrivals), "Link");
        let x = rust_layout!(Xchg: links, inbox, arrivals, gathered, done, per, n, pad);
        assert_eq!(c_layout(&src, "Xchg", &sizes), x, "Xchg");
        let learn = rust_layout!(Learn: hist, now, active, n_active, status, stamps, windows, group_map, maps, exists, grown, burst, skip, toggle,
            code_base, n_total, longest, n_maps, n_slots, sweep_rows);
        assert_eq!(c_layout(&src, "Learn", &sizes), learn, "Learn");
        let pm = rust_layout!(ProcMap: key, keep, src_first, src_count, dst_first, dst_count, fanout, contribution, draws);
        assert_eq!(c_layout(&src, "ProcMap", &sizes), pm, "ProcMap");
        use crate::connectome::flat::{FlatArea, FlatMap};
        let fm = rust_layout!(FlatMap: key, vkey, keep, value, log1mp, rule, morph, flags, fanout, src_first, src_dims, src_npv,
            dst_first, dst_count, dst_dims, dst_npv, scalar, tile_seed, tile_pattern, list_at, list_len);
        assert_eq!(c_layout(&src, "FlatMap", &sizes), fm, "FlatMap");
        let fa = rust_layout!(FlatArea: first, count, map_first, map_end, uniform);
        assert_eq!(c_layout(&src, "FlatArea", &sizes), fa, "FlatArea");
        let map = rust_layout!(PlasMap: ltp, ltd, window, assoc, src_lo, src_hi, dst_lo, dst_hi, slot, pad, cap, bits);
        assert_eq!(c_layout(&src, "PlasMap", &sizes), map, "PlasMap");
    }
}
