//! [`CudaBackend`]: the brain on one GPU (or one GPU of several). This file holds what the
//! backend owns and how it is put together; the brain's part on the device comes from `build/`,
//! the bursts run in `burst/` (`resident.rs` on one GPU, `graphs.rs` for binned or row-drawn
//! procedural brains and a GPU without cooperative launch, staged and read back by
//! `staging.rs`, snapshots and restores in `snapshot.rs`), and `gpus/peers.rs` connects the GPUs
//! of one brain.

use std::sync::Arc;

use cudarc::driver::{sys, CudaContext, CudaSlice, CudaStream};

use super::build::connectome::{summed_input_bound, upload, whole, GpuShard, Placement};
pub(crate) use super::build::state::{Early, GpuState, Multi};
use super::burst::host_io::{HostIo, Trace};
pub(crate) use super::burst::launch::{Launch, Path};
use super::burst::learn::GpuLearning;
use super::burst::procbin::ProcBins;
use super::burst::resident::Resident;
use super::burst::tiles::{TileShape, Tiles};
use super::gpus::exchange::Exchange;
use super::layout::{dev_err, dptr, Net, BLOCK, M_BURST, M_CORR, M_DEAD, M_RB, M_TICKET, OUT_HEADER};
use super::memory::{MemoryPlan, Pinned, RESERVE_BYTES};
use super::module::{Kernels, Variant};
use crate::backend::{out_of_range, Backend, BackendError, BackendInfo, BurstOutput, CudaLaunch, Readback};
use crate::brain::Brain;
use crate::connectome::stream::Streamed;
use crate::model::{InjectionSlice, Injections, NeuronState};

/// Ids `prepare_input` makes room for (and locks), at least: 256 KB, so the column has pages of
/// its own, and a sixteenth of the neurons.
const LEND_IDS_MIN: usize = 1 << 16;

/// Where a brain's synapses are made for [`CudaBackend::open`].
pub enum GpuBuild {
    /// On the host (the brain's parts hold them): [`CudaBackend::new`].
    Host,
    /// On the GPU from closed forms: [`CudaBackend::built_on_gpu`].
    OnGpu {
        /// A progress bar (or lines) when the build takes over a second.
        progress: bool,
    },
    /// Drawn on the host a few chunks at a time, copied as drawn: [`CudaBackend::streamed`].
    Streamed(Box<Streamed>),
}

/// What `selftest` forces on a small brain, to check the paths large brains take: the propagation
/// tiled (in tiles of this shape), the resident kernel of four blocks an SM.
#[derive(Clone, Copy, Default)]
struct Forced {
    tiles: Option<TileShape>,
    four_blocks: bool,
}

/// The CUDA backend: one GPU's part of a brain. What it holds is split by who uses it: the
/// brain's device state (`GpuState`), the host's side of a burst (`HostIo`: the injection
/// going up, the read-back coming down) and how the bursts are launched (`Launch`: resident
/// kernel or graphs). `burst/staging.rs` writes an input and reads an output, `burst/resident.rs`
/// and `burst/graphs.rs` launch, `burst/snapshot.rs` snapshots and restores the state.
pub struct CudaBackend {
    pub(super) ctx: Arc<CudaContext>,
    pub(super) stream: Arc<CudaStream>,
    pub(super) state: GpuState,
    pub(super) io: HostIo,
    pub(super) launch: Launch,
    info: BackendInfo,
    plan: MemoryPlan,
}

