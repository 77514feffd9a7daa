//! A large brain's procedural synapses, sorted by target before they are added
//! (`kernels/procbin.cu`, docs/capacity.md): each drawn synapse is written to its tile's bin, then
//! to its sub-bin, and a block per sub-bin adds them into sums in shared memory, instead of a
//! DRAM (or L2) atomic per synapse.

use std::sync::Arc;

use cudarc::driver::{sys, CudaFunction, CudaSlice, CudaStream, LaunchConfig, PushKernelArg};

use crate::backend::cuda::layout::{as_bytes, dev_err, dptr, Net, ProcMap, Side, SumPeer};
use crate::backend::cuda::module::Kernels;
use crate::backend::BackendError;

/// Neurons per tile, as bits: 2M. W(100M, 1000) on an H100: 11.5 ms a burst in 48 tiles against
/// 11.9 in 24 tiles of 4M (the sub-bins' runs written by `proc_split` twice as long).
const TILE_BITS: u32 = 21;
/// Neurons per sub-bin, as bits: 16K neurons, 64 KB of 32-bit sums in a block's shared memory (two
/// blocks of 1024 threads an SM). W(100M, 1000) on an H100: 14.1 ms a burst against 14.6 with 8K
/// neurons and 18.9 with 32K (one block an SM).
const SUB_BITS: u32 = 14;
/// The smallest largest fanout that bins.
const MIN_FANOUT: u32 = 256;
/// Most tiles (`proc_bin` counts them in a block of 256 threads, a tile's index in a byte): 524M
/// neurons.
const MAX_TILES: u32 = 250;
/// Threads of a `proc_bin`, `proc_split` and `proc_sum` block (BIN_BLOCK, SUB_BLOCK in procbin.cu).
const BIN_BLOCK: u32 = 256;
const SUB_BLOCK: u32 = 512;
/// Entries a `proc_split` thread takes of a chunk (SPLIT_K in procbin.cu).
const SPLIT_K: u32 = 16;
/// Shared memory of a `proc_split` block: two chunks of SUB_BLOCK x SPLIT_K 32-bit entries.
const SPLIT_SHARED: u32 = 2 * SUB_BLOCK * SPLIT_K * 4;
const SUM_BLOCK: u32 = 1024;

/// The bins of one GPU.
pub(in crate::backend::cuda) struct ProcBins {
    bins: CudaSlice<u32>,
    /// The entries of each bin, then of each sub-bin (zeroed every burst).
    counts: CudaSlice<u64>,
    subs: Subs,
    /// Where a synapse that found no room in its bin or sub-bin is added (N sums, zero between
    /// bursts: `proc_sum` adds them in and clears them).
    spill: CudaSlice<i64>,
    /// Entries each bin, and each sub-bin, holds; past it a synapse is added into the spill.
    room: u64,
    subroom: u64,
    tiles: u32,
    /// The largest fanout (the draw index space per fired source and map).
    kmax: u32,
    /// Some map keeps its draws at random (an attractivity): `proc_bin` checks each draw.
    keep: bool,
    /// One GPU of several in this process: the sums it makes of the whole brain.
    spread: Option<Spread>,
}

/// One GPU of several in this process: it draws its own fired neurons' synapses onto every neuron
/// of the brain, and sums them into partials that each GPU folds for its own neurons (`proc_fold`).
struct Spread {
    /// Neurons of the brain.
    total: u32,
    /// 32-bit partial sums of every neuron of the brain (a multiple of 4: `proc_fold` reads 16
    /// bytes at a time).
    part: CudaSlice<i32>,
    /// Per sub-bin of the brain: 1 when the spill holds some of its sum.
    flags: CudaSlice<u32>,
    /// Once connected: every GPU's [`SumPeer`], in shard order, and how many.
    peers: Option<(CudaSlice<u8>, u32)>,
}

