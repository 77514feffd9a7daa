//! Device memory: what a brain needs (computed without a GPU), and mapped pinned host buffers.

use std::sync::Arc;

use cudarc::driver::{sys, CudaContext, CudaStream, DriverError};

use crate::backend::BackendError;
use crate::brain::Brain;
use crate::connectome::{Codes, Part};
use crate::model::PAGE;

/// Bytes per neuron of the device state: potential (8), refractory + consecutive count (4),
/// two synaptic accumulators (8 each, used as 4 when narrow: the propagation run ahead fills one
/// while `step` reads the other), injection (8), two fired lists with row offsets and row shifts
/// (2 x (4 + 8 + 8)).
pub const STATE_BYTES_PER_NEURON: u64 = 8 + 4 + 2 * 8 + 8 + 2 * (4 + 8 + 8);

/// Bytes per neuron of the early step (the resident kernel): the second state buffer (8 + 4) and where each
/// early-fired neuron sits in the fired list and the read-back (8); plus a bit per neuron.
pub const EARLY_BYTES_PER_NEURON: u64 = 8 + 4 + 8;

/// Memory kept free beyond the plan, for the module, the graphs and the driver.
pub const RESERVE_BYTES: u64 = 96 << 20;

/// What a brain occupies on one GPU.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct MemoryPlan {
    /// Neurons of the brain.
    pub neurons: u64,
    /// Stored synapses.
    pub synapses: u64,
    /// 4 when every row offset fits in `u32`, else 8.
    pub row_ptr_bytes: u64,
    /// 2 (`u16` contribution codes) or 4.
    pub code_bytes: u64,
    /// Row pointers + targets + codes + contribution table.
    pub connectome_bytes: u64,
    /// Neuron state, fired lists, injection bits, the chunk index of the pairs (4 bytes per 256
    /// synapses), areas and counters.
    pub state_bytes: u64,
    /// All of the above.
    pub total_bytes: u64,
}

impl MemoryPlan {
    /// What `brain` occupies on one GPU.
    pub fn of(brain: &Brain) -> MemoryPlan {
        let n = brain.layout.neurons as u64;
        let s = brain.connectome.synapses();
        let code_bytes = if brain.connectome.parts.iter().any(|p| matches!(p.codes, Codes::U32(_))) { 4 } else { 2 };
        Self::new(n, n, s, code_bytes, brain.connectome.contributions.len(), brain.layout.params.len(), false)
    }

    /// One GPU of several (`sharded`) or the only one: the synapses onto `part`'s neurons, rows for
    /// every one of `total` neurons.
    pub fn of_part(part: &Part, total: u32, table_len: usize, areas: usize, sharded: bool) -> MemoryPlan {
        let code_bytes = if matches!(part.codes, Codes::U32(_)) { 4 } else { 2 };
        Self::new(part.targets_range.len() as u64, total as u64, part.synapses(), code_bytes, table_len, areas, sharded)
    }

    /// An estimate for `n` of `total` neurons with `s` synapses onto them (u16 codes, a small table).
    pub fn estimate(n: u64, total: u64, s: u64, sharded: bool) -> MemoryPlan {
        Self::new(n, total, s, 2, 1024, 64, sharded)
    }

    /// `n` of `total` neurons with `s` synapses onto them, codes of `code_bytes`, a table of
    /// `table_len` contributions and `areas` areas.
    pub fn of_counts(n: u64, total: u64, s: u64, code_bytes: u64, table_len: usize, areas: usize, sharded: bool) -> MemoryPlan {
        Self::new(n, total, s, code_bytes, table_len, areas, sharded)
    }

