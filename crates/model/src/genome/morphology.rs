//! Morphologies: rules that say which destination voxels (or neurons) a source voxel connects to.
//!
//! Voxel morphologies (vectors, patterns, projector, FEAGI's functions) map a source voxel to a list
//! of destination voxels; every neuron pair of two matched voxels is a candidate synapse, kept with
//! the mapping's attractivity. The `random` morphology works on neurons directly.

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

/// One coordinate of a pattern: a number, `*` (any), `?` (same as the source), `!` (any but the
/// source's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PatternCoord {
    /// This coordinate exactly.
    Exact(i64),
    /// Any coordinate (`*`).
    Any,
    /// The source's coordinate (`?`).
    Same,
    /// Any coordinate but the source's (`!`).
    Except,
}

/// `[x, y, z]` of a pattern.
pub type PatternVoxel = [PatternCoord; 3];

/// A seeded random morphology, on neurons: either each (source, destination) neuron pair with a
/// probability, or a fixed number of destination neurons per source neuron drawn uniformly with
/// replacement.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RandomSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Each (source, destination) neuron pair is a synapse with this probability.
    pub probability: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Each source neuron gets this many destination neurons, drawn uniformly with replacement.
    pub fanout: Option<u32>,
}

/// FEAGI's composite `tile` (legacy FEAGI `define_subregions` + `neighbor_builder`, feagi/feagi
/// `src/evo/synaptogenesis_rules.py` and `src/evo/synapse.py`): the source is cut into
/// `src_seed`-sized tiles starting at voxel 0 on every axis; only whole tiles count (a partial tile
/// at the far edge connects nothing). `src_pattern` is `[[choose, skip]; 3]`, one pair per axis:
/// along that axis tiles are taken `choose` at a time, then `skip` are left out, repeating (an
/// absent or `[0, 0]` pair takes every tile). Every voxel of a chosen tile is mapped with `mapper`
/// (FEAGI's `mapper_morphology`) as if the tile were the whole source area: its position inside the
/// tile, a source of size `src_seed`. With the library's `projector` mapper, every chosen tile is
/// projected onto the whole destination.
///
/// The mapper must be a built-in voxel morphology (`projector`, `block_to_block`, `all_to_all`, the
/// FEAGI functions); a name the genome defines itself is treated as `projector` by
/// [`destination_voxels`], which sees no genome.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TileSpec {
    /// A tile's size in voxels, `[x, y, z]`.
    pub src_seed: [u32; 3],
    /// FEAGI's `src_pattern`: `[choose, skip]` tiles per axis.
    #[serde(default)]
    pub src_pattern: Vec<[i64; 2]>,
    /// The voxel morphology each chosen tile is mapped with (FEAGI's `mapper_morphology`).
    pub mapper: String,
}

