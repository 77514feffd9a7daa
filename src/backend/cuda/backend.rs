//! [`CudaBackend`]: the brain on one GPU. See `mod.rs` for the design and `kernels/burst.cu` for
//! the kernels.

use std::sync::Arc;
use std::time::Duration;

use cudarc::driver::{result, sys, CudaContext, CudaGraph, CudaSlice, CudaStream, DevicePtr, DeviceRepr, LaunchConfig, PushKernelArg};

use super::memory::{MemoryPlan, Pinned, RESERVE_BYTES};
use super::module::{Kernels, Variant};
use crate::backend::{Backend, BackendError, BackendInfo, BurstOutput, Readback};
use crate::brain::Brain;
use crate::connectome::{Codes, Connectome};
use crate::model::{AreaParams, Injection, NeuronState};

const BLOCK: u32 = 256;
/// Neurons per thread of `step` (STEP_ITEMS in burst.cu).
const STEP_ITEMS: u32 = 4;
/// PAIRS_PER_WARP in burst.cu.
pub(crate) const PAIRS_PER_CHUNK: usize = 256;
/// Size of the output header (`OutHeader` in burst.cu): burst, fired_total, rb_count, pairs.
const OUT_HEADER: usize = 32;
/// Slots of the `misc` counters: burst, rb_counter, ticket, counter side 0, counter side 1, bound.
const M_BURST: usize = 0;
const M_RB: usize = 1;
const M_TICKET: usize = 2;
const M_COUNTER: usize = 3;
const M_BOUND: usize = 5;

/// Mirror of `struct Net` in burst.cu.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct Net {
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
    host_out: u64,
    out_cap: u64,
    n: u32,
    n_areas: u32,
    n_rb: u32,
    count_shift: u32,
}
// SAFETY: plain old data with the layout of the kernel's `Net`.
unsafe impl DeviceRepr for Net {}

/// Mirror of `struct Side` in burst.cu.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct Side {
    fired: u64,
    offs: u64,
    counter: u64,
}
// SAFETY: plain old data with the layout of the kernel's `Side`.
unsafe impl DeviceRepr for Side {}

fn dev_err(what: &str) -> impl Fn(cudarc::driver::DriverError) -> BackendError + '_ {
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
    // host side
    host_in: Pinned,
    /// Device copy of the injection (the GPU reading mapped host memory block by block is slow).
    dev_in: CudaSlice<u8>,
    host_out: Pinned,
    out_cap: usize,
    net: Net,
    graphs: Vec<CudaGraph>,
    prop_grid: u32,
    /// Side (fired list) the next burst reads.
    cur: usize,
    burst: u64,
    neurons: u32,
    count_shift: u32,
    out_ids: Vec<u32>,
    out_v: Vec<i64>,
    keys: Vec<u64>,
    info: BackendInfo,
    plan: MemoryPlan,
    wide_acc: bool,
    sync_stream: bool,
    trace: Option<Trace>,
}

/// Where the time of a burst goes (NEUROBURST_CUDA_TRACE=1): host phases and GPU time by events.
#[derive(Debug)]
struct Trace {
    bursts: u64,
    write_s: f64,
    launch_s: f64,
    wait_s: f64,
    post_s: f64,
    gpu_ms: f64,
    spins: u64,
    ev: Option<(cudarc::driver::CudaEvent, cudarc::driver::CudaEvent)>,
}

// SAFETY: the raw pointers (pinned buffers, graphs) belong to this backend alone; every call binds
// the context to the calling thread first, and `&mut self` serialises the calls.
unsafe impl Send for CudaBackend {}

/// One CSR over all target parts: absolute targets, rows in source order.
struct Csr<'a> {
    row_ptr: std::borrow::Cow<'a, [u64]>,
    targets: std::borrow::Cow<'a, [u32]>,
    codes16: Option<std::borrow::Cow<'a, [u16]>>,
    codes32: Option<std::borrow::Cow<'a, [u32]>>,
}

