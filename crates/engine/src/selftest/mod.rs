//! The parity check: random brains of several shapes, run on the CPU reference and on a candidate
//! backend (CUDA, or the CPU with another shard count) with the same injections; every burst's
//! fired set (ids and potentials at fire) and the state at mid-run and at the end must match bit
//! for bit. `neuroburst selftest` and `tests/*parity*.rs` run it.

use std::fmt;

use crate::backend::cpu::CpuBackend;
use crate::backend::{Backend, BackendError, Readback};
use crate::brain::Brain;
use crate::genome::Genome;
mod random;

use crate::model::plasticity::Learned;
use crate::model::{Injections, Layout, NeuronState};
use random::SHAPES;
pub use random::{random_fanout_genome, random_genome, random_injections, Rng};

/// What to run.
#[derive(Clone, Debug)]
pub struct ParityConfig {
    /// Number of random brains.
    pub brains: usize,
    /// Bursts per brain.
    pub bursts: u64,
    /// Seed of the first brain (brain i uses `seed + i`).
    pub seed: u64,
    /// Upper bound of a brain's neuron count.
    pub max_neurons: u32,
    /// Target parts of the brain handed to the candidate (the reference always gets 1).
    pub candidate_parts: usize,
}

impl Default for ParityConfig {
    fn default() -> Self {
        ParityConfig { brains: 20, bursts: 2000, seed: 1, max_neurons: 4000, candidate_parts: 1 }
    }
}

/// One brain's run.
#[derive(Clone, Debug, serde::Serialize)]
pub struct BrainReport {
    /// The brain's seed.
    pub seed: u64,
    /// Its shape (chain, layers, random, ...).
    pub shape: &'static str,
    /// Its areas.
    pub areas: usize,
    /// Its neurons.
    pub neurons: u32,
    /// Its synapses.
    pub synapses: u64,
    /// Bursts run and compared.
    pub bursts: u64,
    /// Fired neurons over all bursts (whole brain).
    pub fired: u64,
    /// Fired neurons compared (those read back).
    pub compared: u64,
    /// Weights of plastic synapses compared (every burst of a brain that learns).
    pub weights: u64,
    /// Times learning was switched on or off (at random bursts of a brain that learns).
    pub switches: u64,
    /// What was read back (all, or the motor ranges).
    pub readback: &'static str,
    /// Where the candidate ran it (its backend's device and path).
    pub on: String,
}

/// The whole check.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ParityReport {
    /// The backend checked against the CPU.
    pub candidate: String,
    /// Each brain's run.
    pub brains: Vec<BrainReport>,
}

impl ParityReport {
    /// Bursts over all brains.
    pub fn bursts(&self) -> u64 {
        self.brains.iter().map(|b| b.bursts).sum()
    }
    /// Fired neurons over all brains.
    pub fn fired(&self) -> u64 {
        self.brains.iter().map(|b| b.fired).sum()
    }
}

impl fmt::Display for ParityReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let neurons: u64 = self.brains.iter().map(|b| b.neurons as u64).sum();
        let synapses: u64 = self.brains.iter().map(|b| b.synapses).sum();
        write!(
            f,
            "parity OK ({}): {} brains x {} bursts ({} bursts, {} neurons, {} synapses, {} spikes compared, {} fired in all, {} \
             learn: {} weights compared, learning switched {} times)",
            self.candidate,
            self.brains.len(),
            self.brains.first().map_or(0, |b| b.bursts),
            self.bursts(),
            neurons,
            synapses,
            self.brains.iter().map(|b| b.compared).sum::<u64>(),
            self.fired(),
            self.brains.iter().filter(|b| b.weights > 0).count(),
            self.brains.iter().map(|b| b.weights).sum::<u64>(),
            self.brains.iter().map(|b| b.switches).sum::<u64>()
        )
    }
}

fn clone_brain(b: &Brain) -> Brain {
    Brain { name: b.name.clone(), burst_rate_hz: b.burst_rate_hz, layout: b.layout.clone(), connectome: b.connectome.clone() }
}

fn where_is(layout: &Layout, n: u32) -> String {
    if n >= layout.neurons {
        return format!("neuron {n} (outside the brain)");
    }
    let c = layout.coord(n);
    format!("neuron {n} (area '{}', [x, y, z, k] = {:?})", layout.meta[c.area].id, c.xyzk)
}

