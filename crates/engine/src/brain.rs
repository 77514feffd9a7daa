//! A brain ready to run: the compiled layout and the connectome of a genome.

use crate::connectome::{self, BuildOptions, Connectome};
use crate::genome::Genome;
use crate::model::Layout;
use crate::partition::{incoming_per_area, PlanError, ShardPlan, Strategy};

/// A genome's layout and connectome, ready to run.
pub struct Brain {
    /// The genome's name.
    pub name: String,
    /// Bursts a second the genome asks for.
    pub burst_rate_hz: f64,
    /// The areas and their neurons' parameters.
    pub layout: Layout,
    /// The synapses.
    pub connectome: Connectome,
}

impl Brain {
    /// `genome`'s brain of this layout and connectome.
    fn of(genome: &Genome, layout: Layout, connectome: Connectome) -> Brain {
        Brain { name: genome.name.clone(), burst_rate_hz: genome.burst_rate_hz, layout, connectome }
    }

    /// Build a validated genome's connectome split into `parts` target ranges of equal size.
    pub fn build(genome: &Genome, parts: usize, progress: bool) -> Brain {
        let layout = Layout::from_genome(genome);
        let ranges = connectome::even_ranges(layout.neurons, parts);
        let connectome = connectome::build(genome, &layout, &opts(genome, ranges, progress));
        Brain::of(genome, layout, connectome)
    }

    /// A brain whose synapses are all built where they live (on its GPUs, from closed forms): the
    /// layout and the connectome's rules and counts, no part and no row on the host.
    pub fn without_rows(genome: &Genome, progress: bool) -> Brain {
        let layout = Layout::from_genome(genome);
        let connectome = connectome::build(genome, &layout, &opts(genome, Vec::new(), progress));
        Brain::of(genome, layout, connectome)
    }

    /// The first pass of a streamed build ([`connectome::stream::plan`]) in one part: the brain's
    /// connectome holds the row pointers, the synapses are drawn when copied where they live.
    pub fn planned(genome: &Genome, progress: bool) -> (Brain, connectome::stream::Streamed) {
        let layout = Layout::from_genome(genome);
        let ranges = connectome::even_ranges(layout.neurons, 1);
        let (connectome, streamed) = connectome::stream::plan(genome, &layout, &opts(genome, ranges, progress));
        (Brain::of(genome, layout, connectome), streamed)
    }

    /// [`Brain::planned`] for `shards` shards planned by `strategy`, one part per shard (as
    /// [`Brain::build_sharded`] cuts them). `by_cortical_area` plans from the synapse counts, so it
    /// counts twice.
    pub fn planned_sharded(
        genome: &Genome,
        shards: usize,
        strategy: Strategy,
        progress: bool,
    ) -> Result<(Brain, ShardPlan, connectome::stream::Streamed), PlanError> {
        let layout = Layout::from_genome(genome);
        let plan0 = ShardPlan::new(&layout, &[], shards, strategy)?;
        let first = match strategy {
            Strategy::RoundRobin => plan0.ranges.clone(),
            Strategy::ByCorticalArea => connectome::even_ranges(layout.neurons, 1),
        };
        let (mut c, mut streamed) = connectome::stream::plan(genome, &layout, &opts(genome, first, progress));
        let plan = ShardPlan::new(&layout, &incoming_per_area(&layout, &c.mappings), shards, strategy)?;
        if c.parts.iter().map(|p| p.targets_range.clone()).ne(plan.ranges.iter().cloned()) {
            (c, streamed) = connectome::stream::plan(genome, &layout, &opts(genome, plan.ranges.clone(), progress));
        }
        let brain = Brain::of(genome, layout, c);
        Ok((brain, plan, streamed))
    }

    /// Build for `shards` shards planned by `strategy`: the connectome's parts are each shard's
    /// range cut into `parts_per_shard` equal pieces (shard `k` owns parts
    /// `k * parts_per_shard..(k + 1) * parts_per_shard`). `by_cortical_area` balances synapses
    /// too, so it plans from a first build's statistics and then re-cuts the parts.
    pub fn build_sharded(
        genome: &Genome,
        shards: usize,
        strategy: Strategy,
        parts_per_shard: usize,
        progress: bool,
    ) -> Result<(Brain, ShardPlan), PlanError> {
        let layout = Layout::from_genome(genome);
        let (connectome, plan) = match strategy {
            Strategy::RoundRobin => {
                let plan0 = ShardPlan::new(&layout, &[], shards, strategy)?;
                let c = connectome::build(genome, &layout, &opts(genome, pieces(&plan0.ranges, parts_per_shard), progress));
                let plan = ShardPlan::new(&layout, &incoming_per_area(&layout, &c.mappings), shards, strategy)?;
                (c, plan)
            }
            Strategy::ByCorticalArea => {
                // a plan needs the areas' synapse counts: check the area count first, then build
                ShardPlan::new(&layout, &[], shards, strategy)?;
                let ranges = connectome::even_ranges(layout.neurons, rayon::current_num_threads());
                let mut c = connectome::build(genome, &layout, &opts(genome, ranges, progress));
                let plan = ShardPlan::new(&layout, &incoming_per_area(&layout, &c.mappings), shards, strategy)?;
                c.repartition(&pieces(&plan.ranges, parts_per_shard));
                (c, plan)
            }
        };
        let brain = Brain::of(genome, layout, connectome);
        Ok((brain, plan))
    }

