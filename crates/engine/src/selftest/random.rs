//! Random brains and inputs for the parity check: genomes of several shapes (half of them learn),
//! and injections that reach every corner of the model (repeats, saturation, wide values).

use crate::genome::{Area, AreaKind, Genome, Leak, Mapping, Morphology, NeuronParams, PatternCoord, RandomSpec, Sign};
use crate::model::{Injection, Injections, Layout, Potential};

/// SplitMix64: small, seeded, portable.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator seeded `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x5851_f42d_4c95_7f2d)
    }
    /// The next draw.
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
    /// Uniform in `lo..=hi_inclusive`.
    pub fn range(&mut self, lo: u64, hi_inclusive: u64) -> u64 {
        lo + self.below(hi_inclusive - lo + 1)
    }
    /// Uniform in `[0, 1)`.
    pub fn f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Uniform in `[lo, hi)`.
    pub fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.f64()
    }
    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        self.f64() < p
    }
    /// One element of `v` (not empty), uniformly.
    pub fn pick<'a, T>(&mut self, v: &'a [T]) -> &'a T {
        &v[self.below(v.len() as u64) as usize]
    }
}

pub(super) const SHAPES: [&str; 4] = ["many-small-areas", "few-large-areas", "strong-synapses", "mixed"];

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

/// A random plasticity rule: steps of 0 to 20, windows of 1 to 4 bursts; a third of them never
/// depress, so that their weights stay up and what the list's propagation through learned rows
/// adds (or would add twice, or not at all) shows in the firing.
fn random_rule(rng: &mut Rng) -> crate::genome::Plasticity {
    let mut rule = crate::genome::Plasticity {
        constant: rng.range(0, 10) as f64,
        ltp_multiplier: rng.uniform(0.0, 2.0),
        ltd_multiplier: rng.uniform(0.0, 2.0),
        window: rng.range(1, 4) as u32,
    };
    if rng.chance(1.0 / 3.0) {
        rule.ltd_multiplier = 0.0;
    }
    rule
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
    // the genome's own morphologies, then every built-in one (associative_memory needs a rule: below)
    let names: Vec<&str> = ["vec", "vec2", "pat", "rnd_p", "rnd_k", "tile"]
        .into_iter()
        .chain(Morphology::BUILTIN_NAMES.into_iter().filter(|&n| n != "associative_memory"))
        .collect();
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
            procedural: false,
        });
    }
    if learns && rng.chance(0.5) {
        // an associative mapping between two small areas (the pair table stays small); half the
        // brains that learn have none (growth writes weights after the rows are learned, so the
        // list's rows are propagated on their own: kernels/learn.cu)
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
                procedural: false,
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

/// [`random_genome`] with every mapping but the associative one a random fanout (1 to 60
/// synapses per neuron): brains whose mappings mostly have a closed form (see
/// [`crate::connectome::ClosedForm`]; plastic ones, and those of an area whose psp is not uniform
/// and whose out-degree varies (an attractivity below 100), have none).
pub fn random_fanout_genome(seed: u64, max_neurons: u32) -> Genome {
    let mut g = random_genome(seed, max_neurons);
    let mut rng = Rng::new(seed ^ 0xFA_0070);
    for m in g.mappings.iter_mut().filter(|m| m.morphology != "associative_memory") {
        let k = rng.range(1, 60) as u32;
        g.morphologies.insert(format!("fan{k}"), Morphology::Random(RandomSpec { probability: None, fanout: Some(k) }));
        m.morphology = format!("fan{k}");
    }
    g
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
