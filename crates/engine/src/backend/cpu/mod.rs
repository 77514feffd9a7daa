//! The CPU backend, the reference. The connectome is split into one part per thread by target
//! range; every thread accumulates the last burst's spikes onto its own targets (no atomics), then
//! steps its own neurons, then the fired lists are joined in id order.
//!
//! Synaptic input is accumulated in `i32` when the connectome proves that no neuron's input sum
//! can leave the `i32` range (the sum of the magnitudes of its incoming contributions fits), and in
//! `i64` otherwise; injections are added from a sorted list while stepping. Either way the sums are
//! exact integers, so the result is the same.

//!
//! - `engine`: [`CpuEngine`], one shard's neurons cut into pieces, one per thread: propagation,
//!   step, the fired lists;
//! - `procedural`: the procedural synapses of the last burst's spikes, drawn again;
//! - `learn`: a piece's share of the learning (the learner itself is `backend/learn/`, shared
//!   with the CUDA backend), fused with the propagation.

mod engine;
mod learn;
mod procedural;

pub use engine::CpuEngine;
pub(crate) use procedural::Regen;

use super::shard::Sharded;
use super::Readback;
use crate::brain::Brain;
use crate::connectome::Part;
use crate::partition::ShardPlan;

/// The reference backend: CPU shards (one by default) exchanging fired lists in host memory.
pub type CpuBackend = Sharded<CpuEngine>;

impl Sharded<CpuEngine> {
    /// Take a built brain as one shard; its connectome's parts become the threads' pieces.
    pub fn new(brain: Brain, readback: Readback) -> CpuBackend {
        let n = brain.layout.neurons;
        let c = brain.connectome;
        let engine = CpuEngine::new(c.parts, brain.layout.params, c.contributions, c.plastic, c.procedural, n);
        Sharded::from_engines(vec![engine], n, readback, "cpu")
    }

    /// Take a brain built for `plan` (see [`Brain::build_sharded`]): one CPU shard per range.
    pub fn with_plan(brain: Brain, plan: &ShardPlan, readback: Readback) -> CpuBackend {
        let n = brain.layout.neurons;
        let params = brain.layout.params;
        let c = brain.connectome;
        let engines = parts_by_shard(c.parts, plan)
            .into_iter()
            .map(|mine| CpuEngine::new(mine, params.clone(), c.contributions.clone(), c.plastic.clone(), c.procedural.clone(), n))
            .collect();
        Sharded::from_engines(engines, n, readback, format!("cpu, {}", plan.strategy))
    }
}

impl CpuEngine {
    /// Shard `k` of a brain built for `plan` (see [`Brain::build_sharded`]), alone: the engine of
    /// one process of a brain spread over processes or hosts (the other shards' parts are dropped).
    pub fn for_shard(brain: Brain, plan: &ShardPlan, k: usize) -> CpuEngine {
        let c = brain.connectome;
        let mine = parts_by_shard(c.parts, plan).swap_remove(k);
        CpuEngine::new(mine, brain.layout.params, c.contributions, c.plastic, c.procedural, brain.layout.neurons)
    }
}

/// The connectome's parts (ascending) grouped by the plan's shard ranges.
fn parts_by_shard(parts: Vec<Part>, plan: &ShardPlan) -> Vec<Vec<Part>> {
    let mut parts = parts.into_iter().peekable();
    plan.ranges.iter().map(|r| std::iter::from_fn(|| parts.next_if(|p| p.targets_range.end <= r.end)).collect()).collect()
}
