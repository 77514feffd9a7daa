//! The connectome: every synapse of a brain, built deterministically from a genome and its seed,
//! stored source-sorted (CSR) with its contribution precomputed in fixed point.
//!
//! A connectome is split by *target* ranges into parts: each part holds, for every source neuron,
//! the synapses onto its own targets. One part serves one GPU or one CPU thread, which can then
//! accumulate its targets' input with no atomics and no locks; every part reads the same global
//! list of fired neurons (the spike exchange of several GPUs or machines).

mod build;
pub mod draw;
pub mod flat;
pub mod plastic;
pub mod procedural;
mod rows;
pub mod storage;
pub mod stream;

use std::ops::Range;

pub use build::{build, count, mapping_bounds, synapse_bound, BuildOptions};
pub use flat::{gpu_drawable_mask, FlatRows};
pub use plastic::{Associative, Plastic, PlasticMapping};
pub use procedural::{closed_forms, procedural_mask, ClosedForm, Procedural};
pub use rows::Drawer;

/// Contribution codes of a part's synapses: an index into [`Connectome::contributions`]. A brain
/// has few distinct contributions (one per mapping and out-degree), so 16 bits suffice almost
/// always: a synapse then takes 6 bytes (u32 target + u16 code); past 65,536 distinct values the
/// codes widen to 32 bits (8 bytes per synapse).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Codes {
    /// Codes of 16 bits.
    U16(Vec<u16>),
    /// Codes of 32 bits.
    U32(Vec<u32>),
}

impl Default for Codes {
    fn default() -> Self {
        Codes::U16(Vec::new())
    }
}

impl Codes {
    /// No codes, of 32 bits (`wide`) or 16.
    pub fn empty(wide: bool) -> Codes {
        if wide {
            Codes::U32(Vec::new())
        } else {
            Codes::U16(Vec::new())
        }
    }

    /// How many codes.
    pub fn len(&self) -> usize {
        match self {
            Codes::U16(v) => v.len(),
            Codes::U32(v) => v.len(),
        }
    }
    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    #[inline(always)]
    /// Code `i`.
    pub fn get(&self, i: usize) -> u32 {
        match self {
            Codes::U16(v) => v[i] as u32,
            Codes::U32(v) => v[i],
        }
    }
    /// 2 or 4.
    pub fn bytes_per_code(&self) -> u64 {
        match self {
            Codes::U16(_) => 2,
            Codes::U32(_) => 4,
        }
    }
}

/// The synapses onto one range of target neurons, rows indexed by global source id, stored as
/// structure of arrays: `targets[i]` (relative to `targets_range.start`) and `codes[i]`.
#[derive(Clone, Debug, Default)]
pub struct Part {
    /// The target neurons this part holds the synapses onto.
    pub targets_range: Range<u32>,
    /// `row_ptr[s]..row_ptr[s + 1]` indexes the synapses of source `s`; length = neurons + 1.
    pub row_ptr: Vec<u64>,
    /// Each synapse's target, relative to `targets_range.start`.
    pub targets: Vec<u32>,
    /// Each synapse's contribution code.
    pub codes: Codes,
}

impl Part {
    #[inline(always)]
    /// The indexes of `source`'s synapses.
    pub fn row(&self, source: u32) -> Range<usize> {
        let s = source as usize;
        self.row_ptr[s] as usize..self.row_ptr[s + 1] as usize
    }

    /// Synapses stored.
    pub fn synapses(&self) -> u64 {
        self.targets.len() as u64
    }

    /// Bytes they take (row pointers, targets, codes).
    pub fn bytes(&self) -> u64 {
        self.row_ptr.len() as u64 * 8 + self.targets.len() as u64 * (4 + self.codes.bytes_per_code())
    }
}

/// Synapse counts of one mapping.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct MappingStats {
    /// Index of the mapping in the genome.
    pub index: usize,
    /// Its source area's id.
    pub source: String,
    /// Its destination area's id.
    pub destination: String,
    /// Its morphology's name.
    pub morphology: String,
    /// Synapses it made.
    pub synapses: u64,
    /// Synapses whose contribution rounded to 0 (weight or psp 0, or a huge out-degree).
    pub dead: u64,
    /// Not stored: drawn again when their source fires.
    pub procedural: bool,
}

