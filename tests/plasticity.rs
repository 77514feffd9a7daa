//! Learning (docs/plasticity.md): the spec's worked examples through the CPU backend, associative
//! growth and its cap, learned state across snapshots and shards, and the genome's errors.

use crate::common;

use neuroburst::backend::cpu::CpuBackend;
use neuroburst::backend::{Backend, Readback};
use neuroburst::brain::Brain;
use neuroburst::genome::Genome;
use neuroburst::model::plasticity::LearnedSynapse;
use neuroburst::model::{Injection, Injections, Potential};

/// Two areas `a` (`na` neurons) and `b` (`nb`), one mapping a -> b with `morphology` and a rule
/// Δ+ = 5, Δ- = 2, W = 2, weight 10; thresholds high enough that only injections make them fire.
fn pair_genome(morphology: &str, na: u32, nb: u32, extra: &str) -> Genome {
    let area = |id: &str, n: u32| {
        format!("  - id: {id}\n    kind: interneuron\n    dims: [{n}, 1, 1]\n    psp_uniform_distribution: true\n    neuron:\n      threshold: 1000\n")
    };
    let yaml = format!(
        "name: pair\nseed: 3\nareas:\n{}{}mappings:\n  - source: a\n    destination: b\n    morphology: {morphology}\n    weight: 10\n    psp: 1\n    \
         plasticity: {{constant: 1, ltp_multiplier: 5, ltd_multiplier: 2, window: 2}}\n{extra}",
        area("a", na),
        area("b", nb)
    );
    Genome::from_yaml_str(&yaml).unwrap()
}

/// Inject enough to fire the neurons of `ids`.
fn drive(ids: impl IntoIterator<Item = u32>) -> Injections {
    ids.into_iter().map(|neuron| Injection { neuron, potential: Potential::from_f64(2000.0) }).collect()
}

fn weights(b: &mut dyn Backend) -> Vec<LearnedSynapse> {
    b.snapshot().unwrap().learned.synapses
}

/// The weight of the one synapse a -> b after each of bursts 1..=4, with a and b firing as `s`
/// and `d` ('1' = fired): a snapshot holds the update after the last burst.
fn worked(open: &Open, s: &str, d: &str) -> Vec<u8> {
    let g = pair_genome("projector", 1, 1, "");
    let mut b = open(Brain::build(&g, 1, false));
    let b = b.as_mut();
    let mut out = Vec::new();
    for (x, y) in s.bytes().zip(d.bytes()) {
        let fire: Vec<u32> = [(x == b'1').then_some(0), (y == b'1').then_some(1)].into_iter().flatten().collect();
        b.burst(drive(fire).as_slice()).unwrap();
        out.push(weights(b)[0].weight);
    }
    out
}

type Open = dyn Fn(Brain) -> Box<dyn Backend>;

fn worked_examples(open: &Open) {
    assert_eq!(worked(open, "1111", "1111"), [10, 15, 20, 25]);
    assert_eq!(worked(open, "1111", "0000"), [10, 8, 6, 4]);
    assert_eq!(worked(open, "1010", "1010"), [10, 8, 6, 4]);
    assert_eq!(worked(open, "0000", "0000"), [10, 10, 10, 10]);
    // associative: a and b fire in bursts 1 and 2 -> a -> b with w = 5 after burst 2
    let g = pair_genome("associative_memory", 1, 1, "");
    let mut b = open(Brain::build(&g, 1, false));
    b.burst(drive([0, 1]).as_slice()).unwrap();
    assert!(weights(b.as_mut()).is_empty(), "no synapse before the window is full");
    b.burst(drive([0, 1]).as_slice()).unwrap();
    assert_eq!(weights(b.as_mut()), [LearnedSynapse { source: 0, target: 1, mapping: 0, weight: 5 }], "grown after burst 2");
}

#[test]
fn the_specs_worked_examples_on_the_cpu() {
    worked_examples(&|brain| Box::new(CpuBackend::new(brain, Readback::All)));
}

