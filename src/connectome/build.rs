//! Building the connectome: rows generated in parallel over chunks of source neurons, each row from
//! its own counter-based random stream, then split by target part and assembled in source order.

use std::ops::Range;
use std::time::Instant;

use rayon::prelude::*;

use super::draw::{self, Stream};
use std::collections::HashMap;

use super::plastic::{group_contributions, Associative, Plastic, PlasticMapping};
use super::{Codes, Connectome, MappingStats, Part};
use crate::genome::morphology::{destination_voxels, tile_destination_voxels, TileSpec, VoxelContext};
use crate::genome::{Genome, Morphology, Sign};
use crate::model::fixed::contribution_from_f64;
use crate::model::plasticity::{self, DEFAULT_MAX_SYNAPSES};
use crate::model::{AreaParams, Layout};

/// How to build.
#[derive(Clone, Debug)]
pub struct BuildOptions {
    /// Target ranges, one per part, ascending and disjoint. Usually they cover `0..neurons`; the
    /// synapses onto targets outside every part are drawn (and counted in the mapping statistics)
    /// but not kept: one shard's build keeps only its own parts.
    pub parts: Vec<Range<u32>>,
    /// Show a progress bar on stderr once the build has taken more than a second.
    pub progress: bool,
}

enum Rule {
    Voxel(Morphology),
    /// A tile with its mapper resolved (built-in or defined in the genome).
    Tile(TileSpec, Morphology),
    Fanout(u32),
    Probability {
        log1mp: f64,
        always: bool,
        never: bool,
    },
    /// Every destination neuron but the source itself (an associative mapping's possible pairs).
    Associative,
    /// The synapses a learned genome lists.
    Listed,
}

/// A mapping's listed synapses (`Mapping::synapses`): per source neuron (local), its
/// destinations (local) and weights, by destination.
type Listed = HashMap<u32, Vec<(u32, u8)>>;

fn listed(entries: &[[u32; 3]]) -> Listed {
    let mut l: Listed = HashMap::new();
    for &[s, d, w] in entries {
        l.entry(s).or_default().push((d, w.min(255) as u8));
    }
    for v in l.values_mut() {
        v.sort_by_key(|e| e.0);
    }
    l
}

struct Compiled {
    index: usize,
    /// Neurons of the source area.
    src_count: u32,
    dst: AreaParams,
    ctx: VoxelContext,
    rule: Rule,
    attract: Option<u64>,
    /// `±weight × psp`
    value: f64,
    /// Index among the plastic mappings, and the initial weight of its synapses.
    plastic: Option<(u32, u8)>,
    /// A learned genome's synapses of this mapping, with their weights.
    listed: Option<Listed>,
}

/// Marks a chunk's code as plastic: `PLASTIC | local group << 8 | weight`.
const PLASTIC: u32 = 1 << 31;

/// The synapses of one chunk of source neurons, per part.
#[derive(Default)]
struct ChunkPart {
    /// Row length of each source of the chunk.
    lens: Vec<u32>,
    targets: Vec<u32>,
    /// Index into the chunk's `locals`, or a plastic code (see [`PLASTIC`]).
    codes: Vec<u32>,
}

struct ChunkOut {
    parts: Vec<ChunkPart>,
    /// The chunk's distinct contributions.
    locals: Vec<i32>,
    /// The chunk's plastic groups: (plastic mapping, out-degree divisor as f64 bits).
    groups: Vec<(u32, u64)>,
    counts: Vec<(u64, u64)>,
}