    fn new(n: u64, total: u64, s: u64, code_bytes: u64, table_len: usize, areas: usize, sharded: bool) -> MemoryPlan {
        let row_ptr_bytes = if s < u32::MAX as u64 { 4 } else { 8 };
        let connectome_bytes = (total + 1) * row_ptr_bytes + s * (4 + code_bytes) + table_len as u64 * 4;
        let areas = areas as u64;
        let chunk_index = (s / super::layout::PAIRS_PER_CHUNK as u64 + 2) * 4;
        // several GPUs: own fired lists without row offsets, the gathered list of the brain and the
        // inbox of the spike exchange (every GPU's list, by parity)
        let lists = if sharded { 2 * 4 * n + total * (4 + 8 + 8) + 2 * 4 * total } else { 0 };
        // several GPUs: no row offsets or shifts of the own lists; the early step's buffers everywhere
        let per_neuron = if sharded { STATE_BYTES_PER_NEURON - 2 * (4 + 8 + 8) } else { STATE_BYTES_PER_NEURON } + EARLY_BYTES_PER_NEURON;
        let bit_words = 2;
        let state_bytes = n * per_neuron + lists + bit_words * n.div_ceil(32) * 4 + areas * (104 + 4) + 64 * 8 + chunk_index;
        MemoryPlan {
            neurons: n,
            synapses: s,
            row_ptr_bytes,
            code_bytes,
            connectome_bytes,
            state_bytes,
            total_bytes: connectome_bytes + state_bytes,
        }
    }

    /// Device bytes per stored synapse, row pointers included.
    pub fn bytes_per_synapse(&self) -> f64 {
        if self.synapses == 0 {
            0.0
        } else {
            (self.connectome_bytes as f64) / self.synapses as f64
        }
    }
}

/// Bytes a brain needs on one GPU (connectome and state), without touching a GPU.
pub fn device_bytes_needed(brain: &Brain) -> u64 {
    MemoryPlan::of(brain).total_bytes
}

/// A pinned host buffer mapped into the device's address space: the GPU reads and writes it over
/// PCIe with no copy call.
///
/// Ordinary page-aligned memory pinned with `cuMemHostRegister`: it keeps the host's ordinary
/// cached mapping. (`cuMemHostAlloc` memory, measured on the H100 virtual machines, was written by
/// the CPU at ~2 GB/s and read slowly too, which cost ~90 us per burst at W(5M) for a 200 KB
/// injection.)
pub(crate) struct Pinned {
    ctx: Arc<CudaContext>,
    ptr: *mut u8,
    len: usize,
    dev: u64,
    layout: std::alloc::Layout,
}

// SAFETY: the buffer is owned by this value alone; the raw pointer is only dereferenced through
// `&self`/`&mut self` by the backend that owns it.
unsafe impl Send for Pinned {}

impl Pinned {
    /// `len` bytes (at least 64, whole pages), zeroed.
    pub(crate) fn new(ctx: &Arc<CudaContext>, len: usize) -> Result<Pinned, DriverError> {
        ctx.bind_to_thread()?;
        let len = len.max(64).next_multiple_of(4096);
        let layout = std::alloc::Layout::from_size_align(len, 4096).expect("pinned buffer layout");
        // SAFETY: a non-zero, page-aligned layout; zeroed memory.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        if ptr.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        // SAFETY: `len` bytes at `ptr`, page-aligned, owned by us until unregistered in Drop.
        let r = unsafe { sys::cuMemHostRegister_v2(ptr as *mut _, len, sys::CU_MEMHOSTREGISTER_DEVICEMAP) }.result();
        if let Err(e) = r {
            // SAFETY: allocated above with `layout`.
            unsafe { std::alloc::dealloc(ptr, layout) };
            return Err(e);
        }
        let mut dev: sys::CUdeviceptr = 0;
        // SAFETY: `ptr` was registered with DEVICEMAP.
        let r = unsafe { sys::cuMemHostGetDevicePointer_v2(&mut dev, ptr as *mut _, 0) }.result();
        if let Err(e) = r {
            // SAFETY: registered and allocated above, released once.
            unsafe {
                let _ = sys::cuMemHostUnregister(ptr as *mut _);
                std::alloc::dealloc(ptr, layout);
            }
            return Err(e);
        }
        Ok(Pinned { ctx: ctx.clone(), ptr, len, dev, layout })
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }
    pub(crate) fn dev(&self) -> u64 {
        self.dev
    }
    pub(crate) fn ptr(&self) -> *mut u8 {
        self.ptr
    }
}

impl Drop for Pinned {
    fn drop(&mut self) {
        let _ = self.ctx.bind_to_thread();
        // SAFETY: registered and allocated with `layout` in `new`, released once; the owner
        // synchronised the stream before dropping (no kernel still uses it).
        unsafe {
            let _ = sys::cuMemHostUnregister(self.ptr as *mut _);
            std::alloc::dealloc(self.ptr, self.layout);
        }
    }
}