// SAFETY: the raw pointers (pinned buffers, graphs) belong to this backend alone; every call binds
// the context to the calling thread first, and `&mut self` serialises the calls.
unsafe impl Send for CudaBackend {}

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
    /// Put `brain` on GPU `device`: the resident kernel, or graphs where the device has no
    /// cooperative launch. Refuses (nothing allocated) when the GPU lacks the memory.
    pub fn new(brain: Brain, readback: Readback, device: usize) -> Result<CudaBackend, BackendError> {
        Self::on_path(brain, readback, device, None, Placement::Host, Forced::default())
    }

    /// As [`CudaBackend::new`] for a brain built with every mapping procedural, all of them in
    /// closed form: its synapses are stored, built on the GPU (`build.rs`) instead of drawn again
    /// every burst, with a progress bar (or lines) when `progress` and the build takes over a
    /// second. Any other brain is taken as [`CudaBackend::new`] takes it.
    pub fn built_on_gpu(brain: Brain, readback: Readback, device: usize, progress: bool) -> Result<CudaBackend, BackendError> {
        Self::on_path(brain, readback, device, None, Placement::OnGpu { progress }, Forced::default())
    }

    /// As [`CudaBackend::new`] for a brain planned by [`crate::connectome::stream::plan`] (its
    /// part holds row pointers only): the synapses are drawn on the host a few chunks at a time
    /// and copied to the GPU.
    pub fn streamed(brain: Brain, streamed: Streamed, readback: Readback, device: usize) -> Result<CudaBackend, BackendError> {
        Self::on_path(brain, readback, device, None, Placement::Streamed(Arc::new(streamed)), Forced::default())
    }

    /// [`CudaBackend::new`], [`CudaBackend::built_on_gpu`] or [`CudaBackend::streamed`] (by
    /// `build`), its bursts launched as `launch` says (`backend.cuda_launch`).
    pub fn open(brain: Brain, readback: Readback, device: usize, build: GpuBuild, launch: CudaLaunch) -> Result<CudaBackend, BackendError> {
        let placement = match build {
            GpuBuild::Host => Placement::Host,
            GpuBuild::OnGpu { progress } => Placement::OnGpu { progress },
            GpuBuild::Streamed(s) => Placement::Streamed(Arc::from(s)),
        };
        let path = (launch == CudaLaunch::Graphs).then_some(Path::Graphs);
        Self::on_path(brain, readback, device, path, placement, Forced::default())
    }

    /// As [`CudaBackend::new`], on graphs whatever the device (to check that path where the
    /// resident kernel could run: `selftest`).
    pub(crate) fn new_graphs(brain: Brain, readback: Readback, device: usize) -> Result<CudaBackend, BackendError> {
        Self::on_path(brain, readback, device, Some(Path::Graphs), Placement::Host, Forced::default())
    }

    /// As [`CudaBackend::new`], the propagation tiled whatever the brain's size, in fine tiles of
    /// 2^`bits` neurons, coarse ones of four, `room` entries a binning block's room in a coarse
    /// bin and `cap` a fine tile's array (to check that path, spills included, on small brains:
    /// `selftest`), as graphs when `graphs`. A brain the tiles cannot take runs as `new` runs it.
    pub(crate) fn new_tiled(
        brain: Brain,
        readback: Readback,
        device: usize,
        (bits, room, cap): (u32, u64, u64),
        graphs: bool,
    ) -> Result<CudaBackend, BackendError> {
        let tiles = Some(TileShape { bits, coarse: 2, room, cap });
        let path = graphs.then_some(Path::Graphs);
        Self::on_path(brain, readback, device, path, Placement::Host, Forced { tiles, four_blocks: false })
    }

    /// As [`CudaBackend::new`], in the resident kernel of four blocks an SM whatever the brain (as a
    /// large brain that learns runs: `selftest`).
    pub(crate) fn new_four_blocks(brain: Brain, readback: Readback, device: usize) -> Result<CudaBackend, BackendError> {
        Self::on_path(brain, readback, device, None, Placement::Host, Forced { tiles: None, four_blocks: true })
    }

    fn on_path(
        brain: Brain,
        readback: Readback,
        device: usize,
        path: Option<Path>,
        placement: Placement,
        forced: Forced,
    ) -> Result<CudaBackend, BackendError> {
        match super::probe::probe(device) {
            crate::backend::GpuProbe::Available(_) => {}
            crate::backend::GpuProbe::Unavailable(why) => return Err(BackendError::Device(why)),
        }
        let t0 = std::time::Instant::now();
        let ctx = CudaContext::new(device).map_err(dev_err("creating the context"))?;
        tracing::debug!(device, context_s = t0.elapsed().as_secs_f64(), "CUDA: a GPU's context made");
        let coop = ctx.attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH).map_err(dev_err("attribute"))?;
        let path = path.unwrap_or(if coop != 0 {
            Path::Resident
        } else {
            tracing::info!("CUDA: the device has no cooperative launch: the bursts run as graphs");
            Path::Graphs
        });
        let shard = whole(brain, placement)?;
        // binned procedural synapses run as graphs (their passes need the whole grid between
        // them), and so do procedural rows (`proc_rows`, which the resident kernel leaves out)
        let binned = ProcBins::wanted(shard.neurons, &shard.procedural);
        let path = if (binned || !shard.rows.is_empty()) && path == Path::Resident { Path::Graphs } else { path };
        Self::build(ctx, shard, readback, device, path, forced)
    }

    /// One GPU of several (see `multi.rs`): bursts only after [`CudaBackend::connect`]. `linked`:
    /// in the resident kernel (every GPU of the brain alike), else on
    /// graphs.
    pub(crate) fn new_shard(shard: GpuShard, readback: Readback, device: usize, linked: bool) -> Result<CudaBackend, BackendError> {
        let t0 = std::time::Instant::now();
        let ctx = CudaContext::new(device).map_err(dev_err("creating the context"))?;
        tracing::debug!(device, context_s = t0.elapsed().as_secs_f64(), "CUDA: a GPU's context made");
        if linked && !super::burst::resident::cooperative(&ctx) {
            return Err(BackendError::Device(format!(
                "GPU {device} has no cooperative launch: it cannot run a brain's share in the resident kernel"
            )));
        }
        let gpu = Self::build(ctx, shard, readback, device, if linked { Path::Linked } else { Path::Shard }, Forced::default());
        tracing::debug!(device, shard_s = t0.elapsed().as_secs_f64(), "CUDA: a GPU's share made");
        gpu
    }

    fn build(
        ctx: Arc<CudaContext>,
        mut shard: GpuShard,
        readback: Readback,
        device: usize,
        path: Path,
        forced: Forced,
    ) -> Result<CudaBackend, BackendError> {
        let tile_shape = forced.tiles;
        let t0 = std::time::Instant::now();
        // SAFETY: one stream does all the work; no cross-stream event tracking is needed.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.new_stream().map_err(dev_err("creating a stream"))?;
        // one GPU of several built on the GPU: its rows' lengths vary, so they are counted first
        if let (Some(r), Some((parts, me))) = (&shard.recipe, &shard.parts) {
            shard.part_rows = Some(parts.count(*me, &stream, r, shard.neurons, shard.part.targets_range.clone())?);
        }
        let name = ctx.name().map_err(dev_err("device name"))?;
        let total_mem = ctx.total_mem().map_err(dev_err("device memory"))? as u64;
        let sharded = path.sharded();
        let part = &shard.part;
        let (base, n, n_total) = (part.targets_range.start, part.targets_range.len() as u32, shard.neurons);
        let (table_len, areas) = (shard.contributions.len(), shard.params.len());
        let mut plan = MemoryPlan::of_counts(n as u64, n_total as u64, shard.synapses(), shard.code_bytes(), table_len, areas, sharded);
        if let Some(p) = &shard.plastic {
            let learning = super::burst::learn::device_bytes(shard.synapses(), p, n_total);
            (plan.connectome_bytes, plan.total_bytes) = (plan.connectome_bytes + learning, plan.total_bytes + learning);
        }
        let (free, _) = ctx.mem_get_info().map_err(dev_err("free memory"))?;
        // NEUROBURST_CUDA_MEM_LIMIT (bytes) caps what this backend may take (tests of the refusal).
        let free = match std::env::var("NEUROBURST_CUDA_MEM_LIMIT").ok().and_then(|v| v.parse::<usize>().ok()) {
            Some(limit) => free.min(limit),
            None => free,
        };
        if plan.total_bytes + RESERVE_BYTES > free as u64 {
            let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
            return Err(BackendError::Device(format!(
                "the brain needs {} bytes ({:.2} GiB: connectome {} + state {}) plus {} in reserve on the GPU, but {name} has only {free} bytes ({:.2} GiB) free",
                plan.total_bytes,
                gib(plan.total_bytes),
                plan.connectome_bytes,
                plan.state_bytes,
                RESERVE_BYTES,
                gib(free as u64)
            )));
        }
        let synapses = plan.synapses;
        let count_shift = (n_total as u64).leading_zeros();
        if count_shift < 63 && synapses >= 1u64 << count_shift {
            return Err(BackendError::Device(format!("{synapses} synapses over {n} neurons overflow the packed fired counter")));
        }
        let (row64, code32) = (plan.row_ptr_bytes == 8, shard.code_bytes() == 4);
        // this GPU reads back its own neurons of the readback ranges
        let ranges = readback_ranges(&readback, n_total)
            .map(|r| r.into_iter().map(|(a, b)| (a.max(base), b.min(base + n))).filter(|(a, b)| a < b).collect::<Vec<_>>());
        let (rb_host, n_rb, out_cap) = match &ranges {
            None => (vec![0u32, 0], u32::MAX, n as usize),
            Some(r) if r.is_empty() => (vec![0, 0], 0, 0),
            Some(r) => {
                let v: Vec<u32> = r.iter().map(|x| x.0).chain(r.iter().map(|x| x.1)).collect();
                (v, r.len() as u32, r.iter().map(|x| (x.1 - x.0) as usize).sum())
            }
        };
        let s = &stream;
        let e = |w: &'static str| dev_err(w);
        let res = upload(s, &mut shard, &rb_host, row64)?;
        let t_up = t0.elapsed().as_secs_f64();
        let nn = n as usize;
        let early_on = path.resident() && n > 0;
        let alloc_acc = || s.alloc_zeros::<i64>(nn.max(1)).map_err(e("alloc accumulators"));
        let alloc_fired = || s.alloc_zeros::<u32>(nn.max(1)).map_err(e("alloc fired"));
        // one GPU of several keeps the row offsets of the gathered list only
        let no = if sharded { 1 } else { nn.max(1) };
        let alloc_offs = || s.alloc_zeros::<u64>(no).map_err(e("alloc offsets"));
        let v: CudaSlice<i64> = s.alloc_zeros(nn).map_err(e("alloc potentials"))?;
        let rcc: CudaSlice<u32> = s.alloc_zeros(nn).map_err(e("alloc refractory"))?;
        let acc = [alloc_acc()?, alloc_acc()?];
        let mut inj: CudaSlice<u64> = s.alloc_zeros(nn).map_err(e("alloc injection"))?;
        let inj_mask: CudaSlice<u32> = s.alloc_zeros(nn.div_ceil(32) + 1).map_err(e("alloc injection mask"))?;
        let fired = [alloc_fired()?, alloc_fired()?];
        let offs = [alloc_offs()?, alloc_offs()?];
        let shifts = [alloc_offs()?, alloc_offs()?];
        let mut misc: CudaSlice<u64> = s.alloc_zeros(64).map_err(e("alloc counters"))?;
        let host_in = Pinned::new(&ctx, 16 + 16 * 4096).map_err(e("pinned injection buffer"))?;
        let dev_in: CudaSlice<u8> = s.alloc_zeros(host_in.len()).map_err(e("alloc injection buffer"))?;
        // the early step: read-back areas of both burst parities, then the corrections
        let host_out = Pinned::new(&ctx, OUT_HEADER + out_cap * 16 * if early_on { 3 } else { 1 }).map_err(e("pinned output buffer"))?;
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
        let misc_p = dptr(&misc, s);
        let rb_lo = dptr(&res._rb, s);
        let net = Net {
            v: dptr(&v, s),
            rcc: dptr(&rcc, s),
            acc: dptr(&acc[0], s),
            inj: dptr(&inj, s),
            inj_mask: dptr(&inj_mask, s),
            row_ptr: dptr(&res.row_ptr, s),
            targets: dptr(&res.targets, s),
            codes: dptr(&res.codes, s),
            table: dptr(&res._table, s),
            areas: dptr(&res._areas, s),
            area_end: dptr(&res._area_end, s),
            rb_lo,
            rb_hi: rb_lo + 4 * (rb_host.len() as u64 / 2),
            burst: misc_p + 8 * M_BURST as u64,
            rb_counter: misc_p + 8 * M_RB as u64,
            ticket: misc_p + 8 * M_TICKET as u64,
            chunk_first: dptr(&res._chunk_first, s),
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
            acc_keep: 1,
            early: early.is_some() as u32,
            proc_: dptr(&res._proc, s),
            n_proc: shard.procedural.len() as u32,
            proc_binned: 0,
            row_areas: dptr(&res._rows[0], s),
            row_maps: dptr(&res._rows[1], s),
            row_list: dptr(&res._rows[2], s),
            n_row_areas: shard.rows.areas.len() as u32,
        };
        // accumulator width: the largest possible synaptic input of one burst must fit in i32
        let wide_kernels = Kernels::load(&ctx, Variant { wide_acc: true, row64, code32 }).map_err(BackendError::Device)?;
        let input_bound = match &shard.plastic {
            // procedural input has no bound worked out
            _ if !shard.procedural.is_empty() || !shard.rows.is_empty() => None,
            // a plastic synapse can reach weight 255: the bound of its group, summed on the device
            Some(p) => {
                let bounds = s.clone_htod(&p.bounds(&shard.contributions)).map_err(e("uploading the plastic bounds"))?;
                Some(summed_input_bound(&ctx, s, &wide_kernels, &Net { table: dptr(&bounds, s), ..net }, &misc, synapses)?)
            }
            // built on the GPU: the input of the neurons' blocks, summed as the rows were drawn,
            // bounds each neuron's; summed neuron by neuron only where a block's exceeds i32
            None if res.bound.is_some_and(|b| b <= i32::MAX as u64) => res.bound,
            None => Some(summed_input_bound(&ctx, s, &wide_kernels, &net, &misc, synapses)?),
        };
        let wide_acc = input_bound.is_none_or(|b| b > i32::MAX as u64);
        // the bins take half of what is left, past the reserve
        // one GPU of several in this process bins onto the whole brain where the whole brain
        // bins (every GPU alike), else onto its own neurons where they bin
        let spread = shard.together && ProcBins::wanted(n_total, &shard.procedural);
        let proc_bins = if !path.resident() && (spread || ProcBins::wanted(n, &shard.procedural)) {
            let (free, _) = ctx.mem_get_info().map_err(dev_err("free memory"))?;
            let spread = spread.then_some(n_total);
            Some(ProcBins::new(s, n, spread, &shard.procedural, (free as u64).saturating_sub(2 * RESERVE_BYTES) / 2)?)
        } else {
            None
        };
        let mut net = net;
        net.proc_binned = proc_bins.is_some() as u32;
        let learning = match &shard.plastic {
            Some(p) => {
                let mut l = GpuLearning::new(s, &shard.part, synapses, p, n_total)?;
                l.params.burst = net.burst;
                Some(l)
            }
            None => None,
        };
        let kernels =
            if wide_acc { wide_kernels } else { Kernels::load(&ctx, Variant { wide_acc, row64, code32 }).map_err(BackendError::Device)? };
        s.memset_zeros(&mut inj).map_err(e("clearing"))?;
        s.memset_zeros(&mut misc).map_err(e("clearing"))?;
        s.synchronize().map_err(e("building the brain on the GPU"))?;
        tracing::debug!(device, rows_s = t_up, state_s = t0.elapsed().as_secs_f64() - t_up, "CUDA: a GPU's brain placed");

        let sm = ctx.attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT).map_err(e("attribute"))? as u32;
        // one GPU (in the resident kernel or as graphs): a large brain's propagation tiled
        // (`tiles.rs`), where its bins fit beside the brain
        let procedural = !shard.procedural.is_empty() || !shard.rows.is_empty();
        let tiled = matches!(path, Path::Resident | Path::Graphs) && Tiles::wanted(n, wide_acc, procedural, table_len, tile_shape) && {
            let (free, _) = ctx.mem_get_info().map_err(e("free memory"))?;
            Tiles::bytes_for(n, synapses, 2 * sm, table_len, tile_shape) + RESERVE_BYTES <= free as u64
        };
        let smem = if tiled { Tiles::shared_bytes_of(n, table_len, tile_shape) } else { 0 };
        let resident = match early {
            Some(_) => {
                let four = forced.four_blocks || Resident::wants_four_blocks(n, learning.is_some(), tiled);
                let func = if four {
                    Variant { wide_acc, row64, code32 }.resident_four_blocks(&ctx).map_err(BackendError::Device)?
                } else {
                    kernels.resident.clone()
                };
                Some(Resident::new(&ctx, func, sm, n, four, smem).map_err(BackendError::Device)?)
            }
            None => None,
        };
        // tile_bin's grid: the resident kernel's, or two blocks an SM
        let tiles = match &resident {
            _ if !tiled => None,
            Some(r) => Some(Tiles::new(s, n, synapses, r.blocks(), table_len, tile_shape)?),
            None => Some(Tiles::new(s, n, synapses, 2 * sm, table_len, tile_shape)?),
        };
        let exchange = if path == Path::Linked { Some(Exchange::new(s, n_total)?) } else { None };
        let trace = std::env::var("NEUROBURST_CUDA_TRACE").is_ok_and(|v| v == "1").then(Trace::default);
        let info = BackendInfo {
            backend: "cuda".into(),
            device: format!("{name}, {} MiB, device {device}", total_mem >> 20),
            memory_bytes: plan.total_bytes + proc_bins.as_ref().map_or(0, ProcBins::bytes) + tiles.as_ref().map_or(0, Tiles::bytes),
            bytes_per_synapse: plan.bytes_per_synapse(),
        };
        let rows = n_total as usize + 1;
        let mut b = CudaBackend {
            ctx,
            stream,
            state: GpuState {
                v,
                rcc,
                acc,
                inj,
                inj_mask,
                fired,
                offs,
                shifts,
                misc,
                res,
                rows,
                multi: None,
                early,
                learning,
                proc_bins,
                tiles,
                net,
                neurons: n,
                base,
                count_shift,
                input_bound,
                wide_acc,
            },
            io: HostIo {
                host_in,
                dev_in,
                host_out,
                out_cap,
                out_ids: Vec::new(),
                out_v: Vec::new(),
                order: Default::default(),
                rb_raw: Vec::new(),
                trace,
            },
            launch: Launch {
                kernels,
                path,
                graphs: Vec::new(),
                pre: Vec::new(),
                folds: Vec::new(),
                seat: None,
                pre_pending: false,
                inj_grid: n.div_ceil(BLOCK * 16).clamp(1, sm * 2),
                prop_grid: sm * 8,
                cur: 0,
                burst: 0,
                resident,
                exchange,
                timing: None,
                sm,
            },
            info,
            plan,
        };
        if path == Path::Graphs {
            b.capture_graphs()?;
        }
        tracing::debug!(wide_acc = b.state.wide_acc, ?path, "CUDA backend ready");
        Ok(b)
    }

    /// Stop the resident kernel, if it runs (before anything reads or replaces device state).
    pub(super) fn park(&mut self) -> Result<(), BackendError> {
        match &mut self.launch.resident {
            Some(r) => {
                self.ctx.bind_to_thread().map_err(dev_err("binding the context"))?;
                r.park()
            }
            None => Ok(()),
        }
    }

    /// What the brain occupies on the GPU.
    pub fn plan(&self) -> &MemoryPlan {
        &self.plan
    }

    /// Mean host time per burst of each phase, when NEUROBURST_CUDA_TRACE=1 (and resets the sums);
    /// with the resident kernel parked, its block 0's device time ahead of the bursts by phase.
    pub fn trace_summary(&mut self) -> Option<String> {
        let tr = std::mem::take(self.io.trace.as_mut()?);
        Some(tr.summary(self.launch.resident.as_ref(), self.state.tiles.is_some()))
    }

    /// Bursts whose injection the copy engine sent into device memory while the resident kernel
    /// still worked ahead (back to back; docs/cuda.md).
    pub fn injections_sent_ahead(&self) -> u64 {
        self.launch.resident.as_ref().map_or(0, |r| r.handovers().sent_ahead)
    }

    /// Bursts whose injection, past the size always read where it lies, an idle resident kernel
    /// read where it lies (paced input; docs/cuda.md).
    pub fn injections_read_where_they_lie(&self) -> u64 {
        self.launch.resident.as_ref().map_or(0, |r| r.handovers().read_where_they_lie)
    }

    /// Whether the synaptic accumulators are 64-bit (the brain's input bound exceeds i32).
    pub fn wide_accumulators(&self) -> bool {
        self.state.wide_acc
    }

    /// The largest synaptic input of one burst a neuron can get, or a bound of it that fits i32
    /// (built on the GPU: its block's); None: procedural synapses, whose input has no bound.
    pub fn input_bound(&self) -> Option<u64> {
        self.state.input_bound
    }

    /// Neurons of the whole brain.
    pub(super) fn n_total(&self) -> u32 {
        (self.state.rows - 1) as u32
    }
}