/// All synapses of a brain.
#[derive(Clone, Debug, Default)]
pub struct Connectome {
    /// Neurons of the brain.
    pub neurons: u32,
    /// The stored synapses, one part per range of targets.
    pub parts: Vec<Part>,
    /// The distinct contributions `±weight × psp [/ out-degree]` in LSBs of
    /// [`crate::model::fixed`], ascending; synapses refer to them by code.
    pub contributions: Vec<i32>,
    /// Synapse counts per mapping.
    pub mappings: Vec<MappingStats>,
    /// The plastic mappings, when the brain has any.
    pub plastic: Option<Plastic>,
    /// The rules of the procedural mappings, when the brain has any.
    pub procedural: Option<std::sync::Arc<Procedural>>,
    /// Wall-clock seconds the build took.
    pub build_seconds: f64,
}

impl Connectome {
    /// Synapses stored in the parts.
    pub fn synapses(&self) -> u64 {
        self.parts.iter().map(Part::synapses).sum()
    }

    /// Synapses of the procedural mappings (not stored), from the build's counts.
    pub fn procedural_synapses(&self) -> u64 {
        self.mappings.iter().filter(|m| m.procedural).map(|m| m.synapses).sum()
    }

    /// Bytes of the synapse arrays, row pointers and the contribution table.
    pub fn bytes(&self) -> u64 {
        self.parts.iter().map(Part::bytes).sum::<u64>() + self.contributions.len() as u64 * 4
    }

    /// Contribution of synapse `i` of part `p`, in LSBs.
    #[inline(always)]
    pub fn contribution(&self, p: usize, i: usize) -> i32 {
        self.contributions[self.parts[p].codes.get(i) as usize]
    }

    /// Bytes per stored synapse, row pointers included.
    pub fn bytes_per_synapse(&self) -> f64 {
        let s = self.synapses();
        if s == 0 {
            0.0
        } else {
            self.bytes() as f64 / s as f64
        }
    }

    /// Re-cut the parts along new target `ranges` (ascending, covering every neuron), e.g. to
    /// follow a shard plan made from this connectome's statistics. Rows keep their source order;
    /// within a row the synapses keep their order across the old parts (sums are exact integers
    /// either way).
    pub fn repartition(&mut self, ranges: &[Range<u32>]) {
        use rayon::prelude::*;
        let old = std::mem::take(&mut self.parts);
        if old.len() == ranges.len() && old.iter().zip(ranges).all(|(p, r)| p.targets_range == *r) {
            self.parts = old;
            return;
        }
        let n = self.neurons as usize;
        let wide = old.iter().any(|p| matches!(p.codes, Codes::U32(_)));
        self.parts = ranges
            .par_iter()
            .map(|r| {
                let over: Vec<&Part> = old.iter().filter(|p| p.targets_range.start < r.end && r.start < p.targets_range.end).collect();
                let mut row_ptr = Vec::with_capacity(n + 1);
                let mut targets = Vec::new();
                let (mut c16, mut c32) = (Vec::new(), Vec::new());
                row_ptr.push(0u64);
                for s in 0..n as u32 {
                    for p in &over {
                        let base = p.targets_range.start;
                        for i in p.row(s) {
                            let t = p.targets[i] + base;
                            if r.contains(&t) {
                                targets.push(t - r.start);
                                if wide {
                                    c32.push(p.codes.get(i));
                                } else {
                                    c16.push(p.codes.get(i) as u16);
                                }
                            }
                        }
                    }
                    row_ptr.push(targets.len() as u64);
                }
                let codes = if wide { Codes::U32(c32) } else { Codes::U16(c16) };
                Part { targets_range: r.clone(), row_ptr, targets, codes }
            })
            .collect();
    }

    /// Out-degree of each source neuron over all parts.
    pub fn out_degree(&self, source: u32) -> u64 {
        self.parts.iter().map(|p| p.row(source).len() as u64).sum()
    }
}

/// Split `0..neurons` into `parts` contiguous ranges of (nearly) equal size.
pub fn even_ranges(neurons: u32, parts: usize) -> Vec<Range<u32>> {
    let parts = parts.max(1) as u64;
    (0..parts).map(|i| ((neurons as u64 * i / parts) as u32)..((neurons as u64 * (i + 1) / parts) as u32)).collect()
}
