//! A brain ready to run: the compiled layout and the connectome of a genome.

use crate::connectome::{self, BuildOptions, Connectome};
use crate::genome::Genome;
use crate::model::Layout;
use crate::shard::{incoming_per_area, PlanError, ShardPlan, Strategy};

pub struct Brain {
    pub name: String,
    pub burst_rate_hz: f64,
    pub layout: Layout,
    pub connectome: Connectome,
}

impl Brain {
    /// Build a validated genome's connectome split into `parts` target ranges of equal size.
    pub fn build(genome: &Genome, parts: usize, progress: bool) -> Brain {
        let layout = Layout::from_genome(genome);
        let ranges = connectome::even_ranges(layout.neurons, parts);
        let connectome = connectome::build(genome, &layout, &BuildOptions { parts: ranges, progress });
        Brain { name: genome.name.clone(), burst_rate_hz: genome.burst_rate_hz, layout, connectome }
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
        let pieces = |plan: &ShardPlan| -> Vec<std::ops::Range<u32>> {
            plan.ranges
                .iter()
                .flat_map(|r| {
                    connectome::even_ranges(r.len() as u32, parts_per_shard).into_iter().map(move |p| p.start + r.start..p.end + r.start)
                })
                .collect()
        };
        let (connectome, plan) = match strategy {
            Strategy::RoundRobin => {
                let plan0 = ShardPlan::new(&layout, &[], shards, strategy)?;
                let c = connectome::build(genome, &layout, &BuildOptions { parts: pieces(&plan0), progress });
                let plan = ShardPlan::new(&layout, &incoming_per_area(&layout, &c.mappings), shards, strategy)?;
                (c, plan)
            }
            Strategy::ByCorticalArea => {
                // a plan needs the areas' synapse counts: check the area count first, then build
                ShardPlan::new(&layout, &[], shards, strategy)?;
                let ranges = connectome::even_ranges(layout.neurons, rayon::current_num_threads());
                let mut c = connectome::build(genome, &layout, &BuildOptions { parts: ranges, progress });
                let plan = ShardPlan::new(&layout, &incoming_per_area(&layout, &c.mappings), shards, strategy)?;
                c.repartition(&pieces(&plan));
                (c, plan)
            }
        };
        let brain = Brain { name: genome.name.clone(), burst_rate_hz: genome.burst_rate_hz, layout, connectome };
        Ok((brain, plan))
    }
}
