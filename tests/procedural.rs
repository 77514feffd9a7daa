//! Procedural connectivity: a brain whose mappings are drawn again when their sources fire gives
//! the same fired sets and state, bit for bit, as the same brain stored (docs/capacity.md).

use crate::common;

use neuroburst::backend::Readback;
use neuroburst::brain::Brain;
use neuroburst::connectome::storage::{apply, Budget, Storage};
use neuroburst::partition::Strategy;
use neuroburst::selftest::{
    all_procedural, cpu_candidate, cuda_candidate, parity, parity_with, procedural_candidate, random_fanout_genome, random_genome,
    sharded_candidate, ParityConfig,
};
use neuroburst::workload::Workload;

#[test]
fn procedural_brains_fire_as_stored_ones_on_random_brains_of_every_morphology_kind() {
    let cfg = ParityConfig { brains: 12, bursts: 300, seed: 900, max_neurons: 3000, candidate_parts: 3 };
    let report = parity(&cfg, &procedural_candidate(&cpu_candidate, false)).unwrap();
    println!("{report}");
    assert!(report.fired() > 10_000, "the brains fired too little to tell: {report}");
}

#[test]
fn procedural_shards_fire_as_a_stored_brain() {
    let cfg = ParityConfig { brains: 4, bursts: 200, seed: 70, max_neurons: 2500, candidate_parts: 1 };
    let sharded = sharded_candidate(3, Strategy::RoundRobin, vec![]);
    let report = parity(&cfg, &procedural_candidate(&sharded, false)).unwrap();
    println!("{report}");
}

#[test]
fn a_procedural_mapping_stores_nothing_and_counts_what_it_would_have_stored() {
    let w = Workload { neurons: 20_000, fanout: 30, rate: 0.01, seed: 3 };
    let stored = Brain::build(&w.genome(), 2, false);
    let procedural = Brain::build(&all_procedural(&w.genome()), 2, false);
    assert_eq!(stored.connectome.synapses(), 600_000);
    assert_eq!(procedural.connectome.synapses(), 0);
    assert_eq!(procedural.connectome.procedural_synapses(), 600_000);
    assert!(procedural.connectome.mappings[0].procedural);
    // with an attractivity the rows' lengths vary: counted from the keep draws alone, the same
    let mut g = w.genome();
    g.mappings[0].attractivity = 70.0;
    let (stored, procedural) = (Brain::build(&g, 2, false), Brain::build(&all_procedural(&g), 2, false));
    let kept = stored.connectome.synapses();
    assert!((400_000..440_000).contains(&kept), "{kept}");
    assert_eq!(procedural.connectome.procedural_synapses(), kept);
    assert_eq!(procedural.connectome.mappings[0].dead, stored.connectome.mappings[0].dead);
}

#[test]
fn every_random_genome_draws_the_same_synapses_again() {
    // the rows drawn again are the rows stored: targets and contributions, for every source
    for seed in 0..16 {
        let g = random_genome(seed, 2000);
        let stored = Brain::build(&g, 1, false);
        let p = Brain::build(&all_procedural(&g), 1, false);
        let (c, part) = (&stored.connectome, &stored.connectome.parts[0]);
        let plastic_base = c.plastic.as_ref().map_or(u32::MAX, |pl| pl.base);
        let rules = p.connectome.procedural.clone();
        let mut drawer = neuroburst::connectome::Drawer::default();
        for s in 0..c.neurons {
            let mut want: Vec<(u32, i32)> = part
                .row(s)
                .filter(|&i| part.codes.get(i) < plastic_base)
                .map(|i| (part.targets[i], c.contributions[part.codes.get(i) as usize]))
                .filter(|e| e.1 != 0)
                .collect();
            let mut got = Vec::new();
            if let Some(r) = &rules {
                r.each(&mut drawer, s, |t, v| got.push((t, v)));
            }
            // what stays stored in the procedural brain (plastic, listed) is not drawn again
            let kept = &p.connectome.parts[0];
            want.retain(|&(t, v)| {
                !kept.row(s).any(|i| kept.targets[i] == t && p.connectome.contributions[kept.codes.get(i) as usize] == v)
            });
            want.sort_unstable();
            got.sort_unstable();
            assert_eq!(got, want, "genome seed {seed}, source {s}");
        }
    }
}

