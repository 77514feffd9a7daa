//! Learning on the CPU, the reference (docs/plasticity.md): after the firing of burst `t`, the
//! weights of plastic synapses change by FEAGI's window-coincidence rule and associative mappings
//! grow synapses between neurons that fired together; both take effect from burst `t + 1`.
//!
//! A synapse changes only when its source or its target fired within its rule's window, so the
//! update visits only those: first the rows of the recently fired sources (the full rule, marking
//! the synapses whose target also fired recently), then the plastic synapses onto the recently
//! fired targets that the first pass did not mark (their source was silent: depression only).
//! Weights live in the synapses' codes ([`crate::connectome::plastic`]), so propagation needs no
//! change. Associative pairs are a bit table per mapping, the same in every shard: growth is a
//! function of the whole brain's firing and of the pairs already grown, so every shard grows the
//! same pairs and keeps the weights of those onto its own neurons.

use std::ops::Range;

use super::cpu::prefetch;
use crate::connectome::plastic::Decoded;
use crate::connectome::{Codes, Part, Plastic};
use crate::model::plasticity::{record, window_mask, GrownPair, History, Learned, LearnedSynapse};

/// The learning state of one engine.
pub struct Learner {
    plastic: Plastic,
    groups: Vec<GroupRule>,
    /// Firing history of every neuron of the brain.
    history: Vec<History>,
    /// Neurons that fired within the longest window, ascending.
    active: Vec<u32>,
    longest: History,
    /// Per plastic mapping: which pairs exist (associative mappings; empty otherwise).
    exists: Vec<Vec<u64>>,
    /// Per plastic mapping: synapses grown, and pairs refused at `max_synapses`.
    pub grown: Vec<u64>,
    pub refused: Vec<u64>,
    /// Scratch: the neurons of a growth pass.
    all_a: Vec<u32>,
    all_b: Vec<u32>,
    /// The pairs the last growth created: (plastic mapping, source, target).
    created: Vec<(u32, u32, u32)>,
}

/// A part's rows, columns and range, borrowed beside its codes.
struct Rows<'a> {
    base: u32,
    end: u32,
    row_ptr: &'a [u64],
    targets: &'a [u32],
    columns: Option<&'a crate::connectome::Columns>,
}

/// A code's storage width.
trait Code: Copy {
    fn get(self) -> u32;
    fn make(c: u32) -> Self;
}

impl Code for u16 {
    #[inline(always)]
    fn get(self) -> u32 {
        self as u32
    }
    #[inline(always)]
    fn make(c: u32) -> u16 {
        c as u16
    }
}

impl Code for u32 {
    #[inline(always)]
    fn get(self) -> u32 {
        self
    }
    #[inline(always)]
    fn make(c: u32) -> u32 {
        c
    }
}

/// A group's rule, where the update reads it.
#[derive(Clone, Copy, Debug)]
struct GroupRule {
    mask: History,
    window: u64,
    ltp: u8,
    ltd: u8,
    associative: bool,
    /// Its plastic mapping.
    mapping: u32,
}

/// Rows (pass 1) and columns (pass 2) prefetched this many ahead.
const PREFETCH_AHEAD: usize = 4;
const PREFETCH_COLUMNS: usize = 2;

/// Marks of one part's synapses (see the module's comment).
pub type Marks = Vec<u64>;

pub fn marks_for(part: &Part) -> Marks {
    vec![0; part.targets.len().div_ceil(64)]
}

impl Learner {
    pub fn new(plastic: Plastic, neurons: u32) -> Learner {
        let exists =
            plastic.mappings.iter().map(|m| m.associative.as_ref().map_or(Vec::new(), |a| vec![0; a.pairs().div_ceil(64)])).collect();
        let n = plastic.mappings.len();
        let groups = plastic
            .group_mapping
            .iter()
            .map(|&pm| {
                let m = &plastic.mappings[pm as usize];
                let (rule, associative) = (m.rule, m.associative.is_some());
                GroupRule { mask: rule.mask(), window: rule.window as u64, ltp: rule.ltp, ltd: rule.ltd, associative, mapping: pm }
            })
            .collect();
        let mut grown = vec![0; n];
        let mut exists: Vec<Vec<u64>> = exists;
        for (pm, m) in plastic.mappings.iter().enumerate() {
            let Some(a) = &m.associative else { continue };
            for &(s, d) in &a.grown {
                let i = a.pair(s, d);
                exists[pm][i / 64] |= 1 << (i % 64);
                grown[pm] += 1;
            }
        }
        Learner {
            groups,
            longest: window_mask(plastic.max_window()),
            plastic,
            history: vec![0; neurons as usize],
            active: Vec::new(),
            exists,
            grown,
            refused: vec![0; n],
            all_a: Vec::new(),
            all_b: Vec::new(),
            created: Vec::new(),
        }
    }

