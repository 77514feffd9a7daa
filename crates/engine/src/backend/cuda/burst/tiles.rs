//! A large brain's stored synapses summed where the cache is (`kernels/tiles.cu`): one GPU in the
//! resident kernel bins each burst's (spike, synapse) pairs by coarse target tile, splits each
//! coarse bin into its fine tiles' arrays, then sums each fine tile in shared memory and writes its
//! neurons' input (no accumulator clear, no atomic in DRAM).
//!
//! [`Tiles`] owns the bins; [`TilesParams`] is the kernels' view of them (in `ResParams`, or the
//! arguments of `tile_bin`, `tile_split` and `tile_sum` where the host runs the propagation ahead
//! of the resident kernel's first burst).

use std::sync::Arc;

use cudarc::driver::{sys, CudaSlice, CudaStream, DeviceRepr, LaunchConfig, PushKernelArg};

use crate::backend::cuda::layout::{dev_err, dptr, Net, Side, TilesParams, BLOCK};
use crate::backend::cuda::module::Kernels;
use crate::backend::BackendError;

/// Neurons of a fine tile: 2^TILE_BITS, 64 KB of 32-bit sums in shared memory (two resident
/// blocks an SM).
pub(in crate::backend::cuda) const TILE_BITS: u32 = 14;

/// Fine tiles at most (a word of fill and of flags each).
const MAX_TILES: u64 = 1 << 16;

/// Coarse tiles the pairs are binned into, at most where the codes leave room: a binning block's
/// chunk of 4096 pairs then leaves runs of 32 entries and more in each bin (whole sectors), where
/// W(80M)'s 4883 fine tiles left runs of less than one.
const COARSE_TILES: u64 = 128;

/// Coarse tiles at most (8 bytes each of a binning block's shared memory, beside its chunk).
const MAX_COARSE: u64 = 1 << 13;

/// Fine tiles of a coarse tile at most, as bits (`TILE_MAX_FINE` in tiles.cu).
const MAX_FINE_BITS: u32 = 10;

/// Binning blocks' rooms a `tile_split` item reads (`TILE_SLICE_ROOMS` in tiles.cu).
const SLICE_ROOMS: u32 = 16;

/// Bytes of the chunk a binning or splitting block stages (8 warps, 2 chunks of 256 entries
/// each, 6 bytes an entry).
const STAGE_BYTES: u64 = 6 * 8 * 2 * 256;

/// The bins hold the pairs of a burst in which this share of the synapses is used (2%: twice the
/// standard workload's): each block's room in a coarse bin, and each fine tile's array, twice
/// their share of them; a burst beyond spills the rest into DRAM atomics (exact, slower).
const ROOM_SHARE: f64 = 0.02;

/// Brains from this many neurons bin their synapses: below, the accumulators stay in L2 and the
/// direct atomics are cheaper. One H200, W(N, 100, 1%) back to back, p50 direct against tiled
/// (2026-11-29, two levels): 5M 150 / 209 us, 10M 321 / 337; 14M tiled 462 (583 direct on
/// 2026-11-28), 20M 999 / 572-604, 80M 4947 / 2020-2052.
pub(in crate::backend::cuda) const TILES_FROM: u32 = 14_000_000;

// SAFETY: plain old data with the layout of the kernel's `Tiles`.
unsafe impl DeviceRepr for TilesParams {}

/// A forced shape of the bins (a test forces small ones, so that a small brain has many tiles
/// and both levels spill).
#[derive(Clone, Copy, Debug)]
pub(crate) struct TileShape {
    /// A fine tile's neurons, as bits.
    pub bits: u32,
    /// A coarse tile's fine tiles, as bits.
    pub coarse: u32,
    /// Entries of a block's room in a coarse bin.
    pub room: u64,
    /// Entries of a fine tile's array.
    pub cap: u64,
}

