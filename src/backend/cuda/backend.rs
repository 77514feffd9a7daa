//! [`CudaBackend`]: the brain on one GPU. See `mod.rs` for the design and `kernels/burst.cu` for
//! the kernels.

use std::sync::Arc;
use std::time::Duration;

use cudarc::driver::{result, sys, CudaContext, CudaGraph, CudaSlice, CudaStream, DevicePtr, DeviceRepr, LaunchConfig, PushKernelArg};

use super::memory::{ColumnLock, MemoryPlan, Pinned, RESERVE_BYTES};
use super::module::{Kernels, Variant};
use super::resident::{ResParams, Resident};
use crate::backend::{out_of_range, Backend, BackendError, BackendInfo, BurstOutput, Readback};
use crate::brain::Brain;
use crate::connectome::{Codes, Part};
use crate::model::{AreaParams, InjectionSlice, Injections, NeuronState, Values};

const BLOCK: u32 = 256;
/// Neurons per thread of `step` (STEP_ITEMS in burst.cu).
const STEP_ITEMS: u32 = 4;
/// PAIRS_PER_WARP in burst.cu.
pub(crate) const PAIRS_PER_CHUNK: usize = 256;
/// Size of the output header (`OutHeader` in burst.cu): burst, fired_total, rb_count, pairs.
const OUT_HEADER: usize = 64;
/// Slots of the `misc` counters: burst, rb_counter, ticket, counter side 0, counter side 1, bound.
const M_BURST: usize = 0;
const M_RB: usize = 1;
const M_TICKET: usize = 2;
const M_COUNTER: usize = 3;
const M_BOUND: usize = 5;
const M_GATHER: usize = 6;
const M_DEAD: usize = 7;
/// A fired slot `fix` emptied (the early step fired the neuron, its injection changed that).
const DEAD: u32 = u32::MAX;
/// Flag of a read-back correction: the entry is void.
const DEAD_RB: u32 = 0x8000_0000;
const M_CORR: usize = 8;

/// Default of `zc_max` (bytes): 0, always copy. Reading a 4 KB injection from mapped memory
/// (W(100k)) measured ~3 us slower per burst than the copy on an H100 VM.
const DEFAULT_ZC_MAX: usize = 0;
/// Whether one GPU runs its bursts in the resident kernel by default (NEUROBURST_CUDA_RESIDENT=0|1).
const DEFAULT_RESIDENT: bool = true;
/// A burst the resident kernel has not published after this long is an error (the kernel never
/// finishes, so the stream's status cannot say it is lost).
const RESIDENT_STALL: Duration = Duration::from_secs(10);
/// Once a burst's header is there, its other output words follow within microseconds: this long
/// without one is an error.
const OUTPUT_STALL: Duration = Duration::from_secs(2);
/// Default of `resident_direct` (bytes).
const DEFAULT_RESIDENT_DIRECT: usize = 16 << 10;
/// Default of `lend_min` (bytes).
const DEFAULT_LEND_MIN: usize = 16 << 10;
/// Ids `prepare_input` makes room for (and locks), at least: 256 KB, so the column has pages of
/// its own, and a sixteenth of the neurons.
const LEND_IDS_MIN: usize = 1 << 16;
/// Blocks of `propagate` that read a mapped injection (each reads the header over PCIe).
const ZC_BLOCKS: u32 = 8;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// Mirror of `struct Net` in burst.cu.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Net {
    v: u64,
    rcc: u64,
    acc: u64,
    inj: u64,
    inj_mask: u64,
    row_ptr: u64,
    targets: u64,
    codes: u64,
    table: u64,
    areas: u64,
    area_end: u64,
    rb_lo: u64,
    rb_hi: u64,
    burst: u64,
    rb_counter: u64,
    ticket: u64,
    chunk_first: u64,
    host_in: u64,
    host_map: u64,
    host_out: u64,
    v_out: u64,
    rcc_out: u64,
    spec: u64,
    where_: u64,
    dead: u64,
    corr: u64,
    acc_other: u64,
    out_cap: u64,
    /// Bytes of the device injection buffer (`fix` reads the likely entry before the header).
    in_cap: u64,
    n: u32,
    n_areas: u32,
    n_rb: u32,
    count_shift: u32,
    base: u32,
    multi: u32,
    /// 1: `step` leaves the accumulators as they are (the `pre` graph clears the one it fills).
    acc_keep: u32,
    /// 1: the early step (see [`Early`]).
    early: u32,
}
// SAFETY: plain old data with the layout of the kernel's `Net`.
unsafe impl DeviceRepr for Net {}

/// Mirror of `struct Side` in burst.cu.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Side {
    fired: u64,
    offs: u64,
    counter: u64,
}
// SAFETY: plain old data with the layout of the kernel's `Side`.
unsafe impl DeviceRepr for Side {}

/// Mirror of `struct Peer` in burst.cu.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct Peer {
    fired: u64,
    counter: u64,
}

/// What one GPU of several gets: its part of the connectome (the synapses onto its neurons, rows
/// for every source of the brain) and the brain's areas.
pub struct GpuShard {
    pub part: Part,
    pub params: Vec<AreaParams>,
    pub contributions: Vec<i32>,
    /// Neurons of the whole brain.
    pub neurons: u32,
}

/// The early step (one GPU, propagating ahead; NEUROBURST_CUDA_EARLY=0 turns it off). Whether a
/// neuron fires depends on the sensory injection only when it is injected: right after the
/// propagation, `prestep` steps every neuron with its synaptic input alone, from state buffer r
/// into the other one (bursts reading side r), before the host has the injection; the burst then
/// only injects and runs `fix`, which steps the injected neurons again from buffer r with their
/// whole input and mends the fired list and the read-back. The burst's latency no longer includes
/// the step over every neuron.
struct Early {
    /// The second state buffer (`v`, `rcc` are the first).
    v: CudaSlice<i64>,
    rcc: CudaSlice<u32>,
    /// One bit per neuron: fired in `prestep`.
    _spec: CudaSlice<u32>,
    /// Of each neuron `prestep` fired: fired slot | read-back slot << 32.
    _where: CudaSlice<u64>,
}

/// One GPU of several: the gathered fired list of the whole brain and where the GPUs' own lists lie.
struct Multi {
    fired: CudaSlice<u32>,
    offs: CudaSlice<u64>,
    /// `Peer` tables, one per side (the side every GPU's last burst wrote).
    peers: [CudaSlice<u8>; 2],
    n_peers: u32,
}

pub(crate) fn dev_err(what: &str) -> impl Fn(cudarc::driver::DriverError) -> BackendError + '_ {
    move |e| BackendError::Device(format!("CUDA: {what}: {e}"))
}

/// The CUDA backend.
pub struct CudaBackend {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    kernels: Kernels,
    // device state
    v: CudaSlice<i64>,
    rcc: CudaSlice<u32>,
    acc: CudaSlice<i64>,
    /// One GPU: the accumulator of the bursts reading side 1 (`acc` serves side 0).
    acc2: CudaSlice<i64>,
    inj: CudaSlice<u64>,
    inj_mask: CudaSlice<u32>,
    fired: [CudaSlice<u32>; 2],
    offs: [CudaSlice<u64>; 2],
    misc: CudaSlice<u64>,
    _chunk_first: CudaSlice<u32>,
    // device connectome and parameters
    _row_ptr: CudaSlice<u8>,
    _targets: CudaSlice<u32>,
    _codes: CudaSlice<u8>,
    _table: CudaSlice<i32>,
    _areas: CudaSlice<u8>,
    _area_end: CudaSlice<u32>,
    _rb: CudaSlice<u32>,
    /// Some: one GPU of several.
    multi: Option<Multi>,
    /// Some: the early step.
    early: Option<Early>,
    /// Whether this is one GPU of several (set at build, before `connect`).
    sharded: bool,
    // host side
    host_in: Pinned,
    /// Device copy of the injection (the GPU reading mapped host memory block by block is slow).
    dev_in: CudaSlice<u8>,
    host_out: Pinned,
    out_cap: usize,
    net: Net,
    graphs: Vec<CudaGraph>,
    /// One GPU: `propagate` of the fired list on side r, in its own graph (see `ahead`).
    pre: Vec<CudaGraph>,
    /// Propagate the last burst's spikes as soon as it is done (one GPU; NEUROBURST_CUDA_AHEAD=0
    /// turns it off): the burst graph then only injects and steps, and its latency no longer
    /// includes the synaptic propagation.
    ahead: bool,
    /// The `pre` graph of the side the next burst reads has been launched.
    pre_pending: bool,
    /// Blocks of `inject` when the injection was copied up.
    inj_grid: u32,
    /// Graphs that copy the injection themselves, by (side, copy bytes, fused).
    copy_graphs: std::collections::HashMap<(usize, usize, bool), CudaGraph>,
    /// Copy the injection inside the graph (NEUROBURST_CUDA_GRAPH_COPY=1), instead of a copy call
    /// per burst (default: the in-graph copy of the next power of two measured 10-25 us slower at
    /// 1M and 5M on an H100 VM, though the host's launch phase was ~10 us shorter).
    graph_copy: bool,
    prop_grid: u32,
    /// Side (fired list) the next burst reads.
    cur: usize,
    burst: u64,
    /// This GPU's neurons: `base..base + neurons`.
    neurons: u32,
    base: u32,
    count_shift: u32,
    out_ids: Vec<u32>,
    out_v: Vec<i64>,
    scratch_v: Vec<i64>,
    keys: Vec<u64>,
    info: BackendInfo,
    plan: MemoryPlan,
    wide_acc: bool,
    sync_stream: bool,
    /// Injections of at most this many bytes are read by the GPU straight from mapped pinned memory
    /// (no copy call); larger ones are copied (NEUROBURST_CUDA_ZC_MAX).
    zc_max: usize,
    trace: Option<Trace>,
    /// The read-back entries of a burst, copied out of the mapped buffer.
    rb_raw: Vec<u64>,
    /// An id column of at least this many bytes that `prepare_input` page-locked is copied to the
    /// GPU where it lies (see `set_lend_min`).
    lend_min: Option<usize>,
    /// Some: the resident kernel can run here (one GPU, the early step; see `resident.rs`).
    resident: Option<Resident>,
    /// The bursts run in the resident kernel (`set_resident`, NEUROBURST_CUDA_RESIDENT).
    resident_on: bool,
    /// The resident kernel reads an injection of at most this many bytes where it lies in the
    /// pinned buffer, with no copy into device memory (NEUROBURST_CUDA_RESIDENT_DIRECT).
    resident_direct: usize,
}