/// Build the connectome of a validated genome.
pub fn build(genome: &Genome, layout: &Layout, opts: &BuildOptions) -> Connectome {
    let start = Instant::now();
    let n = layout.neurons;
    let (by_area, plastic) = compile(genome, layout);
    let area_uniform: Vec<bool> = genome.areas.iter().map(|a| a.psp_uniform_distribution).collect();

    let chunk = ((n as usize) / (rayon::current_num_threads() * 16)).clamp(1024, 65_536) as u32;
    let chunks: Vec<Range<u32>> = (0..n.div_ceil(chunk)).map(|c| c * chunk..((c + 1) * chunk).min(n)).collect();
    let progress = crate::progress::Progress::new("building the connectome", "chunks", chunks.len() as u64, opts.progress);

    let outs: Vec<ChunkOut> = chunks
        .par_iter()
        .map(|range| {
            let out = build_chunk(genome.seed, layout, &by_area, &area_uniform, genome.mappings.len(), &opts.parts, range.clone());
            progress.inc(1);
            out
        })
        .collect();
    progress.finish();

    let mut mappings: Vec<MappingStats> = genome
        .mappings
        .iter()
        .enumerate()
        .map(|(index, m)| MappingStats {
            index,
            source: m.source.clone(),
            destination: m.destination.clone(),
            morphology: m.morphology.clone(),
            synapses: 0,
            dead: 0,
        })
        .collect();
    for o in &outs {
        for (st, &(s, d)) in mappings.iter_mut().zip(&o.counts) {
            st.synapses += s;
            st.dead += d;
        }
    }

    let (parts, contributions, plastic) = assemble(n, &opts.parts, outs, plastic);
    Connectome { neurons: n, parts, contributions, mappings, plastic, build_seconds: start.elapsed().as_secs_f64() }
}

/// At most how many synapses [`build`] draws, without drawing them, and whether that is the exact
/// count: a fanout of k draws k per source neuron (at most the destination's neurons); a
/// probability, a voxel or a tile rule at most one per (source, destination) pair.
pub fn synapse_bound(genome: &Genome, layout: &Layout) -> (u64, bool) {
    let (mut bound, mut exact) = (0u64, true);
    for rules in compile(genome, layout).0 {
        for c in rules {
            let dst = c.dst.count as u64;
            let per_source = match c.rule {
                Rule::Fanout(k) => {
                    exact &= k as u64 <= dst;
                    (k as u64).min(dst)
                }
                Rule::Probability { never: true, .. } => 0,
                Rule::Associative => 0,
                _ => {
                    exact = false;
                    dst
                }
            };
            bound = bound.saturating_add(per_source.saturating_mul(c.src_count as u64));
        }
    }
    (bound, exact)
}

/// The synapses [`build`] would make, counted by drawing them without keeping any (the memory of
/// the counts only).
pub fn count(genome: &Genome, layout: &Layout) -> u64 {
    build(genome, layout, &BuildOptions { parts: vec![], progress: false }).mappings.iter().map(|m| m.synapses).sum()
}

/// The mappings by source area, and the plastic ones with their `±psp`.
fn compile(genome: &Genome, layout: &Layout) -> (Vec<Vec<Compiled>>, Vec<(PlasticMapping, f64)>) {
    let mut by_area: Vec<Vec<Compiled>> = (0..layout.params.len()).map(|_| Vec::new()).collect();
    let mut plastic = Vec::new();
    for (index, m) in genome.mappings.iter().enumerate() {
        let (Some(si), Some(di)) = (layout.area_index(&m.source), layout.area_index(&m.destination)) else { continue };
        let Some(morph) = genome.resolve_morphology(&m.morphology) else { continue };
        let src = &layout.params[si];
        let dst = layout.params[di];
        let psp = m.psp.unwrap_or(genome.areas[si].psp);
        let sign = if m.sign == Sign::Inhibitory { -1.0 } else { 1.0 };
        let rule_kind = match &morph {
            Morphology::Random(r) => match (r.fanout, r.probability) {
                (Some(k), _) => Rule::Fanout(k),
                (None, Some(p)) => Rule::Probability { log1mp: libm::log(1.0 - p), always: p >= 1.0, never: p <= 0.0 },
                (None, None) => Rule::Fanout(0),
            },
            Morphology::Tile(t) => {
                // validated: the mapper resolves to a voxel morphology
                let mapper = genome.resolve_morphology(&t.mapper).unwrap_or(Morphology::Projector);
                Rule::Tile(t.clone(), mapper)
            }
            Morphology::AssociativeMemory => Rule::Associative,
            _ if m.synapses.is_some() => Rule::Listed,
            _ => Rule::Voxel(morph.clone()),
        };
        // validated: a plastic mapping's rule compiles
        let rule_of = |p| plasticity::Rule::compile(p).ok();
        let learns = m.plasticity.as_ref().and_then(rule_of).map(|rule| {
            let associative = matches!(rule_kind, Rule::Associative).then(|| {
                let (sources, targets) = (src.first..src.first + src.count, dst.first..dst.first + dst.count);
                let pairs = src.count as u64 * dst.count as u64;
                let max_synapses = m.max_synapses.unwrap_or(pairs.min(DEFAULT_MAX_SYNAPSES));
                let grown = m.synapses.iter().flatten().map(|&[s, d, _]| (src.first + s, dst.first + d)).collect();
                Associative { sources, targets, max_synapses, grown }
            });
            let weight = m.weight.round().clamp(0.0, 255.0) as u8;
            plastic.push((PlasticMapping { index, rule, weight, associative }, sign * psp));
            ((plastic.len() - 1) as u32, if matches!(rule_kind, Rule::Associative) { 0 } else { weight })
        });
        by_area[si].push(Compiled {
            index,
            src_count: src.count,
            dst,
            ctx: VoxelContext { src_dims: src.dims, dst_dims: dst.dims, scalar: m.scalar },
            rule: rule_kind,
            attract: draw::chance_threshold(m.attractivity / 100.0),
            value: sign * m.weight * psp,
            plastic: learns,
            listed: m.synapses.as_deref().map(listed),
        });
    }
    (by_area, plastic)
}

