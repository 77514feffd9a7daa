//! The connectome built where it lives: a brain whose every mapping has a closed form
//! ([`crate::connectome::ClosedForm`]) is built on the GPU (`kernels/build.cu`), never on the host:
//! the host holds the genome and the layout, and uploads a few hundred bytes of rules. The rows
//! are the host build's, in the same order and with the same codes (a test compares them).

use std::ops::Range;
use std::sync::{Arc, Condvar, Mutex};

use cudarc::driver::{CudaContext, CudaSlice, CudaStream, DeviceRepr, LaunchConfig, PushKernelArg};

use crate::backend::cuda::layout::{as_bytes, dev_err, dptr, ProcMap};
use crate::backend::cuda::module::{Kernels, Variant};
use crate::backend::BackendError;

/// Mirror of `struct MatArea` in build.cu: one source area's rows.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(in crate::backend::cuda) struct MatArea {
    pub off: u64,
    pub first: u32,
    pub count: u32,
    pub len: u32,
    pub f0: u32,
    pub f1: u32,
    pub pad: u32,
}
// SAFETY: plain old data with the layout of the kernel's `MatArea`.
unsafe impl DeviceRepr for MatArea {}

/// What the GPU needs to build the rows.
#[derive(Clone, Debug)]
pub struct Recipe {
    maps: Vec<ProcMap>,
    areas: Vec<MatArea>,
    /// Code of each map's synapses: its contribution's index in `table`.
    map_code: Vec<u16>,
    /// The contribution table, as the host build makes it (sorted, distinct).
    pub table: Vec<i32>,
    pub synapses: u64,
    /// The longest row.
    longest: u32,
    /// Show the build's progress.
    pub progress: bool,
}

/// The longest row the GPU builds (a warp sorts it in shared memory).
pub const LONGEST: u32 = 2048;

impl Recipe {
    /// The recipe of a brain stored as closed forms `maps` (in the order of
    /// [`crate::connectome::Procedural::closed_forms`]: by source area, then mapping); None when a
    /// row is too long for the GPU's sort. `progress`: show the build's progress.
    pub(in crate::backend::cuda) fn new(maps: Vec<ProcMap>, progress: bool) -> Option<Recipe> {
        let mut areas: Vec<MatArea> = Vec::new();
        for (f, m) in maps.iter().enumerate() {
            match areas.last_mut() {
                Some(a) if a.first == m.src_first => {
                    a.len += m.fanout;
                    a.f1 = f as u32 + 1;
                }
                _ => areas.push(MatArea {
                    first: m.src_first,
                    count: m.src_count,
                    len: m.fanout,
                    f0: f as u32,
                    f1: f as u32 + 1,
                    ..Default::default()
                }),
            }
        }
        let mut off = 0u64;
        for a in &mut areas {
            a.off = off;
            off += a.count as u64 * a.len as u64;
        }
        let longest = areas.iter().map(|a| a.len).max().unwrap_or(0);
        if longest > LONGEST {
            return None;
        }
        // the host build's table: the distinct contributions of the rows there are
        let mut table: Vec<i32> = maps.iter().filter(|m| m.src_count > 0 && m.fanout > 0).map(|m| m.contribution).collect();
        table.sort_unstable();
        table.dedup();
        if table.len() > u16::MAX as usize + 1 {
            return None;
        }
        let map_code = maps.iter().map(|m| table.binary_search(&m.contribution).unwrap_or(0) as u16).collect();
        Some(Recipe { maps, areas, map_code, table, synapses: off, longest, progress })
    }
}

/// The device's connectome arrays: row pointers (u32 or u64 as bytes), targets, u16 codes; and an
/// upper bound of any neuron's input of one burst: the largest of its blocks of 2^[`BOUND_SHIFT`]
/// neurons', summed as the rows were drawn.
pub(in crate::backend::cuda) struct Built {
    pub row_ptr: CudaSlice<u8>,
    pub targets: CudaSlice<u32>,
    pub codes: CudaSlice<u8>,
    pub bound: u64,
}

