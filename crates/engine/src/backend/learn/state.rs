//! A learner's state in and out: the learned weights of its parts as the model states them
//! (snapshots, checkpoints, `export`), and a restore from them.

use super::{count, debt, Deferred, Learner};
use crate::connectome::plastic::Decoded;
use crate::connectome::Part;
use crate::model::plasticity::{GrownPair, Learned, LearnedSynapse};

impl Learner {
    /// The weight of synapse `i` of a part onto `d`, `weight` in its code, with what it owes.
    #[inline(always)]
    fn current(&self, group: u32, weight: u8, d: u32, deferred: &Deferred, i: usize) -> u8 {
        let Some(&stamp) = deferred.stamps.get(i) else { return weight };
        let g = &self.groups[group as usize];
        weight.saturating_sub(debt(count(self.status[g.slot][d as usize]).wrapping_sub(stamp), g.ltd))
    }

    /// The learned state of `parts` (this engine's, ascending, each with its deferred depressions,
    /// empty where there are none): histories and existing synapses.
    pub fn snapshot(&self, parts: &[(&Part, &Deferred)]) -> Learned {
        let p = &self.plastic;
        let mut synapses = Vec::new();
        for s in 0..self.history.len() as u32 {
            for &(part, deferred) in parts {
                for i in part.row(s) {
                    let Some(Decoded { group, weight }) = p.decode(part.codes.get(i)) else { continue };
                    let pm = p.group_mapping[group as usize] as usize;
                    let d = part.targets[i] + part.targets_range.start;
                    if self.exists(pm, s, d) {
                        let weight = self.current(group, weight, d, deferred, i);
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
    /// an empty one leaves the state as it is. Errors when it does not fit this brain. Every
    /// synapse is then up to date (the counts and `parts`' deferrals start again).
    pub fn restore(&mut self, learned: &Learned, parts: &mut [(&mut Part, &mut Deferred)]) -> Result<(), String> {
        if learned.is_empty() {
            return Ok(());
        }
        if learned.history.len() != self.history.len() {
            return Err(format!("learned state holds {} neurons, the brain {}", learned.history.len(), self.history.len()));
        }
        // a history holds the longest window's bursts (a state from an older release may hold more)
        let longest = self.longest;
        self.history.iter_mut().zip(&learned.history).for_each(|(h, &l)| *h = l & longest);
        let index_of = |mapping: u32| self.plastic.mappings.iter().position(|m| m.index as u32 == mapping);
        for e in &mut self.exists {
            e.fill(0);
        }
        self.grown.fill(0);
        self.refused.fill(0);
        for st in &mut self.status {
            st.fill(0);
        }
        for (_, deferred) in parts.iter_mut() {
            deferred.reset();
        }
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
        let lo = parts.first().map_or(0, |p| p.0.targets_range.start);
        let hi = parts.last().map_or(0, |p| p.0.targets_range.end);
        let mut mine = learned.synapses.iter().filter(|s| (lo..hi).contains(&s.target));
        let p = self.plastic.clone();
        for s in 0..self.history.len() as u32 {
            for (part, _) in parts.iter_mut() {
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
