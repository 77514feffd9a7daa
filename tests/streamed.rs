//! A connectome streamed to the GPU (docs/capacity.md): the host draws the rows a few chunks at a
//! time as it copies them, and never holds them whole. The GPU must then hold the host build's
//! rows, in the same order, with the same codes, and fire as the CPU does.

use neuroburst::backend::cuda::CudaBackend;
use neuroburst::backend::Readback;
use neuroburst::brain::Brain;
use neuroburst::genome::Genome;
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

fn gpu_or_skip() -> bool {
    if let neuroburst::backend::GpuProbe::Unavailable(why) = neuroburst::backend::open::probe(0) {
        println!("skipped: no GPU ({why})");
        return false;
    }
    true
}

#[test]
fn a_streamed_brain_holds_the_host_builds_rows_and_fires_as_the_cpu() {
    if !gpu_or_skip() {
        return;
    }
    let rover = Genome::load(std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/genomes/rover.yaml"))).unwrap();
    let mut genomes: Vec<Genome> = (0..12).map(|seed| static_genome(seed, 6000)).collect();
    genomes.push(rover);
    let mut synapses = 0;
    for g in &genomes {
        let host = Brain::build(g, 1, false);
        let (brain, streamed) = Brain::planned(g, false).expect("a brain that does not learn is streamed");
        assert!(brain.connectome.parts[0].targets.is_empty(), "{}: the host holds no synapse", g.name);
        let gpu = CudaBackend::streamed(brain, streamed, Readback::All, 0).unwrap();
        let (row_ptr, targets, codes) = gpu.stored_rows().unwrap();
        let p = &host.connectome.parts[0];
        assert_eq!(row_ptr, p.row_ptr, "{}: row pointers", g.name);
        assert_eq!(targets, p.targets, "{}: targets", g.name);
        assert_eq!(codes, (0..p.codes.len()).map(|i| p.codes.get(i)).collect::<Vec<_>>(), "{}: codes", g.name);
        synapses += targets.len();
    }
    println!("{} brains streamed to the GPU, {synapses} synapses compared", genomes.len());
    let cand = |g: &Genome, _: Brain, r: Readback| {
        let (brain, streamed) = Brain::planned(g, false).expect("no learning");
        Ok(Box::new(CudaBackend::streamed(brain, streamed, r, 0)?) as Box<dyn neuroburst::backend::Backend>)
    };
    let cfg = ParityConfig { brains: 8, bursts: 300, seed: 700, max_neurons: 5000, candidate_parts: 1 };
    println!("{}", parity_with(&cfg, &static_genome, &cand).unwrap());
}