/// Where the time of a burst goes (NEUROBURST_CUDA_TRACE=1): host phases and GPU time by events
/// (NEUROBURST_CUDA_TRACE=host: the host's phases only).
#[derive(Debug, Default)]
struct Trace {
    bursts: u64,
    write_s: f64,
    launch_s: f64,
    wait_s: f64,
    post_s: f64,
    /// The part of `post_s` that reads the output (before sorting it).
    read_s: f64,
    gpu_ms: f64,
    spins: u64,
    ev: Option<(cudarc::driver::CudaEvent, cudarc::driver::CudaEvent)>,
    /// NEUROBURST_CUDA_TRACE_FILE: every burst's phases (write, launch, wait, post; us), written
    /// there as lines of four numbers when the backend is dropped.
    each: Option<(std::path::PathBuf, Vec<[f32; 4]>)>,
}

// SAFETY: the raw pointers (pinned buffers, graphs) belong to this backend alone; every call binds
// the context to the calling thread first, and `&mut self` serialises the calls.
unsafe impl Send for CudaBackend {}

fn as_bytes<T: Copy>(v: &[T]) -> &[u8] {
    // SAFETY: any initialised plain-old-data slice can be viewed as bytes.
    unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, std::mem::size_of_val(v)) }
}

pub(super) fn dptr<T>(s: &CudaSlice<T>, stream: &CudaStream) -> u64 {
    let (p, _sync) = s.device_ptr(stream);
    p
}