fn merged(conn: &Connectome, neurons: u32) -> Csr<'_> {
    use std::borrow::Cow;
    if conn.parts.len() == 1 && conn.parts[0].targets_range.start == 0 {
        let p = &conn.parts[0];
        let (c16, c32) = match &p.codes {
            Codes::U16(c) => (Some(Cow::Borrowed(&c[..])), None),
            Codes::U32(c) => (None, Some(Cow::Borrowed(&c[..]))),
        };
        return Csr { row_ptr: Cow::Borrowed(&p.row_ptr), targets: Cow::Borrowed(&p.targets), codes16: c16, codes32: c32 };
    }
    let wide = conn.parts.iter().any(|p| matches!(p.codes, Codes::U32(_)));
    let total = conn.synapses() as usize;
    let mut row_ptr = Vec::with_capacity(neurons as usize + 1);
    let mut targets = Vec::with_capacity(total);
    let mut c16 = Vec::new();
    let mut c32 = Vec::new();
    row_ptr.push(0u64);
    for s in 0..neurons {
        for p in &conn.parts {
            let base = p.targets_range.start;
            let row = if p.row_ptr.len() > s as usize + 1 { p.row(s) } else { 0..0 };
            for i in row {
                targets.push(p.targets[i] + base);
                if wide {
                    c32.push(p.codes.get(i));
                } else {
                    c16.push(p.codes.get(i) as u16);
                }
            }
        }
        row_ptr.push(targets.len() as u64);
    }
    Csr {
        row_ptr: Cow::Owned(row_ptr),
        targets: Cow::Owned(targets),
        codes16: (!wide).then_some(Cow::Owned(c16)),
        codes32: wide.then_some(Cow::Owned(c32)),
    }
}

fn as_bytes<T: Copy>(v: &[T]) -> &[u8] {
    // SAFETY: any initialised plain-old-data slice can be viewed as bytes.
    unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, std::mem::size_of_val(v)) }
}

