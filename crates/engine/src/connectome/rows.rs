//! The rules that draw a source neuron's row of synapses, shared by the build (which stores the
//! rows) and procedural propagation (which draws a fired source's row again when it is needed).
//! Each row comes from its own counter-based random stream (see [`super::draw`]), so a row drawn
//! twice, on any thread, machine or backend, is the same row.

use std::collections::HashMap;

use super::draw::{self, Stream};
use super::plastic::{Associative, PlasticMapping};
use crate::genome::morphology::{destination_voxels, tile_destination_voxels, TileSpec, VoxelContext};
use crate::genome::{Genome, Morphology, Sign};
use crate::model::plasticity::{self, DEFAULT_MAX_SYNAPSES};
use crate::model::{AreaParams, Layout};

pub(super) enum RowRule {
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
pub(super) type Listed = HashMap<u32, Vec<(u32, u8)>>;

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

pub(super) struct Compiled {
    pub(super) index: usize,
    /// Neurons of the source area.
    pub(super) src_count: u32,
    /// First neuron of the source area.
    pub(super) src_first: u32,
    pub(super) dst: AreaParams,
    pub(super) ctx: VoxelContext,
    pub(super) rule: RowRule,
    pub(super) attract: Option<u64>,
    /// `±weight × psp`
    pub(super) value: f64,
    /// Index among the plastic mappings, and the initial weight of its synapses.
    pub(super) plastic: Option<(u32, u8)>,
    /// A learned genome's synapses of this mapping, with their weights.
    pub(super) listed: Option<Listed>,
    /// Not stored: drawn again when its source fires.
    pub(super) procedural: bool,
}

/// The mappings by source area, and the plastic ones with their `±psp`.
pub(super) fn compile(genome: &Genome, layout: &Layout) -> (Vec<Vec<Compiled>>, Vec<(PlasticMapping, f64)>) {
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
                (Some(k), _) => RowRule::Fanout(k),
                (None, Some(p)) => RowRule::Probability { log1mp: libm::log(1.0 - p), always: p >= 1.0, never: p <= 0.0 },
                (None, None) => RowRule::Fanout(0),
            },
            Morphology::Tile(t) => {
                // validated: the mapper resolves to a voxel morphology
                let mapper = genome.resolve_morphology(&t.mapper).unwrap_or(Morphology::Projector);
                RowRule::Tile(t.clone(), mapper)
            }
            Morphology::AssociativeMemory => RowRule::Associative,
            _ if m.synapses.is_some() => RowRule::Listed,
            _ => RowRule::Voxel(morph.clone()),
        };
        // validated: a plastic mapping's rule compiles
        let rule_of = |p| plasticity::Rule::compile(p).ok();
        let learns = m.plasticity.as_ref().and_then(rule_of).map(|rule| {
            let associative = matches!(rule_kind, RowRule::Associative).then(|| {
                let (sources, targets) = (src.first..src.first + src.count, dst.first..dst.first + dst.count);
                let pairs = src.count as u64 * dst.count as u64;
                let max_synapses = m.max_synapses.unwrap_or(pairs.min(DEFAULT_MAX_SYNAPSES));
                let grown = m.synapses.iter().flatten().map(|&[s, d, _]| (src.first + s, dst.first + d)).collect();
                Associative { sources, targets, max_synapses, grown }
            });
            let weight = m.weight.round().clamp(0.0, 255.0) as u8;
            plastic.push((PlasticMapping { index, rule, weight, associative }, sign * psp));
            ((plastic.len() - 1) as u32, if matches!(rule_kind, RowRule::Associative) { 0 } else { weight })
        });
        by_area[si].push(Compiled {
            index,
            src_count: src.count,
            src_first: src.first,
            dst,
            ctx: VoxelContext { src_dims: src.dims, dst_dims: dst.dims, scalar: m.scalar },
            rule: rule_kind,
            attract: draw::chance_threshold(m.attractivity / 100.0),
            value: sign * m.weight * psp,
            plastic: learns,
            listed: m.synapses.as_deref().map(listed),
            procedural: false,
        });
    }
    (by_area, plastic)
}