/// A page-lock on a caller's id column ([`crate::model::Injections::hold_ids`]): a burst's copy
/// to the GPU then reads the ids where the caller wrote them (`cuMemcpyHtoDAsync` from pinned
/// memory is a DMA), instead of copying them into the backend's own pinned buffer first.
pub(crate) struct ColumnLock {
    ctx: Arc<CudaContext>,
    /// The stream of the backend whose copies read the column.
    stream: Arc<CudaStream>,
    /// The registered range (whole pages).
    base: usize,
    end: usize,
    /// The device's address of `base` (the pages are mapped: the resident kernel reads them).
    dev: u64,
    /// The backend's resident kernel, if it has one: parked before the pages are unlocked (the
    /// driver unlocks them only once the device is idle, which a running kernel never is).
    parker: Option<Arc<dyn Park>>,
}

/// What stops a kernel that keeps the device busy (the resident kernel), so that host pages can
/// be unlocked (the driver unlocks them only once the device is idle).
pub(crate) trait Park: Send + Sync {
    fn park(&self) -> Result<(), BackendError>;
}

impl ColumnLock {
    /// Page-lock the `bytes` bytes at `ptr`: whole pages of the caller's column, no other
    /// allocation's ([`crate::model::Injections::hold_ids`]). A range that is not whole pages, or a
    /// driver that refuses, gives None (the caller's bursts then copy as before): logged, not an
    /// error. (Locking the pages around an ordinary heap block also takes in its neighbours: the
    /// driver then refused other threads' copies from them, CUDA_ERROR_INVALID_VALUE.)
    pub(crate) fn new(stream: &Arc<CudaStream>, parker: Option<Arc<dyn Park>>, ptr: *const u8, bytes: usize) -> Option<ColumnLock> {
        let ctx = stream.context();
        let (base, end) = (ptr as usize, ptr as usize + bytes);
        if bytes == 0 || base % PAGE != 0 || !bytes.is_multiple_of(PAGE) {
            tracing::debug!("CUDA: the input's id column is not whole pages ({bytes} bytes at {base:#x}); bursts copy it");
            return None;
        }
        ctx.bind_to_thread().ok()?;
        // SAFETY: whole pages of the caller's column, owned by it alone; the lock is dropped
        // (unregistered) before that memory moves or is freed (`Injections` drops its hold first).
        let r = unsafe { sys::cuMemHostRegister_v2(base as *mut _, bytes, sys::CU_MEMHOSTREGISTER_DEVICEMAP) }.result();
        if let Err(e) = r {
            tracing::debug!("CUDA: page-locking the input's id column ({} bytes): {e}; bursts copy it", end - base);
            return None;
        }
        let mut dev: sys::CUdeviceptr = 0;
        // SAFETY: `base` was registered with DEVICEMAP just above.
        if let Err(e) = unsafe { sys::cuMemHostGetDevicePointer_v2(&mut dev, base as *mut _, 0) }.result() {
            tracing::debug!("CUDA: mapping the input's id column: {e}; bursts copy it");
            // SAFETY: registered above, unregistered once.
            let _ = unsafe { sys::cuMemHostUnregister(base as *mut _) };
            return None;
        }
        Some(ColumnLock { ctx: ctx.clone(), stream: stream.clone(), base, end, dev, parker })
    }

    /// The device's address of `bytes` bytes at `ptr`, when they lie in the locked pages of this
    /// GPU's context.
    pub(crate) fn dev_addr(&self, ctx: &Arc<CudaContext>, ptr: *const u8, bytes: usize) -> Option<u64> {
        (Arc::ptr_eq(&self.ctx, ctx) && ptr as usize >= self.base && ptr as usize + bytes <= self.end)
            .then(|| self.dev + (ptr as usize - self.base) as u64)
    }
}

impl Drop for ColumnLock {
    fn drop(&mut self) {
        let _ = self.ctx.bind_to_thread();
        if let Some(p) = &self.parker {
            // the next burst launches it again
            if let Err(e) = p.park() {
                tracing::error!("{e}");
            }
        }
        // no copy may still read the pages: bursts wait for their copies, this covers a failed one
        // (the stream only: a context-wide sync would break another thread's graph capture)
        let _ = self.stream.synchronize();
        // SAFETY: registered in `new`, unregistered once.
        let _ = unsafe { sys::cuMemHostUnregister(self.base as *mut _) };
    }
}