#[test]
fn the_specs_worked_examples_on_the_gpu() {
    use neuroburst::backend::cuda::CudaBackend;
    if !common::gpus(1) {
        return;
    }
    worked_examples(&|brain| Box::new(CudaBackend::new(brain, Readback::All, 0).unwrap()));
}

#[test]
fn the_specs_worked_examples_on_wgpu() {
    use neuroburst::backend::wgpu::WgpuBackend;
    if common::wgpu_device().is_none() {
        return;
    }
    worked_examples(&|brain| Box::new(WgpuBackend::open(brain, Readback::All).unwrap()));
}

#[test]
fn a_learned_weight_changes_what_the_target_receives() {
    // b's threshold is 1000 and the weight 10 x psp 1 gives 10: after potentiation the input grows;
    // read it as the potential b reaches (no charge accumulation: input of one burst)
    let g = pair_genome("projector", 1, 1, "");
    let mut b = CpuBackend::new(Brain::build(&g, 1, false), Readback::All);
    for _ in 0..4 {
        b.burst(drive([0, 1]).as_slice()).unwrap();
    }
    // bursts 1..4 both fire: w = 25 after burst 4; a's spike of burst 4 arrives in burst 5
    b.burst(drive([]).as_slice()).unwrap();
    let st = b.snapshot().unwrap();
    // burst 5 carried weight 25; after it (a fired in burst 4 only) the synapse is depressed
    assert_eq!(st.learned.synapses[0].weight, 23);
    let leaked = st.potential[1];
    assert!(leaked > Potential::from_f64(20.0).0, "b received 25 x psp 1 (got {leaked} LSBs)");
}

#[test]
fn a_grown_synapse_carries_its_weight_in_the_next_burst() {
    // a and b fire in bursts 1 and 2: a -> b grows with w = 5 after burst 2, so a's spike of
    // burst 2 reaches b in burst 3 through it (the CPU propagates a's row as the update visits it,
    // before the growth: the growth must still count)
    let g = pair_genome("associative_memory", 1, 1, "");
    let mut b = CpuBackend::new(Brain::build(&g, 1, false), Readback::All);
    for _ in 0..2 {
        b.burst(drive([0, 1]).as_slice()).unwrap();
    }
    b.burst(drive([]).as_slice()).unwrap();
    assert_eq!(b.snapshot().unwrap().potential[1], Potential::from_f64(5.0).0, "b received 5 x psp 1");
}

#[test]
fn growth_goes_in_source_target_order_up_to_max_synapses_and_skips_self_pairs() {
    // a and b are the same area: self-pairs are skipped
    let mut g = pair_genome("associative_memory", 3, 1, "    max_synapses: 3\n");
    g.mappings[0].destination = "a".into();
    let mut b = CpuBackend::new(Brain::build(&g, 1, false), Readback::All);
    for _ in 0..2 {
        b.burst(drive([0, 1, 2]).as_slice()).unwrap();
    }
    b.burst(drive([]).as_slice()).unwrap();
    let grown: Vec<(u32, u32)> = weights(&mut b).iter().map(|s| (s.source, s.target)).collect();
    assert_eq!(grown, [(0, 1), (0, 2), (1, 0)], "three of the six pairs, in order");
}