/// Mirror of `struct Owner` in build.cu: where one part's rows lie (device addresses, a peer's
/// over NVLink).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub(in crate::backend::cuda) struct Owner {
    counts: u64,
    row_ptr: u64,
    targets: u64,
    codes: u64,
    lo: u32,
    hi: u32,
    row64: u32,
    pad: u32,
    bound: u64,
}
// SAFETY: plain old data with the layout of the kernel's `Owner`.
unsafe impl DeviceRepr for Owner {}

impl Built {
    /// Targets and codes for `synapses` synapses after `row_ptr`; where they lie, for the kernel,
    /// with `bound`, the drawing GPU's input bounds of every neuron.
    fn alloc(
        s: &Arc<CudaStream>,
        row_ptr: CudaSlice<u8>,
        synapses: u64,
        range: Range<u32>,
        row64: bool,
        bound: &CudaSlice<u64>,
    ) -> Result<(Built, Owner), BackendError> {
        let e = |w: &'static str| dev_err(w);
        let targets: CudaSlice<u32> = s.alloc_zeros(synapses.max(1) as usize).map_err(e("alloc synapse targets"))?;
        let codes: CudaSlice<u8> = s.alloc_zeros(synapses.max(2) as usize * 2).map_err(e("alloc codes"))?;
        let owner = Owner {
            counts: 0,
            row_ptr: dptr(&row_ptr, s),
            targets: dptr(&targets, s),
            codes: dptr(&codes, s),
            lo: range.start,
            hi: range.end,
            row64: row64 as u32,
            pad: 0,
            bound: dptr(bound, s),
        };
        Ok((Built { row_ptr, targets, codes, bound: 0 }, owner))
    }
}

/// Neurons per block of the input bounds: 2^BOUND_SHIFT (as build.cu). A block's input (64
/// neurons of 100 synapses of weight 1: 2.6e7) stays far below i32, and the blocks of 200M
/// neurons (25 MB) in L2, where the draws add to them.
const BOUND_SHIFT: u32 = 6;

/// The input bounds of the blocks of `n` neurons, zeroed.
fn block_bounds(s: &Arc<CudaStream>, n: u32) -> Result<CudaSlice<u64>, BackendError> {
    s.alloc_zeros((n >> BOUND_SHIFT) as usize + 1).map_err(dev_err("alloc the input bounds"))
}

/// Launches of the row kernel per build (each over a slice of the sources), for progress.
const SLICES: u32 = 64;

/// The recipe's rules on the device, with the kernels and the device's multiprocessors.
struct Rules {
    k: Kernels,
    maps: CudaSlice<u8>,
    areas: CudaSlice<MatArea>,
    sm: u32,
}

impl Rules {
    fn upload(s: &Arc<CudaStream>, r: &Recipe) -> Result<Rules, BackendError> {
        let e = |w: &'static str| dev_err(w);
        let ctx = s.context();
        Ok(Rules {
            k: Kernels::load(ctx, Variant { wide_acc: false, row64: false, code32: false }).map_err(BackendError::Device)?,
            maps: s.clone_htod(as_bytes::<ProcMap>(&r.maps)).map_err(e("uploading the rules"))?,
            areas: s.clone_htod(&r.areas).map_err(e("uploading the rules"))?,
            sm: ctx.attribute(cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT).map_err(e("attribute"))?
                as u32,
        })
    }

