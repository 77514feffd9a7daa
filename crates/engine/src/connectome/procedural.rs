//! Procedural connectivity: mappings whose synapses are not stored. When a source fires, its row
//! is drawn again from the same rules and random streams as the build's (`super::rows`), and the
//! procedural mappings' synapses contribute what a stored copy would: the same targets, and the
//! contribution worked out from the same out-degree. A brain's fired sets are the same, bit for
//! bit, whichever of its mappings are stored.
//!
//! Plastic mappings are always stored (their weights are state); so are a learned genome's listed
//! synapses.

use super::draw::Stream;
use super::flat::FlatRows;
use super::rows::{compile, Compiled, Drawer, RowRule, RowRules};
use crate::genome::Genome;
use crate::model::fixed::contribution_from_f64;
use crate::model::Layout;

/// Per mapping of `genome`: procedural (asked for, and neither plastic nor listing its synapses).
pub fn procedural_mask(genome: &Genome) -> Vec<bool> {
    genome.mappings.iter().map(|m| m.procedural && m.plasticity.is_none() && m.synapses.is_none()).collect()
}

/// A procedural mapping whose every synapse is drawn on its own from its index in the row, with a
/// contribution known without drawing the row: a fanout from an area whose out-degree is the same
/// for every source, or does not count (its psp is uniform, or every mapping from it that counts
/// in the out-degree is a fanout with no attractivity). A GPU draws these rows one draw per thread.
///
/// Draw `j` (0-based) of source `s` goes to `dst_first + ((x × dst_count) >> 64)`, where
/// `x = mix64(key_s + (j × d + 1) × 0x9e3779b97f4a7c15)`, `key_s = mix64(key ^ s ×
/// 0xd1b54a32d192ed03)` and `d` the draws a synapse takes (the build's [`super::draw::Stream`]): 1,
/// or 2 with an attractivity, whose second draw `y` (at `j × 2 + 2`) keeps the synapse when `y <
/// keep`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClosedForm {
    /// Index of the mapping in the genome.
    pub index: usize,
    /// The source area's first neuron.
    pub src_first: u32,
    /// The source area's neurons.
    pub src_count: u32,
    /// The destination area's first neuron.
    pub dst_first: u32,
    /// The destination area's neurons.
    pub dst_count: u32,
    /// Draws per source (the fanout; with an attractivity, some are not kept).
    pub fanout: u32,
    /// The mapping's attractivity as a threshold on a draw ([`super::draw::chance_threshold`]);
    /// None: every draw is a synapse.
    pub keep: Option<u64>,
    /// The mapping's [`super::draw::Stream::mapping_key`].
    pub key: u64,
    /// Each synapse's contribution, in LSBs.
    pub contribution: i32,
}

impl ClosedForm {
    /// Target of draw `j` of source `s`, if that draw is kept (a synapse).
    #[inline]
    pub fn target(&self, s: u32, j: u32) -> Option<u32> {
        let mut stream = Stream::for_source(self.key, s as u64);
        stream.skip(j as u64 * self.draws() as u64);
        let t = self.dst_first + stream.below(self.dst_count as u64) as u32;
        self.keep.is_none_or(|th| stream.chance(th)).then_some(t)
    }

    /// Numbers of the stream a draw takes: its target's, and its keep draw's with an attractivity.
    pub fn draws(&self) -> u32 {
        if self.keep.is_some() {
            2
        } else {
            1
        }
    }

    /// Synapses of source `s`'s row: the fanout, or the draws kept (only the keep draws drawn).
    pub fn kept(&self, s: u32) -> u64 {
        let Some(threshold) = self.keep else { return self.fanout as u64 };
        let mut stream = Stream::for_source(self.key, s as u64);
        (0..self.fanout)
            .filter(|_| {
                stream.skip(1);
                stream.chance(threshold)
            })
            .count() as u64
    }
}

/// Per mapping of `genome`: its closed form (see [`ClosedForm`]), if it has one.
pub fn closed_forms(genome: &Genome, layout: &Layout) -> Vec<Option<ClosedForm>> {
    let mut forms = vec![None; genome.mappings.len()];
    let uniform: Vec<bool> = genome.areas.iter().map(|a| a.psp_uniform_distribution).collect();
    for (area, ms) in compile(genome, layout).0.iter().enumerate() {
        for m in ms {
            forms[m.index] = closed_form(m, ms, uniform[area], genome.seed);
        }
    }
    forms
}

