//! The connectome on one GPU: what a GPU gets (`GpuShard`), and its upload (or its build on the
//! GPU, `build.rs`) into the buffers the kernels read (`Resources`).

use std::sync::Arc;

use cudarc::driver::{sys, CudaContext, CudaSlice, CudaStream, LaunchConfig, PushKernelArg};

use crate::backend::cuda::layout::{as_bytes, dev_err, dptr, Net, ProcMap, BLOCK, M_BOUND, PAIRS_PER_CHUNK};
use crate::backend::cuda::module::Kernels;
use crate::backend::BackendError;
use crate::brain::Brain;
use crate::connectome::flat::{FlatArea, FlatMap};
use crate::connectome::stream::Streamed;
use crate::connectome::{Codes, FlatRows, Part, Plastic};
use crate::model::AreaParams;

/// What one GPU of several gets: its part of the connectome (the synapses onto its neurons, rows
/// for every source of the brain) and the brain's areas.
pub struct GpuShard {
    pub part: Part,
    pub params: Vec<AreaParams>,
    pub contributions: Vec<i32>,
    /// Neurons of the whole brain.
    pub neurons: u32,
    /// The brain's plastic mappings, when it learns.
    pub plastic: Option<Plastic>,
    /// The brain's procedural mappings in closed form, drawn again on the GPU a draw per thread.
    pub(in crate::backend::cuda) procedural: Vec<ProcMap>,
    /// Its other procedural mappings, drawn again row by row (`kernels/rows.cu`).
    pub(in crate::backend::cuda) rows: FlatRows,
    /// Some: the synapses are built on the GPU from this (`part` holds none).
    pub(in crate::backend::cuda) recipe: Option<crate::backend::cuda::build::on_gpu::Recipe>,
    /// One GPU of several built on the GPUs: its rows' pointers, counted there first.
    pub(in crate::backend::cuda) part_rows: Option<crate::backend::cuda::build::on_gpu::PartRows>,
    /// One GPU of several built on the GPUs: their meeting, and this GPU's index in it.
    pub(in crate::backend::cuda) parts: Option<(Arc<crate::backend::cuda::build::on_gpu::Parts>, usize)>,
    /// Some: the synapses are drawn on the host chunk by chunk and copied to the GPU (part
    /// `.1` of the stream; `part` holds its row pointers only).
    pub(in crate::backend::cuda) streamed: Option<(Arc<Streamed>, usize)>,
    /// One GPU of several in this process: its binned procedural synapses are summed with the
    /// others' (`procbin.rs`, `Spread`).
    pub(in crate::backend::cuda) together: bool,
}

/// Where a brain's synapses are made.
pub(in crate::backend::cuda) enum Placement {
    /// Built on the host (the brain's parts hold them).
    Host,
    /// Built on the GPU from closed forms (see `build.rs`), with a progress bar when `progress`.
    OnGpu { progress: bool },
    /// Drawn on the host a few chunks at a time and copied to the GPU (see
    /// [`crate::connectome::stream`]).
    Streamed(Arc<Streamed>),
}

impl GpuShard {
    /// The synapses this GPU stores.
    pub(in crate::backend::cuda) fn synapses(&self) -> u64 {
        match (&self.recipe, &self.streamed) {
            (Some(r), _) => self.part_rows.as_ref().map_or(r.synapses, |p| p.synapses),
            (_, Some((st, p))) => st.synapses(*p),
            _ => self.part.synapses(),
        }
    }

    /// Bytes per code on the device.
    pub(in crate::backend::cuda) fn code_bytes(&self) -> u64 {
        match (&self.recipe, &self.streamed) {
            (Some(_), _) => 2,
            (_, Some((st, _))) => 2 + 2 * st.wide as u64,
            _ => self.part.codes.bytes_per_code(),
        }
    }
}

/// The procedural mappings of `c` for the GPU: those in closed form, drawn one synapse per thread,
/// and the others, drawn row by row. An error names a mapping that has neither form (the opener
/// keeps those stored).
pub(in crate::backend::cuda) fn gpu_procedural(c: &crate::connectome::Connectome) -> Result<(Vec<ProcMap>, FlatRows), BackendError> {
    let Some(p) = &c.procedural else { return Ok((Vec::new(), FlatRows::default())) };
    let rows = p.flat_rows().map_err(BackendError::Device)?;
    Ok((p.closed_forms().iter().map(ProcMap::from).collect(), rows))
}

