//! A large brain's stored synapses summed where the cache is (`kernels/tiles.cu`): one GPU in the
//! resident kernel bins each burst's (spike, synapse) pairs by target tile, then sums each tile
//! in shared memory and writes its neurons' input (no accumulator clear, no atomic in DRAM).
//!
//! [`Tiles`] owns the bins; [`TilesParams`] is the kernels' view of them (in `ResParams`, or the
//! arguments of `tile_bin` and `tile_sum` where the host runs the propagation ahead of the
//! resident kernel's first burst).

use std::sync::Arc;

use cudarc::driver::{sys, CudaSlice, CudaStream, DeviceRepr, LaunchConfig, PushKernelArg};

use crate::backend::cuda::layout::{dev_err, dptr, Net, Side, TilesParams, BLOCK};
use crate::backend::cuda::module::Kernels;
use crate::backend::BackendError;

/// Neurons of a tile: 2^TILE_BITS, 64 KB of 32-bit sums in shared memory (two resident blocks an
/// SM).
pub(in crate::backend::cuda) const TILE_BITS: u32 = 14;

/// Tiles at most: each binning block counts its entries per tile in shared memory (8 bytes a
/// tile, beside the chunk it stages: `tile_bin_smem` in tiles.cu).
const MAX_TILES: u64 = 1 << 13;

/// Blocks that bin at most (`TILE_MAX_BLOCKS` in tiles.cu).
pub(in crate::backend::cuda) const MAX_BLOCKS: u32 = 1024;

/// Bytes of the chunk a binning block stages (`tile_bin_smem` in tiles.cu: 8 warps, 2 chunks of
/// 256 pairs each, 6 bytes a pair).
const STAGE_BYTES: u64 = 6 * 8 * 2 * 256;

/// The bins hold the pairs of a burst in which this share of the synapses is used (2%: twice the
/// standard workload's), each block's room in a bin twice its share of them; a burst beyond
/// spills the rest into DRAM atomics (exact, slower).
const ROOM_SHARE: f64 = 0.02;

/// Brains from this many neurons bin their synapses: below, the accumulators stay in L2 and the
/// direct atomics are cheaper. One H200, W(N, 100, 1%) back to back, p50 direct against tiled
/// (2026-11-28): 5M 158 / 236 us, 10M 338 / 415, 14M 583 / 546, 20M 999 / 836, 80M 4947 / 4573.
pub(in crate::backend::cuda) const TILES_FROM: u32 = 14_000_000;

// SAFETY: plain old data with the layout of the kernel's `Tiles`.
unsafe impl DeviceRepr for TilesParams {}

/// The shape of the bins: tile size and each block's room (a test forces small ones, so that a
/// small brain has many tiles and spills).
#[derive(Clone, Copy, Debug)]
pub(crate) struct TileShape {
    pub bits: u32,
    pub room: Option<u64>,
}

/// The tile size's bits of a shape (the default: [`TILE_BITS`]).
fn bits_of(shape: Option<TileShape>) -> u32 {
    shape.map_or(TILE_BITS, |s| s.bits)
}

