//! The connectome streamed to where it lives (a GPU): the host never holds it whole. A first
//! pass draws every row and keeps only the row lengths and each chunk's distinct contributions
//! (which make the contribution table and the row pointers); a second pass draws the rows again
//! chunk by chunk, a few chunks at a time over the threads, and hands each chunk's targets and
//! codes to a sink that copies them to their place. The rows come from the same counter-based
//! streams as [`super::build`]'s, so they are the same synapses, in the same order, with the same
//! codes (a test compares them). The host holds the layout, the row pointers (8 bytes a neuron)
//! and a few chunks' rows.

use std::ops::Range;
use std::time::Instant;

use rayon::prelude::*;

use super::build::{build_chunk, prepare, row_ptr, stats, table, BuildOptions, ChunkOut, Prepared, Remap, Rows, Table};
use super::rows::RowRules;
use super::{Codes, Connectome, Part, Procedural};
use crate::genome::Genome;
use crate::model::Layout;

/// Chunks drawn at once in the second pass, per thread.
const WINDOW_PER_THREAD: usize = 2;

/// A connectome whose synapses are drawn again, chunk by chunk, where they are wanted.
pub struct Streamed {
    rules: RowRules,
    skip: Vec<Option<Vec<super::ClosedForm>>>,
    parts: Vec<Range<u32>>,
    chunks: Vec<Range<u32>>,
    remaps: Vec<Remap>,
    mappings: usize,
    /// Synapses per part.
    synapses: Vec<u64>,
    /// Codes of 32 bits (else 16).
    pub wide: bool,
    progress: bool,
}

/// The first pass over a genome: a connectome whose parts hold their row pointers but no
/// synapses, and what draws the synapses ([`Streamed::fill`]). A plastic synapse's code holds its
/// initial weight, as the build's.
pub fn plan(genome: &Genome, layout: &Layout, opts: &BuildOptions) -> (Connectome, Streamed) {
    let start = Instant::now();
    let n = layout.neurons;
    let Prepared { rules, skip, chunks, plastic } = prepare(genome, layout, opts);
    let progress = crate::progress::Progress::new("counting the connectome", "chunks", chunks.len() as u64, opts.progress);
    let outs: Vec<ChunkOut> = chunks
        .par_iter()
        .map(|range| {
            let mut out = build_chunk(&Rows { rules: &rules, skip: &skip }, genome.mappings.len(), &opts.parts, range.clone());
            for p in &mut out.parts {
                (p.targets, p.codes) = (Vec::new(), Vec::new());
            }
            progress.inc(1);
            out
        })
        .collect();
    progress.finish();
    let mut mappings = stats(genome, &outs);
    let Table { table, remaps, wide, plastic } = table(&outs, plastic);
    let parts: Vec<Part> = opts
        .parts
        .iter()
        .enumerate()
        .map(|(pi, range)| Part {
            targets_range: range.clone(),
            row_ptr: row_ptr(n, &outs, pi),
            targets: Vec::new(),
            codes: Codes::empty(wide),
        })
        .collect();
    let synapses = parts.iter().map(|p| p.row_ptr.last().copied().unwrap_or(0)).collect();
    let streamed = Streamed {
        rules,
        skip,
        parts: opts.parts.clone(),
        chunks,
        remaps,
        mappings: genome.mappings.len(),
        synapses,
        wide,
        progress: opts.progress,
    };
    // (the rules compiled once more for the mappings drawn again: a few bytes each)
    let procedural = Procedural::new(prepare(genome, layout, opts).rules);
    for st in &mut mappings {
        st.procedural = procedural.as_ref().is_some_and(|p| p.mappings[st.index]);
    }
    let c =
        Connectome { neurons: n, parts, contributions: table, mappings, plastic, procedural, build_seconds: start.elapsed().as_secs_f64() };
    (c, streamed)
}

impl Streamed {
    /// The synapses of part `part`.
    pub fn synapses(&self, part: usize) -> u64 {
        self.synapses[part]
    }

