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
    Exact(i64),
    Any,
    Same,
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
    pub probability: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fanout: Option<u32>,
}

/// FEAGI's composite `tile`: the source is cut into `src_seed`-sized tiles, and each tile is mapped
/// onto the destination with `mapper` (FEAGI's `mapper_morphology`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TileSpec {
    pub src_seed: [u32; 3],
    /// FEAGI's `src_pattern` (kept for round trips).
    #[serde(default)]
    pub src_pattern: Vec<[i64; 2]>,
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
    /// FEAGI functions (see docs/genome.md for their exact rules).
    ExpanderX,
    ReducerX,
    Randomizer,
    LateralPairsX,
    LastToFirst,
    /// FEAGI composite morphology.
    Tile(TileSpec),
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
            _ => return None,
        })
    }

    pub const BUILTIN_NAMES: [&'static str; 8] = [
        "projector",
        "block_to_block",
        "all_to_all",
        "expander_x",
        "reducer_x",
        "randomizer",
        "lateral_pairs_x",
        "last_to_first",
    ];

    /// Whether this morphology picks neurons itself (true) or voxels (false).
    pub fn is_neuron_level(&self) -> bool {
        matches!(self, Morphology::Random(_))
    }
}

/// Everything a voxel morphology needs to know about one mapping.
#[derive(Clone, Copy, Debug)]
pub struct VoxelContext {
    pub src_dims: [u32; 3],
    pub dst_dims: [u32; 3],
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
        Morphology::AllToAll => push_product(&(0..d[0]).collect::<Vec<_>>(), &(0..d[1]).collect::<Vec<_>>(), &(0..d[2]).collect::<Vec<_>>(), out),
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
            // The source's x range is spread over the destination's x range (projector on x only),
            // y and z kept when they exist in the destination.
            let mut xs = Vec::new();
            project_axis(src[0], ctx.src_dims[0], d[0], &mut xs);
            if src[1] < d[1] && src[2] < d[2] {
                push_product(&xs, &[src[1]], &[src[2]], out);
            }
        }
        Morphology::ReducerX => {
            // Every source voxel of a (y, z) row lands on x = 0 of the destination... scaled by the
            // x ratio, so a wide source row is reduced onto a narrow destination row.
            let x = ((src[0] as u64 * d[0] as u64) / ctx.src_dims[0].max(1) as u64) as u32;
            if src[1] < d[1] && src[2] < d[2] {
                out.push([x.min(d[0] - 1), src[1], src[2]]);
            }
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
            // Pairs neighbouring x columns: even x -> x + 1, odd x -> x - 1.
            let x = if src[0] % 2 == 0 { src[0] as i64 + 1 } else { src[0] as i64 - 1 };
            let t = [x, src[1] as i64, src[2] as i64];
            if in_bounds(t, d) {
                out.push([t[0] as u32, t[1] as u32, t[2] as u32]);
            }
        }
        Morphology::LastToFirst => {
            // The last x column of the source drives the first x column of the destination.
            if src[0] + 1 == ctx.src_dims[0] && src[1] < d[1] && src[2] < d[2] {
                out.push([0, src[1], src[2]]);
            }
        }
        Morphology::Tile(tile) => {
            // Position inside the source tile, projected with the mapper onto the whole destination.
            let local = [
                src[0] % tile.src_seed[0].max(1),
                src[1] % tile.src_seed[1].max(1),
                src[2] % tile.src_seed[2].max(1),
            ];
            let seed_dims = [
                tile.src_seed[0].max(1).min(ctx.src_dims[0]),
                tile.src_seed[1].max(1).min(ctx.src_dims[1]),
                tile.src_seed[2].max(1).min(ctx.src_dims[2]),
            ];
            let (mut xs, mut ys, mut zs) = (Vec::new(), Vec::new(), Vec::new());
            project_axis(local[0].min(seed_dims[0] - 1), seed_dims[0], d[0], &mut xs);
            project_axis(local[1].min(seed_dims[1] - 1), seed_dims[1], d[1], &mut ys);
            project_axis(local[2].min(seed_dims[2] - 1), seed_dims[2], d[2], &mut zs);
            push_product(&xs, &ys, &zs, out);
        }
        Morphology::Random(_) => {}
    }
    out.sort_unstable();
    out.dedup();
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
