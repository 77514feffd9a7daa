//! Invariants of the burst model, over random inputs (proptest).

use neuroburst::backend::cpu::CpuBackend;
use neuroburst::backend::{Backend, Readback};
use neuroburst::brain::Brain;
use neuroburst::genome::{Area, AreaKind, Genome, Leak, Mapping, Morphology, NeuronParams, RandomSpec, Sign};
use neuroburst::model::{Injection, Injections, Potential};
use proptest::prelude::*;

fn area(id: &str, dims: [u32; 3], npv: u32, neuron: NeuronParams) -> Area {
    Area {
        id: id.into(),
        name: String::new(),
        kind: AreaKind::Interneuron,
        dims,
        neurons_per_voxel: npv,
        position: [0; 3],
        psp: 1.0,
        psp_uniform_distribution: false,
        neuron,
    }
}

prop_compose! {
    fn neuron_params()(
        threshold in 0.5f64..4.0,
        grad in prop::array::uniform3(-0.2f64..0.2),
        limit in prop_oneof![Just(0.0), 4.0f64..20.0],
        leak in prop_oneof![(0.0f64..1.0).prop_map(Leak::Fraction), (0.0f64..3.0).prop_map(Leak::Linear)],
        refractory in 0u32..4,
        cfl in 0u32..4,
        snooze in 0u32..3,
        excitability in prop_oneof![Just(1.0), 0.2f64..1.0],
        acc in any::<bool>(),
    ) -> NeuronParams {
        NeuronParams {
            threshold,
            threshold_gradient: grad,
            threshold_limit: limit,
            leak,
            refractory_period: refractory,
            consecutive_fire_limit: cfl,
            snooze_period: snooze,
            excitability,
            mp_charge_accumulation: acc,
        }
    }
}

prop_compose! {
    /// Two to four areas with random parameters and random recurrent and feed-forward mappings.
    fn genome()(
        seed in any::<u64>(),
        params in prop::collection::vec((prop::array::uniform3(1u32..5), 1u32..3, neuron_params()), 2..5),
        maps in prop::collection::vec((0usize..4, 0usize..4, 0usize..6, 0.0f64..20.0, any::<bool>(), 30.0f64..100.0), 1..8),
    ) -> Genome {
        let areas: Vec<Area> = params.into_iter().enumerate().map(|(i, (d, npv, p))| area(&format!("a{i}"), d, npv, p)).collect();
        let n = areas.len();
        let names = ["projector", "all_to_all", "block_to_block", "fan", "sparse", "lateral_pairs_x"];
        let mappings = maps.into_iter().map(|(s, d, m, w, inh, att)| Mapping {
            source: format!("a{}", s % n),
            destination: format!("a{}", d % n),
            morphology: names[m].into(),
            scalar: [1, 1, 1],
            weight: w,
            psp: None,
            sign: if inh { Sign::Inhibitory } else { Sign::Excitatory },
            attractivity: att,
            plasticity: None,
            max_synapses: None,
            synapses: None,
            procedural: false,
        }).collect();
        let mut morphologies = std::collections::BTreeMap::new();
        morphologies.insert("fan".to_string(), Morphology::Random(RandomSpec { probability: None, fanout: Some(3) }));
        morphologies.insert("sparse".to_string(), Morphology::Random(RandomSpec { probability: Some(0.3), fanout: None }));
        Genome { name: "prop".into(), description: String::new(), burst_rate_hz: 10.0, seed, areas, morphologies, mappings }
    }
}

/// Fired (id, potential) lists of `bursts` bursts with a deterministic pseudo-random drive.
fn run(g: &Genome, parts: usize, bursts: u64) -> (Vec<Vec<(u32, i64)>>, neuroburst::model::NeuronState) {
    let brain = Brain::build(g, parts, false);
    let n = brain.layout.neurons;
    let mut b = CpuBackend::new(brain, Readback::All);
    let mut out = Vec::new();
    for t in 0..bursts {
        let inj: Injections = (0..n)
            .filter(|i| (i.wrapping_mul(2_654_435_761) ^ (t as u32).wrapping_mul(40_503)).is_multiple_of(5))
            .map(|i| Injection { neuron: i, potential: Potential::from_f64(((i as u64 + t) % 7) as f64 * 0.8) })
            .collect();
        let o = b.burst(inj.as_slice()).unwrap();
        out.push(o.fired.iter().copied().zip(o.potentials.iter().copied()).collect());
    }
    (out, b.snapshot().unwrap())
}