    /// The synapses of every part.
    pub fn total_synapses(&self) -> u64 {
        self.synapses.iter().sum()
    }

    /// Draw part `part`'s synapses again, in chunks of sources, and hand each chunk's to `sink`:
    /// its first synapse's index in the part, its targets (relative to the part's first neuron)
    /// and its codes (little-endian, 2 or 4 bytes each: see [`Streamed::wide`]). The sink is
    /// called in source order.
    pub fn fill<E>(&self, part: usize, row_ptr: &[u64], mut sink: impl FnMut(u64, &[u32], &[u8]) -> Result<(), E>) -> Result<(), E> {
        let window = rayon::current_num_threads() * WINDOW_PER_THREAD;
        let progress = crate::progress::Progress::new("building the connectome", "chunks", self.chunks.len() as u64, self.progress);
        let one = std::slice::from_ref(&self.parts[part]);
        for (w, group) in self.chunks.chunks(window).enumerate() {
            let drawn: Vec<(Vec<u32>, Vec<u8>)> = group
                .par_iter()
                .enumerate()
                .map(|(i, range)| {
                    let mut out = build_chunk(&Rows { rules: &self.rules, skip: &self.skip }, self.mappings, one, range.clone());
                    let remap = &self.remaps[w * window + i];
                    let cp = std::mem::take(&mut out.parts[0]);
                    let codes: Vec<u8> = if self.wide {
                        cp.codes.iter().flat_map(|&c| remap.code(c).to_le_bytes()).collect()
                    } else {
                        cp.codes.iter().flat_map(|&c| (remap.code(c) as u16).to_le_bytes()).collect()
                    };
                    progress.inc(1);
                    (cp.targets, codes)
                })
                .collect();
            for (range, (targets, codes)) in group.iter().zip(drawn) {
                sink(row_ptr[range.start as usize], &targets, &codes)?;
            }
        }
        progress.finish();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::connectome::{build, even_ranges};

    /// A streamed part, put together from the sink, equals the build's part: row pointers,
    /// targets and codes, and the same table.
    #[test]
    fn the_stream_is_the_build() {
        let mut checked = 0;
        for seed in 0..24 {
            // (half of them learn: plastic and associative mappings)
            let genome = crate::selftest::random_genome(seed, 3000);
            let layout = Layout::from_genome(&genome);
            let opts = BuildOptions::stored(even_ranges(layout.neurons, 3), false);
            let (planned, streamed) = plan(&genome, &layout, &opts);
            let built = build(&genome, &layout, &opts);
            checked += built.plastic.is_some() as usize;
            assert_eq!(planned.contributions, built.contributions);
            assert_eq!(planned.plastic, built.plastic);
            assert_eq!(
                planned.mappings.iter().map(|m| m.synapses).collect::<Vec<_>>(),
                built.mappings.iter().map(|m| m.synapses).collect::<Vec<_>>()
            );
            for (pi, (p, b)) in planned.parts.iter().zip(&built.parts).enumerate() {
                assert_eq!(p.row_ptr, b.row_ptr);
                assert_eq!(streamed.synapses(pi), b.synapses());
                let (mut targets, mut codes) = (vec![0u32; b.targets.len()], Vec::new());
                streamed
                    .fill::<()>(pi, &p.row_ptr, |at, t, c| {
                        targets[at as usize..at as usize + t.len()].copy_from_slice(t);
                        assert_eq!(codes.len(), at as usize * if streamed.wide { 4 } else { 2 });
                        codes.extend_from_slice(c);
                        Ok(())
                    })
                    .unwrap();
                assert_eq!(targets, b.targets);
                let want: Vec<u8> = match &b.codes {
                    Codes::U16(c) => c.iter().flat_map(|x| x.to_le_bytes()).collect(),
                    Codes::U32(c) => c.iter().flat_map(|x| x.to_le_bytes()).collect(),
                };
                assert_eq!(codes, want);
            }
        }
        assert!(checked >= 8, "only {checked} brains that learn");
    }
}