/// A morphology definition. In YAML: `{vectors: [[0,0,1]]}`, `{patterns: [[[x,y,z],[x,y,z]]]}`,
/// `projector`, `{random: {fanout: 100}}`, ...
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Morphology {
    /// Destination = source + trunc(vector × scalar); out-of-bounds targets are dropped.
    Vectors(Vec<[i64; 3]>),
    /// `[source pattern, destination pattern]` pairs.
    Patterns(Vec<[PatternVoxel; 2]>),
    /// Scales the source grid onto the destination grid, axis by axis.
    Projector,
    /// Same voxel in the destination (`vectors: [[0,0,0]]`).
    BlockToBlock,
    /// Every destination voxel.
    AllToAll,
    /// Seeded random connections between neurons.
    Random(RandomSpec),
    /// FEAGI's `expander_x`, a binary encoder along x: source column `i` of a source `W` voxels wide
    /// connects to every destination x whose `W`-bit binary form has bit `i` set, counting from the
    /// most significant bit; y and z follow the source, clamped into the destination. So a source
    /// pattern of active columns lights the destination column that spells it in binary.
    /// (feagi-core `connectivity/core_morphologies/bitmask.rs`, encoder on x; legacy FEAGI's
    /// `syn_expander_x` used the same MSB-first rule with y = z = 0 and a bit width taken from the
    /// destination's size.)
    ExpanderX,
    /// FEAGI's `reducer_x`, the inverse of `expander_x`: source column `v` connects to every
    /// destination column `j` such that bit `j` (from the most significant, over the destination's
    /// width `W`) of `v` is set; y and z follow the source, clamped into the destination.
    /// (feagi-core `bitmask.rs`, decoder on x; legacy `syn_reducer_x` is the same with y = z = 0.)
    ReducerX,
    /// FEAGI's `randomizer`: one uniformly drawn destination voxel per source voxel (FEAGI draws per
    /// source neuron; the two agree with one neuron per voxel). Seeded, so reproducible.
    Randomizer,
    /// FEAGI's `lateral_pairs_x`: even x connects to x + 1, odd x to x - 1, same y and z; a pair
    /// partner outside the source or the destination is dropped (legacy `syn_lateral_pairs_x`,
    /// feagi-core `connectivity/rules/trivial.rs`).
    LateralPairsX,
    /// FEAGI's `last_to_first`: only the last source voxel `(X-1, Y-1, Z-1)` connects, to the
    /// destination's voxel `(0, 0, 0)` (legacy `neighbor_finder`, feagi-core
    /// `core_morphologies/last_to_first.rs`).
    LastToFirst,
    /// FEAGI's composite morphology (`tile`), see [`TileSpec`].
    Tile(TileSpec),
    /// FEAGI's `associative_memory` (its `bidirectional_stdp`): no synapses at build; they grow
    /// between neurons that fire together (docs/plasticity.md).
    AssociativeMemory,
}

impl Morphology {
    /// Morphologies known by name without a definition in the genome.
    pub fn builtin(name: &str) -> Option<Morphology> {
        Some(match name {
            "projector" => Morphology::Projector,
            "block_to_block" => Morphology::BlockToBlock,
            "all_to_all" => Morphology::AllToAll,
            "expander_x" => Morphology::ExpanderX,
            "reducer_x" => Morphology::ReducerX,
            "randomizer" => Morphology::Randomizer,
            "lateral_pairs_x" => Morphology::LateralPairsX,
            "last_to_first" => Morphology::LastToFirst,
            "associative_memory" => Morphology::AssociativeMemory,
            _ => return None,
        })
    }

    /// The names of the built-in morphologies, which a genome need not define.
    pub const BUILTIN_NAMES: [&'static str; 9] = [
        "projector",
        "block_to_block",
        "all_to_all",
        "expander_x",
        "reducer_x",
        "randomizer",
        "lateral_pairs_x",
        "last_to_first",
        "associative_memory",
    ];

    /// Whether this morphology picks neurons itself (true) or voxels (false).
    pub fn is_neuron_level(&self) -> bool {
        matches!(self, Morphology::Random(_))
    }
}

/// Everything a voxel morphology needs to know about one mapping.
#[derive(Clone, Copy, Debug)]
pub struct VoxelContext {
    /// The source area's dimensions in voxels.
    pub src_dims: [u32; 3],
    /// The destination area's dimensions in voxels.
    pub dst_dims: [u32; 3],
    /// The mapping's `morphology_scalar`: how far each vector or pattern reaches, per axis.
    pub scalar: [i32; 3],
}

/// Per-axis projector rule: larger source -> `dst = floor(src / (src_dim / dst_dim))`; smaller source
/// -> every dst voxel with `floor(dst / (dst_dim / src_dim)) == src`; equal -> identity.
fn project_axis(src: u32, src_dim: u32, dst_dim: u32, out: &mut Vec<u32>) {
    out.clear();
    if src_dim == dst_dim {
        out.push(src);
    } else if src_dim > dst_dim {
        let ratio = src_dim as f64 / dst_dim as f64;
        let d = (src as f64 / ratio).floor() as u32;
        out.push(d.min(dst_dim - 1));
    } else {
        let ratio = dst_dim as f64 / src_dim as f64;
        out.extend((0..dst_dim).filter(|&d| (d as f64 / ratio).floor() as u32 == src));
    }
}

fn in_bounds(v: [i64; 3], dims: [u32; 3]) -> bool {
    (0..3).all(|a| v[a] >= 0 && v[a] < dims[a] as i64)
}

