//! Building the connectome: rows generated in parallel over chunks of source neurons, each row from
//! its own counter-based random stream, then split by target part and assembled in source order.

use std::ops::Range;
use std::time::Instant;

use rayon::prelude::*;

use std::collections::HashMap;

use super::plastic::{group_contributions, Plastic, PlasticMapping};
use super::procedural::{closed_form, ClosedForm, Procedural};
use super::rows::{compile, Compiled, Drawer, RowRule, RowRules};
use super::{Codes, Connectome, MappingStats, Part};
use crate::genome::Genome;
use crate::model::fixed::contribution_from_f64;
use crate::model::Layout;

/// How to build.
#[derive(Clone, Debug)]
pub struct BuildOptions {
    /// Target ranges, one per part, ascending and disjoint. Usually they cover `0..neurons`; the
    /// synapses onto targets outside every part are drawn (and counted in the mapping statistics)
    /// but not kept: one shard's build keeps only its own parts.
    pub parts: Vec<Range<u32>>,
    /// Show a progress bar on stderr once the build has taken more than a second.
    pub progress: bool,
    /// Per mapping (genome order): its synapses are not stored but drawn again when their source
    /// fires (see [`Procedural`]). Empty: every mapping is stored.
    pub procedural: Vec<bool>,
}

impl BuildOptions {
    /// Every mapping stored, in these parts.
    pub fn stored(parts: Vec<Range<u32>>, progress: bool) -> BuildOptions {
        BuildOptions { parts, progress, procedural: Vec::new() }
    }
}

/// Marks a chunk's code as plastic: `PLASTIC | local group << 8 | weight`.
const PLASTIC: u32 = 1 << 31;

/// The synapses of one chunk of source neurons, per part.
#[derive(Default)]
pub(super) struct ChunkPart {
    /// Row length of each source of the chunk.
    pub lens: Vec<u32>,
    pub targets: Vec<u32>,
    /// Index into the chunk's `locals`, or a plastic code (see [`PLASTIC`]).
    pub codes: Vec<u32>,
}

pub(super) struct ChunkOut {
    pub parts: Vec<ChunkPart>,
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
    let Prepared { rules, skip, chunks, plastic } = prepare(genome, layout, opts);
    let progress = crate::progress::Progress::new("building the connectome", "chunks", chunks.len() as u64, opts.progress);

    let outs: Vec<ChunkOut> = chunks
        .par_iter()
        .map(|range| {
            let rows = Rows { rules: &rules, skip: &skip };
            let out = build_chunk(&rows, genome.mappings.len(), &opts.parts, range.clone());
            progress.inc(1);
            out
        })
        .collect();
    progress.finish();

    let mut mappings = stats(genome, &outs);
    let (parts, contributions, plastic) = assemble(n, &opts.parts, outs, plastic);
    let procedural = Procedural::new(rules);
    for st in &mut mappings {
        st.procedural = procedural.as_ref().is_some_and(|p| p.mappings[st.index]);
    }
    Connectome { neurons: n, parts, contributions, mappings, plastic, procedural, build_seconds: start.elapsed().as_secs_f64() }
}

/// What a build draws from: the rules, the areas whose counts need no drawing, the chunks of
/// sources, the plastic mappings.
pub(super) struct Prepared {
    pub rules: RowRules,
    pub skip: Vec<Option<Vec<ClosedForm>>>,
    pub chunks: Vec<Range<u32>>,
    pub plastic: Vec<(PlasticMapping, f64)>,
}

pub(super) fn prepare(genome: &Genome, layout: &Layout, opts: &BuildOptions) -> Prepared {
    let n = layout.neurons;
    let (mut by_area, plastic) = compile(genome, layout);
    for c in by_area.iter_mut().flatten() {
        c.procedural = opts.procedural.get(c.index).copied().unwrap_or(false);
    }
    let area_uniform: Vec<bool> = genome.areas.iter().map(|a| a.psp_uniform_distribution).collect();
    let skip: Vec<Option<Vec<ClosedForm>>> =
        (0..by_area.len()).map(|a| counted_without_drawing(&by_area[a], area_uniform[a], genome.seed)).collect();
    let rules = RowRules { seed: genome.seed, layout: layout.clone(), by_area, area_uniform };
    let chunk = ((n as usize) / (rayon::current_num_threads() * 16)).clamp(1024, 65_536) as u32;
    let chunks: Vec<Range<u32>> = (0..n.div_ceil(chunk)).map(|c| c * chunk..((c + 1) * chunk).min(n)).collect();
    Prepared { rules, skip, chunks, plastic }
}