#[test]
fn fanout_brains_drawn_as_a_gpu_draws_them_fire_as_stored_ones() {
    // the closed forms only (the GPU's), on the CPU: the rule the GPU follows, checked in CI
    let cfg = ParityConfig { brains: 8, bursts: 300, seed: 40, max_neurons: 3000, candidate_parts: 2 };
    let report = parity_with(&cfg, &random_fanout_genome, &procedural_candidate(&cpu_candidate, true)).unwrap();
    println!("{report}");
    let drawn: usize =
        (40..48).map(|seed| gpu_placed(&random_fanout_genome(seed, 3000)).mappings.iter().filter(|m| m.procedural).count()).sum();
    assert!(drawn >= 16, "only {drawn} closed-form mappings in the brains checked");
}

/// `g` with every mapping the GPU can draw again procedural.
fn gpu_placed(g: &neuroburst::genome::Genome) -> neuroburst::genome::Genome {
    let layout = neuroburst::model::Layout::from_genome(g);
    let budget = Budget { synapses: u64::MAX, from: "no limit".into() };
    apply(g, &layout, Storage::Procedural, true, &budget).0
}

#[test]
fn a_closed_form_gives_the_rows_the_build_draws() {
    let (mut checked, mut with_attractivity) = (0, 0);
    for seed in 0..12 {
        let g = gpu_placed(&random_fanout_genome(seed, 2000));
        let stored = Brain::build(&random_fanout_genome(seed, 2000), 1, false);
        let p = Brain::build(&g, 1, false);
        let Some(rules) = &p.connectome.procedural else { continue };
        let part = &stored.connectome.parts[0];
        let forms = rules.closed_forms();
        checked += forms.len();
        with_attractivity += forms.iter().filter(|f| f.keep.is_some()).count();
        for f in forms {
            for s in f.src_first..f.src_first + f.src_count {
                let mut got: Vec<u32> = (0..f.fanout).filter_map(|j| f.target(s, j)).collect();
                got.sort_unstable();
                let mut want: Vec<u32> =
                    part.row(s).map(|i| part.targets[i]).filter(|t| (f.dst_first..f.dst_first + f.dst_count).contains(t)).collect();
                want.sort_unstable();
                // the row holds other mappings' synapses too: the closed form's are among them
                let mut rest = want.clone();
                for t in &got {
                    let i =
                        rest.binary_search(t).unwrap_or_else(|_| panic!("seed {seed} mapping {}: source {s} -> {t} not stored", f.index));
                    rest.remove(i);
                }
            }
        }
    }
    assert!(checked >= 12, "only {checked} closed forms checked");
    assert!(with_attractivity >= 3, "only {with_attractivity} closed forms keep draws at random");
}

/// On wgpu: procedural brains of every kind fire as the stored brain on the CPU (drawn on the
/// host, summed on the device). Skips, saying why, without a wgpu device.
#[test]
fn wgpu_procedural_brains_fire_as_stored_ones_on_the_cpu() {
    if common::wgpu_device().is_none() {
        return;
    }
    let cfg = ParityConfig { brains: 6, bursts: 200, seed: 540, max_neurons: 3000, candidate_parts: 1 };
    let report = parity_with(&cfg, &every_kind_genome, &procedural_candidate(&neuroburst::selftest::wgpu_candidate, false)).unwrap();
    assert!(report.fired() > 1000, "the brains fired too little to tell: {report}");
}

/// On a GPU: procedural brains fire as the stored brain on the CPU, on both paths (resident
/// kernel and graphs): fanouts drawn in closed form, and every other kind (voxel morphologies,
/// tiles, probabilities, out-degrees that vary) drawn row by row. Skips, saying why, without a GPU.
#[test]
fn gpu_procedural_brains_fire_as_stored_ones_on_the_cpu() {
    if !common::gpus(1) {
        return;
    }
    let gpu = cuda_candidate(0);
    let cfg = ParityConfig { brains: 8, bursts: 300, seed: 500, max_neurons: 4000, candidate_parts: 1 };
    let report = parity_with(&cfg, &random_fanout_genome, &procedural_candidate(&gpu, true)).unwrap();
    println!("{report}");
    // closed forms alone: the resident kernel draws them (a brain with rows runs on graphs)
    let report = parity_with(&ParityConfig { brains: 4, seed: 580, ..cfg.clone() }, &closed_form_genome, &procedural_candidate(&gpu, true));
    println!("{}", report.unwrap());
    let cfg_all = ParityConfig { brains: 12, seed: 540, ..cfg.clone() };
    let report = parity_with(&cfg_all, &every_kind_genome, &procedural_candidate(&gpu, true)).unwrap();
    println!("{report}");
    assert!(report.fired() > 10_000, "the brains fired too little to tell: {report}");
    // two shards on one GPU: each draws the synapses onto its own neurons
    let shards = sharded_candidate(2, Strategy::RoundRobin, vec![0, 0]);
    let report =
        parity_with(&ParityConfig { brains: 4, seed: 520, ..cfg.clone() }, &random_fanout_genome, &procedural_candidate(&shards, true))
            .unwrap();
    println!("{report}");
    let report =
        parity_with(&ParityConfig { brains: 4, seed: 560, ..cfg }, &every_kind_genome, &procedural_candidate(&shards, true)).unwrap();
    println!("{report}");
}

