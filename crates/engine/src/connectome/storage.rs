//! Which mappings are stored and which are drawn again when their sources fire
//! (`backend.connectome`, docs/capacity.md): the genome's own `procedural` marks, then `stored`
//! (nothing more), `procedural` (every mapping that can be), or `auto` (store what fits, draw the
//! largest of the rest again). Decided before the build, from bounds on the synapse counts.

use serde::{Deserialize, Serialize};

use super::{closed_forms, gpu_drawable_mask, mapping_bounds};
use crate::genome::Genome;
use crate::model::Layout;

/// `backend.connectome`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Storage {
    /// Store what fits the memory; draw the largest of the other mappings again.
    #[default]
    Auto,
    /// Store every mapping but those the genome marks `procedural`.
    Stored,
    /// Draw every mapping that can be drawn again.
    Procedural,
}

/// What the brain's synapses may take: `synapses` stored synapses at most.
#[derive(Clone, Debug)]
pub struct Budget {
    /// Stored synapses at most.
    pub synapses: u64,
    /// Where the figure comes from, for the messages (e.g. "the GPU's free memory").
    pub from: String,
}

/// `genome` with `procedural` set on the mappings `storage` draws again, and what was decided, in
/// words (for the log). `gpu`: the backend is a GPU, which draws again the mappings of
/// [`gpu_drawable_mask`].
pub fn apply(genome: &Genome, layout: &Layout, storage: Storage, gpu: bool, budget: &Budget) -> (Genome, Vec<String>) {
    let mut g = genome.clone();
    let mut notes = Vec::new();
    let drawable = if gpu { gpu_drawable_mask(genome, layout) } else { vec![true; genome.mappings.len()] };
    let why_stored = |i: usize| {
        let m = &genome.mappings[i];
        if m.plasticity.is_some() {
            Some("it is plastic, and plasticity needs stored weights")
        } else if m.synapses.is_some() {
            Some("it lists its synapses")
        } else if !drawable[i] {
            Some("a GPU cannot draw it again (its out-degree counts a mapping that lists its synapses, or its tile's mapper is not a voxel morphology)")
        } else {
            None
        }
    };
    let name = |i: usize| {
        format!("mapping {i} ({} -> {}, {})", genome.mappings[i].source, genome.mappings[i].destination, genome.mappings[i].morphology)
    };
    for (i, m) in g.mappings.iter_mut().enumerate() {
        if let (true, Some(why)) = (m.procedural, why_stored(i)) {
            notes.push(format!("{} is marked procedural but stays stored: {why}", name(i)));
            m.procedural = false;
        }
    }
    let eligible: Vec<usize> = (0..g.mappings.len()).filter(|&i| why_stored(i).is_none() && !g.mappings[i].procedural).collect();
    match storage {
        Storage::Stored => {}
        Storage::Procedural => {
            for &i in &eligible {
                g.mappings[i].procedural = true;
            }
            if !eligible.is_empty() {
                notes.push(format!("connectome: procedural: {} mapping(s) drawn again, none of their synapses stored", eligible.len()));
            }
        }
        Storage::Auto => {
            let bounds = mapping_bounds(&g, layout);
            let stored = |g: &Genome| (0..g.mappings.len()).filter(|&i| !g.mappings[i].procedural).map(|i| bounds[i].0).sum::<u64>();
            let need = stored(&g);
            if need > budget.synapses {
                let mut by_size = eligible.clone();
                by_size.sort_by_key(|&i| std::cmp::Reverse(bounds[i].0));
                let mut drawn = Vec::new();
                for i in by_size {
                    if stored(&g) <= budget.synapses {
                        break;
                    }
                    g.mappings[i].procedural = true;
                    drawn.push(name(i));
                }
                let left = stored(&g);
                notes.push(format!(
                    "connectome: auto: the stored brain would hold up to {need} synapses, {} allows {}: {} drawn again when their sources fire \
                     ({left} synapses stored{})",
                    budget.from,
                    budget.synapses,
                    if drawn.is_empty() { "nothing can be".to_string() } else { drawn.join(", ") },
                    if left > budget.synapses { ", still more than fits" } else { "" }
                ));
            }
        }
    }
    (g, notes)
}

