//! A connectome streamed to the GPU (docs/capacity.md): the host draws the rows a few chunks at a
//! time as it copies them, and never holds them whole. The GPU must then hold the host build's
//! rows, in the same order, with the same codes, and fire (and learn) as the CPU does.

use crate::common;

use neuroburst::backend::cuda::{CudaBackend, MultiGpu};
use neuroburst::backend::{BackendError, Readback};
use neuroburst::brain::Brain;
use neuroburst::genome::Genome;
use neuroburst::partition::Strategy;
use neuroburst::selftest::{parity_with, random_genome, ParityConfig};

/// [`random_genome`] without learning: every morphology kind, no plastic or associative mapping.
fn static_genome(seed: u64, max_neurons: u32) -> Genome {
    let mut g = random_genome(seed, max_neurons);
    g.mappings.retain(|m| m.morphology != "associative_memory");
    for m in &mut g.mappings {
        (m.plasticity, m.synapses) = (None, None);
    }
    g
}

#[test]
fn a_streamed_brain_holds_the_host_builds_rows_and_fires_and_learns_as_the_cpu() {
    if !common::gpus(1) {
        return;
    }
    let rover = Genome::load(std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/genomes/rover.yaml"))).unwrap();
    let mut genomes: Vec<Genome> = (0..12).map(|seed| static_genome(seed, 6000)).collect();
    // brains that learn: plastic codes hold the initial weights, associative pairs are stored
    genomes.extend((20..28).map(|seed| random_genome(seed, 6000)));
    genomes.push(rover);
    let mut synapses = 0;
    for g in &genomes {
        let host = Brain::build(g, 1, false);
        let (brain, streamed) = Brain::planned(g, false);
        assert!(brain.connectome.parts[0].targets.is_empty(), "{}: the host holds no synapse", g.name);
        let gpu = CudaBackend::streamed(brain, streamed, Readback::All, 0).unwrap();
        synapses += common::assert_rows(gpu.stored_rows().unwrap(), &host.connectome.parts[0], &g.name);
    }
    println!("{} brains streamed to the GPU, {synapses} synapses compared", genomes.len());
    let cand = |g: &Genome, _: Brain, r: Readback| {
        let (brain, streamed) = Brain::planned(g, false);
        Ok(Box::new(CudaBackend::streamed(brain, streamed, r, 0)?) as Box<dyn neuroburst::backend::Backend>)
    };
    let cfg = ParityConfig { brains: 8, bursts: 300, seed: 700, max_neurons: 5000, candidate_parts: 1 };
    println!("{}", parity_with(&cfg, &static_genome, &cand).unwrap());
    // half of these learn: learned weights and grown pairs compared at snapshots, then restored
    let report = parity_with(&ParityConfig { brains: 8, seed: 720, ..cfg }, &random_genome, &cand).unwrap();
    println!("{report}");
}

/// Planned for shards, the stream draws each shard's part as the sharded build holds it: the same
/// plan, row pointers, targets and codes, for both strategies (on the CPU, in CI).
#[test]
fn a_brain_streamed_to_shards_is_the_sharded_build() {
    let mut parts = 0;
    for seed in 0..8 {
        // (odd seeds learn)
        let g = if seed % 2 == 0 { static_genome(seed, 5000) } else { random_genome(seed, 5000) };
        for strategy in [Strategy::RoundRobin, Strategy::ByCorticalArea] {
            let shards = 1 + seed as usize % 3;
            let Ok((built, plan)) = Brain::build_sharded(&g, shards, strategy, 1, false) else { continue };
            let (brain, planned, streamed) = Brain::planned_sharded(&g, shards, strategy, false).unwrap();
            assert_eq!(planned.ranges, plan.ranges, "{}: {strategy:?}", g.name);
            assert_eq!(brain.connectome.contributions, built.connectome.contributions);
            assert_eq!(brain.connectome.plastic, built.connectome.plastic);
            for (k, (p, b)) in brain.connectome.parts.iter().zip(&built.connectome.parts).enumerate() {
                assert_eq!(p.row_ptr, b.row_ptr, "{}: {strategy:?} part {k}", g.name);
                let (mut targets, mut codes) = (Vec::new(), Vec::new());
                streamed
                    .fill::<()>(k, &p.row_ptr, |at, t, c| {
                        assert_eq!(at as usize, targets.len());
                        targets.extend_from_slice(t);
                        codes.extend(
                            c.chunks(if streamed.wide { 4 } else { 2 })
                                .map(|x| x.iter().rev().fold(0u32, |acc, &byte| acc << 8 | byte as u32)),
                        );
                        Ok(())
                    })
                    .unwrap();
                assert_eq!(targets, b.targets, "{}: {strategy:?} part {k}", g.name);
                assert_eq!(codes, (0..b.codes.len()).map(|i| b.codes.get(i)).collect::<Vec<_>>());
                parts += 1;
            }
        }
    }
    assert!(parts >= 16, "{parts} parts compared");
}

/// On a GPU: two shards of a streamed brain (both on GPU 0) fire and learn as the CPU does.
#[test]
fn a_brain_streamed_to_gpu_shards_fires_as_the_cpu() {
    if !common::gpus(1) {
        return;
    }
    for strategy in [Strategy::RoundRobin, Strategy::ByCorticalArea] {
        let cand = move |g: &Genome, _: Brain, r: Readback| {
            let (brain, plan, streamed) = Brain::planned_sharded(g, 2, strategy, false).map_err(|e| BackendError::Device(e.to_string()))?;
            Ok(Box::new(MultiGpu::streamed(brain, &plan, streamed, r, &[0, 0])?) as Box<dyn neuroburst::backend::Backend>)
        };
        let cfg = ParityConfig { brains: 4, bursts: 200, seed: 800, max_neurons: 5000, candidate_parts: 1 };
        println!("{strategy:?}: {}", parity_with(&cfg, &random_genome, &cand).unwrap());
    }
}