/// [`random_genome`] with its tile choosing tiles by a pattern on some axes, and its patterns
/// morphology of three pairs: every morphology kind, and the GPU's walk over a union of boxes.
fn every_kind_genome(seed: u64, max_neurons: u32) -> neuroburst::genome::Genome {
    use neuroburst::genome::morphology::PatternCoord::{Any, Exact, Except, Same};
    use neuroburst::genome::Morphology;
    let mut g = random_genome(seed, max_neurons);
    if let Some(Morphology::Tile(t)) = g.morphologies.get_mut("tile") {
        t.src_pattern = [vec![[1, 1], [2, 1], [0, 0]], vec![[0, 0], [1, 2]], vec![]][(seed % 3) as usize].clone();
    }
    if seed.is_multiple_of(2) {
        let pairs = vec![
            [[Any, Any, Any], [Same, Except, Any]],
            [[Exact(0), Any, Any], [Any, Exact(1), Same]],
            [[Any, Exact(1), Any], [Exact(2), Same, Exact(0)]],
        ];
        g.morphologies.insert("pat".into(), Morphology::Patterns(pairs));
    }
    g
}

#[test]
fn a_gpu_draws_every_mapping_kind_again() {
    // every mapping that is neither plastic nor listed: in closed form or row by row
    let mut kinds = std::collections::BTreeSet::new();
    for seed in 0..16 {
        let g = every_kind_genome(seed, 3000);
        let placed = gpu_placed(&g);
        for (m, p) in g.mappings.iter().zip(&placed.mappings) {
            assert_eq!(p.procedural, m.plasticity.is_none() && m.synapses.is_none(), "seed {seed}: {} ({})", m.morphology, m.source);
            if p.procedural {
                kinds.insert(m.morphology.clone());
            }
        }
        let b = Brain::build(&placed, 1, false);
        if let Some(rules) = &b.connectome.procedural {
            let rows = rules.flat_rows().unwrap();
            assert_eq!(
                rules.closed_forms().len() + rows.maps.iter().filter(|m| m.flags & neuroburst::connectome::flat::F_DRAWN != 0).count(),
                placed.mappings.iter().filter(|m| m.procedural).count(),
                "seed {seed}"
            );
        }
    }
    // the genome's six morphologies and the eight built-in voxel ones
    assert_eq!(kinds.len(), 14, "{kinds:?}");
}

/// A random fanout brain whose every mapping has a closed form: all attractivities 100, nothing
/// plastic or associative.
fn closed_form_genome(seed: u64, max_neurons: u32) -> neuroburst::genome::Genome {
    let mut g = random_fanout_genome(seed, max_neurons);
    g.mappings.retain(|m| m.morphology != "associative_memory");
    for m in &mut g.mappings {
        m.attractivity = 100.0;
        m.plasticity = None;
    }
    g
}