/// A random brain whose every mapping is plastic, plus an associative one.
fn random_plastic(seed: u64) -> Genome {
    let yaml = format!(
        "name: rnd\nseed: {seed}\nareas:\n  - id: p\n    kind: core\n    dims: [1, 1, 1]\n    neuron: {{threshold: 0.1}}\n  \
         - id: x\n    kind: interneuron\n    dims: [10, 10, 4]\n    neuron: {{threshold: 0.6, leak: {{fraction: 0.3}}, refractory_period: 1}}\n  \
         - id: y\n    kind: interneuron\n    dims: [8, 8, 1]\n    neuron: {{threshold: 0.5, mp_charge_accumulation: true, leak: {{fraction: 0.5}}}}\n\
         morphologies:\n  f20: {{random: {{fanout: 20}}}}\n  f10: {{random: {{fanout: 10}}}}\n\
         mappings:\n  - {{source: p, destination: x, morphology: all_to_all, weight: 30, psp: 1}}\n  \
         - {{source: x, destination: x, morphology: f20, weight: 40, psp: 1, \
         plasticity: {{constant: 3, ltp_multiplier: 1, ltd_multiplier: 1, window: 2}}}}\n  \
         - {{source: x, destination: y, morphology: f10, weight: 90, psp: 1, \
         plasticity: {{constant: 2, ltp_multiplier: 2, ltd_multiplier: 1, window: 3}}}}\n  \
         - {{source: y, destination: x, morphology: associative_memory, weight: 1, psp: 2, max_synapses: 500, \
         plasticity: {{constant: 4, ltp_multiplier: 1, ltd_multiplier: 1, window: 1}}}}\n"
    );
    Genome::from_yaml_str(&yaml).unwrap()
}

/// Bursts `bursts` (numbered from 0) of a sequence of random injections into x; the state after each.
fn run(b: &mut dyn Backend, seed: u64, bursts: std::ops::Range<usize>) -> Vec<neuroburst::model::NeuronState> {
    let mut rng = seed;
    let mut out = Vec::new();
    for i in 0..bursts.end {
        let input = random_input(&mut rng);
        if bursts.contains(&i) {
            b.burst(input.as_slice()).unwrap();
            out.push(b.snapshot().unwrap());
        }
    }
    out
}

#[test]
fn shards_and_a_restored_snapshot_learn_the_same_weights() {
    for seed in [1, 2] {
        let g = random_plastic(seed);
        let mut one = CpuBackend::new(Brain::build(&g, 1, false), Readback::All);
        let whole = run(&mut one, seed, 0..40);
        let last = whole.last().unwrap();
        assert!(last.learned.synapses.iter().any(|s| s.mapping == 3), "associative synapses grew");
        assert!(last.learned.synapses.iter().any(|s| s.weight != 40 && s.mapping == 1), "weights moved");

        let (brain, plan) = Brain::build_sharded(&g, 3, Default::default(), 1, false).unwrap();
        let mut sharded = CpuBackend::with_plan(brain, &plan, Readback::All);
        assert_eq!(run(&mut sharded, seed, 0..40), whole, "3 shards, seed {seed}");

        // resume after burst 20 in a fresh brain of two pieces
        let mut fresh = CpuBackend::new(Brain::build(&g, 2, false), Readback::All);
        fresh.restore(&whole[19]).unwrap();
        assert_eq!(run(&mut fresh, seed, 20..40), whole[20..], "resumed, seed {seed}");
    }
}

#[test]
fn bad_rules_name_the_mapping_and_the_field() {
    let err = |extra: &str, plasticity: &str, morphology: &str| {
        let yaml = format!(
            "name: bad\nareas:\n  - {{id: a, kind: interneuron, dims: [2, 1, 1]}}\n  - {{id: b, kind: interneuron, dims: [2, 1, 1]}}\n\
             mappings:\n  - {{source: a, destination: b, morphology: {morphology}{plasticity}{extra}}}\n"
        );
        Genome::from_yaml_str(&yaml).unwrap_err().to_string()
    };
    let rule = |c: &str, w: u32| format!(", plasticity: {{constant: {c}, ltp_multiplier: 1, ltd_multiplier: 1, window: {w}}}");
    let e = err("", &rule("1", 0), "projector");
    assert!(e.contains("mapping #0 (a -> b)") && e.contains("plasticity.window"), "{e}");
    let e = err("", &rule("1e300", 2), "projector");
    assert!(e.contains("mapping #0 (a -> b)") && e.contains("plasticity.ltp_multiplier"), "{e}");
    let e = err(", max_synapses: 5", &rule("1", 2), "projector");
    assert!(e.contains("max_synapses") && e.contains("associative_memory"), "{e}");
    let e = err("", "", "associative_memory");
    assert!(e.contains("field `plasticity`"), "{e}");
}