/// Where two sequences first differ (a length difference counts), if they do.
fn first_difference<T: PartialEq>(a: &[T], b: &[T]) -> Option<usize> {
    (0..a.len().max(b.len())).find(|&i| a.get(i) != b.get(i))
}

/// The first difference between two learned states, in words.
fn compare_learned(seed: u64, when: &str, a: &Learned, b: &Learned) -> Result<(), String> {
    let at = format!("brain seed {seed}, {when}");
    if a.ahead != b.ahead {
        return Err(format!("{at}: the last burst's learning is in on the CPU: {}, on the candidate: {}", a.ahead, b.ahead));
    }
    if let Some(i) = first_difference(&a.history, &b.history) {
        return Err(format!("{at}: firing history of neuron {i}: CPU {:?} vs candidate {:?}", a.history.get(i), b.history.get(i)));
    }
    if let Some(i) = first_difference(&a.synapses, &b.synapses) {
        return Err(format!(
            "{at}: plastic synapse #{i}: CPU {:?} vs candidate {:?} ({} vs {} synapses)",
            a.synapses.get(i),
            b.synapses.get(i),
            a.synapses.len(),
            b.synapses.len()
        ));
    }
    if a.grown != b.grown {
        return Err(format!("{at}: grown pairs differ: CPU {} vs candidate {}", a.grown.len(), b.grown.len()));
    }
    Ok(())
}

fn compare_states(seed: u64, when: &str, layout: &Layout, a: &NeuronState, b: &NeuronState) -> Result<(), String> {
    if a.burst != b.burst {
        return Err(format!("brain seed {seed}, {when}: burst number CPU {} vs candidate {}", a.burst, b.burst));
    }
    if let Some(i) = first_difference(&a.potential, &b.potential) {
        return Err(format!(
            "brain seed {seed}, {when}: potential of {}: CPU {:?} vs candidate {:?}",
            where_is(layout, i as u32),
            a.potential.get(i),
            b.potential.get(i)
        ));
    }
    for (what, x, y) in [("refractory", &a.refractory, &b.refractory), ("consecutive", &a.consecutive, &b.consecutive)] {
        if let Some(i) = first_difference(x, y) {
            return Err(format!(
                "brain seed {seed}, {when}: {what} count of {}: CPU {:?} vs candidate {:?}",
                where_is(layout, i as u32),
                x.get(i),
                y.get(i)
            ));
        }
    }
    compare_learned(seed, when, &a.learned, &b.learned)?;
    if let Some(i) = first_difference(&a.fired, &b.fired) {
        return Err(format!(
            "brain seed {seed}, {when}: fired list differs at position {i}: CPU {:?} vs candidate {:?} ({} vs {} neurons)",
            a.fired.get(i),
            b.fired.get(i),
            a.fired.len(),
            b.fired.len()
        ));
    }
    Ok(())
}

/// The candidate constructor: takes the genome, its brain (built with `candidate_parts` parts; a
/// sharded candidate builds its own from the genome) and the readback.
pub type Candidate<'a> = dyn Fn(&Genome, Brain, Readback) -> Result<Box<dyn Backend>, BackendError> + 'a;

/// Run the parity check. Returns the first difference, precisely, as the error.
pub fn parity(cfg: &ParityConfig, candidate: &Candidate<'_>) -> Result<ParityReport, String> {
    parity_with(cfg, &random_genome, candidate)
}

