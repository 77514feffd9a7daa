//! A large brain's procedural synapses, binned by target tile before they are added
//! (`kernels/procbin.cu`, docs/capacity.md): each drawn synapse is written once to its tile's bin
//! and read once, and the adds of one tile hit 32-bit sums held in L2 (folded into the
//! accumulator after; a tile whose sums overflow is added again in 64 bits), instead of a DRAM
//! read and write per synapse.

use std::sync::Arc;

use cudarc::driver::{sys, CudaSlice, CudaStream, LaunchConfig, PushKernelArg};

use super::layout::{dev_err, Net, ProcMap, Side, BLOCK};
use super::module::Kernels;
use crate::backend::BackendError;

/// Neurons per tile, as bits: 2M neurons (8 MB of 32-bit sums), or 4M (16 MB; 64-bit tiles of 32
/// MB did not stay in L2 of an H100) where 2M-neuron tiles would be more than [`FEW_TILES`].
const TILE_BITS: u32 = 21;
/// The most tiles whose staging (`STAGE` entries each) lets four blocks of `proc_bin` share an SM.
/// Past it the tiles double: W(100M, 1000) 24-27 ms a burst on an H100 in 24 tiles against 34-37
/// in 48; a brain of few tiles keeps the small ones (W(10M, 1000) 1.34 ms in 5 tiles, 1.75 in 3:
/// the appends of a block crowd fewer counters).
const FEW_TILES: u32 = 24;
/// Entries each tile stages in a block's shared memory (PROC_STAGE).
const STAGE: u32 = 512;
/// The smallest largest fanout that bins.
const MIN_FANOUT: u32 = 256;
/// Most tiles (the staging must fit a block's shared memory).
const MAX_TILES: u32 = 100;

/// The bins of one GPU.
pub(super) struct ProcBins {
    bins: CudaSlice<u32>,
    counts: CudaSlice<u64>,
    /// 32-bit sums, one per neuron (zero between bursts), and the tiles whose sums overflowed.
    scratch: CudaSlice<i32>,
    over: CudaSlice<u32>,
    /// Entries each bin holds; past it a synapse is added directly.
    room: u64,
    tiles: u32,
    /// Neurons per tile, as bits (see [`tile_bits`]).
    bits: u32,
    /// The largest fanout (the draw index space per fired source and map).
    kmax: u32,
}

impl ProcBins {
    /// Whether binning pays for `n` neurons and these procedural maps: more than one tile, and
    /// fanouts of at least [`MIN_FANOUT`]. Measured on an H200 at W(100M, K): K = 1000 binned 37-38
    /// ms a burst against 45-48 direct, K = 300 2.3 ms against 3.2-3.9; K = 100 2.3 ms against
    /// 0.57 (binned runs on graphs, without the early step that hides a small propagation).
    pub(super) fn wanted(n: u32, maps: &[ProcMap]) -> bool {
        let fanout = maps.iter().map(|m| m.fanout).max().unwrap_or(0);
        let bits = tile_bits(n);
        fanout >= MIN_FANOUT && n > 1 << TILE_BITS && n.div_ceil(1 << bits) <= MAX_TILES && maps.len() < 1 << (32 - bits)
    }

    /// Bins for `n` neurons, in at most `bytes` of device memory.
    pub(super) fn new(s: &Arc<CudaStream>, n: u32, maps: &[ProcMap], bytes: u64) -> Result<ProcBins, BackendError> {
        let e = |w: &'static str| dev_err(w);
        let bits = tile_bits(n);
        let tiles = n.div_ceil(1 << bits);
        let kmax = maps.iter().map(|m| m.fanout).max().unwrap_or(0);
        // no more than every neuron firing could draw
        let most: u64 = maps.iter().map(|m| m.src_count as u64 * m.fanout as u64).sum();
        // 16 GB at most: four times what W(100M, 1000, 1%) draws in a burst
        let entries = (bytes / 4).min(most).min(1 << 32).max(tiles as u64);
        let room = entries / tiles as u64;
        let bins = s.alloc_zeros::<u32>((room * tiles as u64) as usize).map_err(e("alloc procedural bins"))?;
        let counts = s.alloc_zeros::<u64>(tiles as usize).map_err(e("alloc procedural bins"))?;
        let scratch = s.alloc_zeros::<i32>(n as usize).map_err(e("alloc procedural sums"))?;
        let over = s.alloc_zeros::<u32>(tiles as usize).map_err(e("alloc procedural sums"))?;
        tracing::info!("CUDA: procedural synapses binned in {tiles} tiles of {} neurons, {room} entries each", 1u32 << bits);
        Ok(ProcBins { bins, counts, scratch, over, room, tiles, bits, kmax })
    }