impl ProcBins {
    /// Whether binning pays for `n` neurons and these procedural maps: more than one tile, and
    /// fanouts of at least [`MIN_FANOUT`]. (The direct path runs on the resident kernel, with
    /// the early step that hides a small propagation; binned runs on graphs.)
    pub(in crate::backend::cuda) fn wanted(n: u32, maps: &[ProcMap]) -> bool {
        let fanout = maps.iter().map(|m| m.fanout).max().unwrap_or(0);
        fanout >= MIN_FANOUT && n > 1 << TILE_BITS && n.div_ceil(1 << TILE_BITS) <= MAX_TILES && maps.len() < 1 << (32 - TILE_BITS)
    }

    /// Bins for `n` neurons, in at most `bytes` of device memory; `spread`: Some(the
    /// brain's neurons) for one GPU of several in this process, which bins onto every neuron.
    pub(in crate::backend::cuda) fn new(
        s: &Arc<CudaStream>,
        n: u32,
        spread: Option<u32>,
        maps: &[ProcMap],
        bytes: u64,
    ) -> Result<ProcBins, BackendError> {
        let e = |w: &'static str| dev_err(w);
        let n = spread.unwrap_or(n);
        let tiles = n.div_ceil(1 << TILE_BITS);
        let nsub = 1u64 << (TILE_BITS - SUB_BITS);
        let kmax = maps.iter().map(|m| m.fanout).max().unwrap_or(0);
        // a sub-bin entry: the target within the sub-bin and the map index, in 16 bits where they fit
        let map_bits = 32 - (maps.len().max(1) as u32 - 1).leading_zeros();
        let narrow = SUB_BITS + map_bits <= 16;
        let per_entry = if narrow { 6 } else { 8 };
        // (the spill's N sums first)
        let bytes = bytes.saturating_sub(n as u64 * 8);
        // no more than every neuron firing could draw
        let most: u64 = maps.iter().map(|m| m.src_count as u64 * m.fanout as u64).sum();
        // 2^32 at most: four times what W(100M, 1000, 1%) draws in a burst
        let entries = (bytes / per_entry).min(most).min(1 << 32).max(tiles as u64 * nsub * 8);
        // (multiples of 8 entries: `proc_split` copies bins and `proc_sum` reads sub-bins 16 bytes
        // at a time)
        let room = entries / tiles as u64 / 8 * 8;
        let subroom = room / nsub / 8 * 8;
        let sub_len = (subroom * nsub * tiles as u64) as usize;
        let bins = s.alloc_zeros::<u32>((room * tiles as u64) as usize).map_err(e("alloc procedural bins"))?;
        let counts = s.alloc_zeros::<u64>((tiles as u64 * (1 + nsub)) as usize).map_err(e("alloc procedural bins"))?;
        let subs = if narrow {
            Subs::U16(s.alloc_zeros::<u16>(sub_len).map_err(e("alloc procedural sub-bins"))?)
        } else {
            Subs::U32(s.alloc_zeros::<u32>(sub_len).map_err(e("alloc procedural sub-bins"))?)
        };
        tracing::info!(
            "CUDA: procedural synapses binned in {tiles} tiles of {} neurons ({room} entries each), summed in sub-bins of {} ({subroom} entries each)",
            1u32 << TILE_BITS,
            1u32 << SUB_BITS
        );
        let spill = s.alloc_zeros::<i64>(n as usize).map_err(e("alloc the procedural spill"))?;
        let keep = maps.iter().any(|m| m.draws > 1);
        let spread = match spread {
            Some(total) => Some(Spread {
                total,
                part: s.alloc_zeros::<i32>(total.next_multiple_of(4) as usize).map_err(e("alloc the partial sums"))?,
                flags: s.alloc_zeros::<u32>((tiles as u64 * nsub) as usize).map_err(e("alloc the partial sums' flags"))?,
                peers: None,
            }),
            None => None,
        };
        Ok(ProcBins { bins, counts, subs, spill, room, subroom, tiles, kmax, keep, spread })
    }

