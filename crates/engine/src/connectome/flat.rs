//! Procedural rows as flat numbers: the rules of [`super::rows::Drawer`] (voxel morphologies,
//! tiles, fanouts, probabilities, attractivity, the out-degree) written as plain `#[repr(C)]`
//! records, for a backend that draws rows where no Rust runs (a GPU: `kernels/rows.cu` follows
//! them draw for draw). Mappings in closed form ([`super::ClosedForm`]) are drawn faster by their
//! own path and are not written here.

use super::draw::Stream;
use super::procedural::closed_form;
use super::rows::{compile, Compiled, RowRule};
use crate::genome::morphology::PatternCoord;
use crate::genome::{Genome, Morphology};
use crate::model::Layout;

/// `FlatMap::rule`: draws `fanout` targets uniformly.
pub const R_FANOUT: u32 = 0;
/// Every destination neuron with a probability (geometric skips, `log1mp`).
pub const R_PROBABILITY: u32 = 1;
/// Every neuron of the destination voxels of `morph` (after the tile, with `F_TILE`).
pub const R_VOXEL: u32 = 2;

/// `FlatMap::morph`, the voxel morphology (of a tile: its mapper).
pub const M_VECTORS: u32 = 0;
/// `FlatMap::morph`: FEAGI patterns.
pub const M_PATTERNS: u32 = 1;
/// `FlatMap::morph`: `projector`.
pub const M_PROJECTOR: u32 = 2;
/// `FlatMap::morph`: `block_to_block`.
pub const M_BLOCK_TO_BLOCK: u32 = 3;
/// `FlatMap::morph`: `all_to_all`.
pub const M_ALL_TO_ALL: u32 = 4;
/// `FlatMap::morph`: `expander_x`.
pub const M_EXPANDER_X: u32 = 5;
/// `FlatMap::morph`: `reducer_x`.
pub const M_REDUCER_X: u32 = 6;
/// `FlatMap::morph`: `randomizer`.
pub const M_RANDOMIZER: u32 = 7;
/// `FlatMap::morph`: `lateral_pairs_x`.
pub const M_LATERAL_PAIRS_X: u32 = 8;
/// `FlatMap::morph`: `last_to_first`.
pub const M_LAST_TO_FIRST: u32 = 9;

/// `FlatMap::flags`: a candidate is kept when its keep draw is below `keep` (an attractivity).
pub const F_KEEP: u32 = 1;
/// Drawn again: its synapses add their contribution (else only counted in the out-degree).
pub const F_DRAWN: u32 = 2;
/// The morphology is a tile's mapper (`tile_seed`, `tile_pattern`).
pub const F_TILE: u32 = 4;
/// A probability of 1 or more (no skips) / of 0 or less (no synapse).
pub const F_ALWAYS: u32 = 8;
/// A probability of 0 or less: no synapse.
pub const F_NEVER: u32 = 16;

/// A pattern coordinate in `FlatRows::list`: a number (0 or more), or one of these.
pub const P_NONE: i64 = -1;
/// Any coordinate (`*`).
pub const P_ANY: i64 = -2;
/// The source's coordinate (`?`).
pub const P_SAME: i64 = -3;
/// Any coordinate but the source's (`!`).
pub const P_EXCEPT: i64 = -4;

/// One mapping of a source area, flat.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FlatMap {
    /// [`Stream::mapping_key`] of the mapping (its neurons' draws).
    pub key: u64,
    /// The key of its voxels' draws (`randomizer`): `mapping_key(seed, index | 1 << 63)`.
    pub vkey: u64,
    /// With `F_KEEP`: a candidate is kept when its keep draw is below this.
    pub keep: u64,
    /// `±weight × psp`, the bits of an `f64`: the contribution is `quantize(value / out-degree)`.
    pub value: u64,
    /// `ln(1 - p)` of a probability, the bits of an `f64` (libm's `log`, as the build's).
    pub log1mp: u64,
    /// `R_*`: how destination neurons are picked.
    pub rule: u32,
    /// `M_*`: the voxel morphology.
    pub morph: u32,
    /// `F_*` bits.
    pub flags: u32,
    /// Draws per source neuron (random morphologies).
    pub fanout: u32,
    /// The source area's first neuron.
    pub src_first: u32,
    /// The source area's voxels along x, y, z.
    pub src_dims: [u32; 3],
    /// The source area's neurons per voxel.
    pub src_npv: u32,
    /// The destination area's first neuron.
    pub dst_first: u32,
    /// The destination area's neurons.
    pub dst_count: u32,
    /// The destination area's voxels along x, y, z.
    pub dst_dims: [u32; 3],
    /// The destination area's neurons per voxel.
    pub dst_npv: u32,
    /// The mapping's `morphology_scalar`.
    pub scalar: [i32; 3],
    /// A tile's seed (each at least 1) and `[choose, skip]` per axis (`[0, 0]`: every tile).
    pub tile_seed: [u32; 3],
    /// `[choose, skip]` of x, y and z.
    pub tile_pattern: [i32; 6],
    /// Its vectors (3 numbers each) or patterns (6 each: source, then destination) in the list.
    pub list_at: u32,
    /// How many numbers of the list are its.
    pub list_len: u32,
}