/// Whether bit `index` of `value`, written with `width` bits and counted from the most significant
/// one, is set (FEAGI's MSB-first bitmask convention).
fn bit_from_msb(value: u64, index: u32, width: u32) -> bool {
    if index >= width {
        return false;
    }
    let lsb = width - 1 - index;
    lsb < 64 && value >> lsb & 1 == 1
}

fn axis_values(c: PatternCoord, src: u32, dim: u32) -> Vec<u32> {
    match c {
        PatternCoord::Exact(v) if v >= 0 && v < dim as i64 => vec![v as u32],
        PatternCoord::Exact(_) => vec![],
        PatternCoord::Any => (0..dim).collect(),
        PatternCoord::Same if src < dim => vec![src],
        PatternCoord::Same => vec![],
        PatternCoord::Except => (0..dim).filter(|&d| d != src).collect(),
    }
}

fn matches_source(p: &PatternVoxel, src: [u32; 3]) -> bool {
    (0..3).all(|a| match p[a] {
        PatternCoord::Exact(v) => v == src[a] as i64,
        // In a source pattern, `*`, `?` and `!` all accept any coordinate.
        _ => true,
    })
}

/// Push every `[x, y, z]` of the cartesian product of three axis lists.
fn push_product(xs: &[u32], ys: &[u32], zs: &[u32], out: &mut Vec<[u32; 3]>) {
    for &x in xs {
        for &y in ys {
            for &z in zs {
                out.push([x, y, z]);
            }
        }
    }
}

/// The destination voxels of source voxel `src` under a voxel-level morphology, sorted and without
/// duplicates. `rng_pick` draws a uniform index in 0..n (used by `randomizer` only), seeded by the
/// caller from (genome seed, mapping, source voxel).
pub fn destination_voxels(
    morphology: &Morphology,
    ctx: &VoxelContext,
    src: [u32; 3],
    rng_pick: &mut dyn FnMut(u64) -> u64,
    out: &mut Vec<[u32; 3]>,
) {
    out.clear();
    let d = ctx.dst_dims;
    match morphology {
        Morphology::Vectors(vs) => {
            for v in vs {
                let t = [
                    src[0] as i64 + v[0] * ctx.scalar[0] as i64,
                    src[1] as i64 + v[1] * ctx.scalar[1] as i64,
                    src[2] as i64 + v[2] * ctx.scalar[2] as i64,
                ];
                if in_bounds(t, d) {
                    out.push([t[0] as u32, t[1] as u32, t[2] as u32]);
                }
            }
        }
        Morphology::BlockToBlock => {
            if (0..3).all(|a| src[a] < d[a]) {
                out.push(src);
            }
        }
        Morphology::AllToAll => {
            push_product(&(0..d[0]).collect::<Vec<_>>(), &(0..d[1]).collect::<Vec<_>>(), &(0..d[2]).collect::<Vec<_>>(), out)
        }
        Morphology::Patterns(pairs) => {
            for [sp, dp] in pairs {
                if matches_source(sp, src) {
                    let xs = axis_values(dp[0], src[0], d[0]);
                    let ys = axis_values(dp[1], src[1], d[1]);
                    let zs = axis_values(dp[2], src[2], d[2]);
                    push_product(&xs, &ys, &zs, out);
                }
            }
        }
        Morphology::Projector => {
            let (mut xs, mut ys, mut zs) = (Vec::new(), Vec::new(), Vec::new());
            project_axis(src[0], ctx.src_dims[0], d[0], &mut xs);
            project_axis(src[1], ctx.src_dims[1], d[1], &mut ys);
            project_axis(src[2], ctx.src_dims[2], d[2], &mut zs);
            push_product(&xs, &ys, &zs, out);
        }
        Morphology::ExpanderX => {
            let width = ctx.src_dims[0];
            if src[0] < width {
                let (y, z) = (src[1].min(d[1] - 1), src[2].min(d[2] - 1));
                out.extend((0..d[0]).filter(|&x| bit_from_msb(x as u64, src[0], width)).map(|x| [x, y, z]));
            }
        }
        Morphology::ReducerX => {
            let (y, z) = (src[1].min(d[1] - 1), src[2].min(d[2] - 1));
            out.extend((0..d[0]).filter(|&j| bit_from_msb(src[0] as u64, j, d[0])).map(|j| [j, y, z]));
        }
        Morphology::Randomizer => {
            let n = d[0] as u64 * d[1] as u64 * d[2] as u64;
            let i = rng_pick(n);
            let x = (i / (d[1] as u64 * d[2] as u64)) as u32;
            let y = ((i / d[2] as u64) % d[1] as u64) as u32;
            let z = (i % d[2] as u64) as u32;
            out.push([x, y, z]);
        }
        Morphology::LateralPairsX => {
            let x = if src[0].is_multiple_of(2) { src[0] as i64 + 1 } else { src[0] as i64 - 1 };
            let t = [x, src[1] as i64, src[2] as i64];
            if x < ctx.src_dims[0] as i64 && in_bounds(t, d) {
                out.push([t[0] as u32, t[1] as u32, t[2] as u32]);
            }
        }
        Morphology::LastToFirst => {
            if (0..3).all(|a| src[a] + 1 == ctx.src_dims[a]) {
                out.push([0, 0, 0]);
            }
        }
        Morphology::Tile(tile) => {
            // A genome-defined mapper is resolved by the connectome builder, which calls
            // `tile_destination_voxels` itself; here only built-in mappers are known.
            if let Some(mapper) = Morphology::builtin(&tile.mapper) {
                tile_destination_voxels(tile, &mapper, ctx, src, rng_pick, out);
            }
        }
        Morphology::Random(_) | Morphology::AssociativeMemory => {}
    }
    out.sort_unstable();
    out.dedup();
}