/// The entry format of an input and the value the header carries: 2 = one value for all (the ids
/// alone, 4 bytes each), 0 = (id, i32 value), 1 = (id, i64 value).
fn entry_format(values: Values<'_>) -> (u64, i64) {
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

/// A burst's injection, written into the pinned buffer and not yet launched (see
/// [`CudaBackend::stage`]).
pub(crate) struct Staged {
    t_start: std::time::Instant,
    in_bytes: usize,
    mapped: bool,
    /// The graph without `inject` (see `fix` in burst.cu).
    fused: bool,
    /// Every id lies within this GPU's neurons.
    pub in_range: bool,
    /// Some((address, device address)): the ids lie in a column `prepare_input` page-locked; they
    /// are copied from there (the pinned buffer holds only the header).
    lent: Option<(usize, u64)>,
}

/// Sorted, merged, clipped readback ranges; None = every neuron.
fn readback_ranges(rb: &Readback, neurons: u32) -> Option<Vec<(u32, u32)>> {
    match rb {
        Readback::All => None,
        Readback::Ranges(r) => {
            let mut v: Vec<(u32, u32)> = r.iter().map(|r| (r.start.min(neurons), r.end.min(neurons))).filter(|(a, b)| a < b).collect();
            v.sort_unstable();
            let mut out: Vec<(u32, u32)> = Vec::new();
            for (a, b) in v {
                match out.last_mut() {
                    Some(last) if a <= last.1 => last.1 = last.1.max(b),
                    _ => out.push((a, b)),
                }
            }
            Some(out)
        }
    }
}

impl CudaBackend {
    /// Put `brain` on GPU `device`. Refuses (nothing allocated) when the GPU lacks the memory.
    pub fn new(brain: Brain, readback: Readback, device: usize) -> Result<CudaBackend, BackendError> {
        match super::probe::probe(device) {
            crate::backend::GpuProbe::Available(_) => {}
            crate::backend::GpuProbe::Unavailable(why) => return Err(BackendError::Device(why)),
        }
        let n = brain.layout.neurons;
        let mut conn = brain.connectome;
        conn.repartition(std::slice::from_ref(&(0..n)));
        let part = conn.parts.pop().unwrap_or_else(|| Part { targets_range: 0..n, row_ptr: vec![0; n as usize + 1], ..Default::default() });
        let shard = GpuShard { part, params: brain.layout.params, contributions: conn.contributions, neurons: n };
        Self::build(shard, readback, device, false)
    }

    /// One GPU of several (see `multi.rs`): bursts only after [`CudaBackend::connect`].
    pub(crate) fn new_shard(shard: GpuShard, readback: Readback, device: usize) -> Result<CudaBackend, BackendError> {
        Self::build(shard, readback, device, true)
    }

    fn build(shard: GpuShard, readback: Readback, device: usize, sharded: bool) -> Result<CudaBackend, BackendError> {
        let ctx = CudaContext::new(device).map_err(dev_err("creating the context"))?;
        // SAFETY: one stream does all the work; no cross-stream event tracking is needed.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.new_stream().map_err(dev_err("creating a stream"))?;
        let name = ctx.name().map_err(dev_err("device name"))?;
        let total_mem = ctx.total_mem().map_err(dev_err("device memory"))? as u64;
        let part = &shard.part;
        let base = part.targets_range.start;
        let n = part.targets_range.len() as u32;
        let n_total = shard.neurons;
        let plan = MemoryPlan::of_part(part, n_total, shard.contributions.len(), shard.params.len(), sharded);
        let (free, _) = ctx.mem_get_info().map_err(dev_err("free memory"))?;
        // NEUROBURST_CUDA_MEM_LIMIT (bytes) caps what this backend may take, e.g. to share a GPU.
        let free = match std::env::var("NEUROBURST_CUDA_MEM_LIMIT").ok().and_then(|v| v.parse::<usize>().ok()) {
            Some(limit) => free.min(limit),
            None => free,
        };
        if plan.total_bytes + RESERVE_BYTES > free as u64 {
            return Err(BackendError::Device(format!(
                "the brain needs {} bytes ({:.2} GiB: connectome {} + state {}) plus {} in reserve on the GPU, but {name} has only {} bytes ({:.2} GiB) free",
                plan.total_bytes,
                plan.total_bytes as f64 / (1u64 << 30) as f64,
                plan.connectome_bytes,
                plan.state_bytes,
                RESERVE_BYTES,
                free,
                free as f64 / (1u64 << 30) as f64
            )));
        }
        let synapses = part.synapses();
        let count_bits = 64 - (n_total as u64).leading_zeros();
        let count_shift = 64 - count_bits;
        if count_shift < 63 && synapses >= 1u64 << count_shift {
            return Err(BackendError::Device(format!("{synapses} synapses over {n} neurons overflow the packed fired counter")));
        }
        let row64 = plan.row_ptr_bytes == 8;
        let code32 = matches!(part.codes, Codes::U32(_));
        let s = &stream;
        let e = |w: &'static str| dev_err(w);
        // connectome
        let row_ptr: CudaSlice<u8> = if row64 {
            s.clone_htod(as_bytes(&part.row_ptr)).map_err(e("uploading row pointers"))?
        } else {
            let r32: Vec<u32> = part.row_ptr.iter().map(|&x| x as u32).collect();
            s.clone_htod(as_bytes(&r32)).map_err(e("uploading row pointers"))?
        };
        let targets: CudaSlice<u32> = if part.targets.is_empty() {
            s.alloc_zeros(1).map_err(e("alloc"))?
        } else {
            s.clone_htod(&part.targets[..]).map_err(e("uploading synapse targets"))?
        };
        let codes: CudaSlice<u8> = match &part.codes {
            Codes::U32(c) if !c.is_empty() => s.clone_htod(as_bytes(&c[..])).map_err(e("uploading codes"))?,
            Codes::U16(c) if !c.is_empty() => s.clone_htod(as_bytes(&c[..])).map_err(e("uploading codes"))?,
            _ => s.alloc_zeros(4).map_err(e("alloc"))?,
        };
        let table_host: Vec<i32> = if shard.contributions.is_empty() { vec![0] } else { shard.contributions.clone() };
        let table: CudaSlice<i32> = s.clone_htod(&table_host).map_err(e("uploading contributions"))?;
        let areas: CudaSlice<u8> = s.clone_htod(as_bytes::<AreaParams>(&shard.params)).map_err(e("uploading areas"))?;
        let ends: Vec<u32> = shard.params.iter().map(|p| p.first + p.count).collect();
        let area_end: CudaSlice<u32> = s.clone_htod(&ends).map_err(e("uploading areas"))?;
        // this GPU reads back its own neurons of the readback ranges
        let ranges = readback_ranges(&readback, n_total)
            .map(|r| r.into_iter().map(|(a, b)| (a.max(base), b.min(base + n))).filter(|(a, b)| a < b).collect::<Vec<_>>());
        drop(readback);
        let ahead = std::env::var("NEUROBURST_CUDA_AHEAD").map_or(true, |v| v != "0");
        let early_on = !sharded && ahead && n > 0 && std::env::var("NEUROBURST_CUDA_EARLY").map_or(true, |v| v != "0");
        let (rb_host, n_rb, out_cap) = match &ranges {
            None => (vec![0u32, 0], u32::MAX, n as usize),
            Some(r) => {
                let mut v: Vec<u32> = r.iter().map(|x| x.0).collect();
                v.extend(r.iter().map(|x| x.1));
                let cap: u64 = r.iter().map(|x| (x.1 - x.0) as u64).sum();
                if v.is_empty() {
                    v = vec![0, 0];
                }
                (v, r.len() as u32, cap as usize)
            }
        };
        let rb: CudaSlice<u32> = s.clone_htod(&rb_host).map_err(e("uploading readback ranges"))?;
        // state
        let nn = n as usize;
        let v: CudaSlice<i64> = s.alloc_zeros(nn).map_err(e("alloc potentials"))?;
        let rcc: CudaSlice<u32> = s.alloc_zeros(nn).map_err(e("alloc refractory"))?;
        let acc: CudaSlice<i64> = s.alloc_zeros(nn).map_err(e("alloc accumulators"))?;
        // the second accumulator of the propagation run ahead
        let acc2: CudaSlice<i64> = s.alloc_zeros(nn.max(1)).map_err(e("alloc accumulators"))?;
        let inj: CudaSlice<u64> = s.alloc_zeros(nn).map_err(e("alloc injection"))?;
        let inj_mask: CudaSlice<u32> = s.alloc_zeros(nn.div_ceil(32) + 1).map_err(e("alloc injection mask"))?;
        let fired = [s.alloc_zeros(nn.max(1)).map_err(e("alloc fired"))?, s.alloc_zeros(nn.max(1)).map_err(e("alloc fired"))?];
        // one GPU of several keeps the row offsets of the gathered list only
        let no = if sharded { 1 } else { nn.max(1) };
        let offs = [s.alloc_zeros(no).map_err(e("alloc offsets"))?, s.alloc_zeros(no).map_err(e("alloc offsets"))?];
        let misc: CudaSlice<u64> = s.alloc_zeros(64).map_err(e("alloc counters"))?;
        let chunk_first: CudaSlice<u32> = s.alloc_zeros(synapses as usize / PAIRS_PER_CHUNK + 2).map_err(e("alloc chunk index"))?;
        let host_in = Pinned::new(&ctx, 16 + 16 * 4096, false).map_err(e("pinned injection buffer"))?;
        let dev_in: CudaSlice<u8> = s.alloc_zeros(host_in.len()).map_err(e("alloc injection buffer"))?;
        // the early step: read-back areas of both burst parities, then the corrections
        let out_bytes = OUT_HEADER + out_cap * 16 * if early_on { 3 } else { 1 };
        let early = if early_on {
            Some(Early {
                v: s.alloc_zeros(nn).map_err(e("alloc potentials"))?,
                rcc: s.alloc_zeros(nn).map_err(e("alloc refractory"))?,
                _spec: s.alloc_zeros(nn.div_ceil(32) + 1).map_err(e("alloc the early fired bits"))?,
                _where: s.alloc_zeros(nn).map_err(e("alloc the early fired slots"))?,
            })
        } else {
            None
        };
        let host_out = Pinned::new(&ctx, out_bytes, false).map_err(e("pinned output buffer"))?;

        let misc_p = dptr(&misc, s);
        let net = Net {
            v: dptr(&v, s),
            rcc: dptr(&rcc, s),
            acc: dptr(&acc, s),
            inj: dptr(&inj, s),
            inj_mask: dptr(&inj_mask, s),
            row_ptr: dptr(&row_ptr, s),
            targets: dptr(&targets, s),
            codes: dptr(&codes, s),
            table: dptr(&table, s),
            areas: dptr(&areas, s),
            area_end: dptr(&area_end, s),
            rb_lo: dptr(&rb, s),
            rb_hi: dptr(&rb, s) + 4 * (rb_host.len() as u64 / 2),
            burst: misc_p + 8 * M_BURST as u64,
            rb_counter: misc_p + 8 * M_RB as u64,
            ticket: misc_p + 8 * M_TICKET as u64,
            chunk_first: dptr(&chunk_first, s),
            host_in: dptr(&dev_in, s),
            host_map: host_in.dev(),
            host_out: host_out.dev(),
            v_out: dptr(&v, s),
            rcc_out: dptr(&rcc, s),
            spec: early.as_ref().map_or(0, |x| dptr(&x._spec, s)),
            where_: early.as_ref().map_or(0, |x| dptr(&x._where, s)),
            dead: misc_p + 8 * M_DEAD as u64,
            corr: misc_p + 8 * M_CORR as u64,
            acc_other: 0,
            out_cap: out_cap as u64,
            in_cap: host_in.len() as u64,
            n,
            n_areas: shard.params.len() as u32,
            n_rb,
            count_shift,
            base,
            multi: sharded as u32,
            acc_keep: 0,
            early: early.is_some() as u32,
        };

        // accumulator width: the largest possible synaptic input of one burst must fit in i32
        let probe_kernels = Kernels::load(&ctx, Variant { wide_acc: true, row64, code32 }).map_err(BackendError::Device)?;
        let mut bound = 0u64;
        if synapses > 0 {
            let sm = ctx.attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT).map_err(e("attribute"))? as u32;
            let cfg = LaunchConfig { grid_dim: (sm * 8, 1, 1), block_dim: (BLOCK, 1, 1), shared_mem_bytes: 0 };
            let scratch = net.inj;
            // SAFETY: `in_bound` reads `synapses` targets/codes (allocated above with that length) and
            // adds into `scratch` (the injection array, N u64, zeroed), indexed by valid targets.
            unsafe { s.launch_builder(&probe_kernels.in_bound).arg(&net).arg(&scratch).arg(&synapses).launch(cfg) }
                .map_err(e("launching in_bound"))?;
            let bound_p = misc_p + 8 * M_BOUND as u64;
            let cfg = LaunchConfig { grid_dim: (sm * 4, 1, 1), block_dim: (BLOCK, 1, 1), shared_mem_bytes: 0 };
            // SAFETY: `max_reduce` reads N u64 of `scratch` and writes one u64 in `misc`.
            unsafe { s.launch_builder(&probe_kernels.max_reduce).arg(&scratch).arg(&n).arg(&bound_p).launch(cfg) }
                .map_err(e("launching max_reduce"))?;
            let m = s.clone_dtoh(&misc).map_err(e("reading the input bound"))?;
            bound = m[M_BOUND];
        }
        let wide_acc = bound > i32::MAX as u64;
        let kernels = if wide_acc {
            probe_kernels
        } else {
            Kernels::load(&ctx, Variant { wide_acc, row64, code32 }).map_err(BackendError::Device)?
        };
        let mut inj = inj;
        let mut misc = misc;
        s.memset_zeros(&mut inj).map_err(e("clearing"))?;
        s.memset_zeros(&mut misc).map_err(e("clearing"))?;
        s.synchronize().map_err(e("building the brain on the GPU"))?;

        let sm = ctx.attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT).map_err(e("attribute"))? as u32;
        let info = BackendInfo {
            backend: "cuda".into(),
            device: format!("{name}, {} MiB, device {device}", total_mem >> 20),
            memory_bytes: plan.total_bytes,
            bytes_per_synapse: plan.bytes_per_synapse(),
        };
        let mut b = CudaBackend {
            ctx,
            stream,
            kernels,
            v,
            rcc,
            acc,
            acc2,
            inj,
            inj_mask,
            fired,
            offs,
            misc,
            _chunk_first: chunk_first,
            _row_ptr: row_ptr,
            _targets: targets,
            _codes: codes,
            _table: table,
            _areas: areas,
            _area_end: area_end,
            _rb: rb,
            multi: None,
            early,
            sharded,
            host_in,
            dev_in,
            host_out,
            out_cap,
            net,
            graphs: Vec::new(),
            pre: Vec::new(),
            ahead,
            pre_pending: false,
            inj_grid: n.div_ceil(BLOCK * 16).clamp(1, sm * 2),
            copy_graphs: std::collections::HashMap::new(),
            graph_copy: std::env::var("NEUROBURST_CUDA_GRAPH_COPY").is_ok_and(|v| v == "1"),
            prop_grid: sm * 8,
            cur: 0,
            burst: 0,
            neurons: n,
            base,
            count_shift,
            out_ids: Vec::new(),
            out_v: Vec::new(),
            scratch_v: Vec::new(),
            keys: Vec::new(),
            info,
            plan,
            wide_acc,
            sync_stream: std::env::var("NEUROBURST_CUDA_SYNC").is_ok_and(|v| v == "stream"),
            zc_max: env_usize("NEUROBURST_CUDA_ZC_MAX", DEFAULT_ZC_MAX),
            rb_raw: Vec::new(),
            lend_min: match std::env::var("NEUROBURST_CUDA_LEND_MIN").as_deref() {
                Ok("off") => None,
                Ok(v) => Some(v.parse().unwrap_or(DEFAULT_LEND_MIN)),
                Err(_) => Some(DEFAULT_LEND_MIN),
            },
            trace: None,
            resident: None,
            resident_on: false,
            resident_direct: env_usize("NEUROBURST_CUDA_RESIDENT_DIRECT", DEFAULT_RESIDENT_DIRECT),
        };
        if b.early.is_some() {
            match Resident::new(&b.ctx, b.kernels.resident.clone(), sm, n) {
                Ok(r) => b.resident = Some(r),
                Err(why) => tracing::info!("CUDA: the bursts run as graphs: {why}"),
            }
            b.resident_on = b.resident.is_some() && std::env::var("NEUROBURST_CUDA_RESIDENT").map_or(DEFAULT_RESIDENT, |v| v != "0");
        }
        let trace = std::env::var("NEUROBURST_CUDA_TRACE").unwrap_or_default();
        if trace == "1" || trace == "host" {
            // "host": the host's phases only (the events add time to every burst)
            let ev = if trace == "1" {
                Some((
                    b.ctx.new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT)).map_err(dev_err("event"))?,
                    b.ctx.new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT)).map_err(dev_err("event"))?,
                ))
            } else {
                None
            };
            let each = std::env::var_os("NEUROBURST_CUDA_TRACE_FILE").map(|f| (f.into(), Vec::new()));
            b.trace = Some(Trace { ev, each, ..Default::default() });
        }
        if !sharded {
            b.capture_graphs()?;
        }
        tracing::debug!(wide_acc = b.wide_acc, input_bound = bound, "CUDA backend ready");
        Ok(b)
    }

    /// What the brain occupies on the device.
    /// Copy the ids of a burst from the column `prepare_input` locked when they take at least
    /// this many bytes (None: lock nothing). Default 16 KB (NEUROBURST_CUDA_LEND_MIN: bytes, or
    /// `off`): below it, the graph's extra `load_header` costs more than the copy into the
    /// backend's buffer (W(100k): 4 KB, p50 +2 us; W(1M): 40 KB, even; W(5M): 200 KB, -10 us).
    /// Takes effect at the next `prepare_input`.
    pub fn set_lend_min(&mut self, bytes: Option<usize>) {
        self.lend_min = bytes;
    }

    /// Run the bursts in the resident kernel (true), or as graphs (see `resident.rs`); false when
    /// it cannot run on this GPU or brain (several GPUs, no early step, no cooperative launch).
    pub fn set_resident(&mut self, on: bool) -> Result<bool, BackendError> {
        if !on {
            self.park()?;
        }
        self.resident_on = on && self.resident.is_some();
        Ok(self.resident_on)
    }

    /// The resident kernel reads injections of at most `bytes` where they lie in the pinned
    /// buffer (default 16 KB; 0: every injection is copied into device memory first).
    pub fn set_resident_direct(&mut self, bytes: usize) {
        self.resident_direct = bytes;
    }

    /// Whether the bursts run in the resident kernel.
    pub fn resident(&self) -> bool {
        self.resident_on
    }

    /// Stop the resident kernel, if it runs (before anything reads or replaces device state).
    fn park(&mut self) -> Result<(), BackendError> {
        match &mut self.resident {
            Some(r) => {
                self.ctx.bind_to_thread().map_err(dev_err("binding the context"))?;
                r.park()
            }
            None => Ok(()),
        }
    }

    pub fn plan(&self) -> &MemoryPlan {
        &self.plan
    }

    /// Mean time per burst of each phase, when NEUROBURST_CUDA_TRACE=1 (and resets the sums).
    pub fn trace_summary(&mut self) -> Option<String> {
        let tr = self.trace.as_mut()?;
        let n = tr.bursts.max(1) as f64;
        let s = format!(
            "per burst: write {:.1} us, launch {:.1} us, wait {:.1} us, post {:.1} us (read {:.1}), GPU (events) {:.1} us, spins {:.0}",
            tr.write_s / n * 1e6,
            tr.launch_s / n * 1e6,
            tr.wait_s / n * 1e6,
            tr.post_s / n * 1e6,
            tr.read_s / n * 1e6,
            tr.gpu_ms / n * 1e3,
            tr.spins as f64 / n
        );
        tr.bursts = 0;
        tr.write_s = 0.0;
        tr.launch_s = 0.0;
        tr.wait_s = 0.0;
        tr.post_s = 0.0;
        tr.read_s = 0.0;
        tr.gpu_ms = 0.0;
        tr.spins = 0;
        Some(s)
    }

    /// Whether the synaptic accumulators are 64-bit (the brain's input bound exceeds i32).
    pub fn wide_accumulators(&self) -> bool {
        self.wide_acc
    }

    /// Where this GPU's own fired lists lie, for the other GPUs: `Peer` of side 0 and of side 1.
    pub(crate) fn own_lists(&self) -> [(u64, u64); 2] {
        let misc = dptr(&self.misc, &self.stream);
        [0, 1].map(|i| (dptr(&self.fired[i], &self.stream), misc + 8 * (M_COUNTER + i) as u64))
    }

    /// Let this GPU read `other`'s memory (NVLink or PCIe peer access); a clear error when it cannot.
    pub(crate) fn enable_peer_access(&self, other: &CudaBackend) -> Result<(), BackendError> {
        let (a, b) = (self.ctx.ordinal(), other.ctx.ordinal());
        if a == b {
            return Ok(());
        }
        let mut can = 0;
        // SAFETY: writes one int; both ordinals name existing devices (their contexts exist).
        unsafe { sys::cuDeviceCanAccessPeer(&mut can, self.ctx.cu_device(), other.ctx.cu_device()) }
            .result()
            .map_err(dev_err("querying peer access"))?;
        if can == 0 {
            return Err(BackendError::Device(format!(
                "GPU {a} cannot access the memory of GPU {b} (no peer access between them): the spike exchange needs it; use GPUs with NVLink or P2P, or fewer GPUs"
            )));
        }
        self.ctx.bind_to_thread().map_err(dev_err("binding the context"))?;
        // SAFETY: enables access from our (current) context to the other's; already enabled is fine.
        match unsafe { sys::cuCtxEnablePeerAccess(other.ctx.cu_ctx(), 0) } {
            sys::CUresult::CUDA_SUCCESS | sys::CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED => {}
            other_err => return Err(BackendError::Device(format!("CUDA: enabling peer access from GPU {a} to GPU {b}: {other_err:?}"))),
        }
        // The buffers come from the other GPU's stream-ordered memory pool, which peer access does
        // not cover: grant this GPU access to that pool too.
        let mut pool: sys::CUmemoryPool = std::ptr::null_mut();
        // SAFETY: writes one handle; the device exists.
        unsafe { sys::cuDeviceGetDefaultMemPool(&mut pool, other.ctx.cu_device()) }.result().map_err(dev_err("getting a memory pool"))?;
        let desc = sys::CUmemAccessDesc {
            location: sys::CUmemLocation { type_: sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE, id: a as i32 },
            flags: sys::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
        };
        // SAFETY: one valid descriptor for a valid pool.
        unsafe { sys::cuMemPoolSetAccess(pool, &desc, 1) }
            .result()
            .map_err(|e| BackendError::Device(format!("CUDA: granting GPU {a} access to the memory pool of GPU {b}: {e}")))
    }

    /// One GPU of several: where every GPU's own lists lie (`own_lists` of each, this one's
    /// included, in shard order). Captures the burst graphs, which start by gathering them.
    pub(crate) fn connect(&mut self, lists: &[[(u64, u64); 2]]) -> Result<(), BackendError> {
        assert!(self.sharded, "connect is for one GPU of several");
        if lists.len() > 64 {
            return Err(BackendError::Device(format!("{} GPUs: at most 64 can share one brain", lists.len())));
        }
        self.ctx.bind_to_thread().map_err(dev_err("binding the context"))?;
        let s = self.stream.clone();
        let e = |w: &'static str| dev_err(w);
        let total = self.n_total() as usize;
        let peers = [0, 1].map(|side| {
            let v: Vec<Peer> = lists.iter().map(|l| Peer { fired: l[side].0, counter: l[side].1 }).collect();
            s.clone_htod(as_bytes(&v))
        });
        let [p0, p1] = peers;
        self.multi = Some(Multi {
            fired: s.alloc_zeros(total.max(1)).map_err(e("alloc gathered fired list"))?,
            offs: s.alloc_zeros(total.max(1)).map_err(e("alloc gathered offsets"))?,
            peers: [p0.map_err(e("uploading the peer table"))?, p1.map_err(e("uploading the peer table"))?],
            n_peers: lists.len() as u32,
        });
        s.synchronize().map_err(e("connecting the GPUs"))?;
        self.capture_graphs()
    }

    /// One GPU of a brain spread over processes: the whole brain's fired list of each burst comes
    /// from the host ([`CudaBackend::upload_spikes`]) into a buffer that `gather` reads as its one
    /// peer. Returns that buffer and its counter, which the caller keeps alive.
    pub(crate) fn connect_host(&mut self) -> Result<(CudaSlice<u32>, CudaSlice<u64>), BackendError> {
        self.ctx.bind_to_thread().map_err(dev_err("binding the context"))?;
        let s = self.stream.clone();
        let buf: CudaSlice<u32> = s.alloc_zeros((self.n_total() as usize).max(1)).map_err(dev_err("alloc the spike buffer"))?;
        let ctr: CudaSlice<u64> = s.alloc_zeros(1).map_err(dev_err("alloc the spike counter"))?;
        let peer = (dptr(&buf, &s), dptr(&ctr, &s));
        self.connect(&[[peer, peer]])?;
        Ok((buf, ctr))
    }

    /// The whole brain's fired list of the last burst (any order, ids checked) into the buffer of
    /// [`CudaBackend::connect_host`], queued on the stream before the next burst's gather.
    pub(crate) fn upload_spikes(&mut self, spikes: &[u32], buf: &mut CudaSlice<u32>, ctr: &mut CudaSlice<u64>) -> Result<(), BackendError> {
        let total = self.n_total();
        if let Some(&bad) = spikes.iter().find(|&&n| n >= total) {
            return Err(BackendError::InjectionOutOfRange { neuron: bad, neurons: total });
        }
        self.ctx.bind_to_thread().map_err(dev_err("binding the context"))?;
        let s = self.stream.clone();
        if !spikes.is_empty() {
            let mut view = buf.slice_mut(0..spikes.len());
            s.memcpy_htod(spikes, &mut view).map_err(dev_err("uploading the spikes"))?;
        }
        s.memcpy_htod(&[(spikes.len() as u64) << self.count_shift], ctr).map_err(dev_err("uploading the spike count"))?;
        // the propagation must gather these: it is launched with the next burst
        self.pre_pending = false;
        Ok(())
    }

    /// Bursts run so far.
    pub(crate) fn bursts(&self) -> u64 {
        self.burst
    }

    /// Neurons of the whole brain.
    fn n_total(&self) -> u32 {
        ((self.row_ptr_len()) - 1) as u32
    }

    fn row_ptr_len(&self) -> usize {
        self._row_ptr.len() / if self.plan.row_ptr_bytes == 8 { 8 } else { 4 }
    }

    fn gathered_side(&self) -> Option<Side> {
        self.multi.as_ref().map(|m| Side {
            fired: dptr(&m.fired, &self.stream),
            offs: dptr(&m.offs, &self.stream),
            counter: dptr(&self.misc, &self.stream) + 8 * M_GATHER as u64,
        })
    }

    fn side(&self, i: usize) -> Side {
        Side {
            fired: dptr(&self.fired[i], &self.stream),
            offs: dptr(&self.offs[i], &self.stream),
            counter: dptr(&self.misc, &self.stream) + 8 * (M_COUNTER + i) as u64,
        }
    }

    /// Capture the four burst graphs: reading side 0 and writing side 1, and the reverse; each with
    /// the injection copied to the device (by a copy call before the launch) or read from the mapped
    /// pinned buffer; and, when propagating ahead, the two `pre` graphs. Forgets the graphs that
    /// copy the injection themselves (see `copy_graph`).
    fn capture_graphs(&mut self) -> Result<(), BackendError> {
        self.ctx.bind_to_thread().map_err(dev_err("binding the context"))?;
        self.graphs.clear();
        self.copy_graphs.clear();
        self.pre.clear();
        let zc = env_usize("NEUROBURST_CUDA_ZC_BLOCKS", ZC_BLOCKS as usize) as u32;
        // index `graph_index`; the fused ones only with the early step
        let fused: &[bool] = if self.early.is_some() { &[false, true] } else { &[false] };
        for &f in fused {
            for r in 0..2 {
                for (mapped, lent) in [(0, false), (zc, false), (0, true)] {
                    let g = self.capture(r, mapped, 0, f, lent)?;
                    self.graphs.push(g);
                }
            }
        }
        if self.ahead {
            for r in 0..2 {
                let g = self.capture_pre(r)?;
                self.pre.push(g);
            }
        }
        Ok(())
    }

    /// The kernels' view for bursts reading side `r`: propagating ahead, side r has its own
    /// accumulator, cleared before the propagation into it and left alone by `step`.
    fn net_for(&self, r: usize) -> Net {
        let mut net = self.net;
        if self.ahead {
            net.acc = if r == 0 { dptr(&self.acc, &self.stream) } else { dptr(&self.acc2, &self.stream) };
            net.acc_keep = 1;
        }
        if let Some(x) = &self.early {
            // bursts reading side r step from state buffer r into the other
            let (a, b) =
                ((dptr(&self.v, &self.stream), dptr(&self.rcc, &self.stream)), (dptr(&x.v, &self.stream), dptr(&x.rcc, &self.stream)));
            let ((v, rcc), (v_out, rcc_out)) = if r == 0 { (a, b) } else { (b, a) };
            (net.v, net.rcc, net.v_out, net.rcc_out) = (v, rcc, v_out, rcc_out);
            // `prestep` clears the other side's accumulator (no clear before each propagation)
            net.acc_other = if r == 0 { dptr(&self.acc2, &self.stream) } else { dptr(&self.acc, &self.stream) };
        }
        net
    }

    /// Whether the state after the last burst (the one the next burst reads) lies in the early
    /// step's buffers: bursts reading side 1 step from them (see `net_for`).
    fn state_in_early(&self) -> bool {
        self.early.is_some() && self.cur == 1
    }

    /// The state buffers holding the state after the last burst (the next burst reads them).
    fn state(&self) -> (&CudaSlice<i64>, &CudaSlice<u32>) {
        match &self.early {
            Some(x) if self.state_in_early() => (&x.v, &x.rcc),
            _ => (&self.v, &self.rcc),
        }
    }

    /// As [`Self::state`], to write.
    fn state_mut(&mut self) -> (&mut CudaSlice<i64>, &mut CudaSlice<u32>) {
        let early = self.state_in_early();
        match &mut self.early {
            Some(x) if early => (&mut x.v, &mut x.rcc),
            _ => (&mut self.v, &mut self.rcc),
        }
    }

    fn step_cfg(&self) -> LaunchConfig {
        let items = if self.kernels.step_items8 { 2 * STEP_ITEMS } else { STEP_ITEMS };
        LaunchConfig { grid_dim: (self.neurons.div_ceil(BLOCK * items), 1, 1), block_dim: (BLOCK, 1, 1), shared_mem_bytes: 0 }
    }

    /// Record what runs ahead of the bursts reading side `r`: the propagation, then (early step)
    /// `prestep`.
    fn record_ahead(&self, r: usize) -> Result<(), BackendError> {
        self.record_propagation(r)?;
        if self.early.is_some() {
            let net = self.net_for(r);
            let wr = self.side(1 - r);
            // SAFETY: as in `record_propagation`; `prestep` reads N neurons' state from buffer r
            // and writes it into the other buffer, the early fired bits and slots (N neurons),
            // the fired list `wr` and the read-back area of the burst's parity (out_cap entries).
            unsafe { self.stream.launch_builder(&self.kernels.prestep).arg(&net).arg(&wr).launch(self.step_cfg()) }
                .map_err(dev_err("capturing prestep"))?;
        }
        Ok(())
    }

    fn prop_cfg(&self) -> LaunchConfig {
        LaunchConfig { grid_dim: (self.prop_grid, 1, 1), block_dim: (BLOCK, 1, 1), shared_mem_bytes: 0 }
    }

    /// Record (into the capture under way) the propagation of the fired list of the bursts reading
    /// side `r`: on one GPU of several, first gather every GPU's list of the last burst (their side
    /// r); propagating ahead, clear side r's accumulator; propagate into it.
    fn record_propagation(&self, r: usize) -> Result<(), BackendError> {
        let s = &self.stream;
        let net = self.net_for(r);
        let rd = match (&self.multi, self.gathered_side()) {
            (Some(m), Some(g)) => {
                // SAFETY: zeroes the gathered counter (one u64 in `misc`, owned by self) on our stream.
                unsafe { sys::cuMemsetD32Async(g.counter, 0, 2, s.cu_stream()) }.result().map_err(dev_err("capturing a clear"))?;
                let peers = dptr(&m.peers[r], s);
                // SAFETY: reads the peer table (n_peers entries, uploaded in `connect`) and the lists it
                // names (every GPU's own fired list of the last burst, peer access enabled), writes at
                // most N slots of the gathered list and the chunk index (sized for this part's synapses).
                unsafe { s.launch_builder(&self.kernels.gather).arg(&net).arg(&g).arg(&peers).arg(&m.n_peers).launch(self.prop_cfg()) }
                    .map_err(dev_err("capturing gather"))?;
                g
            }
            _ => self.side(r),
        };
        if self.ahead && self.early.is_none() {
            let words = if self.wide_acc { 2 } else { 1 } * self.neurons as usize;
            // SAFETY: clears this side's accumulator (N i32 or i64, allocated in `build`).
            unsafe { sys::cuMemsetD32Async(net.acc, 0, words, s.cu_stream()) }
                .result()
                .map_err(dev_err("capturing the accumulator clear"))?;
        }
        // SAFETY: every pointer in `net` and `rd` points into buffers owned by `self` that outlive
        // the graphs (rebuilt whenever a buffer is replaced); the kernel indexes them within the
        // sizes allocated in `build` (N fired slots, the chunk index, the synapse count).
        unsafe { s.launch_builder(&self.kernels.propagate).arg(&net).arg(&rd).launch(self.prop_cfg()) }
            .map_err(dev_err("capturing propagate"))?;
        Ok(())
    }

    /// The graph that propagates for the bursts reading side `r` alone (propagating ahead: on one
    /// GPU for the first burst and the first after a restore, since each burst graph ends with the
    /// next burst's propagation; on several GPUs every burst, once all have stepped).
    fn capture_pre(&self, r: usize) -> Result<CudaGraph, BackendError> {
        let s = &self.stream;
        s.begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL).map_err(dev_err("begin capture"))?;
        let l = self.record_ahead(r);
        let g = s.end_capture(sys::CUgraphInstantiate_flags(0));
        l?;
        let g = g.map_err(dev_err("instantiating the propagate graph"))?.ok_or_else(|| BackendError::Device("empty graph".into()))?;
        g.upload().map_err(dev_err("uploading the propagate graph"))?;
        Ok(g)
    }

    /// One burst graph reading side `r`; `copy_bytes` > 0: it starts with a copy node of that many
    /// bytes of the pinned injection buffer to the device. Propagating ahead it injects and steps
    /// (the propagation ran before it), and on one GPU it ends with the next burst's propagation;
    /// else it propagates (after gathering, on one GPU of several), injects and steps.
    /// `fused` (early step, no neuron injected twice): no `inject`, `fix` reads the injection itself.
    /// `lent`: the host copies only the ids (from the caller's column); `load_header` first reads
    /// the header from the pinned buffer.
    fn capture(&self, r: usize, mapped: u32, copy_bytes: usize, fused: bool, lent: bool) -> Result<CudaGraph, BackendError> {
        let net = self.net_for(r);
        let step_cfg = self.step_cfg();
        let inj_blocks = if mapped > 0 { mapped } else { self.inj_grid };
        let inj_cfg = LaunchConfig { grid_dim: (inj_blocks, 1, 1), block_dim: (BLOCK, 1, 1), shared_mem_bytes: 0 };
        let wr = self.side(1 - r);
        let s = &self.stream;
        s.begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL).map_err(dev_err("begin capture"))?;
        let record = || -> Result<(), BackendError> {
            if !self.ahead {
                self.record_propagation(r)?;
            }
            if copy_bytes > 0 {
                // SAFETY: copies `copy_bytes` (<= both buffers' capacity, checked by the caller) from
                // our pinned buffer to our device buffer; both outlive the graph (rebuilt when replaced).
                unsafe { sys::cuMemcpyHtoDAsync_v2(self.net.host_in, self.host_in.ptr() as *const _, copy_bytes, s.cu_stream()) }
                    .result()
                    .map_err(dev_err("capturing the injection copy"))?;
            }
            if lent {
                let one = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (32, 1, 1), shared_mem_bytes: 0 };
                // SAFETY: reads the 16-byte header of the mapped pinned buffer, writes it to `dev_in`.
                unsafe { s.launch_builder(&self.kernels.load_header).arg(&net).launch(one) }.map_err(dev_err("capturing load_header"))?;
            }
            if !fused {
                // SAFETY: as in `record_propagation`; `inject` reads the injection (header + entries,
                // within the buffers' capacity) and writes `inj`, `inj_mask` (N neurons) and the counters.
                unsafe { s.launch_builder(&self.kernels.inject).arg(&net).arg(&wr).arg(&mapped).launch(inj_cfg) }
                    .map_err(dev_err("capturing inject"))?;
            }
            if self.early.is_some() {
                let rd = self.side(r);
                // SAFETY: as above; `fix` reads the injection like `inject`, steps the injected
                // neurons (state buffers, N each), mends the fired list `wr` and writes the output.
                unsafe { s.launch_builder(&self.kernels.fix).arg(&net).arg(&wr).arg(&rd).arg(&mapped).launch(inj_cfg) }
                    .map_err(dev_err("capturing fix"))?;
            } else {
                // SAFETY: as above; `step` writes N neurons' state, the fired list `wr` and the output.
                unsafe { s.launch_builder(&self.kernels.step).arg(&net).arg(&wr).launch(step_cfg) }.map_err(dev_err("capturing step"))?;
            }
            if self.ahead && self.multi.is_none() {
                // one GPU: the next burst's propagation (and early step) follows in the same graph
                // (the host has this burst's output as soon as `step` or `fix` is done)
                self.record_ahead(1 - r)?;
            }
            Ok(())
        };
        let l = record();
        let g = s.end_capture(sys::CUgraphInstantiate_flags(0));
        l?;
        let g = g.map_err(dev_err("instantiating the burst graph"))?.ok_or_else(|| BackendError::Device("empty graph".into()))?;
        g.upload().map_err(dev_err("uploading the burst graph"))?;
        Ok(g)
    }

    /// The graph reading side `cur` that copies the injection itself, in a copy node of the power
    /// of two >= `in_bytes` (captured on first use): no copy call per burst.
    fn copy_graph(&mut self, in_bytes: usize, fused: bool) -> Result<&CudaGraph, BackendError> {
        let bytes = in_bytes.next_power_of_two().max(4096).min(self.host_in.len());
        let key = (self.cur, bytes, fused);
        if !self.copy_graphs.contains_key(&key) {
            let g = self.capture(self.cur, 0, bytes, fused, false)?;
            self.copy_graphs.insert(key, g);
        }
        Ok(&self.copy_graphs[&key])
    }

    /// Make the injection buffer hold `bytes`; replaces it (and the graphs) when too small.
    fn ensure_in_capacity(&mut self, bytes: usize) -> Result<(), BackendError> {
        if bytes <= self.host_in.len() {
            return Ok(());
        }
        self.park()?;
        self.stream.synchronize().map_err(dev_err("synchronising"))?;
        let cap = bytes.next_power_of_two();
        let new = Pinned::new(&self.ctx, cap, false).map_err(dev_err("growing the pinned injection buffer"))?;
        self.dev_in = self.stream.alloc_zeros(cap).map_err(dev_err("growing the injection buffer"))?;
        self.host_in = new;
        self.net.host_in = dptr(&self.dev_in, &self.stream);
        self.net.in_cap = cap as u64;
        self.net.host_map = self.host_in.dev();
        self.capture_graphs()
    }

    /// Copy the ids from the caller's locked column (at `ids`, `in_bytes - 16` bytes); the graph's
    /// `load_header` reads the header from the pinned buffer.
    fn copy_lent(&self, ids: usize, in_bytes: usize) -> Result<(), BackendError> {
        // SAFETY: page-locked host memory (the caller's column, which `stage` checked lies in a
        // `ColumnLock` of this context and which the caller cannot touch before the burst
        // returns, when the copy is done) to `dev_in` after the header (`ensure_in_capacity`).
        unsafe { sys::cuMemcpyHtoDAsync_v2(self.net.host_in + 16, ids as *const _, in_bytes - 16, self.stream.cu_stream()) }
            .result()
            .map_err(dev_err("copying the injection"))
    }

    fn wait_for(&mut self, t: u64) -> Result<(), BackendError> {
        let hdr = self.host_out.ptr() as *const u64;
        if self.sync_stream {
            self.stream.synchronize().map_err(dev_err("running the burst"))?;
        }
        let mut spins: u64 = 0;
        // the clock is read only once a burst is slow
        let mut since = None;
        loop {
            if let Some(tr) = &mut self.trace {
                tr.spins += 1;
            }
            // SAFETY: the header is 4 aligned u64 at the start of the mapped output buffer, written by
            // the device; volatile reads see its updates.
            let b = unsafe { std::ptr::read_volatile(hdr) };
            if b == t {
                std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
                return Ok(());
            }
            spins += 1;
            if spins.is_multiple_of(4096) {
                let stream = match &self.resident {
                    Some(r) if r.running() => r.stream().cu_stream(),
                    _ => self.stream.cu_stream(),
                };
                // SAFETY: queries the status of our own stream.
                let r = unsafe { sys::cuStreamQuery(stream) };
                match r {
                    sys::CUresult::CUDA_SUCCESS => {
                        // the stream is done: the header must be there now
                        // SAFETY: as above.
                        let b = unsafe { std::ptr::read_volatile(hdr) };
                        if b == t {
                            return Ok(());
                        }
                        return Err(BackendError::Device(format!("burst {t} finished on the GPU without publishing its output")));
                    }
                    sys::CUresult::CUDA_ERROR_NOT_READY => {}
                    other => return Err(BackendError::Device(format!("CUDA: burst {t} failed on the GPU: {other:?}"))),
                }
                if let Some(r) = self.resident.as_ref().filter(|r| r.running()) {
                    // a kernel that never returns is never "done": a burst this late is lost
                    if since.get_or_insert_with(std::time::Instant::now).elapsed() > RESIDENT_STALL {
                        let e = format!("burst {t} did not come back within {} s: {}", RESIDENT_STALL.as_secs(), r.whereabouts());
                        // said at once: a kernel that never returns can hold up what follows
                        tracing::error!("CUDA: {e}");
                        return Err(BackendError::Device(e));
                    }
                }
                if spins > (1 << 24) {
                    // a long burst (or a stuck one): stop burning a core
                    std::thread::sleep(Duration::from_micros(50));
                }
            } else {
                std::hint::spin_loop();
            }
        }
    }
}