/// [`parity`] on the brains `genomes(seed, max_neurons)` makes.
pub fn parity_with(cfg: &ParityConfig, genomes: &dyn Fn(u64, u32) -> Genome, candidate: &Candidate<'_>) -> Result<ParityReport, String> {
    let mut report = ParityReport { candidate: String::new(), brains: Vec::new() };
    let mut inj = Injections::new();
    for i in 0..cfg.brains {
        let seed = cfg.seed.wrapping_add(i as u64);
        let genome = genomes(seed, cfg.max_neurons);
        genome.validate().map_err(|e| format!("brain seed {seed}: the random genome is invalid: {e}"))?;
        let brain = Brain::build(&genome, 1, false);
        let layout = brain.layout.clone();
        let readback = if i % 2 == 0 {
            Readback::All
        } else {
            let mut r = layout.motor_ranges();
            r.push(layout.neurons / 3..layout.neurons / 2);
            Readback::Ranges(r)
        };
        let cand_brain = if cfg.candidate_parts <= 1 { clone_brain(&brain) } else { Brain::build(&genome, cfg.candidate_parts, false) };
        let synapses = brain.connectome.synapses();
        let learns = brain.connectome.plastic.is_some();
        let mut reference = CpuBackend::new(brain, readback.clone());
        let mut cand = candidate(&genome, cand_brain, readback.clone())
            .map_err(|e| format!("brain seed {seed}: the candidate backend failed to start: {e}"))?;
        cand.prepare_input(&mut inj);
        if report.candidate.is_empty() {
            let info = cand.info();
            report.candidate = format!("{} on {}", info.backend, info.device);
        }
        let mut rng = Rng::new(seed ^ 0xA5A5_A5A5);
        // learning switched off and on at random bursts (its own draws: the input stays the same)
        let (mut switch_rng, mut learning) = (Rng::new(seed ^ 0x05EE_D0FF), true);
        let mut br = BrainReport {
            seed,
            shape: SHAPES[(seed % 4) as usize],
            areas: layout.params.len(),
            neurons: layout.neurons,
            synapses,
            bursts: cfg.bursts,
            fired: 0,
            compared: 0,
            weights: 0,
            switches: 0,
            readback: if i % 2 == 0 { "all" } else { "ranges" },
            on: cand.info().device,
        };
        for b in 1..=cfg.bursts {
            random_injections(&mut rng, &layout, &mut inj);
            let r = reference.burst(inj.as_slice()).map_err(|e| format!("brain seed {seed}, burst {b}: the CPU reference failed: {e}"))?;
            let c = cand.burst(inj.as_slice()).map_err(|e| format!("brain seed {seed}, burst {b}: the candidate failed: {e}"))?;
            if r.burst != c.burst {
                return Err(format!("brain seed {seed}, burst {b}: burst number CPU {} vs candidate {}", r.burst, c.burst));
            }
            if r.fired != c.fired || r.potentials != c.potentials {
                let n = r.fired.len().max(c.fired.len());
                let j = (0..n).find(|&j| r.fired.get(j) != c.fired.get(j) || r.potentials.get(j) != c.potentials.get(j)).unwrap_or(0);
                let (rf, cf) = (r.fired.get(j).copied(), c.fired.get(j).copied());
                let neuron = match (rf, cf) {
                    (Some(x), Some(y)) => x.min(y),
                    (Some(x), None) | (None, Some(x)) => x,
                    (None, None) => 0,
                };
                let side = |f: &[u32], v: &[i64]| match f.binary_search(&neuron) {
                    Ok(k) => format!("fired with V = {} LSB", v[k]),
                    Err(_) => "did not fire".to_string(),
                };
                return Err(format!(
                    "brain seed {seed}, burst {b}: {}: CPU {}, candidate {} ({} vs {} read-back neurons fired)",
                    where_is(&layout, neuron),
                    side(r.fired, r.potentials),
                    side(c.fired, c.potentials),
                    r.fired.len(),
                    c.fired.len()
                ));
            }
            if r.fired_total != c.fired_total {
                return Err(format!(
                    "brain seed {seed}, burst {b}: the whole brain fired {} neurons on the CPU, {} on the candidate",
                    r.fired_total, c.fired_total
                ));
            }
            br.fired += r.fired_total;
            br.compared += r.fired.len() as u64;
            if learns && switch_rng.chance(0.08) {
                // right after the burst: the GPU's learning from it may be under way
                learning = !learning;
                reference.set_learning(learning).map_err(|e| e.to_string())?;
                cand.set_learning(learning).map_err(|e| format!("brain seed {seed}, burst {b}: candidate learning switch: {e}"))?;
                br.switches += 1;
            }
            if learns && b != cfg.bursts / 2 {
                // a brain that learns: every weight, every burst
                let a = reference.snapshot().map_err(|e| e.to_string())?;
                let s = cand.snapshot().map_err(|e| format!("brain seed {seed}: candidate snapshot: {e}"))?;
                compare_learned(seed, &format!("after burst {b}"), &a.learned, &s.learned)?;
                br.weights += a.learned.synapses.len() as u64;
            }
            if b == cfg.bursts / 2 {
                let a = reference.snapshot().map_err(|e| e.to_string())?;
                let s = cand.snapshot().map_err(|e| format!("brain seed {seed}: candidate snapshot: {e}"))?;
                compare_states(seed, &format!("snapshot after burst {b}"), &layout, &a, &s)?;
                // hand the reference's state to the candidate: restore must give the same future
                cand.restore(&a).map_err(|e| format!("brain seed {seed}: candidate restore: {e}"))?;
            }
        }
        let a = reference.snapshot().map_err(|e| e.to_string())?;
        let s = cand.snapshot().map_err(|e| format!("brain seed {seed}: candidate snapshot: {e}"))?;
        compare_states(seed, "final state", &layout, &a, &s)?;
        tracing::info!(seed, shape = br.shape, neurons = br.neurons, synapses = br.synapses, fired = br.fired, "parity brain OK");
        report.brains.push(br);
    }
    Ok(report)
}