/// FEAGI's `tile`: the source is cut into `src_seed`-sized tiles (whole tiles only), `src_pattern`
/// gives `[choose, skip]` per axis, and `mapper` maps the position inside a chosen tile (the tile
/// being the source grid) onto the destination.
pub fn tile_destination_voxels(
    tile: &TileSpec,
    mapper: &Morphology,
    ctx: &VoxelContext,
    src: [u32; 3],
    rng_pick: &mut dyn FnMut(u64) -> u64,
    out: &mut Vec<[u32; 3]>,
) {
    out.clear();
    let seed = tile.src_seed.map(|s| s.max(1));
    let chosen = (0..3).all(|a| {
        let t = src[a] / seed[a];
        let whole = (t as u64 + 1) * seed[a] as u64 <= ctx.src_dims[a] as u64;
        let picked = match tile.src_pattern.get(a) {
            Some(&[choose, skip]) if choose.max(0) + skip.max(0) > 0 => (t as i64) % (choose.max(0) + skip.max(0)) < choose.max(0),
            _ => true,
        };
        whole && picked
    });
    if chosen {
        let local = [src[0] % seed[0], src[1] % seed[1], src[2] % seed[2]];
        let tile_ctx = VoxelContext { src_dims: seed, ..*ctx };
        destination_voxels(mapper, &tile_ctx, local, rng_pick, out);
    }
}

// ---- serde for pattern coordinates: an integer, or one of "*", "?", "!" ----

impl Serialize for PatternCoord {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            PatternCoord::Exact(v) => s.serialize_i64(*v),
            PatternCoord::Any => s.serialize_str("*"),
            PatternCoord::Same => s.serialize_str("?"),
            PatternCoord::Except => s.serialize_str("!"),
        }
    }
}