/// A source area with mappings drawn row by row: `maps[map_first..map_end]` are drawn
/// (`F_DRAWN`) or counted in the out-degree; `uniform`: the out-degree is 1.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlatArea {
    /// The area's first neuron.
    pub first: u32,
    /// The area's neurons.
    pub count: u32,
    /// Its first map in `FlatRows::maps`.
    pub map_first: u32,
    /// One past its last map.
    pub map_end: u32,
    /// 1 when every source neuron's out-degree is 1.
    pub uniform: u32,
}

/// The procedural mappings of a brain that have no closed form, flat.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FlatRows {
    /// The source areas.
    pub areas: Vec<FlatArea>,
    /// Their maps.
    pub maps: Vec<FlatMap>,
    /// Vectors and pattern coordinates of the maps.
    pub list: Vec<i64>,
}

impl FlatRows {
    /// Whether no mapping is drawn row by row.
    pub fn is_empty(&self) -> bool {
        self.areas.is_empty()
    }
}

fn morph_code(m: &Morphology, list: &mut Vec<i64>) -> Option<(u32, u32, u32)> {
    let at = list.len() as u32;
    let code = match m {
        Morphology::Vectors(vs) => {
            vs.iter().for_each(|v| list.extend_from_slice(v));
            M_VECTORS
        }
        Morphology::Patterns(ps) => {
            let coord = |c: &PatternCoord| match *c {
                PatternCoord::Exact(v) => v.max(P_NONE),
                PatternCoord::Any => P_ANY,
                PatternCoord::Same => P_SAME,
                PatternCoord::Except => P_EXCEPT,
            };
            ps.iter().flatten().flatten().for_each(|c| list.push(coord(c)));
            M_PATTERNS
        }
        Morphology::Projector => M_PROJECTOR,
        Morphology::BlockToBlock => M_BLOCK_TO_BLOCK,
        Morphology::AllToAll => M_ALL_TO_ALL,
        Morphology::ExpanderX => M_EXPANDER_X,
        Morphology::ReducerX => M_REDUCER_X,
        Morphology::Randomizer => M_RANDOMIZER,
        Morphology::LateralPairsX => M_LATERAL_PAIRS_X,
        Morphology::LastToFirst => M_LAST_TO_FIRST,
        Morphology::Random(_) | Morphology::Tile(_) | Morphology::AssociativeMemory => return None,
    };
    let len = match m {
        Morphology::Vectors(vs) => vs.len() as u32,
        Morphology::Patterns(ps) => ps.len() as u32,
        _ => 0,
    };
    Some((code, at, len))
}