    /// Shard `k` of [`Brain::build_sharded`]'s brain, alone (a shard process): the same plan, the
    /// same parts of shard `k`, and no others. Every synapse is still drawn (a contribution
    /// depends on its source's out-degree) but only those onto shard `k`'s neurons are kept, so
    /// the memory is the shard's and the time the whole brain's (`by_cortical_area`, which plans
    /// from the synapse counts, draws twice: once to count, once to keep).
    pub fn build_shard(
        genome: &Genome,
        shards: usize,
        strategy: Strategy,
        parts_per_shard: usize,
        k: usize,
        progress: bool,
    ) -> Result<(Brain, ShardPlan), PlanError> {
        let layout = Layout::from_genome(genome);
        let plan0 = ShardPlan::new(&layout, &[], shards, strategy)?;
        let ranges = match strategy {
            Strategy::RoundRobin => plan0.ranges,
            Strategy::ByCorticalArea => {
                let counted = connectome::build(genome, &layout, &opts(genome, vec![], progress));
                ShardPlan::new(&layout, &incoming_per_area(&layout, &counted.mappings), shards, strategy)?.ranges
            }
        };
        assert!(k < ranges.len(), "shard {k} of {} (callers check the index)", ranges.len());
        let c = connectome::build(genome, &layout, &opts(genome, pieces(&ranges[k..=k], parts_per_shard), progress));
        let plan = ShardPlan::new(&layout, &incoming_per_area(&layout, &c.mappings), shards, strategy)?;
        debug_assert_eq!(plan.ranges, ranges);
        let brain = Brain::of(genome, layout, c);
        Ok((brain, plan))
    }
}

/// Build options for these parts, the genome's procedural mappings drawn again instead of stored.
fn opts(genome: &Genome, parts: Vec<std::ops::Range<u32>>, progress: bool) -> BuildOptions {
    BuildOptions { parts, progress, procedural: connectome::procedural_mask(genome) }
}

/// `ranges`, each cut into `per` (nearly) equal pieces, ascending.
fn pieces(ranges: &[std::ops::Range<u32>], per: usize) -> Vec<std::ops::Range<u32>> {
    ranges
        .iter()
        .flat_map(|r| connectome::even_ranges(r.len() as u32, per).into_iter().map(move |p| p.start + r.start..p.end + r.start))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::Workload;

    /// Shard k's build alone holds exactly shard k's parts of the whole build.
    fn check(genome: &Genome, shards: usize, strategy: Strategy, per: usize) {
        let (whole, plan) = Brain::build_sharded(genome, shards, strategy, per, false).unwrap();
        for k in 0..shards {
            let (mine, plan_k) = Brain::build_shard(genome, shards, strategy, per, k, false).unwrap();
            assert_eq!(plan_k, plan);
            let c = &mine.connectome;
            assert_eq!(c.parts.len(), per);
            assert_eq!(c.contributions, whole.connectome.contributions);
            assert_eq!(c.mappings, whole.connectome.mappings, "statistics are the whole brain's");
            for (p, q) in c.parts.iter().zip(&whole.connectome.parts[k * per..(k + 1) * per]) {
                assert_eq!((&p.targets_range, &p.row_ptr, &p.targets, &p.codes), (&q.targets_range, &q.row_ptr, &q.targets, &q.codes));
            }
        }
    }

    #[test]
    fn a_shard_builds_only_its_own_part() {
        let w = Workload { neurons: 5000, fanout: 20, rate: 0.01, seed: 4 };
        check(&w.genome(), 3, Strategy::RoundRobin, 2);
        let rover = Genome::load(std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/genomes/rover.yaml"))).unwrap();
        check(&rover, 2, Strategy::ByCorticalArea, 1);
        check(&rover, 3, Strategy::RoundRobin, 3);
    }
}