fn dptr<T>(s: &CudaSlice<T>, stream: &CudaStream) -> u64 {
    let (p, _sync) = s.device_ptr(stream);
    p
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
        Self::build(brain, readback, device)
    }

    fn build(brain: Brain, readback: Readback, device: usize) -> Result<CudaBackend, BackendError> {
        let ctx = CudaContext::new(device).map_err(dev_err("creating the context"))?;
        // SAFETY: one stream does all the work; no cross-stream event tracking is needed.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.new_stream().map_err(dev_err("creating a stream"))?;
        let name = ctx.name().map_err(dev_err("device name"))?;
        let total_mem = ctx.total_mem().map_err(dev_err("device memory"))? as u64;
        let n = brain.layout.neurons;
        let plan = MemoryPlan::of(&brain);
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
        let synapses = brain.connectome.synapses();
        let count_bits = 64 - (n as u64).leading_zeros();
        let count_shift = 64 - count_bits;
        if count_shift < 63 && synapses >= 1u64 << count_shift {
            return Err(BackendError::Device(format!("{synapses} synapses over {n} neurons overflow the packed fired counter")));
        }
        let csr = merged(&brain.connectome, n);
        let row64 = plan.row_ptr_bytes == 8;
        let code32 = csr.codes32.is_some();
        let s = &stream;
        let e = |w: &'static str| dev_err(w);
        // connectome
        let row_ptr: CudaSlice<u8> = if row64 {
            s.clone_htod(as_bytes(&csr.row_ptr)).map_err(e("uploading row pointers"))?
        } else {
            let r32: Vec<u32> = csr.row_ptr.iter().map(|&x| x as u32).collect();
            s.clone_htod(as_bytes(&r32)).map_err(e("uploading row pointers"))?
        };
        let targets: CudaSlice<u32> = if csr.targets.is_empty() {
            s.alloc_zeros(1).map_err(e("alloc"))?
        } else {
            s.clone_htod(&csr.targets[..]).map_err(e("uploading synapse targets"))?
        };
        let codes: CudaSlice<u8> = match (&csr.codes16, &csr.codes32) {
            (_, Some(c)) if !c.is_empty() => s.clone_htod(as_bytes(&c[..])).map_err(e("uploading codes"))?,
            (Some(c), _) if !c.is_empty() => s.clone_htod(as_bytes(&c[..])).map_err(e("uploading codes"))?,
            _ => s.alloc_zeros(4).map_err(e("alloc"))?,
        };
        drop(csr);
        let table_host: Vec<i32> = if brain.connectome.contributions.is_empty() { vec![0] } else { brain.connectome.contributions.clone() };
        let table: CudaSlice<i32> = s.clone_htod(&table_host).map_err(e("uploading contributions"))?;
        let areas: CudaSlice<u8> = s.clone_htod(as_bytes::<AreaParams>(&brain.layout.params)).map_err(e("uploading areas"))?;
        let ends: Vec<u32> = brain.layout.params.iter().map(|p| p.first + p.count).collect();
        let area_end: CudaSlice<u32> = s.clone_htod(&ends).map_err(e("uploading areas"))?;
        let ranges = readback_ranges(&readback, n);
        drop(readback);
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
        let inj: CudaSlice<u64> = s.alloc_zeros(nn).map_err(e("alloc injection"))?;
        let inj_mask: CudaSlice<u32> = s.alloc_zeros(nn.div_ceil(32) + 1).map_err(e("alloc injection mask"))?;
        let fired = [s.alloc_zeros(nn).map_err(e("alloc fired"))?, s.alloc_zeros(nn).map_err(e("alloc fired"))?];
        let offs = [s.alloc_zeros(nn).map_err(e("alloc offsets"))?, s.alloc_zeros(nn).map_err(e("alloc offsets"))?];
        let misc: CudaSlice<u64> = s.alloc_zeros(64).map_err(e("alloc counters"))?;
        let chunk_first: CudaSlice<u32> = s.alloc_zeros(synapses as usize / PAIRS_PER_CHUNK + 2).map_err(e("alloc chunk index"))?;
        let host_in = Pinned::new(&ctx, 16 + 16 * 4096, false).map_err(e("pinned injection buffer"))?;
        let dev_in: CudaSlice<u8> = s.alloc_zeros(host_in.len()).map_err(e("alloc injection buffer"))?;
        let out_bytes = OUT_HEADER + (out_cap * 4).div_ceil(8) * 8 + out_cap * 8;
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
            host_out: host_out.dev(),
            out_cap: out_cap as u64,
            n,
            n_areas: brain.layout.params.len() as u32,
            n_rb,
            count_shift,
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
            host_in,
            dev_in,
            host_out,
            out_cap,
            net,
            graphs: Vec::new(),
            prop_grid: sm * 8,
            cur: 0,
            burst: 0,
            neurons: n,
            count_shift,
            out_ids: Vec::new(),
            out_v: Vec::new(),
            keys: Vec::new(),
            info,
            plan,
            wide_acc,
            sync_stream: std::env::var("NEUROBURST_CUDA_SYNC").is_ok_and(|v| v == "stream"),
            trace: None,
        };
        if std::env::var("NEUROBURST_CUDA_TRACE").is_ok_and(|v| v == "1") {
            let ev = (
                b.ctx.new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT)).map_err(dev_err("event"))?,
                b.ctx.new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT)).map_err(dev_err("event"))?,
            );
            b.trace = Some(Trace { bursts: 0, write_s: 0.0, launch_s: 0.0, wait_s: 0.0, post_s: 0.0, gpu_ms: 0.0, spins: 0, ev: Some(ev) });
        }
        b.capture_graphs()?;
        tracing::debug!(wide_acc = b.wide_acc, input_bound = bound, "CUDA backend ready");
        Ok(b)
    }

    /// What the brain occupies on the device.
    pub fn plan(&self) -> &MemoryPlan {
        &self.plan
    }

    /// Mean time per burst of each phase, when NEUROBURST_CUDA_TRACE=1 (and resets the sums).
    pub fn trace_summary(&mut self) -> Option<String> {
        let tr = self.trace.as_mut()?;
        let n = tr.bursts.max(1) as f64;
        let s = format!(
            "per burst: write {:.1} us, launch {:.1} us, wait {:.1} us, post {:.1} us, GPU (events) {:.1} us, spins {:.0}",
            tr.write_s / n * 1e6,
            tr.launch_s / n * 1e6,
            tr.wait_s / n * 1e6,
            tr.post_s / n * 1e6,
            tr.gpu_ms / n * 1e3,
            tr.spins as f64 / n
        );
        tr.bursts = 0;
        tr.write_s = 0.0;
        tr.launch_s = 0.0;
        tr.wait_s = 0.0;
        tr.post_s = 0.0;
        tr.gpu_ms = 0.0;
        tr.spins = 0;
        Some(s)
    }

    /// Whether the synaptic accumulators are 64-bit (the brain's input bound exceeds i32).
    pub fn wide_accumulators(&self) -> bool {
        self.wide_acc
    }

    fn side(&self, i: usize) -> Side {
        Side {
            fired: dptr(&self.fired[i], &self.stream),
            offs: dptr(&self.offs[i], &self.stream),
            counter: dptr(&self.misc, &self.stream) + 8 * (M_COUNTER + i) as u64,
        }
    }

    /// Capture the two graphs: burst reading side 0 and writing side 1, and the reverse.
    fn capture_graphs(&mut self) -> Result<(), BackendError> {
        self.ctx.bind_to_thread().map_err(dev_err("binding the context"))?;
        self.graphs.clear();
        let net = self.net;
        let step_cfg =
            LaunchConfig { grid_dim: (self.neurons.div_ceil(BLOCK * STEP_ITEMS), 1, 1), block_dim: (BLOCK, 1, 1), shared_mem_bytes: 0 };
        let one = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (32, 1, 1), shared_mem_bytes: 0 };
        let prop_cfg = LaunchConfig { grid_dim: (self.prop_grid, 1, 1), block_dim: (BLOCK, 1, 1), shared_mem_bytes: 0 };
        for r in 0..2 {
            let rd = self.side(r);
            let wr = self.side(1 - r);
            let s = &self.stream;
            s.begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL).map_err(dev_err("begin capture"))?;
            // SAFETY: every pointer in `net`, `rd` and `wr` points into buffers owned by `self` that
            // outlive the graphs (rebuilt whenever a buffer is replaced); the kernels index them
            // within the sizes allocated in `build` (N neurons, N fired slots, the synapse count).
            let l1 = unsafe { s.launch_builder(&self.kernels.propagate).arg(&net).arg(&rd).arg(&wr).launch(prop_cfg) };
            // SAFETY: as above.
            let l2 = unsafe { s.launch_builder(&self.kernels.step).arg(&net).arg(&wr).launch(step_cfg) };
            // SAFETY: as above; one thread reads two counters and writes the output header.
            let l3 = unsafe { s.launch_builder(&self.kernels.publish).arg(&net).arg(&wr).launch(one) };
            let g = s.end_capture(sys::CUgraphInstantiate_flags(0));
            l1.map_err(dev_err("capturing propagate"))?;
            l2.map_err(dev_err("capturing step"))?;
            l3.map_err(dev_err("capturing publish"))?;
            let g = g.map_err(dev_err("instantiating the burst graph"))?.ok_or_else(|| BackendError::Device("empty graph".into()))?;
            g.upload().map_err(dev_err("uploading the burst graph"))?;
            self.graphs.push(g);
        }
        Ok(())
    }

    /// Make the injection buffer hold `bytes`; replaces it (and the graphs) when too small.
    fn ensure_in_capacity(&mut self, bytes: usize) -> Result<(), BackendError> {
        if bytes <= self.host_in.len() {
            return Ok(());
        }
        self.stream.synchronize().map_err(dev_err("synchronising"))?;
        let cap = bytes.next_power_of_two();
        let new = Pinned::new(&self.ctx, cap, false).map_err(dev_err("growing the pinned injection buffer"))?;
        self.dev_in = self.stream.alloc_zeros(cap).map_err(dev_err("growing the injection buffer"))?;
        self.host_in = new;
        self.net.host_in = dptr(&self.dev_in, &self.stream);
        self.capture_graphs()
    }

    fn wait_for(&mut self, t: u64) -> Result<(), BackendError> {
        let hdr = self.host_out.ptr() as *const u64;
        if self.sync_stream {
            self.stream.synchronize().map_err(dev_err("running the burst"))?;
        }
        let mut spins: u64 = 0;
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
            if spins % 4096 == 0 {
                // SAFETY: queries the status of our own stream.
                let r = unsafe { sys::cuStreamQuery(self.stream.cu_stream()) };
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
        self.info.clone()
    }

    fn burst(&mut self, injection: &[Injection]) -> Result<BurstOutput<'_>, BackendError> {
        for inj in injection {
            if inj.neuron >= self.neurons {
                return Err(BackendError::InjectionOutOfRange { neuron: inj.neuron, neurons: self.neurons });
            }
        }
        let t_start = std::time::Instant::now();
        // entry format: 2 = one value for all (4-byte ids), 0 = (id, i32 value), 1 = (id, i64 value)
        let first = injection.first().map_or(0, |i| i.potential.0);
        let fmt: u64 = if injection.iter().all(|i| i.potential.0 == first) {
            2
        } else if injection.iter().all(|i| i.potential.0 == i.potential.0 as i32 as i64) {
            0
        } else {
            1
        };
        let entry = [8, 16, 4][fmt as usize];
        let in_bytes = 16 + entry * injection.len();
        self.ensure_in_capacity(in_bytes)?;
        let base = self.host_in.ptr();
        // SAFETY: the buffer holds `in_bytes` (ensured above) and nothing reads it now: the previous
        // burst has completed (its last kernel published its output after its copy was consumed).
        unsafe {
            match fmt {
                2 => {
                    let dst = base.add(16) as *mut u32;
                    for (i, inj) in injection.iter().enumerate() {
                        dst.add(i).write(inj.neuron);
                    }
                }
                1 => {
                    let dst = base.add(16) as *mut u64;
                    for (i, inj) in injection.iter().enumerate() {
                        dst.add(2 * i).write(inj.neuron as u64);
                        dst.add(2 * i + 1).write(inj.potential.0 as u64);
                    }
                }
                _ => {
                    let dst = base.add(16) as *mut u64;
                    for (i, inj) in injection.iter().enumerate() {
                        dst.add(i).write(inj.neuron as u64 | ((inj.potential.0 as i32 as u32 as u64) << 32));
                    }
                }
            }
            (base as *mut u64).write(injection.len() as u64 | (fmt << 62));
            (base as *mut u64).add(1).write(first as u64);
            std::ptr::write_volatile(self.host_out.ptr() as *mut u64, u64::MAX);
        }
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        self.ctx.bind_to_thread().map_err(dev_err("binding the context"))?;
        let t = self.burst + 1;
        let t_write = std::time::Instant::now();
        if let Some((a, _)) = self.trace.as_ref().and_then(|tr| tr.ev.as_ref()) {
            a.record(&self.stream).map_err(dev_err("event"))?;
        }
        // SAFETY: copies `in_bytes` (<= both buffers' capacity) from our pinned buffer to our device
        // buffer on our stream; the host does not touch the pinned buffer until the burst is done.
        unsafe { sys::cuMemcpyHtoDAsync_v2(self.net.host_in, self.host_in.ptr() as *const _, in_bytes, self.stream.cu_stream()) }
            .result()
            .map_err(dev_err("copying the injection"))?;
        // SAFETY: launches our own instantiated graph on our own stream.
        unsafe { result::graph::launch(self.graphs[self.cur].cu_graph_exec(), self.stream.cu_stream()) }
            .map_err(dev_err("launching the burst graph"))?;
        if let Some((_, b)) = self.trace.as_ref().and_then(|tr| tr.ev.as_ref()) {
            b.record(&self.stream).map_err(dev_err("event"))?;
        }
        let t_launch = std::time::Instant::now();
        self.wait_for(t)?;
        let t_wait = std::time::Instant::now();
        self.cur = 1 - self.cur;
        self.burst = t;
        let hdr = self.host_out.ptr() as *const u64;
        // SAFETY: the device published the header and entries (fenced) before the burst number.
        let (fired_total, rb_count) = unsafe { (std::ptr::read_volatile(hdr.add(1)), std::ptr::read_volatile(hdr.add(2))) };
        let rb = rb_count as usize;
        if rb > self.out_cap {
            return Err(BackendError::Device(format!("burst {t}: {rb} read-back neurons overflow the buffer of {}", self.out_cap)));
        }
        // SAFETY: the entries live after the header: ids u32[out_cap], then (8-aligned) i64[out_cap].
        let (ids, vs) = unsafe {
            let ids = std::slice::from_raw_parts(self.host_out.ptr().add(OUT_HEADER) as *const u32, rb);
            let vs = std::slice::from_raw_parts(self.host_out.ptr().add(OUT_HEADER + (self.out_cap * 4).div_ceil(8) * 8) as *const i64, rb);
            (ids, vs)
        };
        self.keys.clear();
        self.keys.extend(ids.iter().enumerate().map(|(i, &id)| ((id as u64) << 32) | i as u64));
        self.keys.sort_unstable();
        self.out_ids.clear();
        self.out_v.clear();
        for &k in &self.keys {
            self.out_ids.push((k >> 32) as u32);
            self.out_v.push(vs[(k & 0xFFFF_FFFF) as usize]);
        }
        if let Some(tr) = &mut self.trace {
            let t_end = std::time::Instant::now();
            tr.bursts += 1;
            tr.write_s += (t_write - t_start).as_secs_f64();
            tr.launch_s += (t_launch - t_write).as_secs_f64();
            tr.wait_s += (t_wait - t_launch).as_secs_f64();
            tr.post_s += (t_end - t_wait).as_secs_f64();
            if let Some((a, b)) = &tr.ev {
                b.synchronize().map_err(dev_err("event"))?;
                tr.gpu_ms += a.elapsed_ms(b).map_err(dev_err("event"))? as f64;
            }
        }
        Ok(BurstOutput { burst: t, fired: &self.out_ids, potentials: &self.out_v, fired_total })
    }

    fn snapshot(&mut self) -> Result<NeuronState, BackendError> {
        self.ctx.bind_to_thread().map_err(dev_err("binding the context"))?;
        let s = &self.stream;
        s.synchronize().map_err(dev_err("synchronising"))?;
        let potential = s.clone_dtoh(&self.v).map_err(dev_err("reading potentials"))?;
        let rcc = s.clone_dtoh(&self.rcc).map_err(dev_err("reading refractory state"))?;
        let misc = s.clone_dtoh(&self.misc).map_err(dev_err("reading counters"))?;
        let count = (misc[M_COUNTER + self.cur] >> self.count_shift) as usize;
        let mut fired = if count > 0 {
            s.clone_dtoh(&self.fired[self.cur].slice(0..count)).map_err(dev_err("reading the fired list"))?
        } else {
            Vec::new()
        };
        fired.sort_unstable();
        Ok(NeuronState {
            burst: self.burst,
            potential,
            refractory: rcc.iter().map(|&x| (x & 0xFFFF) as u16).collect(),
            consecutive: rcc.iter().map(|&x| (x >> 16) as u16).collect(),
            fired,
        })
    }

    fn restore(&mut self, st: &NeuronState) -> Result<(), BackendError> {
        let n = self.neurons as usize;
        for len in [st.potential.len(), st.refractory.len(), st.consecutive.len()] {
            if len != n {
                return Err(BackendError::StateMismatch { got: len, expected: n });
            }
        }
        if let Some(&bad) = st.fired.iter().find(|&&f| f >= self.neurons) {
            return Err(BackendError::InjectionOutOfRange { neuron: bad, neurons: self.neurons });
        }
        let mut fired = st.fired.clone();
        fired.sort_unstable();
        fired.dedup();
        self.ctx.bind_to_thread().map_err(dev_err("binding the context"))?;
        let e = |w: &'static str| dev_err(w);
        let s = self.stream.clone();
        s.synchronize().map_err(e("synchronising"))?;
        s.memcpy_htod(&st.potential, &mut self.v).map_err(e("writing potentials"))?;
        let rcc: Vec<u32> = st.refractory.iter().zip(&st.consecutive).map(|(&r, &c)| r as u32 | (c as u32) << 16).collect();
        s.memcpy_htod(&rcc, &mut self.rcc).map_err(e("writing refractory state"))?;
        s.memset_zeros(&mut self.acc).map_err(e("clearing"))?;
        s.memset_zeros(&mut self.inj).map_err(e("clearing"))?;
        s.memset_zeros(&mut self.inj_mask).map_err(e("clearing"))?;
        let mut misc = vec![0u64; 64];
        misc[M_BURST] = st.burst;
        s.memcpy_htod(&misc, &mut self.misc).map_err(e("writing counters"))?;
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

impl Drop for CudaBackend {
    fn drop(&mut self) {
        let _ = self.ctx.bind_to_thread();
        let _ = self.stream.synchronize();
    }
}