/// Mapping `m` (of a source area of `src_npv` neurons a voxel), flat; None when its rule has no
/// flat form (a listed or associative mapping, a tile whose mapper is not a voxel morphology).
pub(super) fn flat_map(m: &Compiled, seed: u64, src_npv: u32, drawn: bool, list: &mut Vec<i64>) -> Option<FlatMap> {
    let keep = m.attract;
    let mut f = FlatMap {
        key: Stream::mapping_key(seed, m.index as u64),
        vkey: Stream::mapping_key(seed, m.index as u64 | 1 << 63),
        keep: keep.unwrap_or(0),
        value: m.value.to_bits(),
        flags: if keep.is_some() { F_KEEP } else { 0 } | if drawn { F_DRAWN } else { 0 },
        src_first: m.src_first,
        src_dims: m.ctx.src_dims,
        src_npv,
        dst_first: m.dst.first,
        dst_count: m.dst.count,
        dst_dims: m.dst.dims,
        dst_npv: m.dst.neurons_per_voxel,
        scalar: m.ctx.scalar,
        ..FlatMap::default()
    };
    let before = list.len();
    let morph = match &m.rule {
        RowRule::Fanout(k) => {
            (f.rule, f.fanout) = (R_FANOUT, *k);
            None
        }
        RowRule::Probability { log1mp, always, never } => {
            (f.rule, f.log1mp) = (R_PROBABILITY, log1mp.to_bits());
            f.flags |= if *always { F_ALWAYS } else { 0 } | if *never { F_NEVER } else { 0 };
            None
        }
        RowRule::Voxel(morph) => Some(morph),
        RowRule::Tile(tile, mapper) => {
            f.flags |= F_TILE;
            f.tile_seed = tile.src_seed.map(|s| s.max(1));
            for (a, pair) in tile.src_pattern.iter().take(3).enumerate() {
                f.tile_pattern[2 * a] = pair[0].clamp(0, i32::MAX as i64) as i32;
                f.tile_pattern[2 * a + 1] = pair[1].clamp(0, i32::MAX as i64) as i32;
            }
            Some(mapper)
        }
        RowRule::Associative | RowRule::Listed => return None,
    };
    if let Some(morph) = morph {
        f.rule = R_VOXEL;
        let Some((code, at, len)) = morph_code(morph, list) else {
            list.truncate(before);
            return None;
        };
        (f.morph, f.list_at, f.list_len) = (code, at, len);
    }
    Some(f)
}

/// Per mapping of `genome`: a GPU draws it again, in closed form ([`super::ClosedForm`]) or row
/// by row ([`FlatRows`]). Row by row, a mapping of an area whose psp is divided by the out-degree
/// needs every mapping of that area in flat form (each is counted), the associative ones aside.
pub fn gpu_drawable_mask(genome: &Genome, layout: &Layout) -> Vec<bool> {
    let mut mask = vec![false; genome.mappings.len()];
    let mut scratch = Vec::new();
    for (area, ms) in compile(genome, layout).0.iter().enumerate() {
        let uniform = genome.areas[area].psp_uniform_distribution;
        let npv = layout.params[area].neurons_per_voxel;
        let mut flat = |m: &Compiled| matches!(m.rule, RowRule::Associative) || flat_map(m, 0, npv, false, &mut scratch).is_some();
        let countable = uniform || ms.iter().all(&mut flat);
        for m in ms {
            mask[m.index] = closed_form(m, ms, uniform, genome.seed).is_some() || (countable && flat(m));
        }
    }
    mask
}

/// The flat rows of the procedural mappings in `by_area` that have no closed form; an error names
/// a mapping that has no flat form either.
pub(super) fn flat_rows(by_area: &[Vec<Compiled>], uniform: &[bool], layout: &Layout, seed: u64) -> Result<FlatRows, String> {
    let mut out = FlatRows::default();
    for (area, ms) in by_area.iter().enumerate() {
        let rowwise = |m: &Compiled| m.procedural && closed_form(m, ms, uniform[area], seed).is_none();
        if !ms.iter().any(rowwise) {
            continue;
        }
        let map_first = out.maps.len() as u32;
        let npv = layout.params[area].neurons_per_voxel;
        for m in ms {
            let drawn = rowwise(m);
            // a uniform area needs only what it draws; another counts every mapping but an associative one
            if !drawn && (uniform[area] || matches!(m.rule, RowRule::Associative)) {
                continue;
            }
            let f = flat_map(m, seed, npv, drawn, &mut out.list).ok_or_else(|| {
                format!("mapping {} cannot be drawn again on a GPU: its rule (or an out-degree it shares) has no flat form", m.index)
            })?;
            out.maps.push(f);
        }
        let p = &layout.params[area];
        out.areas.push(FlatArea {
            first: p.first,
            count: p.count,
            map_first,
            map_end: out.maps.len() as u32,
            uniform: uniform[area] as u32,
        });
    }
    Ok(out)
}