/// The last source voxel of a mapping and its destination voxels (neurons of one voxel share them).
type VoxelCache = (Option<[u32; 3]>, Vec<[u32; 3]>);

#[allow(clippy::too_many_arguments)]
fn build_chunk(
    seed: u64,
    layout: &Layout,
    by_area: &[Vec<Compiled>],
    area_uniform: &[bool],
    n_mappings: usize,
    parts: &[Range<u32>],
    range: Range<u32>,
) -> ChunkOut {
    let mut out = ChunkOut {
        parts: parts.iter().map(|_| ChunkPart { lens: Vec::with_capacity(range.len()), ..Default::default() }).collect(),
        locals: Vec::new(),
        groups: Vec::new(),
        counts: vec![(0, 0); n_mappings],
    };
    let mut dict: HashMap<i32, u32> = HashMap::new();
    let mut group_dict: HashMap<(u32, u64), u32> = HashMap::new();
    let mut slot_code: Vec<u32> = Vec::new();
    // (target, mapping slot) pairs of one row; voxel destinations cached per mapping slot
    let mut row: Vec<u64> = Vec::new();
    let mut cache: Vec<VoxelCache> = Vec::new();
    let mut area = layout.area_of(range.start);
    let mut cache_area = usize::MAX;
    for s in range {
        while s >= layout.params[area].first + layout.params[area].count {
            area += 1;
        }
        let mappings = &by_area[area];
        if cache_area != area {
            cache = mappings.iter().map(|_| (None, Vec::new())).collect();
            cache_area = area;
        }
        let sp = &layout.params[area];
        let local = s - sp.first;
        row.clear();
        for (slot, m) in mappings.iter().enumerate() {
            let mut stream = Stream::new(seed, m.index as u64, s as u64);
            let keep = |stream: &mut Stream| m.attract.is_none_or(|th| stream.chance(th));
            let slot_bits = slot as u64;
            match &m.rule {
                Rule::Voxel(_) | Rule::Tile(..) => {
                    let voxel = sp.voxel_of(local);
                    let (cached, dsts) = &mut cache[slot];
                    if *cached != Some(voxel) {
                        let vid = ((voxel[0] as u64 * sp.dims[1] as u64) + voxel[1] as u64) * sp.dims[2] as u64 + voxel[2] as u64;
                        let mut vstream = Stream::new(seed, m.index as u64 | 1 << 63, vid);
                        let mut pick = |k| vstream.below(k);
                        match &m.rule {
                            Rule::Tile(tile, mapper) => tile_destination_voxels(tile, mapper, &m.ctx, voxel, &mut pick, dsts),
                            Rule::Voxel(morph) => destination_voxels(morph, &m.ctx, voxel, &mut pick, dsts),
                            _ => unreachable!("only voxel rules reach here"),
                        }
                        *cached = Some(voxel);
                    }
                    let d = &m.dst;
                    for v in dsts.iter() {
                        let base = d.first + ((v[0] * d.dims[1] + v[1]) * d.dims[2] + v[2]) * d.neurons_per_voxel;
                        for k in 0..d.neurons_per_voxel {
                            if keep(&mut stream) {
                                row.push(((base + k) as u64) << 32 | slot_bits);
                            }
                        }
                    }
                }
                Rule::Fanout(k) => {
                    for _ in 0..*k {
                        let t = m.dst.first + stream.below(m.dst.count as u64) as u32;
                        if keep(&mut stream) {
                            row.push((t as u64) << 32 | slot_bits);
                        }
                    }
                }
                Rule::Listed => {
                    for &(d, _) in m.listed.as_ref().and_then(|l| l.get(&local)).into_iter().flatten() {
                        row.push(((m.dst.first + d) as u64) << 32 | slot_bits);
                    }
                }
                Rule::Associative => {
                    for t in m.dst.first..m.dst.first + m.dst.count {
                        if t != s {
                            row.push((t as u64) << 32 | slot_bits);
                        }
                    }
                }
                Rule::Probability { log1mp, always, never } => {
                    if *never {
                        continue;
                    }
                    let count = m.dst.count as u64;
                    let mut i: u64 = if *always { 0 } else { draw::geometric_skip(&mut stream, *log1mp) };
                    while i < count {
                        if keep(&mut stream) {
                            row.push(((m.dst.first as u64 + i) << 32) | slot_bits);
                        }
                        i = i.saturating_add(1).saturating_add(if *always { 0 } else { draw::geometric_skip(&mut stream, *log1mp) });
                    }
                }
            }
        }
        row.sort_unstable();
        // One contribution per mapping slot of this row: `value / out-degree` unless uniform; the
        // out-degree leaves out an associative mapping's possible pairs (none exists yet).
        let grown = |key: &u64| matches!(mappings[(key & 0xffff_ffff) as usize].rule, Rule::Associative);
        let degree = row.len() - row.iter().filter(|k| grown(k)).count();
        let divisor = if area_uniform[area] { 1.0 } else { degree.max(1) as f64 };
        slot_code.clear();
        for m in mappings {
            let code = match m.plastic {
                Some((pm, weight)) => {
                    let next = out.groups.len() as u32;
                    let group = *group_dict.entry((pm, divisor.to_bits())).or_insert_with(|| {
                        out.groups.push((pm, divisor.to_bits()));
                        next
                    });
                    PLASTIC | group << 8 | weight as u32
                }
                None => {
                    let c = contribution_from_f64(m.value / divisor);
                    let next = out.locals.len() as u32;
                    *dict.entry(c).or_insert_with(|| {
                        out.locals.push(c);
                        next
                    })
                }
            };
            slot_code.push(code);
        }
        // Every synapse counts in the statistics, kept or not (an associative pair only once grown).
        for &key in row.iter().filter(|k| !grown(k)) {
            let slot = (key & 0xffff_ffff) as usize;
            let m = &mappings[slot];
            let counts = &mut out.counts[m.index];
            counts.0 += 1;
            let dead = match m.plastic {
                Some(_) => m.value == 0.0,
                None => out.locals[slot_code[slot] as usize] == 0,
            };
            counts.1 += dead as u64;
        }
        let mut p = 0;
        for (pi, prange) in parts.iter().enumerate() {
            // targets below this part (outside every part) are not kept
            p += row[p..].partition_point(|&key| ((key >> 32) as u32) < prange.start);
            let cp = &mut out.parts[pi];
            let before = cp.targets.len();
            while p < row.len() && ((row[p] >> 32) as u32) < prange.end {
                let key = row[p];
                cp.targets.push((key >> 32) as u32 - prange.start);
                let slot = (key & 0xffff_ffff) as usize;
                let code = match &mappings[slot].listed {
                    // a learned synapse's own weight (an associative pair not listed: none yet)
                    Some(l) => {
                        let d = (key >> 32) as u32 - mappings[slot].dst.first;
                        let mine = l.get(&local).map_or(&[][..], |v| &v[..]);
                        let w = mine.binary_search_by_key(&d, |e| e.0).map_or(0, |i| mine[i].1);
                        slot_code[slot] & !0xff | w as u32
                    }
                    None => slot_code[slot],
                };
                cp.codes.push(code);
                p += 1;
            }
            cp.lens.push((cp.targets.len() - before) as u32);
        }
    }
    out
}