/// The CPU backend as a candidate (for checks across thread-part counts).
pub fn cpu_candidate(_: &Genome, brain: Brain, readback: Readback) -> Result<Box<dyn Backend>, BackendError> {
    Ok(Box::new(CpuBackend::new(brain, readback)))
}

/// The CUDA backend on `device` as a candidate: of every five brains, the first runs on the
/// device's own path (the resident kernel, where the device has cooperative launch), the second as
/// graphs (the path of a device without it, of `backend.cuda_launch: graphs`, and of several
/// GPUs), the third in the resident kernel with its propagation tiled as a large brain's is, in
/// fine tiles of 64 neurons (coarse ones of 256), with rooms of 256 entries a block and arrays of
/// 128 a fine tile, so that busy bursts spill at both levels (where the brain can be tiled: 32-bit
/// accumulators, no procedural synapse), the fourth in the resident kernel of four blocks an SM
/// (that of a large brain that learns), the fifth as graphs tiled as the third.
pub fn cuda_candidate(device: usize) -> impl Fn(&Genome, Brain, Readback) -> Result<Box<dyn Backend>, BackendError> {
    use crate::backend::cuda::CudaBackend;
    let built = std::sync::atomic::AtomicUsize::new(0);
    move |_, brain, readback| {
        // rooms and arrays that a busy burst overflows: both levels spill, a quiet one does not
        const SHAPE: (u32, u64, u64) = (6, 256, 128);
        let b = match built.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % 5 {
            0 => CudaBackend::new(brain, readback, device)?,
            1 => CudaBackend::new_graphs(brain, readback, device)?,
            2 => CudaBackend::new_tiled(brain, readback, device, SHAPE, false)?,
            3 => CudaBackend::new_four_blocks(brain, readback, device)?,
            _ => CudaBackend::new_tiled(brain, readback, device, SHAPE, true)?,
        };
        Ok(Box::new(b) as Box<dyn Backend>)
    }
}

/// The wgpu backend on the machine's device as a candidate.
pub fn wgpu_candidate(_: &Genome, brain: Brain, readback: Readback) -> Result<Box<dyn Backend>, BackendError> {
    Ok(Box::new(crate::backend::wgpu::WgpuBackend::open(brain, readback)?))
}

/// `genome` with every mapping marked procedural (those that must stay stored, stay).
pub use crate::connectome::storage::all_marked as all_procedural;

/// `inner` run on the brain with every mapping procedural that can be (`gpu`: those a GPU draws
/// again), built with as many parts as the brain it is handed: the same fired sets as
/// the stored brain, bit for bit.
pub fn procedural_candidate<'a>(
    inner: &'a Candidate<'a>,
    gpu: bool,
) -> impl Fn(&Genome, Brain, Readback) -> Result<Box<dyn Backend>, BackendError> + 'a {
    use crate::connectome::storage::{apply, Budget, Storage};
    move |genome, brain, readback| {
        let budget = Budget { synapses: u64::MAX, from: "no limit".into() };
        let (g, _) = apply(genome, &brain.layout, Storage::Procedural, gpu, &budget);
        let b = Brain::build(&g, brain.connectome.parts.len(), false);
        inner(&g, b, readback)
    }
}