/// On a GPU: a brain of closed forms built on the GPU holds the host build's rows, in the same
/// order, with the same codes, and fires as the CPU does.
#[test]
fn the_gpu_builds_the_rows_the_host_builds() {
    use neuroburst::backend::cuda::CudaBackend;
    if !common::gpus(1) {
        return;
    }
    let mut genomes: Vec<_> = (0..10).map(|seed| closed_form_genome(seed, 4000)).collect();
    genomes.push(Workload { neurons: 300_000, fanout: 100, rate: 0.01, seed: 9 }.genome());
    let mut synapses = 0;
    for g in &genomes {
        let layout = neuroburst::model::Layout::from_genome(g);
        assert!(neuroburst::connectome::storage::gpu_buildable(g, &layout, 2048), "{}", g.name);
        let host = Brain::build(g, 1, false);
        let marked = Brain::build(&all_procedural(g), 1, false);
        let gpu = CudaBackend::built_on_gpu(marked, Readback::All, 0, false).unwrap();
        synapses += common::assert_rows(gpu.stored_rows().unwrap(), &host.connectome.parts[0], &g.name);
        // the accumulators the uploaded rows' exact input bound gives: the bound of the blocks
        // summed as the rows were drawn holds it
        let uploaded = CudaBackend::new(host, Readback::All, 0).unwrap();
        assert_eq!(gpu.wide_accumulators(), uploaded.wide_accumulators(), "{}", g.name);
        assert!(gpu.input_bound() >= uploaded.input_bound() && uploaded.input_bound() > Some(0), "{}", g.name);
    }
    // heavy synapses (weight 255, PSP 255): the blocks' bound passes i32, so the input is summed
    // neuron by neuron, as over the uploaded rows
    let mut heavy = Workload { neurons: 300_000, fanout: 100, rate: 0.01, seed: 9 }.genome();
    heavy.areas[0].psp = 255.0;
    heavy.mappings[0].weight = 255.0;
    let gpu = CudaBackend::built_on_gpu(Brain::build(&all_procedural(&heavy), 1, false), Readback::All, 0, false).unwrap();
    let uploaded = CudaBackend::new(Brain::build(&heavy, 1, false), Readback::All, 0).unwrap();
    assert!(gpu.wide_accumulators() && uploaded.wide_accumulators());
    assert_eq!(gpu.input_bound(), uploaded.input_bound());
    println!("{} brains built on the GPU, {synapses} synapses compared", genomes.len());
    let cand = |g: &neuroburst::genome::Genome, _: Brain, r: Readback| {
        let marked = Brain::build(&all_procedural(g), 1, false);
        Ok(Box::new(CudaBackend::built_on_gpu(marked, r, 0, false)?) as Box<dyn neuroburst::backend::Backend>)
    };
    let cfg = ParityConfig { brains: 6, bursts: 300, seed: 600, max_neurons: 4000, candidate_parts: 1 };
    println!("{}", parity_with(&cfg, &closed_form_genome, &cand).unwrap());
}

fn neuroburst(args: &[&str]) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_neuroburst")).args(args).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "neuroburst {args:?} failed: {text}");
    text
}

#[test]
fn the_command_line_checks_inspects_and_measures_procedural_brains() {
    let out = neuroburst(&["selftest", "--backend", "cpu", "--procedural", "--brains", "3", "--bursts", "80", "--max-neurons", "1500"]);
    assert!(out.contains("parity OK"), "{out}");
    let rover = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/genomes/rover.yaml");
    let out = neuroburst(&["inspect", "--genome", rover, "--connectome", "procedural", "--json"]);
    let v: serde_json::Value = serde_json::Deserializer::from_str(&out[out.find('{').unwrap()..]).into_iter().next().unwrap().unwrap();
    assert_eq!(v["synapses"], 0, "{out}");
    assert_eq!(v["procedural_synapses"], 24, "{out}");
    assert_eq!(v["procedural_bytes_saved"], 144, "{out}");
    assert!(v["mappings"].as_array().unwrap().iter().all(|m| m["procedural"] == true), "{out}");
    let table = neuroburst(&["inspect", "--genome", rover, "--connectome", "procedural"]);
    assert!(table.contains("procedural") && table.contains("memory saved"), "{table}");
    let json = |args: &[&str]| -> serde_json::Value {
        let out = neuroburst(args);
        serde_json::from_str(out.lines().rev().find(|l| l.starts_with('{')).unwrap()).unwrap()
    };
    let common = ["bench", "--backend", "cpu", "--neurons", "20000", "--fanout", "50", "--bursts", "30", "--warmup", "3", "--json"];
    let stored = json(&common);
    let drawn = json(&[&common[..], &["--procedural"]].concat());
    let by_config = json(&[&common[..], &["--set", "backend.connectome=procedural"]].concat());
    assert_eq!((stored["synapses"].as_u64(), stored["procedural_synapses"].as_u64()), (Some(1_000_000), Some(0)));
    assert_eq!((drawn["synapses"].as_u64(), drawn["procedural_synapses"].as_u64()), (Some(0), Some(1_000_000)));
    assert_eq!(by_config["procedural_synapses"], drawn["procedural_synapses"]);
    // the same bursts: the same firing
    assert_eq!(stored["fired_per_burst"], drawn["fired_per_burst"]);
    assert!(drawn["host_peak_bytes"].as_u64().unwrap() > 0);
}