#[test]
fn a_checkpoint_carries_the_learned_weights_and_a_version_1_file_still_loads() {
    use neuroburst::checkpoint::Checkpoint;
    let g = random_plastic(5);
    let mut b = CpuBackend::new(Brain::build(&g, 1, false), Readback::All);
    let whole = run(&mut b, 5, 0..30);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("brain.ckpt");
    Checkpoint::new(&g, whole[14].clone()).save(&path).unwrap();
    let loaded = Checkpoint::load(&path, &g).unwrap();
    assert_eq!(loaded.state, whole[14], "weights, histories and grown pairs round-trip");
    let mut resumed = CpuBackend::new(Brain::build(&g, 1, false), Readback::All);
    resumed.restore(&loaded.state).unwrap();
    assert_eq!(run(&mut resumed, 5, 15..30), whole[15..]);
    // a state of an older release, whose histories held 32 bursts (the windows here: 3 at most),
    // resumes alike: a history keeps the longest window's bursts only
    let mut older = whole[14].clone();
    older.learned.history.iter_mut().for_each(|h| *h |= 0xF000_0000);
    let mut resumed = CpuBackend::new(Brain::build(&g, 1, false), Readback::All);
    resumed.restore(&older).unwrap();
    assert_eq!(run(&mut resumed, 5, 15..30), whole[15..]);

    // a version 1 file (no learned sections) loads, with an empty learned state
    let mut v1 = whole[14].clone();
    v1.learned = Default::default();
    let mut bytes = Checkpoint::new(&g, v1.clone()).to_bytes();
    bytes[8..12].copy_from_slice(&1u32.to_le_bytes());
    let n = bytes.len() - 8;
    let sum = xxhash_rust::xxh3::xxh3_64(&bytes[..n]);
    bytes[n..].copy_from_slice(&sum.to_le_bytes());
    assert_eq!(Checkpoint::from_bytes(&path, &bytes).unwrap().state, v1);
}

/// Every plastic synapse after every burst of `states` (the state after bursts 1, 2, ...): `f(t,
/// synapse, its weight after burst t - 1 (None: it is new), its mapping's rule, the source's and
/// the target's histories)`, t from 2; no synapse is ever lost, and no history holds a burst older
/// than the longest window.
fn each_synapse(
    g: &Genome,
    states: &[neuroburst::model::NeuronState],
    mut f: impl FnMut(u64, &LearnedSynapse, Option<u8>, neuroburst::model::plasticity::Rule, u32, u32),
) {
    use neuroburst::model::plasticity::Rule;
    let rules: Vec<Option<Rule>> = g.mappings.iter().map(|m| m.plasticity.as_ref().map(|p| Rule::compile(p).unwrap())).collect();
    let longest = rules.iter().flatten().fold(0, |m, r| m | r.mask());
    for (k, pair) in states.windows(2).enumerate() {
        let t = k as u64 + 2;
        let (before, after) = (&pair[0].learned, &pair[1].learned);
        let h = &after.history;
        if let Some(n) = h.iter().position(|&x| x & !longest != 0) {
            panic!("burst {t}: neuron {n}'s history {:b} holds bursts past the longest window ({longest:b})", h[n]);
        }
        let old: std::collections::HashMap<(u32, u32, u32), u8> =
            before.synapses.iter().map(|s| ((s.source, s.target, s.mapping), s.weight)).collect();
        for s in &after.synapses {
            let was = old.get(&(s.source, s.target, s.mapping)).copied();
            f(t, s, was, rules[s.mapping as usize].unwrap(), h[s.source as usize], h[s.target as usize]);
        }
        assert!(after.synapses.len() >= before.synapses.len(), "burst {t}: synapses lost");
    }
}