    /// Device bytes of the bins.
    pub(in crate::backend::cuda) fn bytes(&self) -> u64 {
        let spread = self.spread.as_ref().map_or(0, |x| x.part.len() as u64 * 4 + x.flags.len() as u64 * 4);
        self.bins.len() as u64 * 4 + self.counts.len() as u64 * 8 + self.subs.bytes() + self.spill.len() as u64 * 8 + spread
    }

    /// One GPU of several in this process: where its partial sums lie, for the others.
    pub(in crate::backend::cuda) fn sum_peer(&self, s: &CudaStream) -> Option<SumPeer> {
        let x = self.spread.as_ref()?;
        Some(SumPeer { part: dptr(&x.part, s), spill: dptr(&self.spill, s), flags: dptr(&x.flags, s) })
    }

    /// One GPU of several in this process: every GPU's partial sums ([`Self::sum_peer`] of each,
    /// in shard order), which `proc_fold` adds.
    pub(in crate::backend::cuda) fn connect(&mut self, s: &Arc<CudaStream>, all: &[SumPeer]) -> Result<(), BackendError> {
        if let Some(x) = &mut self.spread {
            let table = s.clone_htod(as_bytes(all)).map_err(dev_err("uploading the partial sums' table"))?;
            x.peers = Some((table, all.len() as u32));
        }
        Ok(())
    }

    /// Whether this GPU's sums are folded from every GPU's partials (see [`Spread`]): the
    /// propagation runs in two halves, every GPU's partials made between them.
    pub(in crate::backend::cuda) fn spread(&self) -> bool {
        self.spread.is_some()
    }

    /// Launch (or record) the counts' clear, the binning of side `rd`'s fired sources, the split and
    /// the sums, which `proc_sum` writes to every neuron of `net.acc`: no clear before, and other
    /// additions after. Spread over several GPUs (see [`Spread`]), `rd` is this GPU's own list, and
    /// the sums are partials of every neuron of the brain, which [`Self::fold`] adds.
    pub(in crate::backend::cuda) fn launch(&self, s: &CudaStream, k: &Kernels, net: &Net, rd: &Side, sm: u32) -> Result<(), BackendError> {
        let n_subs = self.tiles << (TILE_BITS - SUB_BITS);
        // spread: the whole brain's neurons are this GPU's targets
        let net = &match &self.spread {
            Some(x) => Net { base: 0, n: x.total, ..*net },
            None => *net,
        };
        // SAFETY: zeroes the counts (u64, two words each) allocated in `new`, on our stream.
        unsafe { sys::cuMemsetD32Async(dptr(&self.counts, s), 0, self.counts.len() * 2, s.cu_stream()) }
            .result()
            .map_err(dev_err("clearing the bins' counts"))?;
        let (bin_counts, sub_counts) = (self.counts.slice(..self.tiles as usize), self.counts.slice(self.tiles as usize..));
        let bin = &k.proc_bin[self.keep as usize];
        // the binning and the split add what finds no room into the spill
        let spilling = Net { acc: dptr(&self.spill, s), ..*net };
        // SAFETY: reads side `rd`'s fired list and the maps of `net`; writes within each tile's
        // `room` entries of `bins` and its count, or adds into the spill (N neurons).
        unsafe {
            s.launch_builder(bin)
                .arg(&spilling)
                .arg(rd)
                .arg(&self.bins)
                .arg(&bin_counts)
                .arg(&self.room)
                .arg(&self.tiles)
                .arg(&TILE_BITS)
                .arg(&self.kmax)
                .launch(grid(bin, sm, BIN_BLOCK, 0)?)
        }
        .map_err(dev_err("launching proc_bin"))?;
        let w = matches!(self.subs, Subs::U32(_)) as usize;
        let cfg = grid(&k.proc_split[w], sm, SUB_BLOCK, SPLIT_SHARED)?;
        let mut l = s.launch_builder(&k.proc_split[w]);
        l.arg(&spilling).arg(&self.bins).arg(&bin_counts).arg(&self.room).arg(&self.tiles).arg(&TILE_BITS).arg(&SUB_BITS);
        self.subs.arg(&mut l);
        l.arg(&sub_counts).arg(&self.subroom);
        // SAFETY: reads at most `room` entries of each bin; writes within each sub-bin's `subroom`
        // entries and its count, or adds into the spill.
        unsafe { l.launch(cfg) }.map_err(dev_err("launching proc_split"))?;
        // 32-bit sums of a sub-bin's neurons
        let cfg = grid(&k.proc_sum[w], sm, SUM_BLOCK, 4u32 << SUB_BITS)?;
        let mut l = s.launch_builder(&k.proc_sum[w]);
        l.arg(net);
        self.subs.arg(&mut l);
        l.arg(&sub_counts).arg(&self.subroom).arg(&n_subs).arg(&SUB_BITS).arg(&bin_counts).arg(&self.room).arg(&TILE_BITS).arg(&self.spill);
        let (part, flags) = self.spread.as_ref().map_or((0, 0), |x| (dptr(&x.part, s), dptr(&x.flags, s)));
        l.arg(&part).arg(&flags);
        // SAFETY: reads at most `subroom` entries of each sub-bin, writes the neurons of `net.acc`
        // each block owns and clears the spill's (N each; sub-bins past N neurons are skipped);
        // spread, writes the partials (N) and the flags (a sub-bin each) instead, and adds into the
        // spill.
        unsafe { l.launch(cfg) }.map_err(dev_err("launching proc_sum"))?;
        Ok(())
    }