/// On a GPU: a brain of more than one 2M-neuron tile with a fanout of 256 or more sorts its
/// procedural synapses by target and sums them in shared memory (`procbin.cu`); it fires as the
/// stored brain on the CPU, burst by burst. Skips without a GPU.
#[test]
fn a_large_procedural_brain_bins_its_synapses_on_the_gpu_and_fires_as_the_cpu() {
    if !common::gpus(1) {
        return;
    }
    let w = Workload { neurons: 5_000_000, fanout: 260, rate: 0.01, seed: 21 };
    let mut g = w.genome();
    // a second, inhibitory fanout: two maps in the bins
    let mut second = g.mappings[0].clone();
    g.morphologies.insert(
        "random_5".into(),
        neuroburst::genome::Morphology::Random(neuroburst::genome::RandomSpec { probability: None, fanout: Some(5) }),
    );
    second.morphology = "random_5".into();
    second.sign = neuroburst::genome::Sign::Inhibitory;
    second.weight = 0.5;
    g.mappings.push(second);
    let fired = binned_as_the_cpu(&w, &g, 30);
    println!("binned procedural brain of 5M neurons: {fired} fired in 30 bursts, as the CPU");
    assert!(fired > 1_000_000);
    // in parts (each binning its own fired neurons' draws onto the whole brain, then adding every
    // part's partial sums of its neurons): two on one GPU (graphs), and on two GPUs where the
    // machine has them; on four, a brain whose parts bin (2M neurons or more each)
    for devices in [vec![0, 0], vec![0, 1]].into_iter().filter(|d| d.iter().all(|&k| k < neuroburst::backend::gpu_count())) {
        let fired = binned_parts_as_the_cpu(&w, &g, 20, &devices);
        println!("binned procedural brain of 5M neurons on GPUs {devices:?}: {fired} fired in 20 bursts, as the CPU");
    }
    if neuroburst::backend::gpu_count() >= 4 {
        let w = Workload { neurons: 10_000_000, fanout: 300, rate: 0.01, seed: 26 };
        let fired = binned_parts_as_the_cpu(&w, &w.genome(), 8, &[0, 1, 2, 3]);
        println!("binned procedural brain of 10M neurons on GPUs [0, 1, 2, 3]: {fired} fired in 8 bursts, as the CPU");
    }
    // five maps: a sub-bin entry's target and map index no longer fit 16 bits (32-bit entries)
    for weight in [0.25, 0.75, 1.5] {
        let mut more = g.mappings[1].clone();
        more.weight = weight;
        more.sign = neuroburst::genome::Sign::Excitatory;
        g.mappings.push(more);
    }
    let w = Workload { seed: 24, ..w };
    let fired = binned_as_the_cpu(&w, &g, 10);
    println!("binned procedural brain of five maps: {fired} fired in 10 bursts, as the CPU");
    assert!(fired > 300_000);
    // draws kept at random (an attractivity): `proc_bin` checks each draw's keep draw
    g.mappings.truncate(2);
    g.mappings[0].attractivity = 70.0;
    let fired = binned_as_the_cpu(&w, &g, 10);
    println!("binned procedural brain of draws kept at random: {fired} fired in 10 bursts, as the CPU");
    assert!(fired > 100_000);
    // beside the bins, mappings without a closed form, drawn row by row: a projector onto a small
    // area, and from it a probability back onto the large one, its psp divided by each row's count
    let mut v = g.areas[0].clone();
    (v.id, v.dims, v.psp_uniform_distribution, v.psp) = ("v".into(), [64, 64, 1], false, 255.0);
    g.areas.push(v);
    let sparse = neuroburst::genome::RandomSpec { probability: Some(0.0005), fanout: None };
    g.morphologies.insert("sparse".into(), neuroburst::genome::Morphology::Random(sparse));
    let mut onto = g.mappings[0].clone();
    (onto.destination, onto.morphology, onto.weight, onto.attractivity) = ("v".into(), "projector".into(), 0.02, 100.0);
    let mut back = g.mappings[0].clone();
    (back.source, back.morphology, back.weight, back.attractivity) = ("v".into(), "sparse".into(), 8.0, 80.0);
    g.mappings.extend([onto, back]);
    let fired = binned_as_the_cpu(&w, &g, 12);
    println!("binned procedural brain with rows drawn one by one: {fired} fired in 12 bursts, as the CPU");
    assert!(fired > 100_000);
    g.mappings.truncate(2);
    g.areas.truncate(1);
    // the largest contributions there are (weight and psp 255): a neuron's 32-bit sum of a burst
    // overflows, its sub-bin is added again in 64 bits
    let w = Workload { neurons: 2_200_000, fanout: 260, rate: 0.01, seed: 22 };
    let mut g = w.genome();
    g.mappings[0].weight = 255.0;
    g.areas.iter_mut().for_each(|a| a.psp = 255.0);
    let fired = binned_as_the_cpu(&w, &g, 5);
    println!("binned brain of the largest contributions: {fired} fired in 5 bursts, as the CPU");
    // in two parts on GPU 0 (on two GPUs, parts this small run linked, unbinned): a partial sum
    // that overflows leaves its sub-bin's sum in the spill, flagged
    binned_parts_as_the_cpu(&w, &g, 5, &[0, 0]);
    println!("binned brain of the largest contributions in two parts: as the CPU");
    // more than the bins hold: 60% of 2.1M neurons fire onto a 100K-neuron area of the second
    // tile, 3.2e8 synapses into a bin of 2.7e8 entries and six sub-bins of 2.1e6; what finds no
    // room is added into the spill, which `proc_sum` adds in
    let w = Workload { neurons: 2_200_000, fanout: 256, rate: 0.6, seed: 25 };
    let mut g = w.genome();
    let mut small = g.areas[0].clone();
    small.id = "s".into();
    small.dims = [100_000, 1, 1];
    g.areas[0].dims = [2_100_000, 1, 1];
    g.areas.push(small);
    g.mappings[0].destination = "s".into();
    let fired = binned_as_the_cpu(&w, &g, 3);
    println!("binned brain past its bins' room: {fired} fired in 3 bursts, as the CPU");
    assert!(fired > 3_000_000);
    // in two parts on GPU 0: each part's sub-bins overflow, the spill's sums taken by the
    // neurons' owner
    binned_parts_as_the_cpu(&w, &g, 3, &[0, 0]);
    println!("binned brain past its bins' room in two parts: as the CPU");
    // 25 tiles of 2M neurons (the CPU draws it again too: too large
    // to store here)
    let w = Workload { neurons: 52_000_000, fanout: 256, rate: 0.001, seed: 23 };
    let fired = binned_as_the_cpu(&w, &w.genome(), 4);
    println!("binned brain of 52M neurons in 25 tiles: {fired} fired in 4 bursts, as the CPU");
    assert!(fired > 100_000);
}