impl Backend for CudaBackend {
    fn info(&self) -> BackendInfo {
        let mut info = self.info.clone();
        if !self.sharded {
            info.device += if self.resident_on { ", resident kernel" } else { ", graphs" };
        }
        info
    }

    fn burst(&mut self, input: InjectionSlice<'_>) -> Result<BurstOutput<'_>, BackendError> {
        let staged = self.stage(input)?;
        if !staged.in_range {
            return Err(out_of_range(input, self.base..self.base + self.neurons));
        }
        self.launch(staged)
    }

    fn snapshot(&mut self) -> Result<NeuronState, BackendError> {
        self.snapshot_impl()
    }

    fn restore(&mut self, st: &NeuronState) -> Result<(), BackendError> {
        self.restore_impl(st)
    }

    fn prepare_input(&mut self, input: &mut Injections) {
        if (self.lend_min.is_none() && !self.resident_on) || self.sharded {
            return;
        }
        let ids = LEND_IDS_MIN.max(self.neurons as usize / 16);
        let stream = self.stream.clone();
        // locking host pages waits for an idle device (and unlocking, should the column move)
        if let Err(e) = self.park() {
            tracing::error!("{e}");
        }
        let parker = self.resident.as_ref().map(|r| r.parker());
        input.hold_ids(ids, |ptr, bytes| ColumnLock::new(&stream, parker, ptr, bytes).map(|l| Box::new(l) as _));
        tracing::debug!(ids, locked = input.hold().is_some(), "CUDA: the input's id column page-locked");
    }
}

impl CudaBackend {
    /// Write the input into the pinned buffer; says whether its ids are all this GPU's.
    pub(crate) fn stage(&mut self, input: InjectionSlice<'_>) -> Result<Staged, BackendError> {
        let t_start = std::time::Instant::now();
        // no scan for sorted input (the usual case): its bounds are its ends
        let in_range = input.id_bounds().is_none_or(|(lo, hi)| lo >= self.base && hi < self.base + self.neurons);
        if !in_range {
            return Ok(Staged { t_start, in_bytes: 0, mapped: false, fused: false, in_range, lent: None });
        }
        if self.sharded && self.multi.is_none() {
            return Err(BackendError::Device("one GPU of several bursts only once connected to the others".into()));
        }
        // the early step with no neuron twice: `fix` injects too (no `inject`, no sums)
        let fused = self.early.is_some() && input.ascending();
        let ids = input.ids();
        let (fmt, first) = entry_format(input.values());
        let entry = [8, 16, 4][fmt as usize];
        let in_bytes = 16 + entry * ids.len();
        let mapped = !self.resident_on && in_bytes <= self.zc_max;
        // format 2 in a column `prepare_input` locked: the copy (or the resident kernel, which
        // needs 16-byte alignment) reads it in place
        let worth = if self.resident_on {
            in_bytes > self.resident_direct
        } else {
            !mapped && !self.graph_copy && self.lend_min.is_some_and(|m| 4 * ids.len() >= m)
        };
        let lent = (fmt == 2 && !ids.is_empty() && worth)
            .then(|| {
                let lock = input.hold().and_then(|h| h.downcast_ref::<ColumnLock>())?;
                let dev = lock.dev_addr(&self.ctx, ids.as_ptr() as *const u8, 4 * ids.len())?;
                (!self.resident_on || dev % 16 == 0).then_some((ids.as_ptr() as usize, dev))
            })
            .flatten();
        self.ensure_in_capacity(in_bytes)?;
        let base = self.host_in.ptr();
        // SAFETY: the buffer holds `in_bytes` (ensured above) and nothing reads it now: the previous
        // burst has completed (it published its output after it had read the injection).
        unsafe {
            match input.values() {
                Values::Each(v) if fmt == 1 => {
                    let dst = base.add(16) as *mut u64;
                    for (i, (&n, &p)) in ids.iter().zip(v).enumerate() {
                        dst.add(2 * i).write(n as u64);
                        dst.add(2 * i + 1).write(p as u64);
                    }
                }
                Values::Each(v) if fmt == 0 => {
                    let dst = base.add(16) as *mut u64;
                    for (i, (&n, &p)) in ids.iter().zip(v).enumerate() {
                        dst.add(i).write(n as u64 | ((p as i32 as u32 as u64) << 32));
                    }
                }
                // format 2, locked: copied up from where it lies
                _ if lent.is_some() => {}
                // format 2: the id column as it is
                _ => std::ptr::copy_nonoverlapping(ids.as_ptr(), base.add(16) as *mut u32, ids.len()),
            }
            (base as *mut u64).write(ids.len() as u64 | (fused as u64) << 61 | (fmt << 62));
            (base as *mut u64).add(1).write(first as u64);
            std::ptr::write_volatile(self.host_out.ptr() as *mut u64, u64::MAX);
        }
        Ok(Staged { t_start, in_bytes, mapped, fused, in_range, lent })
    }

