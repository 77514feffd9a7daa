//! The connectome built where it lives: a brain whose every mapping has a closed form
//! ([`crate::connectome::ClosedForm`]) is built on the GPU (`kernels/build.cu`), never on the host:
//! the host holds the genome and the layout, and uploads a few hundred bytes of rules. The rows
//! are the host build's, in the same order and with the same codes (a test compares them).

use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream, DeviceRepr, LaunchConfig, PushKernelArg};

use super::layout::{as_bytes, dev_err, ProcMap};
use super::module::{Kernels, Variant};
use crate::backend::BackendError;

/// Mirror of `struct MatArea` in build.cu: one source area's rows.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct MatArea {
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
    pub(super) fn new(maps: Vec<ProcMap>, progress: bool) -> Option<Recipe> {
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

/// The device's connectome arrays: row pointers (u32 or u64 as bytes), targets, u16 codes.
pub(super) struct Built {
    pub row_ptr: CudaSlice<u8>,
    pub targets: CudaSlice<u32>,
    pub codes: CudaSlice<u8>,
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

    /// Draw the rows of every source of the brain (`n` neurons) again into `row_ptr`'s rows
    /// (`synapses` of them, u32 or u64 pointers), keeping the targets in `range` (relative to
    /// its start), a slice of the sources per launch, with a progress bar (or lines) when
    /// `progress` and the build takes over a second.
    #[allow(clippy::too_many_arguments)]
    fn draw_rows(
        &self,
        s: &Arc<CudaStream>,
        r: &Recipe,
        n: u32,
        range: std::ops::Range<u32>,
        row_ptr: CudaSlice<u8>,
        synapses: u64,
        progress: bool,
    ) -> Result<Built, BackendError> {
        let e = |w: &'static str| dev_err(w);
        let map_code = s.clone_htod(&r.map_code).map_err(e("uploading the rules"))?;
        let targets: CudaSlice<u32> = s.alloc_zeros(synapses.max(1) as usize).map_err(e("alloc synapse targets"))?;
        let codes: CudaSlice<u8> = s.alloc_zeros(synapses.max(2) as usize * 2).map_err(e("alloc codes"))?;
        if synapses > 0 {
            let pow2 = r.longest.next_power_of_two();
            let shared = 4 * pow2 * 8;
            if shared > 48 << 10 {
                self.k
                    .materialize
                    .set_attribute(
                        cudarc::driver::sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                        shared as i32,
                    )
                    .map_err(e("shared memory for materialize"))?;
            }
            let cfg = LaunchConfig { grid_dim: (self.sm * 16, 1, 1), block_dim: (128, 1, 1), shared_mem_bytes: shared };
            let (n_areas, lo, hi, row64) = (r.areas.len() as u32, range.start, range.end, (synapses >= u32::MAX as u64) as u32);
            let bar = crate::progress::Progress::new("building the connectome on the GPU", "slices", SLICES as u64, progress);
            let slice = n.div_ceil(SLICES);
            for src_lo in (0..n).step_by(slice.max(1) as usize) {
                let src_hi = (src_lo + slice).min(n);
                // SAFETY: each row is written from its own row pointer, within `targets`/`codes`
                // (sized to `synapses`, the last row pointer); the rules are the recipe's.
                unsafe {
                    s.launch_builder(&self.k.materialize)
                        .arg(&self.maps)
                        .arg(&map_code)
                        .arg(&self.areas)
                        .arg(&n_areas)
                        .arg(&src_lo)
                        .arg(&src_hi)
                        .arg(&pow2)
                        .arg(&lo)
                        .arg(&hi)
                        .arg(&row_ptr)
                        .arg(&row64)
                        .arg(&targets)
                        .arg(&codes)
                        .launch(cfg)
                }
                .map_err(e("launching materialize"))?;
                s.synchronize().map_err(e("building the connectome on the GPU"))?;
                bar.inc(1);
            }
            bar.finish();
        }
        s.synchronize().map_err(e("building the connectome on the GPU"))?;
        Ok(Built { row_ptr, targets, codes })
    }
}

/// Build `r`'s rows for `n` neurons on the GPU of stream `s`: the row pointers in closed form
/// (`materialize_rows`), then the rows.
pub(super) fn materialize(s: &Arc<CudaStream>, r: &Recipe, n: u32, row64: bool, progress: bool) -> Result<Built, BackendError> {
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
    rules.draw_rows(s, r, n, 0..n, row_ptr, r.synapses, progress)
}

/// One GPU's part of a brain built on several GPUs (the synapses onto its neurons `range`, rows
/// for every source): the row pointers, counted on the GPU before the rows are drawn again into
/// them (`kernels/build.cu`, `part_count`, `scan_tiles`, `scan_write`, `materialize`).
pub(super) struct PartRows {
    pub range: std::ops::Range<u32>,
    /// u32, or u64 from u32::MAX synapses on (as [`super::MemoryPlan`] sizes them).
    pub row_ptr: CudaSlice<u8>,
    pub synapses: u64,
}

/// Counts of a scan tile (SCAN_TILE in build.cu).
const SCAN_TILE: u32 = 4096;

/// The row pointers of the part of `r`'s brain (`n` neurons) onto `range`.
pub(super) fn count_part(s: &Arc<CudaStream>, r: &Recipe, n: u32, range: std::ops::Range<u32>) -> Result<PartRows, BackendError> {
    let e = |w: &'static str| dev_err(w);
    let Rules { k, maps, areas, sm } = Rules::upload(s, r)?;
    let counts: CudaSlice<u32> = s.alloc_zeros(n.max(1) as usize).map_err(e("alloc row counts"))?;
    let (n_areas, src_lo, lo, hi) = (r.areas.len() as u32, 0u32, range.start, range.end);
    let cfg = LaunchConfig { grid_dim: (sm * 16, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
    // SAFETY: writes one count per source 0..n (allocated); reads the rules uploaded above.
    unsafe {
        s.launch_builder(&k.part_count).arg(&maps).arg(&areas).arg(&n_areas).arg(&src_lo).arg(&n).arg(&lo).arg(&hi).arg(&counts).launch(cfg)
    }
    .map_err(e("launching part_count"))?;
    let tiles = n.div_ceil(SCAN_TILE).max(1);
    let sums: CudaSlice<u64> = s.alloc_zeros(tiles as usize).map_err(e("alloc scan tiles"))?;
    let tile_cfg = LaunchConfig { grid_dim: (tiles, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
    // SAFETY: reads n counts, writes one sum per tile (allocated).
    unsafe { s.launch_builder(&k.scan_tiles).arg(&counts).arg(&n).arg(&sums).launch(tile_cfg) }.map_err(e("launching scan_tiles"))?;
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
    unsafe { s.launch_builder(&k.scan_write).arg(&counts).arg(&n).arg(&offs).arg(&row_ptr).arg(&row64_u).launch(tile_cfg) }
        .map_err(e("launching scan_write"))?;
    let end = n as usize * width;
    let last = if row64 { synapses.to_le_bytes().to_vec() } else { (synapses as u32).to_le_bytes().to_vec() };
    s.memcpy_htod(&last, &mut row_ptr.slice_mut(end..end + width)).map_err(e("writing the last row pointer"))?;
    s.synchronize().map_err(e("counting the part's rows on the GPU"))?;
    tracing::debug!(synapses, ?range, "CUDA: the part's rows counted");
    Ok(PartRows { range, row_ptr, synapses })
}

/// Draw the rows of `part` (counted by [`count_part`]) into targets and codes.
pub(super) fn materialize_part(s: &Arc<CudaStream>, r: &Recipe, n: u32, part: PartRows, progress: bool) -> Result<Built, BackendError> {
    Rules::upload(s, r)?.draw_rows(s, r, n, part.range, part.row_ptr, part.synapses, progress)
}

/// Stored synapses as read back: row pointers, targets, codes.
pub type Rows = (Vec<u64>, Vec<u32>, Vec<u32>);

impl super::CudaBackend {
    /// The stored synapses as they lie on the GPU: row pointers, targets and codes (for checks
    /// against the host's build).
    pub fn stored_rows(&self) -> Result<Rows, BackendError> {
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