/// Run `g` on the CPU (stored where it fits) and procedural (binned) on GPU 0 for `bursts` bursts of `w`'s
/// injections: the same fired neurons and potentials every burst. Returns the neurons fired.
fn binned_as_the_cpu(w: &Workload, g: &neuroburst::genome::Genome, bursts: u64) -> usize {
    use neuroburst::backend::cuda::CudaBackend;
    let mut gpu = CudaBackend::new(Brain::build(&all_procedural(g), 1, false), Readback::All, 0).unwrap();
    fires_as_the_cpu(w, g, bursts, &mut gpu, "GPU 0")
}

/// As [`binned_as_the_cpu`], the brain in parts on `devices` (one each, in round-robin ranges).
fn binned_parts_as_the_cpu(w: &Workload, g: &neuroburst::genome::Genome, bursts: u64, devices: &[usize]) -> usize {
    use neuroburst::backend::cuda::MultiGpu;
    use neuroburst::backend::Backend;
    let (brain, plan) = Brain::build_sharded(&all_procedural(g), devices.len(), Strategy::RoundRobin, 1, false).unwrap();
    let mut gpu = MultiGpu::new(brain, &plan, Readback::All, devices).unwrap();
    assert!(gpu.info().device.contains("graphs"), "binned parts run on graphs: {}", gpu.info().device);
    fires_as_the_cpu(w, g, bursts, &mut gpu, &format!("GPUs {devices:?}"))
}