    /// Propagating ahead: launch the propagation for the next burst unless it is already queued.
    /// One GPU of several calls it once every GPU has finished its last burst (it gathers their
    /// fired lists).
    pub(crate) fn launch_pre(&mut self) -> Result<(), BackendError> {
        if self.ahead && !self.pre_pending {
            self.ctx.bind_to_thread().map_err(dev_err("binding the context"))?;
            // SAFETY: launches our own instantiated graph on our own stream.
            unsafe { result::graph::launch(self.pre[self.cur].cu_graph_exec(), self.stream.cu_stream()) }
                .map_err(dev_err("launching the propagate graph"))?;
            self.pre_pending = true;
        }
        Ok(())
    }

    /// Launch the burst's graphs (and the copy of its injection) on our stream.
    fn launch_graphs(&mut self, in_bytes: usize, mapped: bool, fused: bool, lent: Option<(usize, u64)>) -> Result<(), BackendError> {
        self.launch_pre()?;
        // on one GPU the burst graph ends with the next burst's propagation; on several, each GPU
        // launches it once every GPU has stepped (`launch_pre`)
        self.pre_pending = self.multi.is_none();
        if let Some((a, _)) = self.trace.as_ref().and_then(|tr| tr.ev.as_ref()) {
            a.record(&self.stream).map_err(dev_err("event"))?;
        }
        if !mapped && self.graph_copy {
            let stream = self.stream.cu_stream();
            let exec = self.copy_graph(in_bytes, fused)?.cu_graph_exec();
            // SAFETY: launches our own instantiated graph on our own stream.
            unsafe { result::graph::launch(exec, stream) }.map_err(dev_err("launching the burst graph"))?;
        } else {
            if let Some((ids, _)) = lent {
                self.copy_lent(ids, in_bytes)?;
            } else if !mapped {
                // SAFETY: copies `in_bytes` (<= both buffers' capacity) from our pinned buffer to our
                // device buffer on our stream; the host does not touch the pinned buffer until the
                // burst is done.
                unsafe { sys::cuMemcpyHtoDAsync_v2(self.net.host_in, self.host_in.ptr() as *const _, in_bytes, self.stream.cu_stream()) }
                    .result()
                    .map_err(dev_err("copying the injection"))?;
            }
            // SAFETY: launches our own instantiated graph on our own stream.
            unsafe {
                result::graph::launch(
                    self.graphs[6 * fused as usize + 3 * self.cur + if lent.is_some() { 2 } else { mapped as usize }].cu_graph_exec(),
                    self.stream.cu_stream(),
                )
            }
            .map_err(dev_err("launching the burst graph"))?;
        }
        if let Some((_, b)) = self.trace.as_ref().and_then(|tr| tr.ev.as_ref()) {
            b.record(&self.stream).map_err(dev_err("event"))?;
        }
        Ok(())
    }