    /// The state a device keeps of its own (the GPU backend): histories, pair tables (u64 words
    /// per plastic mapping, empty for the others), synapses grown and pairs refused.
    #[allow(clippy::type_complexity)]
    pub fn state_mut(&mut self) -> (&mut [History], &mut [Vec<u64>], &mut [u64], &mut [u64]) {
        (&mut self.history, &mut self.exists, &mut self.grown, &mut self.refused)
    }

    /// Shift one burst's firing (`spikes`: every neuron of the brain that fired, any order) into
    /// the histories and list the neurons active within the longest window.
    pub fn record(&mut self, spikes: &[u32]) {
        for h in &mut self.history {
            *h = record(*h, false);
        }
        for &s in spikes {
            self.history[s as usize] |= 1;
        }
        self.active.clear();
        let longest = self.longest;
        self.active.extend(self.history.iter().enumerate().filter(|(_, &h)| h & longest != 0).map(|(n, _)| n as u32));
    }

    #[inline(always)]
    fn exists(&self, mapping: usize, s: u32, d: u32) -> bool {
        match &self.plastic.mappings[mapping].associative {
            None => true,
            Some(a) => {
                let i = a.pair(s, d);
                self.exists[mapping][i / 64] >> (i % 64) & 1 != 0
            }
        }
    }

    /// Burst `t`'s update of the synapses of `part` (histories recorded up to burst `t`).
    pub fn update(&self, t: u64, part: &mut Part, marks: &mut Marks) {
        let Part { targets_range, row_ptr, targets, codes, columns } = part;
        let view = Rows { base: targets_range.start, end: targets_range.end, row_ptr, targets, columns: columns.as_ref() };
        match codes {
            Codes::U16(c) => self.update_codes(t, &view, c, marks),
            Codes::U32(c) => self.update_codes(t, &view, c, marks),
        }
    }

    fn update_codes<C: Code>(&self, t: u64, part: &Rows<'_>, codes: &mut [C], marks: &mut Marks) {
        let (code_base, base, groups) = (self.plastic.base, part.base, &self.groups[..]);
        let row = |s: u32| part.row_ptr[s as usize] as usize..part.row_ptr[s as usize + 1] as usize;
        // 1. rows of the sources that fired recently: the whole rule
        for (k, &s) in self.active.iter().enumerate() {
            if let Some(&next) = self.active.get(k + PREFETCH_AHEAD) {
                let r = row(next);
                prefetch(part.targets.as_ptr().wrapping_add(r.start), r.len() * 4);
                prefetch(codes.as_ptr().wrapping_add(r.start), r.len() * std::mem::size_of::<C>());
            }
            let hs = self.history[s as usize];
            for i in row(s) {
                let Some(c) = codes[i].get().checked_sub(code_base) else { continue };
                let (group, weight) = (c >> 8, c as u8);
                let g = &groups[group as usize];
                if hs & g.mask == 0 {
                    continue;
                }
                let d = part.targets[i] + base;
                let hd = self.history[d as usize];
                if hd & self.longest != 0 {
                    marks[i / 64] |= 1 << (i % 64);
                }
                if t < g.window {
                    continue;
                }
                let w = if hs & g.mask == g.mask && hd & g.mask == g.mask {
                    // an associative pair that does not exist grows instead (see `grow`)
                    if g.associative && !self.exists(g.mapping as usize, s, d) {
                        continue;
                    }
                    weight.saturating_add(g.ltp)
                } else {
                    weight.saturating_sub(g.ltd)
                };
                codes[i] = C::make(code_base + (group << 8) + w as u32);
            }
        }
        // 2. plastic synapses onto the targets that fired recently, not visited by pass 1: their
        // source was silent in the window, so they are depressed (or unchanged before t = W)
        let Some(columns) = part.columns else { return };
        let own = self.active.partition_point(|&n| n < base)..self.active.partition_point(|&n| n < part.end);
        let mine = &self.active[own];
        for (k, &d) in mine.iter().enumerate() {
            if let Some(&next) = mine.get(k + PREFETCH_COLUMNS) {
                for &i in columns.of_target(next - base) {
                    prefetch(codes.as_ptr().wrapping_add(i as usize), 1);
                    prefetch(marks.as_ptr().wrapping_add(i as usize / 64), 1);
                }
            }
            let hd = self.history[d as usize];
            for &i in columns.of_target(d - base) {
                let i = i as usize;
                if marks[i / 64] >> (i % 64) & 1 != 0 {
                    marks[i / 64] &= !(1 << (i % 64));
                    continue;
                }
                let Some(c) = codes[i].get().checked_sub(code_base) else { continue };
                let (group, weight) = (c >> 8, c as u8);
                let g = &groups[group as usize];
                if t >= g.window && hd & g.mask != 0 && weight > 0 {
                    codes[i] = C::make(code_base + (group << 8) + weight.saturating_sub(g.ltd) as u32);
                }
            }
        }
    }

