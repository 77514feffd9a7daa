//! The standard benchmark workload W(N, K, rho) of docs/performance.md: one area of N
//! neurons, K random synapses per neuron onto the same area, about rho x N neurons injected with
//! the threshold every burst, the first 1% of the neurons read back as the motor area.

use std::ops::Range;

use rayon::prelude::*;

use crate::genome::{Area, AreaKind, Genome, Leak, Mapping, Morphology, NeuronParams, RandomSpec, Sign};
use crate::model::rng::pcg_hash;
use crate::model::{Injections, Potential};

/// Bursts of drive a benchmark makes before it starts, at most ([`Workload::drive_pool`]).
pub const DRIVE_POOL: usize = 256;
/// Bytes of injected ids a benchmark's drive pool holds, at most.
pub const DRIVE_POOL_BYTES: usize = 1 << 30;

/// The benchmark brain W(N, K, rho): one area of N neurons, K random synapses each, ~rho N injected every burst.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Workload {
    /// N: neurons.
    pub neurons: u32,
    /// K: synapses a neuron.
    pub fanout: u32,
    /// rho: the fraction of neurons injected every burst.
    pub rate: f64,
    /// Seed of the synapses and the injections.
    pub seed: u64,
}

impl Workload {
    /// Why W(N, K, rho) is not a brain to build, if it is not: N at least 1, rho within 0..1, and
    /// the genome's own rules (K at most a random fan-out's limit, N at most a brain's neurons).
    pub fn check(&self) -> Result<(), String> {
        if self.neurons < 1 {
            return Err("N (neurons) must be at least 1".into());
        }
        if !(self.rate.is_finite() && (0.0..=1.0).contains(&self.rate)) {
            return Err(format!("rho (rate) {} must be within 0..1", self.rate));
        }
        self.genome().validate().map_err(|e| e.to_string())
    }

    /// `20 × K × rho`: the steady recurrent input settles near half of it.
    pub fn threshold(&self) -> f64 {
        20.0 * self.fanout as f64 * self.rate
    }

    /// The motor area: the first 1% of the neurons (at least one).
    pub fn motor(&self) -> Range<u32> {
        0..(self.neurons / 100).max(1)
    }

    /// W as a genome.
    pub fn genome(&self) -> Genome {
        let mut morphologies = std::collections::BTreeMap::new();
        morphologies.insert("random_k".to_string(), Morphology::Random(RandomSpec { probability: None, fanout: Some(self.fanout) }));
        Genome {
            name: format!("W({}, {}, {})", self.neurons, self.fanout, self.rate),
            description: "benchmark workload of docs/performance.md".into(),
            burst_rate_hz: 1000.0,
            seed: self.seed,
            areas: vec![Area {
                id: "w".into(),
                name: "workload".into(),
                kind: AreaKind::Interneuron,
                dims: [self.neurons, 1, 1],
                neurons_per_voxel: 1,
                position: [0; 3],
                psp: 1.0,
                psp_uniform_distribution: true,
                neuron: NeuronParams {
                    threshold: self.threshold(),
                    leak: Leak::Fraction(0.1),
                    refractory_period: 0,
                    excitability: 1.0,
                    mp_charge_accumulation: true,
                    ..NeuronParams::default()
                },
            }],
            morphologies,
            mappings: vec![Mapping {
                source: "w".into(),
                destination: "w".into(),
                morphology: "random_k".into(),
                scalar: [1, 1, 1],
                weight: 1.0,
                psp: None,
                sign: Sign::Excitatory,
                attractivity: 100.0,
                plasticity: None,
                max_synapses: None,
                synapses: None,
                procedural: false,
            }],
        }
    }