/// The shape of a brain's bins.
#[derive(Clone, Copy, Debug, PartialEq)]
struct TileGeometry {
    bits: u32,
    cbits: u32,
    n_tiles: u64,
    n_coarse: u64,
    room: u64,
    cap: u64,
    blocks: u32,
}

impl TileGeometry {
    /// The bins of `neurons` with `synapses` binned by `blocks` blocks, codes below `table_len`;
    /// `None` where the tiles cannot take the brain (too many tiles, codes too wide).
    fn of(neurons: u32, synapses: u64, blocks: u32, table_len: usize, forced: Option<TileShape>) -> Option<TileGeometry> {
        let bits = forced.map_or(TILE_BITS, |s| s.bits);
        let n = neurons as u64;
        let n_tiles = n.div_ceil(1 << bits);
        // the widest coarse tile whose target still leaves the codes room in an entry's 32 bits
        let codes_fit = |c: u32| (table_len as u64) < 1u64 << (32 - c);
        let widest = (bits..=(bits + MAX_FINE_BITS).min(31)).rev().find(|&c| codes_fit(c))?;
        let cbits = match forced {
            Some(s) => bits + s.coarse,
            None => (bits..=widest).find(|&c| n.div_ceil(1 << c) <= COARSE_TILES).unwrap_or(widest),
        };
        let n_coarse = n.div_ceil(1 << cbits);
        if n_tiles > MAX_TILES || n_coarse > MAX_COARSE || cbits > widest {
            return None;
        }
        let twice = |share: f64, slack: u64, unit: u64| ((2.0 * share) as u64 + slack).next_multiple_of(unit);
        let room = forced.map_or_else(|| twice(synapses as f64 * ROOM_SHARE / (n_coarse * blocks as u64) as f64, 32, 8), |s| s.room);
        let cap = forced.map_or_else(|| twice(synapses as f64 * ROOM_SHARE / n_tiles as f64, 256, 32), |s| s.cap);
        Some(TileGeometry { bits, cbits, n_tiles, n_coarse, room, cap, blocks })
    }

    fn bytes(&self) -> u64 {
        let coarse = self.n_coarse * self.blocks as u64;
        (coarse * (self.room + 1) + self.n_tiles * (self.cap + 2)) * 4 + (self.n_tiles << self.bits) * 4
    }

    /// Dynamic shared memory the phases need: the binning's counts and chunk, the split's and its
    /// chunk, or a fine tile's sums.
    fn shared_bytes(&self) -> u32 {
        let bin = 8 * self.n_coarse + STAGE_BYTES;
        let split = 8 * (1u64 << (self.cbits - self.bits)) + 4 * (SLICE_ROOMS as u64 + 1) + STAGE_BYTES;
        bin.max(split).max(4 << self.bits) as u32
    }
}

/// The bins of a GPU whose propagation is tiled.
pub(in crate::backend::cuda) struct Tiles {
    bins: CudaSlice<u32>,
    counts: CudaSlice<u32>,
    fine: CudaSlice<u32>,
    fill: CudaSlice<u32>,
    flags: CudaSlice<u32>,
    spill: CudaSlice<i32>,
    geometry: TileGeometry,
}

impl Tiles {
    /// Whether a brain's propagation is tiled: one GPU in the resident kernel, 32-bit
    /// accumulators, no procedural synapse (drawn into the accumulator), from [`TILES_FROM`]
    /// neurons up to [`MAX_TILES`] tiles, and codes that fit beside a target in 32 bits.
    pub(in crate::backend::cuda) fn wanted(
        neurons: u32,
        wide_acc: bool,
        procedural: bool,
        table_len: usize,
        shape: Option<TileShape>,
    ) -> bool {
        let from = if shape.is_some() { 1 } else { TILES_FROM };
        !wide_acc && !procedural && neurons >= from && TileGeometry::of(neurons, 0, 1, table_len, shape).is_some()
    }