/// The bins of a GPU whose propagation is tiled.
pub(in crate::backend::cuda) struct Tiles {
    bins: CudaSlice<u32>,
    counts: CudaSlice<u32>,
    flags: CudaSlice<u32>,
    spill: CudaSlice<i32>,
    room: u64,
    n_tiles: u32,
    bits: u32,
    blocks: u32,
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
        let bits = bits_of(shape);
        let from = if shape.is_some() { 1 } else { TILES_FROM };
        !wide_acc
            && !procedural
            && neurons >= from
            && (neurons as u64).div_ceil(1 << bits) <= MAX_TILES
            && (table_len as u64) < 1u64 << (32 - bits)
    }

    /// Bytes the bins take for `neurons` and `synapses` binned by `blocks` blocks.
    pub(in crate::backend::cuda) fn bytes_for(neurons: u32, synapses: u64, blocks: u32, shape: Option<TileShape>) -> u64 {
        let (n_tiles, room) = Self::shape(neurons, synapses, blocks, shape);
        n_tiles * blocks as u64 * room * 4 + n_tiles * (blocks as u64 + 1) * 4 + neurons as u64 * 4
    }

    fn shape(neurons: u32, synapses: u64, blocks: u32, shape: Option<TileShape>) -> (u64, u64) {
        let bits = bits_of(shape);
        let n_tiles = (neurons as u64).div_ceil(1 << bits);
        let room = shape.and_then(|s| s.room).unwrap_or_else(|| {
            let share = synapses as f64 * ROOM_SHARE / (n_tiles * blocks as u64) as f64;
            ((2.0 * share) as u64 + 32).next_multiple_of(8)
        });
        (n_tiles, room)
    }

    /// The bins for `neurons` binned by `blocks` blocks (the resident kernel's grid).
    pub(in crate::backend::cuda) fn new(
        s: &Arc<CudaStream>,
        neurons: u32,
        synapses: u64,
        blocks: u32,
        shape: Option<TileShape>,
    ) -> Result<Tiles, BackendError> {
        let bits = bits_of(shape);
        let (n_tiles, room) = Self::shape(neurons, synapses, blocks, shape);
        let e = |what: &'static str| dev_err(what);
        let len = usize::try_from(n_tiles * blocks as u64 * room)
            .map_err(|_| BackendError::Device("the propagation's bins overflow the address space".into()))?;
        let tiles = Tiles {
            bins: s.alloc_zeros(len).map_err(e("allocating the propagation's bins"))?,
            counts: s.alloc_zeros(n_tiles as usize * blocks as usize).map_err(e("allocating the bins' counts"))?,
            flags: s.alloc_zeros(n_tiles as usize).map_err(e("allocating the bins' flags"))?,
            spill: s.alloc_zeros(neurons as usize).map_err(e("allocating the spill"))?,
            room,
            n_tiles: n_tiles as u32,
            bits,
            blocks,
        };
        tracing::debug!(n_tiles, room, blocks, bytes = tiles.bytes(), "CUDA: the propagation is tiled");
        Ok(tiles)
    }

    pub(in crate::backend::cuda) fn bytes(&self) -> u64 {
        ((self.bins.len() + self.counts.len() + self.flags.len() + self.spill.len()) * 4) as u64
    }

    /// Dynamic shared memory the phases need: the binning's counts or a tile's sums.
    pub(in crate::backend::cuda) fn shared_bytes(&self) -> u32 {
        Self::shared_bytes_for(self.n_tiles as u64, self.bits)
    }

    /// [`Tiles::shared_bytes`] of the tiles of `neurons`.
    pub(in crate::backend::cuda) fn shared_bytes_of(neurons: u32, shape: Option<TileShape>) -> u32 {
        let bits = bits_of(shape);
        Self::shared_bytes_for((neurons as u64).div_ceil(1 << bits), bits)
    }

    fn shared_bytes_for(n_tiles: u64, bits: u32) -> u32 {
        (8 * n_tiles + STAGE_BYTES).max(4 << bits) as u32
    }

    pub(in crate::backend::cuda) fn params(&self, s: &Arc<CudaStream>) -> TilesParams {
        TilesParams {
            bins: dptr(&self.bins, s),
            counts: dptr(&self.counts, s),
            flags: dptr(&self.flags, s),
            spill: dptr(&self.spill, s),
            room: self.room,
            n_tiles: self.n_tiles,
            bits: self.bits,
            blocks: self.blocks,
            pad: 0,
        }
    }

    /// The propagation of `rd` into `net.acc` as two kernels (ahead of the resident kernel's
    /// first burst): `tile_bin` on the resident kernel's grid, then `tile_sum`.
    pub(in crate::backend::cuda) fn launch(&self, s: &Arc<CudaStream>, k: &Kernels, net: &Net, rd: &Side) -> Result<(), BackendError> {
        let t = self.params(s);
        let smem = self.shared_bytes();
        for f in [&k.tile_bin, &k.tile_sum] {
            f.set_attribute(sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem as i32)
                .map_err(dev_err("raising the tiles' shared memory"))?;
        }
        let cfg = |grid| LaunchConfig { grid_dim: (grid, 1, 1), block_dim: (BLOCK, 1, 1), shared_mem_bytes: smem };
        // SAFETY: `net` and `rd` point into the backend's buffers (as `propagate`'s launch), `t`
        // into ours; tile_bin runs on exactly `blocks` blocks (each writes its own room of each
        // bin, within `room` entries, and its counts), tile_sum writes the accumulator's N
        // neurons and clears what it took of the spill.
        unsafe { s.launch_builder(&k.tile_bin).arg(net).arg(rd).arg(&t).launch(cfg(self.blocks)) }
            .map_err(dev_err("launching tile_bin"))?;
        // SAFETY: as above.
        unsafe { s.launch_builder(&k.tile_sum).arg(net).arg(&t).launch(cfg(self.n_tiles.min(self.blocks))) }
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
        assert!(Tiles::wanted(1000, false, false, 10, Some(TileShape { bits: 6, room: Some(4) })));
    }

    #[test]
    fn the_bins_hold_twice_a_two_percent_burst() {
        // W(20M, 100): 1221 tiles, 264 blocks (an H200's two a multiprocessor)
        let (n_tiles, room) = Tiles::shape(20_000_000, 2_000_000_000, 264, None);
        assert_eq!(n_tiles, 1221);
        let expected = 2e9 * ROOM_SHARE / (1221.0 * 264.0);
        assert!(room as f64 >= 2.0 * expected && room % 8 == 0, "room {room}");
        let bytes = Tiles::bytes_for(20_000_000, 2_000_000_000, 264, None);
        assert!(bytes < 500 << 20, "{bytes} bytes");
        // shared memory: the sums of a tile (64 KB) or the binning's counts and stage
        assert_eq!(Tiles::shared_bytes_of(20_000_000, None), 64 << 10);
        assert!(Tiles::shared_bytes_of(130_000_000, None) > 64 << 10);
    }
}