/// A sharded candidate: `shards` CPU shards in this process (`devices` empty), or one GPU per
/// device of `devices`; planned by `strategy`. A brain with fewer areas than shards (by_cortical_area)
/// gets as many shards as it has areas.
pub fn sharded_candidate(
    shards: usize,
    strategy: crate::partition::Strategy,
    devices: Vec<usize>,
) -> impl Fn(&Genome, Brain, Readback) -> Result<Box<dyn Backend>, BackendError> {
    move |genome, _, readback| {
        let layout = Layout::from_genome(genome);
        let areas = layout.params.iter().filter(|p| p.count > 0).count();
        let k = match strategy {
            crate::partition::Strategy::ByCorticalArea => shards.min(areas),
            crate::partition::Strategy::RoundRobin => shards.min(layout.neurons as usize),
        }
        .max(1);
        let per = if devices.is_empty() { 2 } else { 1 };
        let (brain, plan) = Brain::build_sharded(genome, k, strategy, per, false).map_err(|e| BackendError::Device(e.to_string()))?;
        if devices.is_empty() {
            Ok(Box::new(CpuBackend::with_plan(brain, &plan, readback)) as Box<dyn Backend>)
        } else {
            Ok(Box::new(crate::backend::cuda::MultiGpu::new(brain, &plan, readback, &devices[..k])?) as Box<dyn Backend>)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_genomes_are_valid_and_bounded() {
        for seed in 0..24 {
            let g = random_genome(seed, 3000);
            g.validate().unwrap_or_else(|e| panic!("seed {seed}: {e}"));
            let n: u64 = g.areas.iter().map(|a| a.neurons()).sum();
            assert!(n <= 3000, "seed {seed}: {n} neurons");
        }
        assert_eq!(random_genome(7, 1000), random_genome(7, 1000));
    }

    /// The first brains `selftest` draws must hold one that learns without growth and whose plastic
    /// weights stay up (a rule that never depresses): in it, a fired row that learning's pass
    /// propagated twice or not at all (kernels/learn.cu) changes the firing.
    #[test]
    fn the_first_brains_hold_one_that_learns_without_growth_and_keeps_its_weights() {
        let holds = |seed| {
            let g = random_genome(seed, 4000);
            let grows = g.mappings.iter().any(|m| m.morphology == "associative_memory");
            let keeps = g.mappings.iter().filter_map(|m| m.plasticity.as_ref()).any(|p| p.ltd_multiplier == 0.0 || p.constant == 0.0);
            !grows && keeps
        };
        let seeds: Vec<u64> = (1..=16).filter(|&s| holds(s)).collect();
        assert!(!seeds.is_empty(), "none of selftest's first 16 brains learns without growth and keeps its weights");
        println!("brains that learn without growth and keep their weights: seeds {seeds:?}");
    }

    #[test]
    fn cpu_one_part_vs_three_parts() {
        let cfg = ParityConfig { brains: 4, bursts: 200, seed: 100, max_neurons: 1500, candidate_parts: 3 };
        let report = parity(&cfg, &cpu_candidate).unwrap();
        for b in &report.brains {
            println!("{b:?}");
        }
        assert_eq!(report.brains.len(), 4);
        assert!(report.fired() > 0, "the random brains never fired");
    }

    #[test]
    fn cpu_shards_match_the_reference_for_every_count_and_strategy() {
        use crate::partition::Strategy;
        for (shards, strategy) in
            [(2, Strategy::RoundRobin), (3, Strategy::ByCorticalArea), (5, Strategy::RoundRobin), (4, Strategy::ByCorticalArea)]
        {
            let cfg = ParityConfig { brains: 4, bursts: 150, seed: 300 + shards as u64, max_neurons: 1500, candidate_parts: 1 };
            let report =
                parity(&cfg, &sharded_candidate(shards, strategy, vec![])).unwrap_or_else(|d| panic!("{shards} shards, {strategy}: {d}"));
            assert_eq!(report.bursts(), 600);
        }
    }
}