    /// Bytes the bins take for `neurons` and `synapses` binned by `blocks` blocks.
    pub(in crate::backend::cuda) fn bytes_for(neurons: u32, synapses: u64, blocks: u32, table_len: usize, shape: Option<TileShape>) -> u64 {
        TileGeometry::of(neurons, synapses, blocks, table_len, shape).map_or(0, |g| g.bytes())
    }

    /// The bins for `neurons` binned by `blocks` blocks (the resident kernel's grid).
    pub(in crate::backend::cuda) fn new(
        s: &Arc<CudaStream>,
        neurons: u32,
        synapses: u64,
        blocks: u32,
        table_len: usize,
        shape: Option<TileShape>,
    ) -> Result<Tiles, BackendError> {
        let g = TileGeometry::of(neurons, synapses, blocks, table_len, shape)
            .ok_or_else(|| BackendError::Device("the propagation's tiles cannot take this brain".into()))?;
        let e = |what: &'static str| dev_err(what);
        let len = |n: u64| usize::try_from(n).map_err(|_| BackendError::Device("the propagation's bins overflow the address space".into()));
        let coarse = g.n_coarse * blocks as u64;
        let tiles = Tiles {
            bins: s.alloc_zeros(len(coarse * g.room)?).map_err(e("allocating the propagation's bins"))?,
            counts: s.alloc_zeros(len(coarse)?).map_err(e("allocating the bins' counts"))?,
            fine: s.alloc_zeros(len(g.n_tiles * g.cap)?).map_err(e("allocating the fine tiles' arrays"))?,
            fill: s.alloc_zeros(len(g.n_tiles)?).map_err(e("allocating the fine tiles' fill"))?,
            flags: s.alloc_zeros(len(g.n_tiles)?).map_err(e("allocating the bins' flags"))?,
            spill: s.alloc_zeros(len(g.n_tiles << g.bits)?).map_err(e("allocating the spill"))?,
            geometry: g,
        };
        tracing::debug!(?g, bytes = tiles.bytes(), "CUDA: the propagation is tiled");
        Ok(tiles)
    }

    pub(in crate::backend::cuda) fn bytes(&self) -> u64 {
        self.geometry.bytes()
    }

    /// Dynamic shared memory the phases need.
    pub(in crate::backend::cuda) fn shared_bytes(&self) -> u32 {
        self.geometry.shared_bytes()
    }

    /// [`Tiles::shared_bytes`] of the tiles of `neurons` (whatever the blocks).
    pub(in crate::backend::cuda) fn shared_bytes_of(neurons: u32, table_len: usize, shape: Option<TileShape>) -> u32 {
        TileGeometry::of(neurons, 0, 1, table_len, shape).map_or(0, |g| g.shared_bytes())
    }

    pub(in crate::backend::cuda) fn params(&self, s: &Arc<CudaStream>) -> TilesParams {
        let g = &self.geometry;
        TilesParams {
            bins: dptr(&self.bins, s),
            counts: dptr(&self.counts, s),
            fine: dptr(&self.fine, s),
            fill: dptr(&self.fill, s),
            flags: dptr(&self.flags, s),
            spill: dptr(&self.spill, s),
            room: g.room,
            cap: g.cap,
            n_tiles: g.n_tiles as u32,
            bits: g.bits,
            n_coarse: g.n_coarse as u32,
            cbits: g.cbits,
            blocks: g.blocks,
            slices: g.blocks.div_ceil(SLICE_ROOMS),
        }
    }