    /// Hand the staged burst to the resident kernel (launched first if it is parked: after the
    /// propagation and early step of the next burst, if they have not run yet).
    fn command_resident(&mut self, in_bytes: usize, lent: Option<(usize, u64)>) -> Result<(), BackendError> {
        let running = self.resident.as_ref().is_some_and(|r| r.running());
        if !running {
            self.launch_pre()?;
            self.stream.synchronize().map_err(dev_err("running the propagation"))?;
            let p = ResParams {
                net: [self.net_for(0), self.net_for(1)],
                side: [self.side(0), self.side(1)],
                cur: self.cur as u32,
                inj_blocks: self.inj_grid,
                prop_blocks: self.prop_grid,
                step_blocks: self.neurons.div_ceil(BLOCK * STEP_ITEMS),
                ..Default::default()
            };
            tracing::trace!(cur = self.cur, "CUDA: launching the resident kernel");
            if let Some(r) = &mut self.resident {
                r.start(p)?;
            }
        }
        // the kernel runs the next burst's propagation and early step after this one
        self.pre_pending = true;
        let (src, direct) = match lent {
            Some((_, dev)) => (dev, false),
            None => (self.host_in.dev() + 16, in_bytes <= self.resident_direct),
        };
        if let Some(r) = &mut self.resident {
            r.command(src, in_bytes as u64, direct);
        }
        Ok(())
    }