/// `gpu` against `g` on the CPU (stored where it fits, else procedural) for `bursts` bursts of
/// `w`'s injections: the same fired neurons and potentials every burst. Returns the neurons fired.
fn fires_as_the_cpu(
    w: &Workload,
    g: &neuroburst::genome::Genome,
    bursts: u64,
    gpu: &mut dyn neuroburst::backend::Backend,
    on: &str,
) -> usize {
    use neuroburst::backend::cpu::CpuBackend;
    use neuroburst::backend::Backend;
    let stored = w.neurons as u64 * w.fanout as u64 <= 2_000_000_000;
    let on_cpu = if stored { g.clone() } else { all_procedural(g) };
    let mut cpu = CpuBackend::new(Brain::build(&on_cpu, rayon::current_num_threads(), false), Readback::All);
    let mut inj = neuroburst::model::Injections::new();
    let mut fired = 0;
    for t in 1..=bursts {
        w.injection(t, &mut inj);
        let a = cpu.burst(inj.as_slice()).unwrap();
        let (af, av) = (a.fired.to_vec(), a.potentials.to_vec());
        let b = gpu.burst(inj.as_slice()).unwrap();
        assert!(af == b.fired && av == b.potentials, "burst {t}: {} fired on the CPU, {} on {on}", af.len(), b.fired.len());
        fired += af.len();
    }
    fired
}

/// On GPUs: a brain of closed forms spread over several GPUs, each building its own part (its
/// rows counted on the GPU, then drawn), fires as the CPU, burst by burst: two parts on GPU 0 (the
/// graphs path, so one GPU checks it too), then 2 and 4 GPUs where the machine has them (the
/// resident kernels, linked). Skips without a GPU.
#[test]
fn gpus_build_their_own_parts_and_fire_as_the_cpu() {
    use neuroburst::backend::cuda::MultiGpu;
    use neuroburst::backend::{Backend, BackendError};
    use neuroburst::partition::{incoming_per_area, ShardPlan};
    if !common::gpus(1) {
        return;
    }
    let available = neuroburst::backend::gpu_count();
    let layouts: Vec<Vec<usize>> =
        [vec![0, 0], vec![0, 1], vec![0, 1, 2, 3]].into_iter().filter(|d| d.iter().all(|&g| g < available)).collect();
    for devices in layouts {
        let cand = |g: &neuroburst::genome::Genome, _: Brain, r: Readback| {
            let layout = neuroburst::model::Layout::from_genome(g);
            let marked = Brain::build(&all_procedural(g), 1, false);
            let incoming = incoming_per_area(&layout, &marked.connectome.mappings);
            let plan =
                ShardPlan::new(&layout, &incoming, devices.len(), Strategy::RoundRobin).map_err(|e| BackendError::Device(e.to_string()))?;
            Ok(Box::new(MultiGpu::built_on_gpus(marked, &plan, r, &devices, false)?) as Box<dyn Backend>)
        };
        let cfg = ParityConfig { brains: 6, bursts: 300, seed: 610, max_neurons: 4000, candidate_parts: 1 };
        println!("GPUs {devices:?}: {}", parity_with(&cfg, &closed_form_genome, &cand).unwrap());
        // the input bounds of the blocks, summed from every GPU's draws, hold the whole brain's
        // (uploaded to one GPU), and choose the same accumulators
        for g in [closed_form_genome(611, 4000), Workload { neurons: 300_000, fanout: 100, rate: 0.01, seed: 9 }.genome()] {
            let uploaded = neuroburst::backend::cuda::CudaBackend::new(Brain::build(&g, 1, false), Readback::All, 0).unwrap();
            let layout = neuroburst::model::Layout::from_genome(&g);
            let marked = Brain::build(&all_procedural(&g), 1, false);
            let plan =
                ShardPlan::new(&layout, &incoming_per_area(&layout, &marked.connectome.mappings), devices.len(), Strategy::RoundRobin)
                    .unwrap();
            let multi = MultiGpu::built_on_gpus(marked, &plan, Readback::All, &devices, false).unwrap();
            assert!(multi.input_bound() >= uploaded.input_bound() && uploaded.input_bound() > Some(0), "GPUs {devices:?}: {}", g.name);
            let one = uploaded.wide_accumulators();
            assert!(multi.input_bound().is_some_and(|b| (b > i32::MAX as u64) == one), "GPUs {devices:?}: {}", g.name);
        }
    }
}