/// burst-model.md taken literally: every neuron, every burst, input summed synapse by synapse from
/// the connectome, then the reference `step`. Slow and obvious, to check the optimised backend.
fn naive(g: &Genome, bursts: u64) -> Vec<Vec<(u32, i64)>> {
    use neuroburst::model::{step, FLAG_POWER};
    let brain = Brain::build(g, 1, false);
    let (layout, c) = (&brain.layout, &brain.connectome);
    let n = layout.neurons as usize;
    let mut st = neuroburst::model::NeuronState::new(n);
    let mut prev: Vec<u32> = Vec::new();
    let mut out = Vec::new();
    for t in 0..bursts {
        let mut input = vec![0i64; n];
        for i in 0..layout.neurons {
            if (i.wrapping_mul(2_654_435_761) ^ (t as u32).wrapping_mul(40_503)).is_multiple_of(5) {
                input[i as usize] += Potential::from_f64(((i as u64 + t) % 7) as f64 * 0.8).0;
            }
        }
        for &s in &prev {
            for k in c.parts[0].row(s) {
                input[c.parts[0].targets[k] as usize] += c.contribution(0, k) as i64;
            }
        }
        let mut fired = Vec::new();
        for id in 0..layout.neurons {
            let a = layout.area_of(id);
            let p = &layout.params[a];
            let i = id as usize;
            if p.flags & FLAG_POWER != 0 {
                input[i] += neuroburst::model::fixed::ONE;
            }
            let thr = p.threshold_of(id - p.first);
            if let Some(v) = step(p, thr, &mut st.potential[i], &mut st.refractory[i], &mut st.consecutive[i], input[i], id, t + 1) {
                fired.push((id, v));
            }
        }
        prev = fired.iter().map(|f| f.0).collect();
        out.push(fired);
    }
    out
}

/// A dense brain whose input sums overflow `i32`: the CPU backend must use wide accumulators.
fn heavy_genome(seed: u64) -> Genome {
    let p = NeuronParams { threshold: 6e5, leak: Leak::Fraction(0.05), mp_charge_accumulation: true, ..Default::default() };
    let mut a = area("h", [4, 4, 4], 1, p);
    a.psp = 255.0;
    a.psp_uniform_distribution = true;
    let mut i = area("i", [4, 4, 1], 1, NeuronParams { threshold: 0.5, ..Default::default() });
    i.psp = 255.0;
    i.psp_uniform_distribution = true;
    let m = |s: &str, d: &str, sign| Mapping {
        source: s.into(),
        destination: d.into(),
        morphology: "all_to_all".into(),
        scalar: [1, 1, 1],
        weight: 255.0,
        psp: None,
        sign,
        attractivity: 90.0,
        plasticity: None,
        max_synapses: None,
        synapses: None,
        procedural: false,
    };
    Genome {
        name: "heavy".into(),
        description: String::new(),
        burst_rate_hz: 1.0,
        seed,
        areas: vec![i, a],
        morphologies: Default::default(),
        mappings: vec![m("i", "h", Sign::Excitatory), m("h", "h", Sign::Excitatory), m("h", "i", Sign::Inhibitory)],
    }
}