    /// Spread over several GPUs, once every GPU has made its partials: this GPU's neurons' sums,
    /// written to every neuron of `net.acc` (no clear before, other additions after).
    pub(in crate::backend::cuda) fn fold(&self, s: &CudaStream, k: &Kernels, net: &Net, sm: u32) -> Result<(), BackendError> {
        let Some(x) = &self.spread else { return Ok(()) };
        let Some((peers, n_peers)) = &x.peers else {
            return Err(BackendError::Device("one GPU of several folds partial sums before it was connected".into()));
        };
        let cfg = grid(&k.proc_fold, sm, SUM_BLOCK, 0)?;
        // SAFETY: reads every GPU's partials and flags of this GPU's neurons (peer access enabled,
        // each sized for the brain), takes their spill's; writes this GPU's N neurons of `net.acc`.
        unsafe { s.launch_builder(&k.proc_fold).arg(net).arg(peers).arg(n_peers).arg(&SUB_BITS).launch(cfg) }
            .map_err(dev_err("launching proc_fold"))?;
        Ok(())
    }
}

/// A grid of as many blocks of `threads` as the multiprocessors hold at once (the kernels stride
/// over their work), with `shared` bytes of dynamic shared memory each (allowed past the default
/// 48 KB).
fn grid(f: &CudaFunction, sm: u32, threads: u32, shared: u32) -> Result<LaunchConfig, BackendError> {
    if shared > 0 {
        f.set_attribute(sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, shared as i32)
            .map_err(dev_err("dynamic shared memory for a procedural kernel"))?;
    }
    let per_sm = f.occupancy_max_active_blocks_per_multiprocessor(threads, shared as usize, None).unwrap_or(1).max(1);
    Ok(LaunchConfig { grid_dim: (sm * per_sm, 1, 1), block_dim: (threads, 1, 1), shared_mem_bytes: shared })
}

/// Sub-bin entries: 16 bits where the target within a sub-bin and the map index fit.
enum Subs {
    U16(CudaSlice<u16>),
    U32(CudaSlice<u32>),
}

impl Subs {
    fn arg<'a>(&'a self, l: &mut cudarc::driver::LaunchArgs<'a>) {
        match self {
            Subs::U16(x) => l.arg(x),
            Subs::U32(x) => l.arg(x),
        };
    }

    fn bytes(&self) -> u64 {
        match self {
            Subs::U16(x) => x.len() as u64 * 2,
            Subs::U32(x) => x.len() as u64 * 4,
        }
    }
}