/// The next burst's input of [`run`]: 40 random neurons of x driven (`rng` its generator's state).
fn random_input(rng: &mut u64) -> Injections {
    drive((0..40).map(|_| {
        *rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        1 + (*rng >> 33) as u32 % 400
    }))
}

#[test]
fn every_weight_follows_the_rule_burst_by_burst_on_random_brains() {
    // the engine defers the depressions of synapses whose source is silent (docs/plasticity.md);
    // here every weight is checked against the model's rule applied to every synapse, every burst
    for seed in [5, 6] {
        let g = random_plastic(seed);
        let mut b = CpuBackend::new(Brain::build(&g, 1, false), Readback::All);
        let states = run(&mut b, seed, 0..300);
        let mut depressed_while_silent = 0;
        each_synapse(&g, &states, |t, s, was, rule, hs, hd| {
            let expected = match was {
                Some(w) => rule.update(t, w, hs, hd),
                None => {
                    assert!(rule.grows(t, (s.source, hs), (s.target, hd)), "burst {t}: {s:?} appeared");
                    rule.ltp
                }
            };
            assert_eq!(s.weight, expected, "seed {seed}, burst {t}: {s:?} (source history {hs:b}, target {hd:b})");
            let silent = hs & rule.mask() == 0 && hd & rule.mask() != 0;
            depressed_while_silent += (silent && expected < was.unwrap_or(0)) as u64;
        });
        assert!(depressed_while_silent > 1000, "seed {seed}: the deferred depressions were exercised ({depressed_while_silent})");
    }
}

#[test]
fn a_synapse_whose_source_stays_silent_longer_than_its_counts_wrap_still_reaches_0() {
    // the target fires every burst, the source never: around 2^16 depressions, where a u16 count
    // of them wraps to a few (weight 10, Δ- = 2: 5 of them take it to 0)
    let g = pair_genome("projector", 1, 1, "");
    let mut b = CpuBackend::new(Brain::build(&g, 1, false), Readback::All);
    for k in 1..(1 << 16) + 8 {
        b.burst(drive([1]).as_slice()).unwrap();
        if k > (1 << 16) - 8 {
            assert_eq!(weights(&mut b)[0].weight, 0, "after {k} bursts");
        }
    }
}

#[test]
fn random_brains_that_learn_give_the_same_weights_in_shards_and_pieces() {
    use neuroburst::partition::Strategy;
    use neuroburst::selftest::{cpu_candidate, parity, sharded_candidate, ParityConfig};
    let cfg = ParityConfig { brains: 6, bursts: 150, seed: 40, max_neurons: 1500, candidate_parts: 3 };
    let report = parity(&cfg, &cpu_candidate).unwrap_or_else(|d| panic!("3 pieces: {d}"));
    assert!(report.brains.iter().any(|b| b.weights > 0), "some brains learn: {report}");
    for strategy in [Strategy::RoundRobin, Strategy::ByCorticalArea] {
        let cfg = ParityConfig { candidate_parts: 1, ..cfg.clone() };
        parity(&cfg, &sharded_candidate(3, strategy, vec![])).unwrap_or_else(|d| panic!("3 shards, {strategy}: {d}"));
    }
}

/// (bag seconds, linear.x) of every /cmd_vel message of a replay's output, read with rosbags.
fn backing(out: &std::path::Path) -> Vec<(f64, f64)> {
    let (_, msgs) = common::python::read_bag(out);
    msgs.iter()
        .filter(|m| m["topic"] == "/cmd_vel")
        .map(|m| (m["t"].as_u64().unwrap() as f64 * 1e-9 - 1_700_000_000.0, m["msg"]["linear"]["x"].as_f64().unwrap()))
        .collect()
}

fn replay_conditioning(out: &std::path::Path, backend: &str) -> String {
    let bag = common::root().join("examples/conditioning/input.mcap");
    common::ok(common::replay_example("conditioning", &bag, out, &["--backend", backend]))
}