#[test]
fn wide_accumulators_match_the_naive_model() {
    let g = heavy_genome(3);
    let (fast, _) = run(&g, 2, 30);
    assert_eq!(fast, naive(&g, 30));
    assert!(fast.iter().any(|f| f.iter().any(|&(_, v)| v > i32::MAX as i64)), "the test must drive potentials past the i32 range");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// The optimised CPU backend (fast paths, shards, narrow accumulators) equals the literal model.
    #[test]
    fn backend_matches_the_naive_model(g in genome(), parts in 1usize..4) {
        let (fast, _) = run(&g, parts, 30);
        prop_assert_eq!(fast, naive(&g, 30));
    }

    /// Same genome and seed: same connectome, same fired sets, whatever the number of shards.
    #[test]
    fn deterministic_and_shard_invariant(g in genome(), parts in 2usize..5) {
        let (a, sa) = run(&g, 1, 40);
        let (b, sb) = run(&g, 1, 40);
        prop_assert_eq!(&a, &b);
        prop_assert_eq!(&sa, &sb);
        let (c, sc) = run(&g, parts, 40);
        prop_assert_eq!(&a, &c);
        prop_assert_eq!(&sa, &sc);
        let b1 = Brain::build(&g, 1, false);
        let b2 = Brain::build(&g, parts, false);
        prop_assert_eq!(b1.connectome.synapses(), b2.connectome.synapses());
        prop_assert_eq!(&b1.connectome.mappings, &b2.connectome.mappings);
    }

    /// A neuron driven above threshold every burst fires exactly every refractory + 1 bursts.
    #[test]
    fn refractory_spacing(refractory in 0u32..6, drive in 1.5f64..50.0) {
        let g = Genome {
            name: "r".into(), description: String::new(), burst_rate_hz: 1.0, seed: 0,
            areas: vec![area("a", [1, 1, 1], 1, NeuronParams { threshold: 1.0, refractory_period: refractory, ..Default::default() })],
            morphologies: Default::default(), mappings: vec![],
        };
        let mut b = CpuBackend::new(Brain::build(&g, 1, false), Readback::All);
        let inj = Injections::from([Injection { neuron: 0, potential: Potential::from_f64(drive) }]);
        let fires: Vec<u64> = (0..60).filter_map(|_| { let o = b.burst(inj.as_slice()).unwrap(); (!o.fired.is_empty()).then_some(o.burst) }).collect();
        prop_assert!(fires.len() >= 2);
        for w in fires.windows(2) {
            prop_assert_eq!(w[1] - w[0], refractory as u64 + 1);
        }
    }

    /// With no accumulation, a neuron fires iff its input lies in [threshold, limit].
    #[test]
    fn threshold_window(threshold in 0.1f64..10.0, extra in 0.0f64..10.0, input in 0.0f64..25.0, gx in 0.0f64..1.0, x in 0u32..4) {
        let limit = threshold + gx * 4.0 + extra;
        let g = Genome {
            name: "w".into(), description: String::new(), burst_rate_hz: 1.0, seed: 0,
            areas: vec![area("a", [4, 1, 1], 1, NeuronParams {
                threshold, threshold_gradient: [gx, 0.0, 0.0], threshold_limit: limit, ..Default::default()
            })],
            morphologies: Default::default(), mappings: vec![],
        };
        let mut b = CpuBackend::new(Brain::build(&g, 1, false), Readback::All);
        let p = Potential::from_f64(input);
        let o = b.burst(Injections::from([Injection { neuron: x, potential: p }]).as_slice()).unwrap();
        let thr = Potential::from_f64(threshold).0 + (x as i64) * Potential::from_f64(gx).0;
        let fired = o.fired.contains(&x);
        prop_assert_eq!(fired, p.0 >= thr && p.0 <= Potential::from_f64(limit).0);
    }

    /// Leak never flips the sign of a potential, and never increases its magnitude.
    #[test]
    fn leak_decays_toward_zero(v in -1_000_000i64..1_000_000, frac in 0.0f64..1.0, lin in 0i64..100_000) {
        use neuroburst::model::fixed::*;
        let a = apply_fraction_leak(v, leak_keep_factor(frac));
        prop_assert!(a.abs() <= v.abs() && (a == 0 || a.signum() == v.signum()));
        let b = apply_linear_leak(v, lin);
        prop_assert!(b.abs() <= v.abs() && (b == 0 || b.signum() == v.signum()));
    }
}