/// The last source voxel of a mapping and its destination voxels (neurons of one voxel share them).
type VoxelCache = (Option<[u32; 3]>, Vec<[u32; 3]>);

/// Everything a row is drawn from: the genome's seed, the areas, and the compiled mappings by
/// source area.
pub(super) struct RowRules {
    pub(super) seed: u64,
    pub(super) layout: Layout,
    pub(super) by_area: Vec<Vec<Compiled>>,
    /// Per area: its psp is not divided by the out-degree.
    pub(super) area_uniform: Vec<bool>,
}

/// Draws rows one source at a time, keeping each mapping's last destination voxels (the neurons
/// of one voxel share them) and its row buffer from row to row.
#[derive(Default)]
pub struct Drawer {
    cache: Vec<VoxelCache>,
    cache_area: Option<usize>,
    /// The last row drawn: `target << 32 | mapping slot` (slot: index in the source area's
    /// mappings), in drawing order.
    pub(super) row: Vec<u64>,
    /// Scratch for the contribution of each mapping slot of the last row.
    pub(super) slot_c: Vec<i32>,
}

impl Drawer {
    /// Draw the row of source `s` of area `area` into `self.row` (unsorted), and return its
    /// out-degree divisor: the number of synapses it drew, leaving out an associative mapping's
    /// possible pairs, or 1 when the area's psp is uniform.
    pub(super) fn draw(&mut self, rules: &RowRules, s: u32, area: usize) -> f64 {
        let (seed, mappings) = (rules.seed, &rules.by_area[area]);
        if self.cache_area != Some(area) {
            self.cache = mappings.iter().map(|_| (None, Vec::new())).collect();
            self.cache_area = Some(area);
        }
        let sp = &rules.layout.params[area];
        let local = s - sp.first;
        let row = &mut self.row;
        row.clear();
        let mut grown = 0;
        for (slot, m) in mappings.iter().enumerate() {
            let mut stream = Stream::new(seed, m.index as u64, s as u64);
            let keep = |stream: &mut Stream| m.attract.is_none_or(|th| stream.chance(th));
            let slot_bits = slot as u64;
            match &m.rule {
                RowRule::Voxel(_) | RowRule::Tile(..) => {
                    let voxel = sp.voxel_of(local);
                    let (cached, dsts) = &mut self.cache[slot];
                    if *cached != Some(voxel) {
                        let vid = ((voxel[0] as u64 * sp.dims[1] as u64) + voxel[1] as u64) * sp.dims[2] as u64 + voxel[2] as u64;
                        let mut vstream = Stream::new(seed, m.index as u64 | 1 << 63, vid);
                        let mut pick = |k| vstream.below(k);
                        match &m.rule {
                            RowRule::Tile(tile, mapper) => tile_destination_voxels(tile, mapper, &m.ctx, voxel, &mut pick, dsts),
                            RowRule::Voxel(morph) => destination_voxels(morph, &m.ctx, voxel, &mut pick, dsts),
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
                RowRule::Fanout(k) => {
                    for _ in 0..*k {
                        let t = m.dst.first + stream.below(m.dst.count as u64) as u32;
                        if keep(&mut stream) {
                            row.push((t as u64) << 32 | slot_bits);
                        }
                    }
                }
                RowRule::Listed => {
                    for &(d, _) in m.listed.as_ref().and_then(|l| l.get(&local)).into_iter().flatten() {
                        row.push(((m.dst.first + d) as u64) << 32 | slot_bits);
                    }
                }
                RowRule::Associative => {
                    let before = row.len();
                    for t in m.dst.first..m.dst.first + m.dst.count {
                        if t != s {
                            row.push((t as u64) << 32 | slot_bits);
                        }
                    }
                    grown += row.len() - before;
                }
                RowRule::Probability { log1mp, always, never } => {
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
        if rules.area_uniform[area] {
            1.0
        } else {
            (row.len() - grown).max(1) as f64
        }
    }
}