/// Every mapping's counts (synapses, dead ones) from the chunks.
pub(super) fn stats(genome: &Genome, outs: &[ChunkOut]) -> Vec<MappingStats> {
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
            procedural: false,
        })
        .collect();
    for o in outs {
        for (st, &(s, d)) in mappings.iter_mut().zip(&o.counts) {
            st.synapses += s;
            st.dead += d;
        }
    }
    mappings
}

/// At most how many synapses [`build`] stores, without drawing them, and whether that is the
/// exact count (see [`mapping_bounds`]); procedural mappings store none.
pub fn synapse_bound(genome: &Genome, layout: &Layout) -> (u64, bool) {
    let procedural = super::procedural_mask(genome);
    mapping_bounds(genome, layout)
        .into_iter()
        .zip(procedural)
        .filter(|(_, p)| !p)
        .fold((0u64, true), |(b, e), ((mb, me), _)| (b.saturating_add(mb), e && me))
}

/// Per mapping (genome order): at most how many synapses it has, without drawing them, and whether
/// that is the exact count: a fanout of k draws k per source neuron; a probability, a voxel or a
/// tile rule at most one per (source, destination) pair; an associative mapping none at first.
pub fn mapping_bounds(genome: &Genome, layout: &Layout) -> Vec<(u64, bool)> {
    let mut out = vec![(0u64, true); genome.mappings.len()];
    for c in compile(genome, layout).0.into_iter().flatten() {
        let dst = c.dst.count as u64;
        let (per_source, exact) = match c.rule {
            // k draws with replacement, each kept by attractivity
            RowRule::Fanout(k) => (k as u64, c.attract.is_none()),
            RowRule::Probability { never: true, .. } => (0, true),
            RowRule::Associative => (0, true),
            _ => (dst, false),
        };
        out[c.index] = (per_source.saturating_mul(c.src_count as u64), exact);
    }
    out
}

/// The synapses [`build`] would make, counted by drawing them without keeping any (the memory of
/// the counts only).
pub fn count(genome: &Genome, layout: &Layout) -> u64 {
    build(genome, layout, &BuildOptions::stored(vec![], false)).mappings.iter().map(|m| m.synapses).sum()
}

/// What a chunk's rows are drawn from.
pub(super) struct Rows<'a> {
    pub rules: &'a RowRules,
    /// Per area: the counts per mapping slot (synapses, dead) of each source's row, when the area
    /// stores nothing and its counts need no drawing.
    pub skip: &'a [Option<Vec<ClosedForm>>],
}

/// An area none of whose synapses is stored, and whose rows' sizes are known without drawing them:
/// every mapping from it a procedural closed form ([`ClosedForm::kept`] counts a row). Its rows
/// need not be drawn at build time.
fn counted_without_drawing(mappings: &[Compiled], uniform: bool, seed: u64) -> Option<Vec<ClosedForm>> {
    mappings.iter().map(|m| if m.procedural { closed_form(m, mappings, uniform, seed) } else { None }).collect()
}

