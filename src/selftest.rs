//! The parity check: random brains of several shapes, run on the CPU reference and on a candidate
//! backend (CUDA, or the CPU with another shard count) with the same injections; every burst's
//! fired set (ids and potentials at fire) and the state at mid-run and at the end must match bit
//! for bit. `neuroburst selftest` and `tests/*parity*.rs` run it.

use std::fmt;

use crate::backend::cpu::CpuBackend;
use crate::backend::{Backend, BackendError, Readback};
use crate::brain::Brain;
use crate::genome::{Area, AreaKind, Genome, Leak, Mapping, Morphology, NeuronParams, PatternCoord, RandomSpec, Sign};
use crate::model::plasticity::Learned;
use crate::model::{Injection, Injections, Layout, NeuronState, Potential};

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
    pub seed: u64,
    pub shape: &'static str,
    pub areas: usize,
    pub neurons: u32,
    pub synapses: u64,
    pub bursts: u64,
    /// Fired neurons over all bursts (whole brain).
    pub fired: u64,
    /// Fired neurons compared (those read back).
    pub compared: u64,
    /// Weights of plastic synapses compared (every burst of a brain that learns).
    pub weights: u64,
    pub readback: &'static str,
}

/// The whole check.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ParityReport {
    pub candidate: String,
    pub brains: Vec<BrainReport>,
}

impl ParityReport {
    pub fn bursts(&self) -> u64 {
        self.brains.iter().map(|b| b.bursts).sum()
    }
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
             learn: {} weights compared)",
            self.candidate,
            self.brains.len(),
            self.brains.first().map_or(0, |b| b.bursts),
            self.bursts(),
            neurons,
            synapses,
            self.brains.iter().map(|b| b.compared).sum::<u64>(),
            self.fired(),
            self.brains.iter().filter(|b| b.weights > 0).count(),
            self.brains.iter().map(|b| b.weights).sum::<u64>()
        )
    }
}

/// SplitMix64: small, seeded, portable.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x5851_f42d_4c95_7f2d)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }
    pub fn range(&mut self, lo: u64, hi_inclusive: u64) -> u64 {
        lo + self.below(hi_inclusive - lo + 1)
    }
    pub fn f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    pub fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.f64()
    }
    pub fn chance(&mut self, p: f64) -> bool {
        self.f64() < p
    }
    pub fn pick<'a, T>(&mut self, v: &'a [T]) -> &'a T {
        &v[self.below(v.len() as u64) as usize]
    }
}

const SHAPES: [&str; 4] = ["many-small-areas", "few-large-areas", "strong-synapses", "mixed"];

fn random_neuron(rng: &mut Rng, strong: bool) -> NeuronParams {
    let threshold = if strong { rng.uniform(1.0, 400.0) } else { rng.uniform(0.3, 8.0) };
    let threshold_gradient = if rng.chance(0.3) {
        [rng.uniform(-0.3, 1.0), rng.uniform(-0.3, 1.0), if rng.chance(0.5) { rng.uniform(-0.2, 0.5) } else { 0.0 }]
    } else {
        [0.0; 3]
    };
    let threshold_limit = if rng.chance(0.2) { threshold * rng.uniform(1.5, 6.0) } else { 0.0 };
    let leak = if rng.chance(0.3) { Leak::Linear(rng.uniform(0.0, 3.0)) } else { Leak::Fraction(rng.uniform(0.0, 1.0)) };
    let consecutive_fire_limit = if rng.chance(0.35) { rng.range(1, 4) as u32 } else { 0 };
    NeuronParams {
        threshold,
        threshold_gradient,
        threshold_limit,
        leak,
        refractory_period: if rng.chance(0.5) { rng.range(0, 3) as u32 } else { 0 },
        consecutive_fire_limit,
        snooze_period: if rng.chance(0.5) { rng.range(0, 3) as u32 } else { 0 },
        excitability: if rng.chance(0.4) { rng.uniform(0.2, 1.0) } else { 1.0 },
        mp_charge_accumulation: rng.chance(0.7),
    }
}

fn random_pattern_coord(rng: &mut Rng, dim: u32) -> PatternCoord {
    match rng.below(5) {
        0 => PatternCoord::Any,
        1 => PatternCoord::Same,
        2 => PatternCoord::Except,
        _ => PatternCoord::Exact(rng.below(dim.max(1) as u64 + 1) as i64),
    }
}

fn area_neurons(a: &Area) -> u64 {
    a.dims.iter().map(|&d| d as u64).product::<u64>() * a.neurons_per_voxel as u64
}