/// A chunk's codes in the global table: its static codes, then its plastic groups.
struct Remap {
    codes: Vec<u32>,
    groups: Vec<u32>,
    base: u32,
}

impl Remap {
    #[inline(always)]
    fn code(&self, c: u32) -> u32 {
        if c & PLASTIC != 0 {
            self.base + (self.groups[((c & !PLASTIC) >> 8) as usize] << 8) + (c & 0xff)
        } else {
            self.codes[c as usize]
        }
    }
}

/// Join the chunks in source order: row pointers by prefix sum, codes renumbered into the global
/// contribution table: the static contributions (sorted), then 256 entries per plastic group
/// (sorted by mapping and divisor).
fn assemble(
    n: u32,
    ranges: &[Range<u32>],
    mut outs: Vec<ChunkOut>,
    plastic: Vec<(PlasticMapping, f64)>,
) -> (Vec<Part>, Vec<i32>, Option<Plastic>) {
    let mut table: Vec<i32> = outs.iter().flat_map(|o| o.locals.iter().copied()).collect();
    table.sort_unstable();
    table.dedup();
    let base = table.len() as u32;
    let mut groups: Vec<(u32, u64)> = outs.iter().flat_map(|o| o.groups.iter().copied()).collect();
    groups.sort_unstable();
    groups.dedup();
    for &(pm, divisor) in &groups {
        table.extend(group_contributions(plastic[pm as usize].1, f64::from_bits(divisor)));
    }
    let remaps: Vec<Remap> = outs
        .iter()
        .map(|o| Remap {
            codes: o.locals.iter().map(|c| table[..base as usize].binary_search(c).unwrap() as u32).collect(),
            groups: o.groups.iter().map(|g| groups.binary_search(g).unwrap() as u32).collect(),
            base,
        })
        .collect();
    let wide = table.len() > u16::MAX as usize + 1;
    let plastic = (!plastic.is_empty()).then(|| Plastic {
        base,
        group_mapping: groups.iter().map(|g| g.0).collect(),
        mappings: plastic.into_iter().map(|(m, _)| m).collect(),
    });

    let mut parts = Vec::with_capacity(ranges.len());
    for (pi, range) in ranges.iter().enumerate() {
        let sizes: Vec<usize> = outs.iter().map(|o| o.parts[pi].targets.len()).collect();
        let total: usize = sizes.iter().sum();
        let mut row_ptr = Vec::with_capacity(n as usize + 1);
        crate::memory::advise(row_ptr.as_mut_ptr() as *mut u8, (n as usize + 1) * 8);
        row_ptr.push(0u64);
        for o in &outs {
            let mut acc = *row_ptr.last().unwrap();
            for &l in &o.parts[pi].lens {
                acc += l as u64;
                row_ptr.push(acc);
            }
        }
        let chunk_parts: Vec<ChunkPart> = outs.iter_mut().map(|o| std::mem::take(&mut o.parts[pi])).collect();
        let mut targets = crate::memory::zeroed::<u32>(total);
        split_by(&mut targets, &sizes).into_par_iter().zip(&chunk_parts).for_each(|(dst, cp)| dst.copy_from_slice(&cp.targets));
        let codes = if wide {
            let mut codes = crate::memory::zeroed::<u32>(total);
            split_by(&mut codes, &sizes).into_par_iter().zip(&chunk_parts).zip(&remaps).for_each(|((dst, cp), remap)| {
                for (d, &c) in dst.iter_mut().zip(&cp.codes) {
                    *d = remap.code(c);
                }
            });
            Codes::U32(codes)
        } else {
            let mut codes = crate::memory::zeroed::<u16>(total);
            split_by(&mut codes, &sizes).into_par_iter().zip(&chunk_parts).zip(&remaps).for_each(|((dst, cp), remap)| {
                for (d, &c) in dst.iter_mut().zip(&cp.codes) {
                    *d = remap.code(c) as u16;
                }
            });
            Codes::U16(codes)
        };
        drop(chunk_parts);
        parts.push(Part { targets_range: range.clone(), row_ptr, targets, codes });
    }
    (parts, table, plastic)
}

/// Cut `v` into consecutive mutable pieces of the given sizes.
fn split_by<'a, T>(mut v: &'a mut [T], sizes: &[usize]) -> Vec<&'a mut [T]> {
    let mut out = Vec::with_capacity(sizes.len());
    for &s in sizes {
        let (a, b) = v.split_at_mut(s);
        out.push(a);
        v = b;
    }
    out
}