    /// Run the staged burst and collect its output.
    pub(crate) fn launch(&mut self, staged: Staged) -> Result<BurstOutput<'_>, BackendError> {
        let Staged { t_start, in_bytes, mapped, fused, lent, .. } = staged;
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        self.ctx.bind_to_thread().map_err(dev_err("binding the context"))?;
        let t = self.burst + 1;
        let t_write = std::time::Instant::now();
        if self.resident_on {
            self.command_resident(in_bytes, lent)?;
        } else {
            self.launch_graphs(in_bytes, mapped, fused, lent)?;
        }
        let t_launch = std::time::Instant::now();
        self.wait_for(t)?;
        let t_wait = std::time::Instant::now();
        self.cur = 1 - self.cur;
        self.burst = t;
        // The device writes the output words with no ordering among them (no system fences); each
        // carries a tag of the burst (32 bits on the header words and ids, 16 on the potentials,
        // never 0), and the host zeroes the entries it has read: a word is this burst's once its
        // tag matches.
        let (tag32, tag16) = (t % 0xFFFF_FFFF + 1, t % 0xFFFF + 1);
        let hdr = self.host_out.ptr() as *mut u64;
        let base = hdr as usize;
        let resident = self.resident.as_ref();
        let spin_until = |p: *const u64, ok: &dyn Fn(u64) -> bool| -> Result<u64, BackendError> {
            let mut spins = 0u64;
            // the clock is read only once a word is late
            let mut since = None;
            loop {
                // SAFETY: `p` points into the mapped output buffer (aligned u64 words the device writes).
                let w = unsafe { std::ptr::read_volatile(p) };
                if ok(w) {
                    return Ok(w);
                }
                spins += 1;
                if spins.is_multiple_of(65536) && since.get_or_insert_with(std::time::Instant::now).elapsed() > OUTPUT_STALL {
                    let e = format!(
                        "burst {t}: the GPU's output never arrived whole (word {} of the output holds {w:#x}){}",
                        (p as usize - base) / 8,
                        resident.filter(|r| r.running()).map(|r| format!("; {}", r.whereabouts())).unwrap_or_default()
                    );
                    tracing::error!("CUDA: {e}");
                    return Err(BackendError::Device(e));
                }
                std::hint::spin_loop();
            }
        };
        // SAFETY: header words 1 and 2 (fired_total, rb_count) of the mapped output buffer.
        let fired_total = spin_until(unsafe { hdr.add(1) }, &|w| w >> 32 == tag32)? & 0xFFFF_FFFF;
        // SAFETY: as above.
        let rb = (spin_until(unsafe { hdr.add(2) }, &|w| w >> 32 == tag32)? & 0xFFFF_FFFF) as usize;
        if rb > self.out_cap {
            return Err(BackendError::Device(format!("burst {t}: {rb} read-back neurons overflow the buffer of {}", self.out_cap)));
        }
        // The entries live after the header: tagged ids u64[out_cap], then tagged potentials
        // u64[out_cap]; with the early step one such area per burst parity, then the corrections.
        let area = OUT_HEADER / 8 + if self.early.is_some() { (t & 1) as usize * 2 * self.out_cap } else { 0 };
        // SAFETY: the areas lie within the output buffer (sized in `build`); rb <= out_cap.
        let (ids, vs) = unsafe { (hdr.add(area), hdr.add(area + self.out_cap)) };
        self.keys.clear();
        self.out_v.clear();
        // One bulk copy of both arrays (streaming reads of lines the device wrote: the host's
        // prefetchers keep many misses in flight); an entry whose tag is not there yet is re-read.
        self.rb_raw.resize(2 * rb, 0);
        // SAFETY: rb <= out_cap entries of each array; rb_raw holds 2 * rb words.
        unsafe {
            std::ptr::copy_nonoverlapping(ids, self.rb_raw.as_mut_ptr(), rb);
            std::ptr::copy_nonoverlapping(vs, self.rb_raw.as_mut_ptr().add(rb), rb);
        }
        for i in 0..rb {
            if self.rb_raw[i] >> 32 != tag32 {
                // SAFETY: i < rb <= out_cap.
                self.rb_raw[i] = spin_until(unsafe { ids.add(i) }, &|w| w >> 32 == tag32)?;
            }
            if self.rb_raw[rb + i] >> 48 != tag16 {
                // SAFETY: as above.
                self.rb_raw[rb + i] = spin_until(unsafe { vs.add(i) }, &|w| w >> 48 == tag16)?;
            }
        }
        // SAFETY: zero the entries read (rb <= out_cap words each), so no stale tag can match later.
        unsafe {
            std::ptr::write_bytes(ids, 0, rb);
            std::ptr::write_bytes(vs, 0, rb);
        }
        if self.early.is_some() {
            // `fix`'s corrections of the early entries: a new potential at fire, or DEAD_RB
            // SAFETY: header word 4 (corrections).
            let nc = (spin_until(unsafe { hdr.add(4) }, &|w| w >> 32 == tag32)? & 0xFFFF_FFFF) as usize;
            if nc > self.out_cap {
                return Err(BackendError::Device(format!("burst {t}: {nc} read-back corrections overflow the buffer of {}", self.out_cap)));
            }
            // SAFETY: the corrections follow the two areas: slots u64[out_cap], potentials u64[out_cap].
            let (cs, cv) = unsafe { (hdr.add(OUT_HEADER / 8 + 4 * self.out_cap), hdr.add(OUT_HEADER / 8 + 5 * self.out_cap)) };
            for i in 0..nc {
                // SAFETY: i < nc <= out_cap.
                let slot = spin_until(unsafe { cs.add(i) }, &|w| w >> 32 == tag32)? as u32;
                // SAFETY: as above.
                let v = spin_until(unsafe { cv.add(i) }, &|w| w >> 48 == tag16)?;
                let k = (slot & !DEAD_RB) as usize;
                if k >= rb {
                    return Err(BackendError::Device(format!("burst {t}: a read-back correction names entry {k} of {rb}")));
                }
                if slot & DEAD_RB != 0 {
                    self.rb_raw[k] = (tag32 << 32) | DEAD as u64;
                } else {
                    self.rb_raw[rb + k] = v;
                }
            }
            // SAFETY: as above, nc words each.
            unsafe {
                std::ptr::write_bytes(cs, 0, nc);
                std::ptr::write_bytes(cv, 0, nc);
            }
        }
        for i in 0..rb {
            let (id, v) = (self.rb_raw[i] as u32, self.rb_raw[rb + i]);
            if id == DEAD {
                continue;
            }
            self.keys.push(((id as u64) << 32) | self.out_v.len() as u64);
            // the potential's 48 low bits, sign-extended (|v| < 2^47)
            self.out_v.push(((v << 16) as i64) >> 16);
        }
        let t_read = std::time::Instant::now();
        self.keys.sort_unstable();
        self.out_ids.clear();
        self.scratch_v.clear();
        for &k in &self.keys {
            self.out_ids.push((k >> 32) as u32);
            self.scratch_v.push(self.out_v[(k & 0xFFFF_FFFF) as usize]);
        }
        std::mem::swap(&mut self.out_v, &mut self.scratch_v);
        if let Some(tr) = &mut self.trace {
            let t_end = std::time::Instant::now();
            tr.bursts += 1;
            tr.write_s += (t_write - t_start).as_secs_f64();
            tr.launch_s += (t_launch - t_write).as_secs_f64();
            tr.wait_s += (t_wait - t_launch).as_secs_f64();
            tr.post_s += (t_end - t_wait).as_secs_f64();
            tr.read_s += (t_read - t_wait).as_secs_f64();
            if let Some((_, each)) = &mut tr.each {
                let us = |a: std::time::Instant, b: std::time::Instant| (b - a).as_secs_f32() * 1e6;
                each.push([us(t_start, t_write), us(t_write, t_launch), us(t_launch, t_wait), us(t_wait, t_end)]);
            }
            if let Some((a, b)) = &tr.ev {
                b.synchronize().map_err(dev_err("event"))?;
                tr.gpu_ms += a.elapsed_ms(b).map_err(dev_err("event"))? as f64;
            }
        }
        Ok(BurstOutput { burst: t, fired: &self.out_ids, potentials: &self.out_v, fired_total })
    }