    /// Draw the rows of the sources `src` and write each part's run of them where `owners` say
    /// (`materialize` in build.cu), each synapse's magnitude added to its target's block in
    /// `bound` (a u64 for every block of the brain), a slice of the sources per launch, with a
    /// progress bar (or lines) when `progress` and the build takes over a second.
    fn draw(
        &self,
        s: &Arc<CudaStream>,
        r: &Recipe,
        src: Range<u32>,
        owners: &[Owner],
        bound: &CudaSlice<u64>,
        progress: bool,
    ) -> Result<(), BackendError> {
        let e = |w: &'static str| dev_err(w);
        if r.synapses == 0 || src.is_empty() {
            return Ok(());
        }
        let map_code = s.clone_htod(&r.map_code).map_err(e("uploading the rules"))?;
        let table = s.clone_htod(owners).map_err(e("uploading the parts' addresses"))?;
        let pow2 = r.longest.next_power_of_two();
        let shared = 4 * pow2 * 8;
        if shared > 48 << 10 {
            self.k
                .materialize
                .set_attribute(cudarc::driver::sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, shared as i32)
                .map_err(e("shared memory for materialize"))?;
        }
        let cfg = LaunchConfig { grid_dim: (self.sm * 16, 1, 1), block_dim: (128, 1, 1), shared_mem_bytes: shared };
        let (n_areas, n_owners) = (r.areas.len() as u32, owners.len() as u32);
        let bar = crate::progress::Progress::new("building the connectome on the GPU", "slices", SLICES as u64, progress);
        let slice = src.len().div_ceil(SLICES as usize).max(1);
        for src_lo in src.clone().step_by(slice) {
            let src_hi = (src_lo + slice as u32).min(src.end);
            // SAFETY: each part's run of a row is written from its own row pointer, within that
            // part's targets/codes (sized to its last row pointer); the rules are the recipe's;
            // `bound` has a u64 for the block of every target the rules draw.
            unsafe {
                s.launch_builder(&self.k.materialize)
                    .arg(&self.maps)
                    .arg(&map_code)
                    .arg(&self.areas)
                    .arg(&n_areas)
                    .arg(&src_lo)
                    .arg(&src_hi)
                    .arg(&pow2)
                    .arg(&table)
                    .arg(&n_owners)
                    .arg(bound)
                    .launch(cfg)
            }
            .map_err(e("launching materialize"))?;
            s.synchronize().map_err(e("building the connectome on the GPU"))?;
            bar.inc(1);
        }
        bar.finish();
        Ok(())
    }