    /// Burst `t`'s growth, after [`Learner::update`]: every associative pair whose two neurons
    /// fired in every burst of the window and that does not exist yet is created with weight
    /// `Δ+`, in ascending (source, target) order up to the mapping's `max_synapses`. Every shard
    /// records every pair as existing; [`Learner::apply_growth`] then gives the pairs onto a part's
    /// neurons their weight.
    pub fn grow(&mut self, t: u64) {
        let Learner { plastic, history, exists, grown, refused, all_a, all_b, created, .. } = self;
        created.clear();
        for (pm, m) in plastic.mappings.iter().enumerate() {
            let Some(a) = &m.associative else { continue };
            if m.rule.ltp == 0 || t < m.rule.window as u64 {
                continue;
            }
            let full = m.rule.mask();
            let all = |r: &Range<u32>, out: &mut Vec<u32>| {
                out.clear();
                out.extend(r.clone().filter(|&n| history[n as usize] & full == full));
            };
            all(&a.sources, all_a);
            all(&a.targets, all_b);
            for &s in all_a.iter() {
                for &d in all_b.iter() {
                    let i = a.pair(s, d);
                    if s == d || exists[pm][i / 64] >> (i % 64) & 1 != 0 {
                        continue;
                    }
                    if grown[pm] >= a.max_synapses {
                        if refused[pm] == 0 {
                            tracing::warn!(
                                "mapping #{}: associative memory is full ({} synapses, its max_synapses); pairs beyond are \
                                 not created (counted in `inspect`)",
                                m.index,
                                a.max_synapses
                            );
                        }
                        refused[pm] += 1;
                        continue;
                    }
                    exists[pm][i / 64] |= 1 << (i % 64);
                    grown[pm] += 1;
                    created.push((pm as u32, s, d));
                }
            }
        }
    }

    /// Give the pairs the last [`Learner::grow`] created onto `part`'s neurons their weight `Δ+`.
    pub fn apply_growth(&self, part: &mut Part) {
        let own = part.targets_range.clone();
        for &(pm, s, d) in self.created.iter().filter(|c| own.contains(&c.2)) {
            set_pair(&self.plastic, part, pm as usize, s, d, self.plastic.mappings[pm as usize].rule.ltp);
        }
    }

    /// The learned state of `parts` (this engine's, ascending): histories and existing synapses.
    pub fn snapshot(&self, parts: &[&Part]) -> Learned {
        let p = &self.plastic;
        let mut synapses = Vec::new();
        for s in 0..self.history.len() as u32 {
            for part in parts {
                for i in part.row(s) {
                    let Some(Decoded { group, weight }) = p.decode(part.codes.get(i)) else { continue };
                    let pm = p.group_mapping[group as usize] as usize;
                    let d = part.targets[i] + part.targets_range.start;
                    if self.exists(pm, s, d) {
                        synapses.push(LearnedSynapse { source: s, target: d, mapping: p.mappings[pm].index as u32, weight });
                    }
                }
            }
        }
        let mut grown = Vec::new();
        for (pm, m) in self.plastic.mappings.iter().enumerate() {
            let Some(a) = &m.associative else { continue };
            for (w, &bits) in self.exists[pm].iter().enumerate() {
                let mut bits = bits;
                while bits != 0 {
                    let i = w * 64 + bits.trailing_zeros() as usize;
                    bits &= bits - 1;
                    let (s, d) = (i / a.targets.len(), i % a.targets.len());
                    grown.push(GrownPair {
                        mapping: m.index as u32,
                        source: a.sources.start + s as u32,
                        target: a.targets.start + d as u32,
                    });
                }
            }
        }
        Learned { ahead: false, history: self.history.clone(), synapses, grown }
    }

