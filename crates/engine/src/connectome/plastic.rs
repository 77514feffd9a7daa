//! Plastic synapses in the connectome (docs/plasticity.md).
//!
//! A plastic synapse is stored like any other (target and contribution code in its source's row),
//! with a code that carries its weight: `base + group × 256 + weight`, where a *group* is one
//! plastic mapping with one out-degree divisor, and the contribution table holds 256 entries per
//! group (`±w × psp / divisor` for every weight `w`). Propagation is therefore the same for static
//! and plastic synapses on every backend; learning rewrites codes.
//!
//! An associative mapping holds every possible pair
//! `s -> d` (`s != d`) from the start; whether a pair exists is the learner's state, and a pair
//! that does not exist keeps weight 0 (it contributes nothing).

use std::ops::Range;

use super::Codes;
use crate::model::plasticity::Rule;

/// The plastic mappings of a brain and where their codes start.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Plastic {
    /// First plastic code; codes below are static.
    pub base: u32,
    /// The plastic mapping (index into `mappings`) of each group.
    pub group_mapping: Vec<u32>,
    /// The plastic mappings.
    pub mappings: Vec<PlasticMapping>,
}

/// One plastic mapping.
#[derive(Clone, Debug, PartialEq)]
pub struct PlasticMapping {
    /// Index of the mapping in the genome.
    pub index: usize,
    /// Its rule.
    pub rule: Rule,
    /// Initial weight of its synapses (the mapping's weight, rounded).
    pub weight: u8,
    /// The pairs it may grow, when associative.
    pub associative: Option<Associative>,
}

/// The pairs an associative mapping can grow.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Associative {
    /// The source neurons.
    pub sources: Range<u32>,
    /// The target neurons.
    pub targets: Range<u32>,
    /// Growth stops once this many synapses exist.
    pub max_synapses: u64,
    /// Pairs grown before the build (a learned genome's), as (source, target).
    pub grown: Vec<(u32, u32)>,
}

impl Associative {
    /// Index of the pair `s -> d` in the mapping's pair table.
    #[inline(always)]
    pub fn pair(&self, s: u32, d: u32) -> usize {
        (s - self.sources.start) as usize * self.targets.len() + (d - self.targets.start) as usize
    }

    /// How many pairs (sources × targets).
    pub fn pairs(&self) -> usize {
        self.sources.len() * self.targets.len()
    }
}

/// What a plastic code says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decoded {
    /// The plastic group (a mapping's weights).
    pub group: u32,
    /// The weight.
    pub weight: u8,
}

impl Plastic {
    /// The group and weight of `code`, or `None` for a static synapse.
    #[inline(always)]
    pub fn decode(&self, code: u32) -> Option<Decoded> {
        let c = code.checked_sub(self.base)?;
        Some(Decoded { group: c >> 8, weight: c as u8 })
    }

    #[inline(always)]
    /// The code of a synapse of `group` at `weight`.
    pub fn encode(&self, group: u32, weight: u8) -> u32 {
        self.base + (group << 8) + weight as u32
    }

    /// The longest window of any rule.
    pub fn max_window(&self) -> u32 {
        self.mappings.iter().map(|m| m.rule.window).max().unwrap_or(1)
    }

    /// `table` with every plastic code's entry replaced by the largest magnitude its group can
    /// take (weight 255): the bound a backend sizes its input accumulators with.
    pub fn bounds(&self, table: &[i32]) -> Vec<i32> {
        let mut out = table.to_vec();
        for group in out[self.base as usize..].chunks_mut(256) {
            let top = group.iter().map(|c| c.unsigned_abs()).max().unwrap_or(0).min(i32::MAX as u32) as i32;
            group.fill(top);
        }
        out
    }
}

impl Codes {
    /// Overwrite code `i`.
    #[inline(always)]
    pub fn set(&mut self, i: usize, code: u32) {
        match self {
            Codes::U16(v) => v[i] = code as u16,
            Codes::U32(v) => v[i] = code,
        }
    }
}

/// The contributions of a group: `±w × psp / divisor` for `w` in 0..=255, in LSBs.
pub fn group_contributions(signed_psp: f64, divisor: f64) -> impl Iterator<Item = i32> {
    (0..256).map(move |w| crate::model::fixed::contribution_from_f64(signed_psp * w as f64 / divisor))
}