    /// The largest input of one burst of the blocks of the neurons `range`: each the sum of every
    /// part's bounds (`bound_fold`; a peer's read over NVLink).
    fn largest(&self, s: &Arc<CudaStream>, owners: &[Owner], range: Range<u32>) -> Result<u64, BackendError> {
        let e = |w: &'static str| dev_err(w);
        if range.is_empty() {
            return Ok(0);
        }
        let table = s.clone_htod(owners).map_err(e("uploading the parts' addresses"))?;
        let out: CudaSlice<u64> = s.alloc_zeros(1).map_err(e("alloc the input bound"))?;
        let cfg = LaunchConfig { grid_dim: (self.sm * 4, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
        let n_owners = owners.len() as u32;
        // SAFETY: reads each part's bounds of the neurons `range` (allocated for every neuron of
        // the brain, alive until every GPU has folded), writes one u64.
        unsafe { s.launch_builder(&self.k.bound_fold).arg(&table).arg(&n_owners).arg(&range.start).arg(&range.end).arg(&out).launch(cfg) }
            .map_err(e("launching bound_fold"))?;
        let m = s.clone_dtoh(&out).map_err(e("reading the input bound"))?;
        Ok(m[0])
    }
}

/// Build `r`'s rows for `n` neurons on the GPU of stream `s`: the row pointers in closed form
/// (`materialize_rows`), then the rows.
pub(in crate::backend::cuda) fn materialize(
    s: &Arc<CudaStream>,
    r: &Recipe,
    n: u32,
    row64: bool,
    progress: bool,
) -> Result<Built, BackendError> {
    let e = |w: &'static str| dev_err(w);
    let rules = Rules::upload(s, r)?;
    let row_ptr: CudaSlice<u8> = s.alloc_zeros((n as usize + 1) * if row64 { 8 } else { 4 }).map_err(e("alloc row pointers"))?;
    let (n_areas, total, row64_u) = (r.areas.len() as u32, r.synapses, row64 as u32);
    let cfg = LaunchConfig { grid_dim: (rules.sm * 8, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
    // SAFETY: writes n + 1 row pointers of the width allocated; reads the areas uploaded.
    unsafe {
        s.launch_builder(&rules.k.materialize_rows)
            .arg(&rules.areas)
            .arg(&n_areas)
            .arg(&n)
            .arg(&total)
            .arg(&row_ptr)
            .arg(&row64_u)
            .launch(cfg)
    }
    .map_err(e("launching materialize_rows"))?;
    let t0 = std::time::Instant::now();
    let bounds = block_bounds(s, n)?;
    let (mut built, owner) = Built::alloc(s, row_ptr, r.synapses, 0..n, row64, &bounds)?;
    rules.draw(s, r, 0..n, &[owner], &bounds, progress)?;
    built.bound = rules.largest(s, &[owner], 0..n)?;
    tracing::debug!(materialize_s = t0.elapsed().as_secs_f64(), input_bound = built.bound, "CUDA: the rows drawn");
    Ok(built)
}

/// One GPU's part of a brain built on several GPUs (the synapses onto its neurons `range`, rows
/// for every source): the row pointers, counted on the GPUs before the rows are drawn into them
/// (`kernels/build.cu`, `part_count`, `scan_tiles`, `scan_write`, `materialize`).
pub(in crate::backend::cuda) struct PartRows {
    pub range: Range<u32>,
    /// Neurons of the brain.
    n: u32,
    /// u32, or u64 from u32::MAX synapses on (as [`crate::backend::cuda::MemoryPlan`] sizes them).
    pub row_ptr: CudaSlice<u8>,
    pub synapses: u64,
    /// The row pointers are u64 (`row_ptr`'s width).
    row64: bool,
    rules: Rules,
}

/// Counts of a scan tile (SCAN_TILE in build.cu).
const SCAN_TILE: u32 = 4096;

/// The parts of a brain that its GPUs build together. Each GPU draws the rows of its own neurons
/// only, twice: to count each part's share of them into that part's counts, then, once every
/// part has scanned its counts into row pointers, to sort them and write each part's run where
/// that part lies (peer stores over NVLink). Each GPU's thread publishes where its part lies and
/// meets the others before each pass and after the last.
pub(in crate::backend::cuda) struct Parts {
    n: usize,
    state: Mutex<PartsState>,
    cv: Condvar,
}

struct PartsState {
    owners: Vec<Option<(Arc<CudaContext>, Owner)>>,
    /// Threads arrived at each meeting.
    arrived: [usize; 5],
    failed: bool,
}

/// What a GPU's thread returns when another GPU's build failed (the caller reports that one's).
pub(in crate::backend::cuda) const ANOTHER_FAILED: &str = "CUDA: another GPU's build failed";

impl Parts {
    pub(in crate::backend::cuda) fn new(n: usize) -> Arc<Parts> {
        Arc::new(Parts { n, state: Mutex::new(PartsState { owners: vec![None; n], arrived: [0; 5], failed: false }), cv: Condvar::new() })
    }

    /// A GPU's build failed or stopped: the others stop waiting.
    pub(in crate::backend::cuda) fn fail(&self) {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).failed = true;
        self.cv.notify_all();
    }

    /// GPU `me` publishes `owner` (None: nothing new) and waits at meeting `m` until every GPU has
    /// come, or one failed; then every GPU's context and part.
    fn meet(&self, m: usize, me: usize, owner: Option<(Arc<CudaContext>, Owner)>) -> Result<Vec<(Arc<CudaContext>, Owner)>, BackendError> {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if owner.is_some() {
            st.owners[me] = owner;
        }
        st.arrived[m] += 1;
        self.cv.notify_all();
        let st = self.cv.wait_while(st, |st| st.arrived[m] < self.n && !st.failed).unwrap_or_else(|p| p.into_inner());
        if st.arrived[m] < self.n {
            return Err(BackendError::Device(ANOTHER_FAILED.into()));
        }
        Ok(st.owners.iter().flatten().cloned().collect())
    }

    /// GPU `me`'s row pointers for the part of `r`'s brain (`n` neurons) onto `range`: every GPU
    /// counts the rows of its own neurons into every part's counts, then each scans its own.
    pub(in crate::backend::cuda) fn count(
        &self,
        me: usize,
        s: &Arc<CudaStream>,
        r: &Recipe,
        n: u32,
        range: Range<u32>,
    ) -> Result<PartRows, BackendError> {
        let e = |w: &'static str| dev_err(w);
        let t0 = std::time::Instant::now();
        let rules = Rules::upload(s, r)?;
        let counts: CudaSlice<u32> = s.alloc_zeros(n.max(1) as usize).map_err(e("alloc row counts"))?;
        s.synchronize().map_err(e("alloc row counts"))?;
        let ctx = s.context().clone();
        let owner = Owner { counts: dptr(&counts, s), lo: range.start, hi: range.end, ..Default::default() };
        let peers = self.meet(0, me, Some((ctx.clone(), owner)))?;
        for (other, _) in &peers {
            crate::backend::cuda::gpus::peers::peer_access(&ctx, other)?;
        }
        let owners: Vec<Owner> = peers.iter().map(|p| p.1).collect();
        let table = s.clone_htod(&owners).map_err(e("uploading the parts' addresses"))?;
        let (n_areas, n_owners) = (r.areas.len() as u32, owners.len() as u32);
        let cfg = LaunchConfig { grid_dim: (rules.sm * 16, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
        // SAFETY: writes one count per source of `range` into each part's counts (n each,
        // allocated by their GPUs, which wait at the next meeting); reads the rules uploaded.
        unsafe {
            s.launch_builder(&rules.k.part_count)
                .arg(&rules.maps)
                .arg(&rules.areas)
                .arg(&n_areas)
                .arg(&range.start)
                .arg(&range.end)
                .arg(&table)
                .arg(&n_owners)
                .launch(cfg)
        }
        .map_err(e("launching part_count"))?;
        s.synchronize().map_err(e("counting the parts' rows on the GPUs"))?;
        self.meet(1, me, None)?;
        let t1 = std::time::Instant::now();
        let (row_ptr, synapses, row64) = scan(s, &rules, &counts, n)?;
        tracing::debug!(
            synapses,
            ?range,
            count_s = (t1 - t0).as_secs_f64(),
            scan_s = t1.elapsed().as_secs_f64(),
            "CUDA: the part's rows counted"
        );
        Ok(PartRows { range, n, row_ptr, synapses, row64, rules })
    }

    /// GPU `me`'s part (counted by [`Parts::count`]): targets and codes allocated, the rows of its
    /// own neurons drawn into every part, once every GPU is there, and the largest input of its
    /// neurons from every GPU's bounds; returns when every GPU has done so.
    pub(in crate::backend::cuda) fn build(
        &self,
        me: usize,
        s: &Arc<CudaStream>,
        r: &Recipe,
        part: PartRows,
        progress: bool,
    ) -> Result<Built, BackendError> {
        let t0 = std::time::Instant::now();
        let own = part.range.clone();
        let bounds = block_bounds(s, part.n)?;
        let (mut built, owner) = Built::alloc(s, part.row_ptr, part.synapses, part.range, part.row64, &bounds)?;
        s.synchronize().map_err(dev_err("allocating the part"))?;
        let owners: Vec<Owner> = self.meet(2, me, Some((s.context().clone(), owner)))?.into_iter().map(|p| p.1).collect();
        part.rules.draw(s, r, own, &owners, &bounds, progress)?;
        s.synchronize().map_err(dev_err("building the connectome on the GPUs"))?;
        self.meet(3, me, None)?;
        built.bound = part.rules.largest(s, &owners, owner.lo..owner.hi)?;
        // every GPU's bounds are read by the others until all have folded
        self.meet(4, me, None)?;
        drop(bounds);
        tracing::debug!(materialize_s = t0.elapsed().as_secs_f64(), input_bound = built.bound, "CUDA: the part's rows drawn");
        Ok(built)
    }
}

/// The row pointers of `counts` (`n` rows), the synapses and whether the pointers are u64 (from
/// u32::MAX synapses on): tiles summed on the GPU, the sums scanned on the host, each tile's
/// pointers written from its offset.
fn scan(s: &Arc<CudaStream>, rules: &Rules, counts: &CudaSlice<u32>, n: u32) -> Result<(CudaSlice<u8>, u64, bool), BackendError> {
    let e = |w: &'static str| dev_err(w);
    let k = &rules.k;
    let tiles = n.div_ceil(SCAN_TILE).max(1);
    let sums: CudaSlice<u64> = s.alloc_zeros(tiles as usize).map_err(e("alloc scan tiles"))?;
    let tile_cfg = LaunchConfig { grid_dim: (tiles, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
    // SAFETY: reads n counts, writes one sum per tile (allocated).
    unsafe { s.launch_builder(&k.scan_tiles).arg(counts).arg(&n).arg(&sums).launch(tile_cfg) }.map_err(e("launching scan_tiles"))?;
    let sums = s.clone_dtoh(&sums).map_err(e("reading the scan's tiles"))?;
    let mut offs = Vec::with_capacity(sums.len());
    let mut synapses = 0u64;
    for t in sums {
        offs.push(synapses);
        synapses += t;
    }
    let row64 = synapses >= u32::MAX as u64;
    let width = if row64 { 8 } else { 4 };
    let mut row_ptr: CudaSlice<u8> = s.alloc_zeros((n as usize + 1) * width).map_err(e("alloc row pointers"))?;
    let offs = s.clone_htod(&offs).map_err(e("uploading the scan's offsets"))?;
    let row64_u = row64 as u32;
    // SAFETY: reads n counts and one offset per tile, writes row pointers 0..n of the width allocated.
    unsafe { s.launch_builder(&k.scan_write).arg(counts).arg(&n).arg(&offs).arg(&row_ptr).arg(&row64_u).launch(tile_cfg) }
        .map_err(e("launching scan_write"))?;
    let end = n as usize * width;
    let last = if row64 { synapses.to_le_bytes().to_vec() } else { (synapses as u32).to_le_bytes().to_vec() };
    s.memcpy_htod(&last, &mut row_ptr.slice_mut(end..end + width)).map_err(e("writing the last row pointer"))?;
    s.synchronize().map_err(e("counting the part's rows on the GPU"))?;
    Ok((row_ptr, synapses, row64))
}

/// Stored synapses as read back: row pointers, targets, codes.
pub type BuiltRows = (Vec<u64>, Vec<u32>, Vec<u32>);

impl crate::backend::cuda::CudaBackend {
    /// The stored synapses as they lie on the GPU: row pointers, targets and codes (for checks
    /// against the host's build).
    pub fn stored_rows(&self) -> Result<BuiltRows, BackendError> {
        let s = &self.stream;
        let e = |w: &'static str| dev_err(w);
        let raw = s.clone_dtoh(&self.state.res.row_ptr).map_err(e("reading row pointers"))?;
        let row_ptr: Vec<u64> = if self.plan().row_ptr_bytes == 8 {
            raw.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().unwrap())).collect()
        } else {
            raw.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().unwrap()) as u64).collect()
        };
        let synapses = row_ptr.last().copied().unwrap_or(0) as usize;
        let mut targets = s.clone_dtoh(&self.state.res.targets).map_err(e("reading targets"))?;
        targets.truncate(synapses);
        let raw = s.clone_dtoh(&self.state.res.codes).map_err(e("reading codes"))?;
        let codes: Vec<u32> = if self.plan().code_bytes == 4 {
            raw.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect()
        } else {
            raw.chunks_exact(2).map(|c| u16::from_le_bytes(c.try_into().unwrap()) as u32).collect()
        };
        Ok((row_ptr, targets, codes.into_iter().take(synapses).collect()))
    }
}