/// The connectome and the areas on the device (read by the kernels through `Net`).
pub(in crate::backend::cuda) struct Resources {
    pub(in crate::backend::cuda) row_ptr: CudaSlice<u8>,
    pub(in crate::backend::cuda) targets: CudaSlice<u32>,
    /// The synapses' codes (learning rewrites them).
    pub(in crate::backend::cuda) codes: CudaSlice<u8>,
    pub(in crate::backend::cuda) _table: CudaSlice<i32>,
    pub(in crate::backend::cuda) _areas: CudaSlice<u8>,
    pub(in crate::backend::cuda) _area_end: CudaSlice<u32>,
    pub(in crate::backend::cuda) _rb: CudaSlice<u32>,
    pub(in crate::backend::cuda) _chunk_first: CudaSlice<u32>,
    pub(in crate::backend::cuda) _proc: CudaSlice<u8>,
    /// The flat rows' areas, maps and list (`rows.cu`).
    pub(in crate::backend::cuda) _rows: [CudaSlice<u8>; 3],
    /// Built on the GPU: the largest input of one burst a neuron can get (summed as drawn).
    pub(in crate::backend::cuda) bound: Option<u64>,
}

/// The whole brain as GPU 0's part. `Placement::OnGpu`: a brain built with every mapping
/// procedural, every one in closed form, is stored by building its rows on the GPU (see
/// `build.rs`). `Placement::Streamed`: a brain planned by [`crate::connectome::stream::plan`].
pub(in crate::backend::cuda) fn whole(brain: Brain, placement: Placement) -> Result<GpuShard, BackendError> {
    let (on_gpu, streamed) = match placement {
        Placement::Host => (None, None),
        Placement::OnGpu { progress } => (Some(progress), None),
        Placement::Streamed(s) => (None, Some((s, 0))),
    };
    let n = brain.layout.neurons;
    let (mut procedural, rows) = gpu_procedural(&brain.connectome)?;
    let c = &brain.connectome;
    let recipe = if on_gpu.is_some() && c.synapses() == 0 && c.plastic.is_none() && !procedural.is_empty() && rows.is_empty() {
        crate::backend::cuda::build::on_gpu::Recipe::new(procedural.clone(), on_gpu == Some(true))
    } else {
        None
    };
    if recipe.is_some() {
        procedural.clear();
    }
    let mut conn = brain.connectome;
    let part = if recipe.is_some() || (streamed.is_none() && conn.parts.is_empty()) {
        // built on the GPU, or nothing stored (every mapping drawn again): no row on the host
        Part { targets_range: 0..n, ..Default::default() }
    } else {
        if streamed.is_none() {
            conn.repartition(std::slice::from_ref(&(0..n)));
        } else if conn.parts.len() != 1 {
            return Err(BackendError::Device(format!("a streamed brain for one GPU has one part, not {}", conn.parts.len())));
        }
        conn.parts.pop().unwrap_or_else(|| Part { targets_range: 0..n, row_ptr: vec![0; n as usize + 1], ..Default::default() })
    };
    let contributions = recipe.as_ref().map_or(conn.contributions, |r| r.table.clone());
    Ok(GpuShard {
        part,
        params: brain.layout.params,
        contributions,
        neurons: n,
        plastic: conn.plastic,
        procedural,
        rows,
        recipe,
        part_rows: None,
        parts: None,
        streamed,
        together: false,
    })
}