    /// The propagation of `rd` into `net.acc` as three kernels (ahead of the resident kernel's
    /// first burst): `tile_bin` on the resident kernel's grid, then `tile_split` and `tile_sum`.
    pub(in crate::backend::cuda) fn launch(&self, s: &Arc<CudaStream>, k: &Kernels, net: &Net, rd: &Side) -> Result<(), BackendError> {
        let t = self.params(s);
        let smem = self.shared_bytes();
        for f in [&k.tile_bin, &k.tile_split, &k.tile_sum] {
            f.set_attribute(sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem as i32)
                .map_err(dev_err("raising the tiles' shared memory"))?;
        }
        let cfg = |grid| LaunchConfig { grid_dim: (grid, 1, 1), block_dim: (BLOCK, 1, 1), shared_mem_bytes: smem };
        let blocks = self.geometry.blocks;
        // SAFETY: `net` and `rd` point into the backend's buffers (as `propagate`'s launch), `t`
        // into ours; tile_bin runs on exactly `blocks` blocks (each writes its own room of each
        // coarse bin, within `room` entries, and its counts), tile_split writes the fine tiles'
        // arrays within `cap` entries, tile_sum writes the accumulator's N neurons and clears
        // what it took of the spill and the fill.
        unsafe { s.launch_builder(&k.tile_bin).arg(net).arg(rd).arg(&t).launch(cfg(blocks)) }.map_err(dev_err("launching tile_bin"))?;
        // SAFETY: as above.
        unsafe { s.launch_builder(&k.tile_split).arg(net).arg(&t).launch(cfg(blocks)) }.map_err(dev_err("launching tile_split"))?;
        // SAFETY: as above.
        unsafe { s.launch_builder(&k.tile_sum).arg(net).arg(&t).launch(cfg((self.geometry.n_tiles as u32).min(blocks))) }
            .map_err(dev_err("launching tile_sum"))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_brains_with_narrow_accumulators_are_tiled() {
        assert!(!Tiles::wanted(TILES_FROM - 1, false, false, 10, None));
        assert!(Tiles::wanted(20_000_000, false, false, 10, None));
        // 64-bit accumulators, procedural synapses, too many tiles, codes that do not fit
        assert!(!Tiles::wanted(20_000_000, true, false, 10, None));
        assert!(!Tiles::wanted(20_000_000, false, true, 10, None));
        assert!(!Tiles::wanted(u32::MAX, false, false, 10, None));
        assert!(!Tiles::wanted(20_000_000, false, false, 1 << 18, None));
        // a forced shape tiles small brains too
        assert!(Tiles::wanted(1000, false, false, 10, Some(TileShape { bits: 6, coarse: 2, room: 4, cap: 8 })));
    }

    #[test]
    fn the_pairs_go_to_a_hundred_coarse_tiles_and_the_bins_hold_twice_a_two_percent_burst() {
        // W(20M, 100): 1221 fine tiles in 77 coarse ones of 16, 264 blocks (an H200's two an SM)
        let g = TileGeometry::of(20_000_000, 2_000_000_000, 264, 10, None).unwrap();
        assert_eq!((g.n_tiles, g.n_coarse, g.cbits), (1221, 77, 18));
        let (room, cap) = (2e9 * ROOM_SHARE / (77.0 * 264.0), 2e9 * ROOM_SHARE / 1221.0);
        assert!(g.room as f64 >= 2.0 * room && g.room.is_multiple_of(8), "room {}", g.room);
        assert!(g.cap as f64 >= 2.0 * cap && g.cap.is_multiple_of(32), "cap {}", g.cap);
        assert!(g.bytes() < 800 << 20, "{} bytes", g.bytes());
        // W(80M): 4883 fine tiles in 77 coarse ones of 64
        let g = TileGeometry::of(80_000_000, 8_000_000_000, 264, 10, None).unwrap();
        assert_eq!((g.n_tiles, g.n_coarse, g.cbits), (4883, 77, 20));
        // codes that need more bits take narrower coarse tiles
        let g = TileGeometry::of(80_000_000, 8_000_000_000, 264, 1 << 14, None).unwrap();
        assert_eq!((g.cbits, g.n_coarse), (17, 611));
        // shared memory: the sums of a fine tile (64 KB), more than the binning's or the split's
        assert_eq!(Tiles::shared_bytes_of(20_000_000, 10, None), 64 << 10);
    }
}