    /// The injection of burst `t`: every neuron `n` with `rand(n, t + 7919) < rho` gets the
    /// threshold, in ascending id order.
    pub fn injection(&self, t: u64, out: &mut Injections) {
        let cut = (self.rate.clamp(0.0, 1.0) * 4_294_967_296.0) as u64;
        let potential = Potential::from_f64(self.threshold());
        out.clear();
        const CHUNK: u32 = 1 << 16;
        let chunks: Vec<Vec<u32>> = (0..self.neurons.div_ceil(CHUNK))
            .into_par_iter()
            .map(|c| (c * CHUNK..((c + 1) * CHUNK).min(self.neurons)).filter(|&n| (pcg_hash(n, t + 7919) as u64) < cut).collect())
            .collect();
        for c in chunks {
            out.extend_ids(&c, potential);
        }
    }
}

/// How a benchmark brain learns (docs/plasticity.md).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Learning {
    /// Every synapse of the workload plastic, with this window (Δ+ = Δ- = 1).
    pub window: Option<u32>,
    /// Two more areas of this many neurons (0: none), `assoc_a` -> `assoc_b` associative
    /// (window 1, Δ+ = 1), each injected like the workload: the pairs that fire together grow.
    pub associative: u32,
}

impl Workload {
    /// The workload's genome with `learning`.
    pub fn learning_genome(&self, learning: &Learning) -> Genome {
        use crate::genome::Plasticity;
        let mut g = self.genome();
        let rule = |window| Plasticity { constant: 1.0, ltp_multiplier: 1.0, ltd_multiplier: 1.0, window };
        if let Some(w) = learning.window {
            g.mappings[0].plasticity = Some(rule(w));
            g.name = format!("{} plastic (window {w})", g.name);
        }
        if learning.associative > 0 {
            for id in ["assoc_a", "assoc_b"] {
                let mut a = g.areas[0].clone();
                (a.id, a.name, a.dims) = (id.into(), id.into(), [learning.associative, 1, 1]);
                a.neuron = NeuronParams { threshold: 1.0, ..NeuronParams::default() };
                g.areas.push(a);
            }
            g.mappings.push(Mapping {
                source: "assoc_a".into(),
                destination: "assoc_b".into(),
                morphology: "associative_memory".into(),
                scalar: [1, 1, 1],
                weight: 1.0,
                psp: Some(0.0),
                sign: Sign::Excitatory,
                attractivity: 100.0,
                plasticity: Some(rule(1)),
                max_synapses: None,
                synapses: None,
                procedural: false,
            });
        }
        g
    }

    /// [`Workload::injection`], and with an associative pair of areas, their neurons drawn alike.
    /// The drive of a benchmark, made before it starts so that no burst waits for it: the
    /// injections of bursts 1..=len (at most [`DRIVE_POOL`] and [`DRIVE_POOL_BYTES`] of ids, at
    /// least one), burst `t` taking those of burst `(t - 1) % len + 1` ([`Workload::drive_at`]).
    pub fn drive_pool(&self, learning: &Learning, bursts: u64) -> Vec<Injections> {
        let per_burst = (self.neurons as f64 + 2.0 * learning.associative as f64) * self.rate.clamp(0.0, 1.0) * 4.0;
        let by_bytes = (DRIVE_POOL_BYTES as f64 / per_burst.max(1.0)) as u64;
        let len = bursts.min(DRIVE_POOL as u64).min(by_bytes).max(1);
        (1..=len)
            .map(|t| {
                let mut inj = Injections::new();
                self.learning_injection(learning, t, &mut inj);
                inj
            })
            .collect()
    }

    /// Burst `t`'s injection from a [`Workload::drive_pool`].
    pub fn drive_at(pool: &[Injections], t: u64) -> &Injections {
        &pool[(t.max(1) - 1) as usize % pool.len()]
    }

    /// Burst `t`'s injection of a brain that learns (`--plastic`): the cue and reward pattern of `learning`.
    pub fn learning_injection(&self, learning: &Learning, t: u64, out: &mut Injections) {
        self.injection(t, out);
        if learning.associative > 0 {
            let cut = (self.rate.clamp(0.0, 1.0) * 4_294_967_296.0) as u64;
            let ids: Vec<u32> =
                (self.neurons..self.neurons + 2 * learning.associative).filter(|&n| (pcg_hash(n, t + 7919) as u64) < cut).collect();
            out.extend_ids(&ids, Potential::from_f64(2.0));
        }
    }
}