/// Upload this GPU's part of the connectome and the areas; the read-back ranges of this GPU.
pub(in crate::backend::cuda) fn upload(
    s: &Arc<CudaStream>,
    shard: &mut GpuShard,
    rb: &[u32],
    row64: bool,
) -> Result<Resources, BackendError> {
    let synapses = shard.synapses();
    let part_rows = shard.part_rows.take();
    let shard = &*shard;
    let part = &shard.part;
    let e = |w: &'static str| dev_err(w);
    let row_ptr = || {
        if part.row_ptr.is_empty() {
            // nothing stored: every row empty
            let width = if row64 { 8 } else { 4 };
            return s.alloc_zeros::<u8>((shard.neurons as usize + 1) * width).map_err(e("alloc row pointers"));
        }
        if row64 {
            s.clone_htod(as_bytes(&part.row_ptr)).map_err(e("uploading row pointers"))
        } else {
            let r32: Vec<u32> = part.row_ptr.iter().map(|&x| x as u32).collect();
            s.clone_htod(as_bytes(&r32)).map_err(e("uploading row pointers"))
        }
    };
    let mut bound = None;
    let (_row_ptr, _targets, _codes) = match (&shard.recipe, &shard.streamed) {
        (Some(r), _) => {
            let b = match (part_rows, &shard.parts) {
                (Some(p), Some((parts, me))) => parts.build(*me, s, r, p, r.progress)?,
                _ => crate::backend::cuda::build::on_gpu::materialize(s, r, shard.neurons, row64, r.progress)?,
            };
            bound = Some(b.bound);
            (b.row_ptr, b.targets, b.codes)
        }
        (None, Some((st, p))) => {
            let n = st.synapses(*p) as usize;
            let code_bytes = shard.code_bytes() as usize;
            let mut targets: CudaSlice<u32> = s.alloc_zeros(n.max(1)).map_err(e("alloc synapse targets"))?;
            let mut codes: CudaSlice<u8> = s.alloc_zeros((n * code_bytes).max(4)).map_err(e("alloc codes"))?;
            st.fill(*p, &part.row_ptr, |at, t, c| {
                let at = at as usize;
                s.memcpy_htod(t, &mut targets.slice_mut(at..at + t.len())).map_err(e("uploading synapse targets"))?;
                s.memcpy_htod(c, &mut codes.slice_mut(at * code_bytes..at * code_bytes + c.len())).map_err(e("uploading codes"))
            })?;
            (row_ptr()?, targets, codes)
        }
        (None, None) => {
            let row_ptr = row_ptr()?;
            let targets = if part.targets.is_empty() { s.alloc_zeros(1) } else { s.clone_htod(&part.targets[..]) }
                .map_err(e("uploading synapse targets"))?;
            let codes = match &part.codes {
                Codes::U32(c) if !c.is_empty() => s.clone_htod(as_bytes(&c[..])),
                Codes::U16(c) if !c.is_empty() => s.clone_htod(as_bytes(&c[..])),
                _ => s.alloc_zeros(4),
            }
            .map_err(e("uploading codes"))?;
            (row_ptr, targets, codes)
        }
    };
    let up = |b: &[u8]| if b.is_empty() { s.alloc_zeros(8) } else { s.clone_htod(b) }.map_err(e("uploading the procedural rows"));
    let table: Vec<i32> = if shard.contributions.is_empty() { vec![0] } else { shard.contributions.clone() };
    let ends: Vec<u32> = shard.params.iter().map(|p| p.first + p.count).collect();
    Ok(Resources {
        row_ptr: _row_ptr,
        targets: _targets,
        codes: _codes,
        _table: s.clone_htod(&table).map_err(e("uploading contributions"))?,
        _areas: s.clone_htod(as_bytes::<AreaParams>(&shard.params)).map_err(e("uploading areas"))?,
        _area_end: s.clone_htod(&ends).map_err(e("uploading areas"))?,
        _rb: s.clone_htod(rb).map_err(e("uploading readback ranges"))?,
        _chunk_first: s.alloc_zeros(synapses as usize / PAIRS_PER_CHUNK + 2).map_err(e("alloc chunk index"))?,
        _proc: if shard.procedural.is_empty() { s.alloc_zeros(8) } else { s.clone_htod(as_bytes::<ProcMap>(&shard.procedural)) }
            .map_err(e("uploading the procedural mappings"))?,
        _rows: [
            up(as_bytes::<FlatArea>(&shard.rows.areas))?,
            up(as_bytes::<FlatMap>(&shard.rows.maps))?,
            up(as_bytes::<i64>(&shard.rows.list))?,
        ],
        bound,
    })
}

/// The largest synaptic input one burst can give a neuron, summed on the device (`in_bound`, into
/// `scratch`: N zeroed u64).
pub(in crate::backend::cuda) fn summed_input_bound(
    ctx: &Arc<CudaContext>,
    s: &Arc<CudaStream>,
    k: &Kernels,
    net: &Net,
    misc: &CudaSlice<u64>,
    synapses: u64,
) -> Result<u64, BackendError> {
    if synapses == 0 {
        return Ok(0);
    }
    let e = |w: &'static str| dev_err(w);
    let sm = ctx.attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT).map_err(e("attribute"))? as u32;
    let cfg = LaunchConfig { grid_dim: (sm * 8, 1, 1), block_dim: (BLOCK, 1, 1), shared_mem_bytes: 0 };
    let scratch = net.inj;
    // SAFETY: `in_bound` reads `synapses` targets/codes (allocated with that length) and adds into
    // `scratch` (the injection array, N u64, zeroed), indexed by valid targets.
    unsafe { s.launch_builder(&k.in_bound).arg(net).arg(&scratch).arg(&synapses).launch(cfg) }.map_err(e("launching in_bound"))?;
    let bound_p = dptr(misc, s) + 8 * M_BOUND as u64;
    let cfg = LaunchConfig { grid_dim: (sm * 4, 1, 1), block_dim: (BLOCK, 1, 1), shared_mem_bytes: 0 };
    // SAFETY: `max_reduce` reads N u64 of `scratch` and writes one u64 in `misc`.
    unsafe { s.launch_builder(&k.max_reduce).arg(&scratch).arg(&net.n).arg(&bound_p).launch(cfg) }.map_err(e("launching max_reduce"))?;
    let m = s.clone_dtoh(misc).map_err(e("reading the input bound"))?;
    tracing::debug!(input_bound = m[M_BOUND], "CUDA: the brain's largest input of one burst");
    Ok(m[M_BOUND])
}