    /// Take `learned` (the whole brain's, as [`Learner::snapshot`] gives it merged over shards);
    /// an empty one leaves the state as it is. Errors when it does not fit this brain.
    pub fn restore(&mut self, learned: &Learned, parts: &mut [&mut Part]) -> Result<(), String> {
        if learned.is_empty() {
            return Ok(());
        }
        if learned.history.len() != self.history.len() {
            return Err(format!("learned state holds {} neurons, the brain {}", learned.history.len(), self.history.len()));
        }
        self.history.copy_from_slice(&learned.history);
        let index_of = |mapping: u32| self.plastic.mappings.iter().position(|m| m.index as u32 == mapping);
        for e in &mut self.exists {
            e.fill(0);
        }
        self.grown.fill(0);
        self.refused.fill(0);
        for g in &learned.grown {
            let pm = index_of(g.mapping).ok_or_else(|| format!("grown pair of mapping #{}, which is not plastic", g.mapping))?;
            let Some(a) = &self.plastic.mappings[pm].associative else {
                return Err(format!("grown pair of mapping #{}, which is not associative", g.mapping));
            };
            if !a.sources.contains(&g.source) || !a.targets.contains(&g.target) || g.source == g.target {
                return Err(format!("grown pair {} -> {} is not a pair of mapping #{}", g.source, g.target, g.mapping));
            }
            let i = a.pair(g.source, g.target);
            self.exists[pm][i / 64] |= 1 << (i % 64);
            self.grown[pm] += 1;
        }
        // this engine's synapses, in the snapshot's order, against the learned ones onto its neurons
        let lo = parts.first().map_or(0, |p| p.targets_range.start);
        let hi = parts.last().map_or(0, |p| p.targets_range.end);
        let mut mine = learned.synapses.iter().filter(|s| (lo..hi).contains(&s.target));
        let p = self.plastic.clone();
        for s in 0..self.history.len() as u32 {
            for part in parts.iter_mut() {
                for i in part.row(s) {
                    let Some(Decoded { group, .. }) = p.decode(part.codes.get(i)) else { continue };
                    let pm = p.group_mapping[group as usize] as usize;
                    let d = part.targets[i] + part.targets_range.start;
                    let w = if self.exists(pm, s, d) {
                        let got = mine.next().ok_or_else(|| format!("learned state lacks synapse {s} -> {d}"))?;
                        if (got.source, got.target, got.mapping) != (s, d, p.mappings[pm].index as u32) {
                            return Err(format!(
                                "learned synapse {} -> {} (mapping #{}) where the brain has {s} -> {d} (mapping #{})",
                                got.source, got.target, got.mapping, p.mappings[pm].index
                            ));
                        }
                        got.weight
                    } else {
                        0
                    };
                    part.codes.set(i, p.encode(group, w));
                }
            }
        }
        if let Some(extra) = mine.next() {
            return Err(format!("learned synapse {} -> {} does not exist in this brain", extra.source, extra.target));
        }
        Ok(())
    }
}

/// Give the (absent) pair `s -> d` of plastic mapping `pm` in `part` its first weight.
fn set_pair(p: &Plastic, part: &mut Part, pm: usize, s: u32, d: u32, w: u8) {
    let rel = d - part.targets_range.start;
    let row = part.row(s);
    let from = row.start + part.targets[row.clone()].partition_point(|&t| t < rel);
    for i in from..row.end {
        if part.targets[i] != rel {
            break;
        }
        if let Some(Decoded { group, .. }) = p.decode(part.codes.get(i)) {
            if p.group_mapping[group as usize] as usize == pm {
                part.codes.set(i, p.encode(group, w));
                return;
            }
        }
    }
}