#[test]
fn the_conditioning_example_learns_to_back_on_the_cue_alone() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("cpu.mcap");
    let summary = replay_conditioning(&out, "cpu");
    let v = backing(&out);
    let min_between = |a: f64, b: f64| v.iter().filter(|(t, _)| *t >= a && *t < b).map(|p| p.1).fold(0.0f64, f64::min);
    // the cue alone before the pairings (1 s): no response; the reflex during the pairings; the
    // cue alone after them (23 s and 26 s): the robot backs
    assert_eq!(min_between(0.0, 4.0), 0.0, "no response to the cue before learning");
    assert!(min_between(4.0, 5.5) < -0.4, "the reflex backs on the obstacle");
    assert!(min_between(23.0, 24.5) < -0.4 && min_between(26.0, 27.5) < -0.4, "the cue alone backs after learning: {v:?}");
    // the learned weight, from the replay's summary: from 2 to over 20 (the cue then suffices)
    let line = summary.lines().find(|l| l.starts_with("c__cue -> c__bak")).unwrap_or_else(|| panic!("{summary}"));
    let cols: Vec<&str> = line.split_whitespace().collect();
    let (end, start): (f64, f64) = (cols[4].parse().unwrap(), cols[5].parse().unwrap());
    assert!(start == 2.0 && end > 20.0, "{line}");

    // the GPU gives the same bag, byte for byte
    if !common::gpus(1) {
        return;
    }
    let gpu = dir.path().join("cuda.mcap");
    replay_conditioning(&gpu, "cuda");
    assert!(std::fs::read(&out).unwrap() == std::fs::read(&gpu).unwrap(), "CPU and CUDA output bags differ");
}

#[test]
fn a_learned_genome_holds_the_weights_and_grown_pairs_and_loads_like_any_genome() {
    use neuroburst::genome::learned_genome;
    let g = random_plastic(7);
    let mut b = CpuBackend::new(Brain::build(&g, 1, false), Readback::All);
    let learned = run(&mut b, 7, 0..30).pop().unwrap().learned;
    assert!(learned.grown.len() > 3, "associative pairs grew");
    let out = learned_genome(&g, &learned, 30);
    let again = Genome::from_yaml_str(&out.to_yaml()).expect("the learned genome loads");
    let mut fresh = CpuBackend::new(Brain::build(&again, 2, false), Readback::All);
    let st = fresh.snapshot().unwrap().learned;
    assert_eq!(st.synapses, learned.synapses, "every plastic synapse with its learned weight");
    assert_eq!(st.grown, learned.grown, "the grown pairs");
    // a listed synapse out of its area is an error naming the mapping and the entry
    let mut bad = out.clone();
    bad.mappings[1].synapses.as_mut().unwrap()[0][1] = 10_000;
    let e = Genome::from_yaml_str(&bad.to_yaml()).unwrap_err().to_string();
    assert!(e.contains("mapping #1") && e.contains("synapses[0]"), "{e}");
}

#[test]
fn export_and_inspect_show_what_the_conditioning_brain_learned_and_the_learned_genome_responds_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let ex = common::root().join("examples/conditioning");
    let (ckpt, learned, out) = (dir.path().join("c.ckpt"), dir.path().join("learned.yaml"), dir.path().join("o.mcap"));
    let arg = |p: &std::path::Path| p.to_str().unwrap().to_string();
    common::ok(common::replay_example("conditioning", &ex.join("input.mcap"), &out, &["--checkpoint", &arg(&ckpt)]));
    let o = common::ok(common::neuroburst(&[
        "export",
        "--checkpoint",
        &arg(&ckpt),
        "--genome",
        &arg(&ex.join("genome.yaml")),
        "--out",
        &arg(&learned),
    ]));
    assert!(o.contains("c__cue -> c__bak") && o.contains("34 / 34.00 / 34"), "{o}");
    let i = common::ok(common::neuroburst(&["inspect", "--genome", &arg(&ex.join("genome.yaml")), "--checkpoint", &arg(&ckpt), "--json"]));
    let v: serde_json::Value = serde_json::from_str(&i).unwrap();
    assert_eq!(v["plastic"][0]["mean"], 34.0, "{i}");
    assert_eq!(v["learned_at_burst"], 301);
    // the learned genome backs on the cue alone from its first trial (1 s)
    let (bag, config) = (arg(&ex.join("input.mcap")), arg(&ex.join("config.yaml")));
    common::ok(common::neuroburst(&["replay", "--bag", &bag, "--genome", &arg(&learned), "--config", &config, "--out", &arg(&out)]));
    let v = backing(&out);
    assert!(v.iter().filter(|(t, _)| (1.0..2.5).contains(t)).any(|p| p.1 < -0.4), "{v:?}");
}