/// A random plasticity rule: steps of 0 to 20, windows of 1 to 4 bursts.
fn random_rule(rng: &mut Rng) -> crate::genome::Plasticity {
    crate::genome::Plasticity {
        constant: rng.range(0, 10) as f64,
        ltp_multiplier: rng.uniform(0.0, 2.0),
        ltd_multiplier: rng.uniform(0.0, 2.0),
        window: rng.range(1, 4) as u32,
    }
}

/// A random, valid genome of at most `max_neurons` neurons. `seed % 4` picks the shape; half the
/// brains learn (plastic and associative mappings, docs/plasticity.md).
pub fn random_genome(seed: u64, max_neurons: u32) -> Genome {
    let mut rng = Rng::new(seed);
    let shape = (seed % 4) as usize;
    let strong = shape == 2 || (shape == 3 && rng.chance(0.5));
    let n_areas = match shape {
        0 => rng.range(8, 24) as usize,
        1 => rng.range(2, 4) as usize,
        _ => rng.range(3, 10) as usize,
    };
    let budget = max_neurons.max(16) as u64;
    let per_area = (budget / (n_areas as u64 + 2)).max(1);
    let mut areas = Vec::new();
    let mut total = 0u64;
    for i in 0..n_areas {
        let npv = if rng.chance(0.3) { rng.range(2, 3) as u32 } else { 1 };
        let target = rng.range(1, per_area.max(1)) / npv as u64;
        let x = rng.range(1, (target.max(1) as f64).cbrt().ceil() as u64 * 2).max(1) as u32;
        let y = rng.range(1, ((target / x as u64).max(1) as f64).sqrt().ceil() as u64).max(1) as u32;
        let z = ((target / (x as u64 * y as u64)).clamp(1, 16)) as u32;
        let dims = [x, y, z];
        let count = dims.iter().map(|&d| d as u64).product::<u64>() * npv as u64;
        if total + count > budget {
            break;
        }
        total += count;
        let kind = match i % 3 {
            0 => AreaKind::Sensor,
            1 => AreaKind::Interneuron,
            _ => AreaKind::Motor,
        };
        areas.push(Area {
            id: format!("a{i:02}"),
            name: String::new(),
            kind,
            dims,
            neurons_per_voxel: npv,
            position: [0; 3],
            psp: if strong { rng.uniform(1.0, 255.0).round() } else { 1.0 },
            psp_uniform_distribution: rng.chance(0.5),
            neuron: random_neuron(&mut rng, strong),
        });
    }
    if areas.is_empty() {
        areas.push(Area {
            id: "a00".into(),
            name: String::new(),
            kind: AreaKind::Sensor,
            dims: [2, 2, 1],
            neurons_per_voxel: 1,
            position: [0; 3],
            psp: 1.0,
            psp_uniform_distribution: true,
            neuron: NeuronParams::default(),
        });
        total = 4;
    }
    for (id, p) in [("_power", 0.6), ("_death", 0.4)] {
        if rng.chance(p) && total + 4 <= budget {
            let mut neuron = random_neuron(&mut rng, strong);
            neuron.threshold = rng.uniform(0.5, 3.0);
            areas.push(Area {
                id: id.into(),
                name: id.into(),
                kind: AreaKind::Core,
                dims: [rng.range(1, 2) as u32, 1, 1],
                neurons_per_voxel: 1,
                position: [0; 3],
                psp: 1.0,
                psp_uniform_distribution: true,
                neuron,
            });
            total += 2;
        }
    }

    let mut morphologies = std::collections::BTreeMap::new();
    morphologies.insert("vec".to_string(), Morphology::Vectors(vec![[1, 0, 0], [0, 1, 0], [-1, 0, 1], [0, 0, 0]]));
    morphologies.insert("vec2".to_string(), Morphology::Vectors(vec![[rng.range(0, 2) as i64, 0, 0], [0, -1, 0]]));
    let pat = |rng: &mut Rng| {
        [
            [random_pattern_coord(rng, 2), random_pattern_coord(rng, 2), PatternCoord::Any],
            [random_pattern_coord(rng, 3), random_pattern_coord(rng, 3), random_pattern_coord(rng, 1)],
        ]
    };
    let patterns = vec![pat(&mut rng), pat(&mut rng)];
    morphologies.insert("pat".to_string(), Morphology::Patterns(patterns));
    morphologies.insert("rnd_p".to_string(), Morphology::Random(RandomSpec { probability: Some(rng.uniform(0.001, 0.05)), fanout: None }));
    morphologies.insert("rnd_k".to_string(), Morphology::Random(RandomSpec { probability: None, fanout: Some(rng.range(1, 40) as u32) }));
    morphologies.insert(
        "tile".to_string(),
        Morphology::Tile(crate::genome::morphology::TileSpec {
            src_seed: [rng.range(1, 3) as u32, rng.range(1, 2) as u32, 1],
            src_pattern: Vec::new(),
            mapper: "projector".into(),
        }),
    );
    let names = [
        "vec",
        "vec2",
        "pat",
        "rnd_p",
        "rnd_k",
        "tile",
        "projector",
        "block_to_block",
        "all_to_all",
        "expander_x",
        "reducer_x",
        "randomizer",
        "lateral_pairs_x",
        "last_to_first",
    ];
    // half the brains learn: some mappings plastic, maybe one associative
    let learns = rng.chance(0.5);
    let n_map = (areas.len() as f64 * rng.uniform(1.0, 2.5)) as usize + 1;
    let mut mappings = Vec::new();
    let mut used_names = std::collections::HashSet::new();
    for k in 0..n_map + names.len() {
        let src = rng.below(areas.len() as u64) as usize;
        let dst = rng.below(areas.len() as u64) as usize;
        // every morphology kind at least once over the first mappings, then random ones
        let name = if k < names.len() { names[k] } else { *rng.pick(&names) };
        if k >= n_map && used_names.contains(name) {
            continue;
        }
        let dst_n = areas[dst].dims.iter().map(|&d| d as u64).product::<u64>() * areas[dst].neurons_per_voxel as u64;
        let src_n = areas[src].dims.iter().map(|&d| d as u64).product::<u64>() * areas[src].neurons_per_voxel as u64;
        if name == "all_to_all" && src_n * dst_n > 200_000 {
            continue;
        }
        used_names.insert(name);
        let weight = if strong { rng.uniform(1.0, 255.0).round() } else { rng.uniform(0.05, 3.0) };
        mappings.push(Mapping {
            source: areas[src].id.clone(),
            destination: areas[dst].id.clone(),
            morphology: name.into(),
            scalar: if rng.chance(0.2) { [2, 1, 1] } else { [1, 1, 1] },
            weight,
            psp: if rng.chance(0.2) { Some(if strong { rng.uniform(1.0, 255.0).round() } else { rng.uniform(0.2, 2.0) }) } else { None },
            sign: if rng.chance(0.25) { Sign::Inhibitory } else { Sign::Excitatory },
            attractivity: if rng.chance(0.3) { rng.uniform(10.0, 99.0) } else { 100.0 },
            plasticity: (learns && rng.chance(0.5)).then(|| random_rule(&mut rng)),
            max_synapses: None,
            synapses: None,
        });
    }
    if learns {
        // an associative mapping between two small areas (the pair table stays small)
        let small: Vec<usize> = (0..areas.len()).filter(|&i| area_neurons(&areas[i]) <= 300).collect();
        if !small.is_empty() {
            let (src, dst) = (*rng.pick(&small), *rng.pick(&small));
            let pairs = area_neurons(&areas[src]) * area_neurons(&areas[dst]);
            mappings.push(Mapping {
                source: areas[src].id.clone(),
                destination: areas[dst].id.clone(),
                morphology: "associative_memory".into(),
                scalar: [1, 1, 1],
                weight: 1.0,
                psp: None,
                sign: if rng.chance(0.25) { Sign::Inhibitory } else { Sign::Excitatory },
                attractivity: 100.0,
                plasticity: Some(random_rule(&mut rng)),
                max_synapses: rng.chance(0.5).then(|| rng.range(1, pairs.max(1))),
                synapses: None,
            });
        }
    }
    Genome {
        name: format!("random-{seed}"),
        description: format!("selftest brain, shape {}", SHAPES[shape]),
        burst_rate_hz: 30.0,
        seed,
        areas,
        morphologies,
        mappings,
    }
}