impl Backend for CudaBackend {
    fn info(&self) -> BackendInfo {
        let mut info = self.info.clone();
        match self.launch.path {
            Path::Resident if self.state.tiles.is_some() => info.device += ", resident kernel, tiled propagation",
            Path::Resident => {
                info.device += ", resident kernel";
                if self.launch.resident.as_ref().is_some_and(Resident::four_blocks) {
                    info.device += ", four blocks an SM";
                }
            }
            Path::Graphs if self.state.tiles.is_some() => info.device += ", graphs, tiled propagation",
            Path::Graphs => info.device += ", graphs",
            Path::Shard | Path::Linked => {}
        }
        info
    }

    fn burst(&mut self, input: InjectionSlice<'_>) -> Result<BurstOutput<'_>, BackendError> {
        let staged = self.stage(input)?;
        if !staged.in_range {
            return Err(out_of_range(input, self.state.base..self.state.base + self.state.neurons));
        }
        self.launch(staged)
    }

    fn snapshot(&mut self) -> Result<NeuronState, BackendError> {
        self.snapshot_impl()
    }

    fn restore(&mut self, st: &NeuronState) -> Result<(), BackendError> {
        self.restore_impl(st)
    }

    fn set_learning(&mut self, on: bool) -> Result<(), BackendError> {
        self.switch_learning(on)
    }

    fn time_device(&mut self) -> bool {
        self.start_timing()
    }

    fn device_us(&mut self) -> Option<f64> {
        self.timed_us()
    }

    /// The resident kernel reads large id columns where the caller wrote them: page-lock the
    /// input's id column.
    fn prepare_input(&mut self, input: &mut Injections) {
        let Some(r) = &self.launch.resident else { return };
        let ids = LEND_IDS_MIN.max(self.state.neurons as usize / 16);
        let (stream, parker) = (self.stream.clone(), r.parker());
        // locking host pages waits for an idle device (and unlocking, should the column move)
        if let Err(e) = self.park() {
            tracing::error!("{e}");
        }
        input.hold_ids(ids, |ptr, bytes| super::memory::ColumnLock::new(&stream, Some(parker), ptr, bytes).map(|l| Box::new(l) as _));
        tracing::debug!(ids, locked = input.hold().is_some(), "CUDA: the input's id column page-locked");
    }
}

impl Drop for CudaBackend {
    fn drop(&mut self) {
        let _ = self.ctx.bind_to_thread();
        // the resident kernel reads our buffers: it must return before they are freed
        let _ = self.park();
        if !self.launch.path.sharded() {
            if let Some(s) = self.trace_summary() {
                eprintln!("cuda trace: {s}");
            }
        }
        let _ = self.stream.synchronize();
    }
}