impl<'de> Deserialize<'de> for PatternCoord {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = PatternCoord;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an integer or one of \"*\", \"?\", \"!\"")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<PatternCoord, E> {
                Ok(PatternCoord::Exact(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<PatternCoord, E> {
                i64::try_from(v).map(PatternCoord::Exact).map_err(|_| E::custom("pattern coordinate too large"))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<PatternCoord, E> {
                if v.fract() == 0.0 && v.abs() < 1e15 {
                    Ok(PatternCoord::Exact(v as i64))
                } else {
                    Err(E::custom(format!("pattern coordinate {v} is not an integer")))
                }
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<PatternCoord, E> {
                match v {
                    "*" => Ok(PatternCoord::Any),
                    "?" => Ok(PatternCoord::Same),
                    "!" => Ok(PatternCoord::Except),
                    other => other
                        .parse::<i64>()
                        .map(PatternCoord::Exact)
                        .map_err(|_| E::custom(format!("pattern coordinate {other:?} is not an integer, \"*\", \"?\" or \"!\""))),
                }
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dsts(m: &Morphology, src_dims: [u32; 3], dst_dims: [u32; 3], src: [u32; 3]) -> Vec<[u32; 3]> {
        let ctx = VoxelContext { src_dims, dst_dims, scalar: [1, 1, 1] };
        let mut out = Vec::new();
        destination_voxels(m, &ctx, src, &mut |n| n / 2, &mut out);
        out
    }

    #[test]
    fn projector_down_up_and_equal() {
        // 16 -> 8 on x: floor(src / 2)
        assert_eq!(dsts(&Morphology::Projector, [16, 1, 1], [8, 1, 1], [5, 0, 0]), vec![[2, 0, 0]]);
        // 2 -> 8 on x: each source voxel covers 4 destination voxels
        assert_eq!(dsts(&Morphology::Projector, [2, 1, 1], [8, 1, 1], [1, 0, 0]), vec![[4, 0, 0], [5, 0, 0], [6, 0, 0], [7, 0, 0]]);
        assert_eq!(dsts(&Morphology::Projector, [3, 3, 3], [3, 3, 3], [1, 2, 0]), vec![[1, 2, 0]]);
    }

    #[test]
    fn vectors_drop_out_of_bounds() {
        let m = Morphology::Vectors(vec![[1, 0, 0], [-1, 0, 0], [0, 0, 5]]);
        assert_eq!(dsts(&m, [3, 1, 1], [3, 1, 1], [0, 0, 0]), vec![[1, 0, 0]]);
    }

    #[test]
    fn patterns_with_wildcards() {
        let any = PatternCoord::Any;
        let same = PatternCoord::Same;
        let not = PatternCoord::Except;
        let ex = PatternCoord::Exact;
        // all_to_all as a pattern
        let m = Morphology::Patterns(vec![[[same, same, same], [any, any, any]]]);
        assert_eq!(dsts(&m, [2, 2, 1], [2, 2, 1], [0, 0, 0]).len(), 4);
        // "!" excludes the source coordinate
        let m = Morphology::Patterns(vec![[[any, any, any], [not, ex(0), ex(0)]]]);
        assert_eq!(dsts(&m, [3, 1, 1], [3, 1, 1], [1, 0, 0]), vec![[0, 0, 0], [2, 0, 0]]);
        // an exact source coordinate filters sources
        let m = Morphology::Patterns(vec![[[ex(0), ex(0), ex(0)], [ex(1), ex(0), ex(0)]]]);
        assert!(dsts(&m, [2, 1, 1], [2, 1, 1], [1, 0, 0]).is_empty());
        assert_eq!(dsts(&m, [2, 1, 1], [2, 1, 1], [0, 0, 0]), vec![[1, 0, 0]]);
    }

    #[test]
    fn expander_x_encodes_the_source_column_msb_first() {
        // 3 source columns -> 3-bit destination values; column 1 is the middle bit.
        assert_eq!(dsts(&Morphology::ExpanderX, [3, 1, 1], [8, 1, 1], [1, 0, 0]), vec![[2, 0, 0], [3, 0, 0], [6, 0, 0], [7, 0, 0]]);
        // column 0 is the most significant bit
        assert_eq!(dsts(&Morphology::ExpanderX, [3, 1, 1], [8, 1, 1], [0, 0, 0]), vec![[4, 0, 0], [5, 0, 0], [6, 0, 0], [7, 0, 0]]);
        // y and z follow the source, clamped into the destination
        assert_eq!(dsts(&Morphology::ExpanderX, [2, 3, 1], [4, 2, 1], [1, 2, 0]), vec![[1, 1, 0], [3, 1, 0]]);
    }

    #[test]
    fn reducer_x_decodes_the_source_column_msb_first() {
        // 5 = 0101 over a 4-wide destination: bits 1 and 3 counted from the most significant
        assert_eq!(dsts(&Morphology::ReducerX, [16, 1, 1], [4, 1, 1], [5, 0, 0]), vec![[1, 0, 0], [3, 0, 0]]);
        assert!(dsts(&Morphology::ReducerX, [16, 1, 1], [4, 1, 1], [0, 0, 0]).is_empty());
        // reducer_x undoes expander_x: destination value 6 = 110 lights source columns 0 and 1
        assert_eq!(dsts(&Morphology::ReducerX, [8, 1, 1], [3, 1, 1], [6, 0, 0]), vec![[0, 0, 0], [1, 0, 0]]);
    }

    #[test]
    fn lateral_pairs_stay_inside_the_source() {
        assert_eq!(dsts(&Morphology::LateralPairsX, [4, 1, 1], [4, 1, 1], [2, 0, 0]), vec![[3, 0, 0]]);
        assert_eq!(dsts(&Morphology::LateralPairsX, [4, 1, 1], [4, 1, 1], [1, 0, 0]), vec![[0, 0, 0]]);
        // column 2 of a 3-wide source has no partner, even if the destination is wider
        assert!(dsts(&Morphology::LateralPairsX, [3, 1, 1], [4, 1, 1], [2, 0, 0]).is_empty());
    }

    #[test]
    fn last_to_first_connects_only_the_last_voxel() {
        assert_eq!(dsts(&Morphology::LastToFirst, [2, 2, 2], [3, 3, 3], [1, 1, 1]), vec![[0, 0, 0]]);
        assert!(dsts(&Morphology::LastToFirst, [2, 2, 2], [3, 3, 3], [1, 1, 0]).is_empty());
        assert!(dsts(&Morphology::LastToFirst, [2, 2, 2], [3, 3, 3], [0, 0, 0]).is_empty());
    }

    #[test]
    fn tile_maps_each_chosen_whole_tile_with_its_mapper() {
        let tile = |pattern: Vec<[i64; 2]>, mapper: &str| {
            Morphology::Tile(TileSpec { src_seed: [2, 2, 1], src_pattern: pattern, mapper: mapper.into() })
        };
        // choose one tile, skip one, along x: x 0..2 chosen, x 2..4 skipped
        let m = tile(vec![[1, 1], [1, 0], [1, 0]], "projector");
        // local (1, 0) of a 2x2 tile projected onto 4x4: x 2..4, y 0..2
        assert_eq!(dsts(&m, [4, 2, 1], [4, 4, 1], [1, 0, 0]), vec![[2, 0, 0], [2, 1, 0], [3, 0, 0], [3, 1, 0]]);
        assert!(dsts(&m, [4, 2, 1], [4, 4, 1], [3, 0, 0]).is_empty());
        // no pattern: every whole tile; the partial tile at x = 4 of a 5-wide source connects nothing
        let m = tile(vec![], "projector");
        assert_eq!(dsts(&m, [5, 2, 1], [2, 2, 1], [3, 1, 0]), vec![[1, 1, 0]]);
        assert!(dsts(&m, [5, 2, 1], [2, 2, 1], [4, 1, 0]).is_empty());
        // the mapper sees the position inside the tile
        let m = tile(vec![], "block_to_block");
        assert_eq!(dsts(&m, [4, 2, 1], [4, 4, 1], [3, 1, 0]), vec![[1, 1, 0]]);
    }

    #[test]
    fn pattern_coords_parse_from_yaml() {
        let m: Morphology = crate::genome::yaml::from_str("patterns: [[[\"*\", 0, \"?\"], [\"!\", 1, \"*\"]]]").unwrap();
        assert_eq!(
            m,
            Morphology::Patterns(vec![[
                [PatternCoord::Any, PatternCoord::Exact(0), PatternCoord::Same],
                [PatternCoord::Except, PatternCoord::Exact(1), PatternCoord::Any]
            ]])
        );
        let err = crate::genome::yaml::from_str::<Morphology>("patterns: [[[\"x\", 0, 0], [0, 0, 0]]]").unwrap_err();
        assert!(err.to_string().contains("\"x\""), "{err}");
        let m: Morphology = crate::genome::yaml::from_str("projector").unwrap();
        assert_eq!(m, Morphology::Projector);
    }
}
