//! The connectome: every synapse of a brain, built deterministically from a genome and its seed,
//! stored source-sorted (CSR) with its contribution precomputed in fixed point.
//!
//! A connectome is split by *target* ranges into parts: each part holds, for every source neuron,
//! the synapses onto its own targets. One part serves one GPU or one CPU thread, which can then
//! accumulate its targets' input with no atomics and no locks; every part reads the same global
//! list of fired neurons (the spike exchange of several GPUs or machines).

mod build;
pub mod draw;

use std::ops::Range;

pub use build::{build, BuildOptions};

/// One synapse: 8 bytes. `target` is relative to the part's first target.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Synapse {
    pub target: u32,
    /// `±weight × psp [/ out-degree]` in LSBs of [`crate::model::fixed`].
    pub contribution: i32,
}

/// The synapses onto one range of target neurons, rows indexed by global source id.
#[derive(Clone, Debug, Default)]
pub struct Part {
    pub targets: Range<u32>,
    /// `row_ptr[s]..row_ptr[s + 1]` indexes the synapses of source `s`; length = neurons + 1.
    pub row_ptr: Vec<u64>,
    pub synapses: Vec<Synapse>,
}

impl Part {
    #[inline(always)]
    pub fn row(&self, source: u32) -> &[Synapse] {
        let s = source as usize;
        &self.synapses[self.row_ptr[s] as usize..self.row_ptr[s + 1] as usize]
    }

    pub fn bytes(&self) -> u64 {
        (self.row_ptr.len() * 8 + self.synapses.len() * std::mem::size_of::<Synapse>()) as u64
    }
}

/// Synapse counts of one mapping.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct MappingStats {
    pub index: usize,
    pub source: String,
    pub destination: String,
    pub morphology: String,
    pub synapses: u64,
    /// Synapses whose contribution rounded to 0 (weight or psp 0, or a huge out-degree).
    pub dead: u64,
}

/// All synapses of a brain.
#[derive(Clone, Debug, Default)]
pub struct Connectome {
    pub neurons: u32,
    pub parts: Vec<Part>,
    pub mappings: Vec<MappingStats>,
    /// Wall-clock seconds the build took.
    pub build_seconds: f64,
}

impl Connectome {
    pub fn synapses(&self) -> u64 {
        self.parts.iter().map(|p| p.synapses.len() as u64).sum()
    }

    /// Bytes of the synapse arrays and row pointers.
    pub fn bytes(&self) -> u64 {
        self.parts.iter().map(Part::bytes).sum()
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

    /// Out-degree of each source neuron over all parts.
    pub fn out_degree(&self, source: u32) -> u64 {
        self.parts.iter().map(|p| p.row(source).len() as u64).sum()
    }
}

/// Split `0..neurons` into `parts` contiguous ranges of (nearly) equal size.
pub fn even_ranges(neurons: u32, parts: usize) -> Vec<Range<u32>> {
    let parts = parts.max(1) as u64;
    (0..parts)
        .map(|i| ((neurons as u64 * i / parts) as u32)..((neurons as u64 * (i + 1) / parts) as u32))
        .collect()
}