/// Mapping `m` of an area with mappings `all` in closed form, if it has one.
pub(super) fn closed_form(m: &Compiled, all: &[Compiled], uniform: bool, seed: u64) -> Option<ClosedForm> {
    let plain_fanout = |c: &Compiled| match c.rule {
        RowRule::Fanout(k) if c.attract.is_none() => Some(k),
        _ => None,
    };
    let RowRule::Fanout(fanout) = m.rule else { return None };
    if m.plastic.is_some() {
        return None;
    }
    // (an out-degree that counts is fixed only when no mapping of the area keeps draws at random)
    let divisor = if uniform {
        1.0
    } else {
        let counted = all.iter().filter(|c| !matches!(c.rule, RowRule::Associative));
        counted.map(|c| plain_fanout(c).map(|k| k as u64)).sum::<Option<u64>>()?.max(1) as f64
    };
    let key = Stream::mapping_key(seed, m.index as u64);
    Some(ClosedForm {
        index: m.index,
        src_first: m.src_first,
        src_count: m.src_count,
        dst_first: m.dst.first,
        dst_count: m.dst.count,
        fanout,
        keep: m.attract,
        key,
        contribution: contribution_from_f64(m.value / divisor),
    })
}

/// The rules of a brain with procedural mappings.
pub struct Procedural {
    rules: RowRules,
    /// Per area: some mapping from it is procedural.
    sources: Vec<bool>,
    /// Per mapping (genome order): procedural.
    pub mappings: Vec<bool>,
}

impl std::fmt::Debug for Procedural {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Procedural").field("mappings", &self.mappings).finish_non_exhaustive()
    }
}

impl Procedural {
    /// The rules of a build, when some mapping is procedural.
    pub(super) fn new(rules: RowRules) -> Option<std::sync::Arc<Procedural>> {
        let sources: Vec<bool> = rules.by_area.iter().map(|ms| ms.iter().any(|m| m.procedural)).collect();
        if !sources.contains(&true) {
            return None;
        }
        let n = rules.by_area.iter().flatten().map(|m| m.index + 1).max().unwrap_or(0);
        let mut mappings = vec![false; n];
        for m in rules.by_area.iter().flatten() {
            mappings[m.index] = m.procedural;
        }
        Some(std::sync::Arc::new(Procedural { rules, sources, mappings }))
    }

    /// The procedural mappings in closed form (see [`ClosedForm`]).
    pub fn closed_forms(&self) -> Vec<ClosedForm> {
        let mut out = Vec::new();
        for (area, ms) in self.rules.by_area.iter().enumerate() {
            let uniform = self.rules.area_uniform[area];
            out.extend(ms.iter().filter(|m| m.procedural).filter_map(|m| closed_form(m, ms, uniform, self.rules.seed)));
        }
        out
    }

    /// The procedural mappings without a closed form, as flat rules (see [`FlatRows`]); an error
    /// names the first that has no flat form either.
    pub fn flat_rows(&self) -> Result<FlatRows, String> {
        super::flat::flat_rows(&self.rules.by_area, &self.rules.area_uniform, &self.rules.layout, self.rules.seed)
    }

    /// Call `f(target, contribution)` for every procedural synapse of source `s`, in drawing order
    /// (sums of contributions are exact integers, so any order gives the same input). Contributions
    /// of 0 are left out.
    pub fn each(&self, drawer: &mut Drawer, s: u32, mut f: impl FnMut(u32, i32)) {
        let area = self.rules.layout.area_of(s);
        if !self.sources[area] {
            return;
        }
        let mappings = &self.rules.by_area[area];
        let divisor = drawer.draw(&self.rules, s, area);
        drawer.slot_c.clear();
        drawer.slot_c.extend(mappings.iter().map(|m| if m.procedural { contribution_from_f64(m.value / divisor) } else { 0 }));
        for &key in &drawer.row {
            let c = drawer.slot_c[(key & 0xffff_ffff) as usize];
            if c != 0 {
                f((key >> 32) as u32, c);
            }
        }
    }
}