pub(super) fn build_chunk(rows: &Rows<'_>, n_mappings: usize, parts: &[Range<u32>], range: Range<u32>) -> ChunkOut {
    let (layout, by_area) = (&rows.rules.layout, &rows.rules.by_area);
    let mut out = ChunkOut {
        parts: parts.iter().map(|_| ChunkPart { lens: Vec::with_capacity(range.len()), ..Default::default() }).collect(),
        locals: Vec::new(),
        groups: Vec::new(),
        counts: vec![(0, 0); n_mappings],
    };
    let mut dict: HashMap<i32, u32> = HashMap::new();
    let mut group_dict: HashMap<(u32, u64), u32> = HashMap::new();
    let mut slot_code: Vec<u32> = Vec::new();
    let mut drawer = Drawer::default();
    let mut area = layout.area_of(range.start);
    let mut s = range.start;
    while s < range.end {
        while s >= layout.params[area].first + layout.params[area].count {
            area += 1;
        }
        let mappings = &by_area[area];
        if let Some(counts) = &rows.skip[area] {
            // rows of a fixed size (no attractivity: `kept` is the fanout) are counted for the
            // area's run at once
            let run = if counts.iter().all(|c| c.keep.is_none()) {
                (layout.params[area].first + layout.params[area].count).min(range.end) - s
            } else {
                1
            };
            for (m, c) in mappings.iter().zip(counts) {
                let n = c.kept(s) * run as u64;
                let dead = if c.contribution == 0 { n } else { 0 };
                out.counts[m.index].0 += n;
                out.counts[m.index].1 += dead;
            }
            out.parts.iter_mut().for_each(|cp| cp.lens.resize(cp.lens.len() + run as usize, 0));
            s += run;
            continue;
        }
        let local = s - layout.params[area].first;
        let divisor = drawer.draw(rows.rules, s, area);
        let row = &mut drawer.row;
        row.sort_unstable();
        // One contribution per mapping slot of this row: `value / out-degree` unless uniform; the
        // out-degree leaves out an associative mapping's possible pairs (none exists yet).
        let grown = |key: &u64| matches!(mappings[(key & 0xffff_ffff) as usize].rule, RowRule::Associative);
        slot_code.clear();
        for m in mappings {
            let code = match m.plastic {
                // not stored: its contribution is worked out when it is drawn again
                None if m.procedural => u32::MAX,
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
                None if m.procedural => contribution_from_f64(m.value / divisor) == 0,
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
                let slot = (key & 0xffff_ffff) as usize;
                p += 1;
                if mappings[slot].procedural {
                    continue;
                }
                cp.targets.push((key >> 32) as u32 - prange.start);
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
            }
            cp.lens.push((cp.targets.len() - before) as u32);
        }
        s += 1;
    }
    out
}

/// A chunk's codes in the global table: its static codes, then its plastic groups.
pub(super) struct Remap {
    codes: Vec<u32>,
    groups: Vec<u32>,
    base: u32,
}

impl Remap {
    #[inline(always)]
    pub(super) fn code(&self, c: u32) -> u32 {
        if c & PLASTIC != 0 {
            self.base + (self.groups[((c & !PLASTIC) >> 8) as usize] << 8) + (c & 0xff)
        } else {
            self.codes[c as usize]
        }
    }
}

/// The global contribution table of the chunks: the static contributions (sorted), then 256
/// entries per plastic group (sorted by mapping and divisor); each chunk's codes in it, and
/// whether codes need 32 bits.
pub(super) struct Table {
    pub table: Vec<i32>,
    pub remaps: Vec<Remap>,
    pub wide: bool,
    pub plastic: Option<Plastic>,
}

pub(super) fn table(outs: &[ChunkOut], plastic: Vec<(PlasticMapping, f64)>) -> Table {
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
    Table { table, remaps, wide, plastic }
}

/// Part `pi`'s row pointers: the prefix sums of the chunks' row lengths, in source order.
pub(super) fn row_ptr(n: u32, outs: &[ChunkOut], pi: usize) -> Vec<u64> {
    let mut row_ptr = Vec::with_capacity(n as usize + 1);
    crate::memory::advise(row_ptr.as_mut_ptr() as *mut u8, (n as usize + 1) * 8);
    row_ptr.push(0u64);
    for o in outs {
        let mut acc = *row_ptr.last().unwrap();
        for &l in &o.parts[pi].lens {
            acc += l as u64;
            row_ptr.push(acc);
        }
    }
    row_ptr
}

/// Join the chunks in source order: row pointers by prefix sum, codes renumbered into the global
/// contribution table (see [`table`]).
fn assemble(
    n: u32,
    ranges: &[Range<u32>],
    mut outs: Vec<ChunkOut>,
    plastic: Vec<(PlasticMapping, f64)>,
) -> (Vec<Part>, Vec<i32>, Option<Plastic>) {
    let Table { table, remaps, wide, plastic } = table(&outs, plastic);
    let mut parts = Vec::with_capacity(ranges.len());
    for (pi, range) in ranges.iter().enumerate() {
        let sizes: Vec<usize> = outs.iter().map(|o| o.parts[pi].targets.len()).collect();
        let total: usize = sizes.iter().sum();
        let row_ptr = row_ptr(n, &outs, pi);
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