/// Whether a GPU can build every synapse of `genome` itself: every mapping is stored, static and
/// in closed form (see [`super::ClosedForm`]). The host then builds it as procedural
/// ([`all_marked`]) and the GPU stores what it would have drawn again.
/// `longest`: the longest row it can build.
pub fn gpu_buildable(genome: &Genome, layout: &Layout, longest: u64) -> bool {
    // rows of one length: closed forms that keep every draw
    let closed = closed_forms(genome, layout).into_iter().map(|c| c.is_some_and(|c| c.keep.is_none()));
    let mut row = vec![0u64; layout.params.len()];
    for (m, (b, _)) in genome.mappings.iter().zip(mapping_bounds(genome, layout)) {
        if let Some(a) = layout.area_index(&m.source) {
            row[a] += b / (layout.params[a].count as u64).max(1);
        }
    }
    !genome.mappings.is_empty()
        && row.iter().all(|&r| r <= longest)
        && genome.mappings.iter().zip(closed).all(|(m, c)| c && !m.procedural && m.plasticity.is_none() && m.synapses.is_none())
}

/// `genome` with every mapping marked procedural.
pub fn all_marked(genome: &Genome) -> Genome {
    let mut g = genome.clone();
    g.mappings.iter_mut().for_each(|m| m.procedural = true);
    g
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::Workload;

    #[test]
    fn auto_stores_what_fits_and_draws_the_rest_again() {
        let mut g = Workload { neurons: 10_000, fanout: 50, rate: 0.01, seed: 1 }.genome();
        // a fanout of 1 kept with attractivity 50 from an area whose psp is not uniform: no closed
        // form (its contribution depends on how many draws each row keeps)
        let mut v = g.areas[0].clone();
        (v.id, v.psp_uniform_distribution) = ("v".into(), false);
        g.areas.push(v);
        let mut second = g.mappings[0].clone();
        g.morphologies
            .insert("one".into(), crate::genome::Morphology::Random(crate::genome::RandomSpec { probability: None, fanout: Some(1) }));
        (second.source, second.morphology, second.attractivity) = ("v".into(), "one".into(), 50.0);
        g.mappings.push(second);
        let layout = Layout::from_genome(&g);
        let plenty = Budget { synapses: 10_000_000, from: "a test".into() };
        let (same, notes) = apply(&g, &layout, Storage::Auto, false, &plenty);
        assert!(same.mappings.iter().all(|m| !m.procedural) && notes.is_empty(), "{notes:?}");
        // the fanout (500,000 synapses) goes; the other (10,000 at most) stays
        let tight = Budget { synapses: 100_000, from: "a test".into() };
        let (g2, notes) = apply(&g, &layout, Storage::Auto, false, &tight);
        assert_eq!(g2.mappings.iter().map(|m| m.procedural).collect::<Vec<_>>(), vec![true, false]);
        assert!(notes[0].contains("mapping 0 (w -> w, random_k)") && notes[0].contains("10000 synapses stored"), "{notes:?}");
        // a GPU draws both again, the second row by row
        let (g3, notes) = apply(&g, &layout, Storage::Procedural, true, &plenty);
        assert_eq!(g3.mappings.iter().map(|m| m.procedural).collect::<Vec<_>>(), vec![true, true]);
        assert_eq!(notes.len(), 1, "{notes:?}");
        // but not when the out-degree it divides by counts a mapping that lists its synapses
        let mut listed = g.mappings[1].clone();
        (listed.morphology, listed.synapses) = ("projector".into(), Some(vec![[0, 0, 1]]));
        g.mappings.push(listed);
        g.mappings[1].procedural = true;
        let (g4, notes) = apply(&g, &layout, Storage::Stored, true, &plenty);
        assert!(!g4.mappings[1].procedural);
        assert!(
            notes[0].contains("mapping 1") && notes[0].contains("stays stored") && notes[0].contains("lists its synapses"),
            "{notes:?}"
        );
    }
}