    /// Device bytes of the bins.
    pub(super) fn bytes(&self) -> u64 {
        self.room * self.tiles as u64 * 4 + self.tiles as u64 * 12 + self.scratch.len() as u64 * 4
    }

    /// Launch (or record) the clear, the binning of side `rd`'s fired sources and the adds.
    pub(super) fn launch(&self, s: &CudaStream, k: &Kernels, net: &Net, rd: &Side, sm: u32) -> Result<(), BackendError> {
        let one = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (MAX_TILES.next_multiple_of(32), 1, 1), shared_mem_bytes: 0 };
        // SAFETY: zeroes the `tiles` counts and marks allocated in `new`.
        unsafe { s.launch_builder(&k.proc_clear).arg(&self.counts).arg(&self.over).arg(&self.tiles).launch(one) }
            .map_err(dev_err("launching proc_clear"))?;
        let shared = self.tiles * STAGE * 4 + self.tiles * 4;
        k.proc_bin
            .set_attribute(sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, shared as i32)
            .map_err(dev_err("shared memory for proc_bin"))?;
        let cfg = LaunchConfig { grid_dim: (sm * 4, 1, 1), block_dim: (BLOCK, 1, 1), shared_mem_bytes: shared };
        // SAFETY: reads side `rd`'s fired list and the maps of `net`; writes within each tile's
        // `room` entries of `bins` and the counts, or adds into `net.acc` (N neurons).
        unsafe {
            s.launch_builder(&k.proc_bin)
                .arg(net)
                .arg(rd)
                .arg(&self.bins)
                .arg(&self.counts)
                .arg(&self.room)
                .arg(&self.tiles)
                .arg(&self.bits)
                .arg(&self.kmax)
                .launch(cfg)
        }
        .map_err(dev_err("launching proc_bin"))?;
        let cfg = LaunchConfig { grid_dim: (sm * 8, 1, 1), block_dim: (BLOCK, 1, 1), shared_mem_bytes: 0 };
        let (bins, counts, room, tiles, bits) = (&self.bins, &self.counts, &self.room, &self.tiles, &self.bits);
        // SAFETY: reads at most `room` entries of each bin, adds into `scratch` (N sums) at targets
        // < N, marks tiles < `tiles` in `over`.
        unsafe {
            s.launch_builder(&k.proc_add)
                .arg(net)
                .arg(bins)
                .arg(counts)
                .arg(room)
                .arg(tiles)
                .arg(bits)
                .arg(&self.scratch)
                .arg(&self.over)
                .launch(cfg)
        }
        .map_err(dev_err("launching proc_add"))?;
        // SAFETY: reads and zeroes the N sums, adds them into `net.acc` (N neurons).
        unsafe { s.launch_builder(&k.proc_fold).arg(net).arg(&self.scratch).arg(&self.over).arg(bits).launch(cfg) }
            .map_err(dev_err("launching proc_fold"))?;
        // SAFETY: as proc_add, into `net.acc`, for the marked tiles only.
        unsafe { s.launch_builder(&k.proc_redo).arg(net).arg(bins).arg(counts).arg(room).arg(tiles).arg(bits).arg(&self.over).launch(cfg) }
            .map_err(dev_err("launching proc_redo"))?;
        Ok(())
    }
}

/// The tile size for `n` neurons, as bits: 2M neurons, or 4M where that would make more than
/// [`FEW_TILES`] tiles.
fn tile_bits(n: u32) -> u32 {
    if n.div_ceil(1 << TILE_BITS) > FEW_TILES {
        TILE_BITS + 1
    } else {
        TILE_BITS
    }
}
