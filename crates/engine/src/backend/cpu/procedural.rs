//! The procedural synapses of the reference backend (see [`Procedural`]): drawn again from the
//! rules every burst for the spikes of the last, over every core.

use std::ops::Range;
use std::sync::Arc;

use rayon::prelude::*;

use crate::connectome::{Drawer, Procedural};

/// The procedural synapses of the last burst's spikes (see [`Procedural`]), drawn again over both
/// cores in chunks of spikes and sorted by the piece their target is in.
#[derive(Default)]
pub(crate) struct Regen {
    rules: Option<Arc<Procedural>>,
    /// The engine's neurons, and where each piece starts (ascending, the first is `range.start`).
    range: Range<u32>,
    starts: Vec<u32>,
    /// Per chunk of spikes: its drawer and, per piece, `(target - piece start, contribution)`.
    chunks: Vec<(Drawer, Vec<Drawn>)>,
    /// Chunks filled by the last [`Regen::draw`].
    used: usize,
}

/// Procedural synapses onto one piece: `(target - piece start, contribution)`.
type Drawn = Vec<(u32, i32)>;

/// Spikes per chunk of [`Regen`].
const REGEN_CHUNK: usize = 256;

impl Regen {
    /// The procedural rules (if any) for neurons `range`, cut into pieces at `starts`.
    pub(crate) fn new(rules: Option<Arc<Procedural>>, range: Range<u32>, starts: Vec<u32>) -> Regen {
        Regen { rules, range, starts, ..Default::default() }
    }

    /// Draw the procedural rows of `spikes`, keeping the synapses onto the engine's neurons, cut
    /// at the pieces' starts.
    pub(crate) fn draw(&mut self, spikes: &[u32]) {
        let Some(rules) = &self.rules else { return };
        let (starts, range) = (&self.starts[..], &self.range);
        let n = spikes.len().div_ceil(REGEN_CHUNK);
        if self.chunks.len() < n {
            self.chunks.resize_with(n, || (Drawer::default(), vec![Vec::new(); starts.len()]));
        }
        self.used = n;
        self.chunks[..n].par_iter_mut().zip(spikes.par_chunks(REGEN_CHUNK)).for_each(|((drawer, out), sources)| {
            out.iter_mut().for_each(Vec::clear);
            for &s in sources {
                rules.each(drawer, s, |t, c| {
                    if range.contains(&t) {
                        let p = starts.partition_point(|&a| a <= t) - 1;
                        out[p].push((t - starts[p], c));
                    }
                });
            }
        });
    }

    /// Piece `me`'s procedural synapses of the last draw: `(target - piece start, contribution)`.
    pub(crate) fn drawn(&self, me: usize) -> impl Iterator<Item = (u32, i32)> + '_ {
        self.chunks[..self.used].iter().flat_map(move |(_, out)| out[me].iter().copied())
    }

    /// Add piece `me`'s procedural input.
    pub(super) fn add(&self, me: usize, input: &mut [i64]) {
        for (t, c) in self.drawn(me) {
            input[t as usize] = input[t as usize].wrapping_add(c as i64);
        }
    }
}