/// Random injections for one burst: a few neurons (repeats allowed, or ascending ids each once),
/// values around the thresholds, some negative, rarely huge (saturation) or outside the 32-bit
/// range; in a quarter of the bursts one value for all (as binary encoders give; a GPU sends those
/// as bare ids).
pub fn random_injections(rng: &mut Rng, layout: &Layout, out: &mut Injections) {
    let mut entries = Vec::new();
    let n = layout.neurons as u64;
    let k = match rng.below(10) {
        0 => 0,
        1 => rng.below(n + 1),
        _ => rng.below(n / 8 + 2),
    };
    for _ in 0..k {
        let neuron = rng.below(n) as u32;
        let p = &layout.params[layout.area_of(neuron)];
        let thr = Potential(p.threshold).to_f64().abs().max(1.0);
        let potential = match rng.below(40) {
            0 => Potential(rng.next_u64() as i64 >> rng.below(20)),
            1 => Potential::from_f64(rng.uniform(-1e12, 1e12)),
            2..=7 => Potential::from_f64(-rng.uniform(0.0, 2.0 * thr)),
            8 => Potential::from_f64(rng.uniform(5e5, 5e6)),
            _ => Potential::from_f64(rng.uniform(0.0, 2.0 * thr)),
        };
        entries.push(Injection { neuron, potential });
    }
    if rng.below(4) == 0 {
        let first = entries.first().map_or(Potential::ZERO, |i: &Injection| i.potential);
        entries.iter_mut().for_each(|i| i.potential = first);
    }
    // half the bursts: ascending ids, each once (as encoders produce them; a backend may take a
    // faster path for those)
    if rng.below(2) == 0 {
        entries.sort_by_key(|i| i.neuron);
        entries.dedup_by_key(|i| i.neuron);
    }
    out.clear();
    out.extend(entries);
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

/// The first difference between two learned states, in words.
fn compare_learned(seed: u64, when: &str, a: &Learned, b: &Learned) -> Result<(), String> {
    let at = format!("brain seed {seed}, {when}");
    if a.ahead != b.ahead {
        return Err(format!("{at}: the last burst's learning is in on the CPU: {}, on the candidate: {}", a.ahead, b.ahead));
    }
    if let Some(i) = (0..a.history.len().max(b.history.len())).find(|&i| a.history.get(i) != b.history.get(i)) {
        return Err(format!("{at}: firing history of neuron {i}: CPU {:?} vs candidate {:?}", a.history.get(i), b.history.get(i)));
    }
    if let Some(i) = (0..a.synapses.len().max(b.synapses.len())).find(|&i| a.synapses.get(i) != b.synapses.get(i)) {
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
    for (what, x, y) in [("potential", &a.potential, &b.potential)] {
        if let Some(i) = (0..x.len().max(y.len())).find(|&i| x.get(i) != y.get(i)) {
            return Err(format!(
                "brain seed {seed}, {when}: {what} of {}: CPU {:?} vs candidate {:?}",
                where_is(layout, i as u32),
                x.get(i),
                y.get(i)
            ));
        }
    }
    for (what, x, y) in [("refractory", &a.refractory, &b.refractory), ("consecutive", &a.consecutive, &b.consecutive)] {
        if let Some(i) = (0..x.len().max(y.len())).find(|&i| x.get(i) != y.get(i)) {
            return Err(format!(
                "brain seed {seed}, {when}: {what} count of {}: CPU {:?} vs candidate {:?}",
                where_is(layout, i as u32),
                x.get(i),
                y.get(i)
            ));
        }
    }
    compare_learned(seed, when, &a.learned, &b.learned)?;
    if a.fired != b.fired {
        let i = (0..a.fired.len().max(b.fired.len())).find(|&i| a.fired.get(i) != b.fired.get(i)).unwrap_or(0);
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
    let mut report = ParityReport { candidate: String::new(), brains: Vec::new() };
    let mut inj = Injections::new();
    for i in 0..cfg.brains {
        let seed = cfg.seed.wrapping_add(i as u64);
        let genome = random_genome(seed, cfg.max_neurons);
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
            readback: if i % 2 == 0 { "all" } else { "ranges" },
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

/// The CUDA backend on `device` as a candidate: of every two brains, the first runs on the
/// device's own path (the resident kernel, where the device has cooperative launch), the second as
/// graphs (the path of a device without it, and of several GPUs).
pub fn cuda_candidate(device: usize) -> impl Fn(&Genome, Brain, Readback) -> Result<Box<dyn Backend>, BackendError> {
    let built = std::sync::atomic::AtomicUsize::new(0);
    move |_, brain, readback| {
        let b = match built.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % 2 {
            0 => crate::backend::cuda::CudaBackend::new(brain, readback, device)?,
            _ => crate::backend::cuda::CudaBackend::new_graphs(brain, readback, device)?,
        };
        Ok(Box::new(b) as Box<dyn Backend>)
    }
}

/// A sharded candidate: `shards` CPU shards in this process (`devices` empty), or one GPU per
/// device of `devices`; planned by `strategy`. A brain with fewer areas than shards (by_cortical_area)
/// gets as many shards as it has areas.
pub fn sharded_candidate(
    shards: usize,
    strategy: crate::shard::Strategy,
    devices: Vec<usize>,
) -> impl Fn(&Genome, Brain, Readback) -> Result<Box<dyn Backend>, BackendError> {
    move |genome, _, readback| {
        let layout = Layout::from_genome(genome);
        let areas = layout.params.iter().filter(|p| p.count > 0).count();
        let k = match strategy {
            crate::shard::Strategy::ByCorticalArea => shards.min(areas),
            crate::shard::Strategy::RoundRobin => shards.min(layout.neurons as usize),
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
        use crate::shard::Strategy;
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