/// Bursts 1..=bursts of [`run`]'s input, learning switched as `switches` say (after burst k, on or
/// off); the state after each burst.
fn run_switched(b: &mut dyn Backend, seed: u64, bursts: usize, switches: &[(usize, bool)]) -> Vec<neuroburst::model::NeuronState> {
    let mut rng = seed;
    let mut out = Vec::new();
    for k in 1..=bursts {
        b.burst(random_input(&mut rng).as_slice()).unwrap();
        for &(_, on) in switches.iter().filter(|s| s.0 == k) {
            b.set_learning(on).unwrap();
        }
        out.push(b.snapshot().unwrap());
    }
    out
}

#[test]
fn learning_switched_off_freezes_every_weight_and_switched_on_follows_the_rule_again() {
    // a switch after burst k holds from the learning of burst k + 2's firing on (the GPU's
    // learning of burst k + 1's may be under way); off, nothing changes nor grows
    let switches = [(30, false), (31, true), (32, false), (120, true), (121, false), (121, true), (200, false), (203, true)];
    let bursts = 320;
    let mut learns = vec![true; bursts + 2];
    for &(k, on) in &switches {
        learns[k + 2..].fill(on);
    }
    for seed in [7, 8] {
        let g = random_plastic(seed);
        let mut b = CpuBackend::new(Brain::build(&g, 2, false), Readback::All);
        let states = run_switched(&mut b, seed, bursts, &switches);
        let (mut frozen, mut moved) = (0, 0);
        each_synapse(&g, &states, |t, s, was, rule, hs, hd| {
            let expected = match (was, learns[t as usize]) {
                (Some(w), true) => rule.update(t, w, hs, hd),
                (Some(w), false) => w,
                (None, on) => {
                    assert!(on && rule.grows(t, (s.source, hs), (s.target, hd)), "burst {t}: {s:?} appeared (learning {on})");
                    rule.ltp
                }
            };
            assert_eq!(s.weight, expected, "seed {seed}, burst {t}, learning {}: {s:?}", learns[t as usize]);
            if learns[t as usize] {
                moved += (Some(expected) != was) as u32;
            } else {
                frozen += (rule.update(t, s.weight, hs, hd) != s.weight) as u32;
            }
        });
        assert!(frozen > 100 && moved > 100, "seed {seed}: the rule would have moved {frozen} frozen weights; {moved} moved");
    }
}

#[test]
fn a_brain_whose_learning_is_off_fires_like_its_snapshot_restored() {
    // switching off pays every deferred depression: the weights the bursts propagate are those a
    // snapshot reports, as in a brain restored from it (whose deferrals start again from 0)
    for seed in [9, 10] {
        let g = random_plastic(seed);
        let mut a = CpuBackend::new(Brain::build(&g, 1, false), Readback::All);
        let mut states = run_switched(&mut a, seed, 150, &[(100, false)]);
        let mut b = CpuBackend::new(Brain::build(&g, 3, false), Readback::All);
        b.set_learning(false).unwrap();
        b.restore(&states[104]).unwrap();
        // the same input from burst 106 on
        let fresh = run(&mut b, seed, 105..150);
        assert_eq!(fresh, states.split_off(105), "seed {seed}: frozen vs restored");
    }
}