    fn snapshot_impl(&mut self) -> Result<NeuronState, BackendError> {
        self.ctx.bind_to_thread().map_err(dev_err("binding the context"))?;
        self.park()?;
        let s = &self.stream;
        s.synchronize().map_err(dev_err("synchronising"))?;
        let (v, rcc) = self.state();
        let potential = s.clone_dtoh(v).map_err(dev_err("reading potentials"))?;
        let rcc = s.clone_dtoh(rcc).map_err(dev_err("reading refractory state"))?;
        let misc = s.clone_dtoh(&self.misc).map_err(dev_err("reading counters"))?;
        let count = (misc[M_COUNTER + self.cur] >> self.count_shift) as usize;
        let mut fired = if count > 0 {
            s.clone_dtoh(&self.fired[self.cur].slice(0..count)).map_err(dev_err("reading the fired list"))?
        } else {
            Vec::new()
        };
        // slots the early step's `fix` emptied
        fired.retain(|&f| f != DEAD);
        fired.sort_unstable();
        Ok(NeuronState {
            burst: self.burst,
            potential,
            refractory: rcc.iter().map(|&x| (x & 0xFFFF) as u16).collect(),
            consecutive: rcc.iter().map(|&x| (x >> 16) as u16).collect(),
            fired,
        })
    }

    fn restore_impl(&mut self, st: &NeuronState) -> Result<(), BackendError> {
        crate::backend::shard::check_lengths(st, self.neurons as usize)?;
        if let Some(&bad) = st.fired.iter().find(|&&f| f >= self.n_total()) {
            return Err(BackendError::InjectionOutOfRange { neuron: bad, neurons: self.n_total() });
        }
        let mut fired = st.fired.clone();
        fired.sort_unstable();
        fired.dedup();
        if self.sharded {
            return self.restore_shard(st, &fired);
        }
        let s = self.load_state(st, 0)?;
        let e = |w: &'static str| dev_err(w);
        let tmp = 1 - self.cur;
        if !fired.is_empty() {
            let mut view = self.fired[tmp].slice_mut(0..fired.len());
            s.memcpy_htod(&fired, &mut view).map_err(e("writing the fired list"))?;
            let ids = dptr(&self.fired[tmp], &s);
            let count = fired.len() as u32;
            let wr = self.side(self.cur);
            let cfg = LaunchConfig { grid_dim: (count.div_ceil(BLOCK), 1, 1), block_dim: (BLOCK, 1, 1), shared_mem_bytes: 0 };
            // SAFETY: reads `count` ids (written just above) and writes `count` slots of side `cur`
            // (N slots) and its counter, which was zeroed above.
            unsafe { s.launch_builder(&self.kernels.relist).arg(&self.net).arg(&wr).arg(&ids).arg(&count).launch(cfg) }
                .map_err(e("launching relist"))?;
        }
        s.synchronize().map_err(e("restoring the state"))?;
        self.burst = st.burst;
        Ok(())
    }
}

impl CudaBackend {
    /// Write this GPU's neurons' state and the burst number, clear the inputs, and set the counter of
    /// the side the next burst reads to `counter` (0: no fired list yet); returns the stream.
    fn load_state(&mut self, st: &NeuronState, counter: u64) -> Result<Arc<CudaStream>, BackendError> {
        self.ctx.bind_to_thread().map_err(dev_err("binding the context"))?;
        self.park()?;
        let e = |w: &'static str| dev_err(w);
        let s = self.stream.clone();
        s.synchronize().map_err(e("synchronising"))?;
        if self.neurons > 0 {
            let rcc: Vec<u32> = st.refractory.iter().zip(&st.consecutive).map(|(&r, &c)| r as u32 | (c as u32) << 16).collect();
            let (v_dst, rcc_dst) = self.state_mut();
            s.memcpy_htod(&st.potential, v_dst).map_err(e("writing potentials"))?;
            s.memcpy_htod(&rcc, rcc_dst).map_err(e("writing refractory state"))?;
        }
        // a propagation run ahead from the replaced fired list is void
        self.pre_pending = false;
        s.memset_zeros(&mut self.acc).map_err(e("clearing"))?;
        s.memset_zeros(&mut self.acc2).map_err(e("clearing"))?;
        s.memset_zeros(&mut self.inj).map_err(e("clearing"))?;
        s.memset_zeros(&mut self.inj_mask).map_err(e("clearing"))?;
        let mut misc = vec![0u64; 64];
        misc[M_BURST] = st.burst;
        misc[M_COUNTER + self.cur] = counter;
        s.memcpy_htod(&misc, &mut self.misc).map_err(e("writing counters"))?;
        Ok(s)
    }

    /// One GPU of several: its own neurons' state (`st` indexed from `base`); its own neurons of
    /// `fired` become the list the others gather in the next burst.
    fn restore_shard(&mut self, st: &NeuronState, fired: &[u32]) -> Result<(), BackendError> {
        let own: Vec<u32> = fired.iter().copied().filter(|f| (self.base..self.base + self.neurons).contains(f)).collect();
        let s = self.load_state(st, (own.len() as u64) << self.count_shift)?;
        let e = |w: &'static str| dev_err(w);
        if !own.is_empty() {
            let mut view = self.fired[self.cur].slice_mut(0..own.len());
            s.memcpy_htod(&own, &mut view).map_err(e("writing the fired list"))?;
        }
        s.synchronize().map_err(e("restoring the state"))?;
        self.burst = st.burst;
        Ok(())
    }
}

impl Drop for CudaBackend {
    fn drop(&mut self) {
        if self.multi.is_none() && !self.sharded {
            if let Some(s) = self.trace_summary() {
                eprintln!("cuda trace: {s}");
            }
        }
        if let Some((path, each)) = self.trace.as_ref().and_then(|t| t.each.as_ref()) {
            let text: String = each.iter().map(|p| format!("{:.2} {:.2} {:.2} {:.2}\n", p[0], p[1], p[2], p[3])).collect();
            if let Err(e) = std::fs::write(path, text) {
                eprintln!("cuda trace: {}: {e}", path.display());
            }
        }
        let _ = self.ctx.bind_to_thread();
        // the resident kernel reads our buffers: it must return before they are freed
        let _ = self.park();
        let _ = self.stream.synchronize();
    }
}
