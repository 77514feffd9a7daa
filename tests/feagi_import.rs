//! FEAGI genome import: the two real genomes in `tests/fixtures/feagi/`, and small crafted genomes
//! for every warning and error the fixtures do not trigger.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use neuroburst::backend::cpu::CpuBackend;
use neuroburst::backend::{Backend, Readback};
use neuroburst::brain::Brain;
use neuroburst::genome::feagi::{import_str, Imported};
use neuroburst::genome::{AreaKind, Genome, Leak, Morphology, Sign};
use neuroburst::model::InjectionSlice;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/feagi/");

/// A fixture's path; fails (never skips) when a fixture is missing.
fn fixture(name: &str) -> PathBuf {
    let dir = Path::new(FIXTURES);
    assert!(
        dir.is_dir(),
        "the FEAGI fixtures folder {} is missing: these tests read the real genomes from tests/fixtures/feagi/",
        dir.display()
    );
    let path = dir.join(name);
    assert!(path.is_file(), "FEAGI fixture {} is missing", path.display());
    path
}

fn import_fixture(name: &str) -> Imported {
    let text = std::fs::read_to_string(fixture(name)).unwrap();
    import_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn has_warning(warnings: &[String], parts: &[&str]) -> bool {
    warnings.iter().any(|w| parts.iter().all(|p| w.contains(p)))
}

#[test]
fn essential_genome_imports() {
    let Imported { genome: g, warnings } = import_fixture("essential_genome.json");
    for w in &warnings {
        println!("warning: {w}");
    }
    assert_eq!(g.name, "the_essential_genome");
    assert_eq!(g.burst_rate_hz, 15.0);
    assert_eq!(g.seed, 0);
    assert_eq!(g.areas.len(), 24);

    let power = g.area("_power").unwrap();
    assert_eq!((power.kind, power.dims, power.psp), (AreaKind::Core, [1, 1, 1], 255.0));
    assert_eq!(power.neuron.threshold, 0.1);
    let vision = g.area("iic400").unwrap();
    assert_eq!((vision.kind, vision.dims, vision.name.as_str()), (AreaKind::Sensor, [128, 128, 3], "vision_C"));
    let tile = g.area("iic000").unwrap();
    assert_eq!((tile.dims, tile.neuron.consecutive_fire_limit, tile.neuron.snooze_period), ([16, 16, 3], 3, 1));
    assert_eq!(tile.position, [20, 30, -20]);
    let motor = g.area("omot00").unwrap();
    assert_eq!((motor.kind, motor.dims), (AreaKind::Motor, [8, 1, 1]));
    assert_eq!(g.area("ogaz00").unwrap().dims, [4, 1, 10]);
    let forward = g.area("c__for").unwrap();
    assert_eq!(forward.kind, AreaKind::Interneuron);
    assert_eq!(forward.neuron.leak, Leak::Linear(10.0));
    assert!(forward.neuron.mp_charge_accumulation && forward.psp_uniform_distribution);
    assert_eq!(forward.neuron.excitability, 1.0);

    // 4 + 4 projector rules of c__for / c__bac, iic100 -> c__bac, iic700 -> c__for, 8 motor patterns
    assert_eq!(g.mappings.len(), 18);
    let m = g.mappings.iter().find(|m| m.source == "cRSMot").unwrap();
    assert_eq!((m.destination.as_str(), m.morphology.as_str(), m.weight, m.sign), ("omot00", "0_0_0-_0_0_0", 1.0, Sign::Excitatory));
    assert_eq!(m.attractivity, 100.0);

    // the library comes along: 56 entries, less the 7 built-ins, less episodic_memory
    assert_eq!(g.morphologies.len(), 48);
    assert!(matches!(&g.morphologies["tile"], Morphology::Tile(t) if t.src_seed == [16, 16, 1] && t.mapper == "projector"));

    assert!(has_warning(&warnings, &["area '_power'", "pstcr_", "clamped"]), "{warnings:?}");
    assert!(has_warning(&warnings, &["morphology 'episodic_memory'", "not supported"]), "{warnings:?}");
    assert_eq!(warnings.len(), 2, "{warnings:?}");
}

#[test]
fn barebones_genome_imports() {
    let Imported { genome: g, warnings } = import_fixture("barebones_genome.json");
    for w in &warnings {
        println!("warning: {w}");
    }
    assert_eq!(g.name, "the_barebones_genome");
    assert_eq!(g.burst_rate_hz, 40.0); // legacy `burst_delay` 0.025 s
    let ids: Vec<&str> = g.areas.iter().map(|a| a.id.as_str()).collect();
    assert_eq!(ids, ["_death", "_power"]);
    assert!(g.areas.iter().all(|a| a.kind == AreaKind::Core && a.dims == [1, 1, 1]));
    assert!(g.mappings.is_empty());
    assert_eq!(g.morphologies.len(), 48);
    // excite-f 1 is the fraction 1 in FEAGI's units (above 1 it would be an older percent)
    assert_eq!(g.area("_power").unwrap().neuron.excitability, 1.0);
    assert!(has_warning(&warnings, &["area '_power'", "pstcr_", "clamped"]), "{warnings:?}");
    assert!(has_warning(&warnings, &["morphology 'episodic_memory'"]), "{warnings:?}");
}

#[test]
fn essential_genome_builds_and_runs() {
    let g = Genome::load(&fixture("essential_genome.json")).unwrap();
    let brain = Brain::build(&g, 2, false);
    for m in &brain.connectome.mappings {
        println!("{:>7} -> {:<7} {:<14} {:>5} synapses", m.source, m.destination, m.morphology, m.synapses);
    }
    let total = brain.connectome.synapses();
    println!("{} neurons, {total} synapses", brain.layout.neurons);
    // By hand: c__for and c__bac (1x1x1) project onto four 1x1x1 motor interneurons each (8);
    // iic100 and iic700 (16x16x3 = 768 voxels) project onto 1x1x1 areas (768 each); the eight
    // motor interneurons reach one omot00 voxel each through their patterns (8). Attractivity is
    // 100 everywhere, so nothing is drawn away: 8 + 2 * 768 + 8 = 1552. The genome's own
    // `stats.innate_synapse_count` (400) is stale, like its area (23) and neuron (13845) counts:
    // the blueprint has 24 areas and 55357 neurons (iic400 alone is 128x128x3).
    assert_eq!(brain.layout.neurons, 55_357);
    assert_eq!(total, 1552);

    let power_area = brain.layout.area_index("_power").unwrap();
    let power = brain.layout.neuron_id(power_area, [0, 0, 0, 0]).unwrap();
    let mut backend = CpuBackend::new(brain, Readback::All);
    for t in 1..=100 {
        let out = backend.burst(InjectionSlice::EMPTY).unwrap();
        assert!(out.fired.contains(&power), "_power did not fire in burst {t}");
    }
}

#[test]
fn truncated_genome_error_names_the_file_and_a_line() {
    let bytes = std::fs::read(fixture("essential_genome.json")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("truncated_essential.json");
    std::fs::write(&path, &bytes[..5000]).unwrap();
    let e = Genome::load(&path).unwrap_err().to_string();
    println!("{e}");
    assert!(e.contains("truncated_essential.json"), "{e}");
    assert!(e.contains("line "), "{e}");
}

#[test]
fn yaml_round_trip_keeps_the_genome_and_its_connectome() {
    for name in ["essential_genome.json", "barebones_genome.json"] {
        let g = import_fixture(name).genome;
        let yaml = g.to_yaml();
        let back = Genome::from_yaml_str(&yaml).unwrap_or_else(|e| panic!("{name}: {e}\n{yaml}"));
        assert_eq!(back, g, "{name}");
        let a = Brain::build(&g, 1, false).connectome.synapses();
        let b = Brain::build(&back, 1, false).connectome.synapses();
        assert_eq!(a, b, "{name}");
    }
}

// ---- crafted genomes ----

/// The genes of a plain 1x1x1 custom area, with `extra` genes added or replaced.
fn area_genes(id: &str, extra: Value) -> Value {
    let mut genes = json!({
        format!("_____10c-{id}-cx-__name-t"): id,
        format!("_____10c-{id}-cx-_group-t"): "CUSTOM",
        format!("_____10c-{id}-cx-___bbx-i"): 1,
        format!("_____10c-{id}-cx-___bby-i"): 1,
        format!("_____10c-{id}-cx-___bbz-i"): 1,
    });
    for (k, v) in extra.as_object().unwrap() {
        genes[format!("_____10c-{id}-{k}")] = v.clone();
    }
    genes
}

/// A genome of areas `(id, extra genes)` and a morphology library.
fn genome_json(areas: &[(&str, Value)], morphologies: Value) -> String {
    let mut blueprint = serde_json::Map::new();
    for (id, extra) in areas {
        blueprint.extend(area_genes(id, extra.clone()).as_object().unwrap().clone());
    }
    json!({
        "genome_id": "test", "genome_title": "Crafted", "version": "2.1",
        "physiology": {"simulation_timestep": 0.1},
        "neuron_morphologies": morphologies,
        "blueprint": blueprint,
    })
    .to_string()
}

fn import(areas: &[(&str, Value)], morphologies: Value) -> Imported {
    import_str(&genome_json(areas, morphologies)).unwrap_or_else(|e| panic!("{e}"))
}

fn import_error(areas: &[(&str, Value)], morphologies: Value) -> String {
    match import_str(&genome_json(areas, morphologies)) {
        Ok(_) => panic!("the genome should not import"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn warnings_name_areas_and_mappings() {
    let imported = import(
        &[
            ("c_src_", json!({"cx-dstmap-d": {"m_mem_": [["projector", [1, 1, 1], -300, true, 0.5, 2, 3, 5]]}})),
            ("m_mem_", json!({"cx-_group-t": "MEMORY", "cx-memory-b": true, "cx-mem__t-i": 100})),
            ("c_flag", json!({"cx-memory-b": true, "nx-leak_v-f": 0.5, "nx-mp_psp-b": true, "nx-pstcr_-f": 300, "cx-weird_-i": 1})),
            ("c_oth_", json!({"cx-weird_-i": 2, "cx-synatt-f": 50, "nx-excite-f": 150})),
        ],
        json!({}),
    );
    let (g, w) = (&imported.genome, &imported.warnings);
    for w in w {
        println!("warning: {w}");
    }
    assert!(has_warning(w, &["area 'm_mem_'", "memory areas are not supported yet; imported as a plain interneuron area"]), "{w:?}");
    assert!(has_warning(w, &["area 'c_flag'", "memory areas are not supported yet", "memory-b"]), "{w:?}");
    assert!(has_warning(w, &["area 'c_flag'", "leak_v"]), "{w:?}");
    assert!(has_warning(w, &["area 'c_flag'", "mp_psp"]), "{w:?}");
    assert!(has_warning(w, &["area 'c_flag'", "pstcr_", "clamped"]), "{w:?}");
    assert!(has_warning(w, &["area 'c_oth_'", "excite", "clamped"]), "{w:?}");
    assert!(!w.iter().any(|w| w.contains("plasticity")), "a plastic rule with its window imports silently: {w:?}");
    assert!(has_warning(w, &["'c_src_' -> 'm_mem_'", "multiplier", "clamped"]), "{w:?}");
    // an unknown gene warns once, naming the area where it was first seen
    assert_eq!(w.iter().filter(|w| w.contains("weird_")).count(), 1, "{w:?}");
    assert!(has_warning(w, &["weird_", "area 'c_flag'"]), "{w:?}");
    // memory bookkeeping genes are ignored silently
    assert!(!w.iter().any(|w| w.contains("mem__t")), "{w:?}");

    assert_eq!(g.area("m_mem_").unwrap().kind, AreaKind::Interneuron);
    assert_eq!(g.area("c_flag").unwrap().psp, 255.0);
    assert_eq!(g.area("c_oth_").unwrap().neuron.excitability, 1.0);
    let m = &g.mappings[0];
    assert_eq!((m.weight, m.sign), (255.0, Sign::Inhibitory));
    let p = m.plasticity.as_ref().unwrap();
    assert_eq!((p.constant, p.ltp_multiplier, p.ltd_multiplier, p.window), (0.5, 2.0, 3.0, 5));
}

#[test]
fn attractivity_is_the_destination_areas() {
    let g = import(
        &[
            (
                "c_src_",
                json!({"cx-synatt-f": 10, "cx-dstmap-d": {
                    "c_dst_": [["projector", [1, 1, 1], 1, false, 1, 1, 1]],
                    "c_src_": [{"morphology_id": "projector", "synapse_attractivity": 75}],
                }}),
            ),
            ("c_dst_", json!({"cx-synatt-f": 40})),
        ],
        json!({}),
    )
    .genome;
    let to = |d: &str| g.mappings.iter().find(|m| m.destination == d).unwrap().attractivity;
    assert_eq!(to("c_dst_"), 40.0);
    // a rule-level `synapse_attractivity` (feagi-core) wins over the area's
    assert_eq!(to("c_src_"), 75.0);
}

#[test]
fn negative_postsynaptic_current_makes_inhibitory_mappings() {
    let imported = import(
        &[
            ("c_inh_", json!({"nx-pstcr_-f": -2, "cx-dstmap-d": {"c_dst_": [["projector", [1, 1, 1], 3, false, 1, 1, 1]]}})),
            ("c_dst_", json!({})),
        ],
        json!({}),
    );
    let g = &imported.genome;
    assert_eq!(g.area("c_inh_").unwrap().psp, 2.0);
    assert_eq!((g.mappings[0].weight, g.mappings[0].sign), (3.0, Sign::Inhibitory));
    assert!(has_warning(&imported.warnings, &["area 'c_inh_'", "inhibitory"]), "{:?}", imported.warnings);
}

#[test]
fn unsupported_morphologies_drop_their_mappings_with_a_warning() {
    let imported = import(
        &[
            (
                "c_src_",
                json!({"cx-dstmap-d": {"c_dst_": [
                    ["episodic_memory", [1, 1, 1], 1, false, 1, 1, 1],
                    ["expander_x", [1, 1, 1], 1, false, 1, 1, 1],
                ]}}),
            ),
            ("c_dst_", json!({})),
        ],
        json!({
            "episodic_memory": {"type": "functions", "parameters": {}, "class": "core"},
            "expander_x": {"type": "functions", "parameters": {}, "class": "core"},
        }),
    );
    let w = &imported.warnings;
    assert!(has_warning(w, &["morphology 'episodic_memory'", "not supported"]), "{w:?}");
    assert!(has_warning(w, &["'c_src_' -> 'c_dst_'", "episodic_memory", "dropped"]), "{w:?}");
    let kept: Vec<&str> = imported.genome.mappings.iter().map(|m| m.morphology.as_str()).collect();
    assert_eq!(kept, ["expander_x"]);
}

#[test]
fn errors_name_the_area_and_the_gene() {
    let e = import_error(&[("c_src_", json!({"cx-dstmap-d": {"c_gone": [["projector", [1, 1, 1], 1, false, 1, 1, 1]]}}))], json!({}));
    assert!(e.contains("area 'c_src_'") && e.contains("_____10c-c_src_-cx-dstmap-d") && e.contains("'c_gone'"), "{e}");

    let e = import_error(&[("c_src_", json!({"cx-dstmap-d": {"c_src_": [["no_such_shape", [1, 1, 1], 1, false, 1, 1, 1]]}}))], json!({}));
    assert!(e.contains("area 'c_src_'") && e.contains("dstmap-d") && e.contains("'no_such_shape'"), "{e}");

    let mut genes = area_genes("c_flat", json!({}));
    genes.as_object_mut().unwrap().remove("_____10c-c_flat-cx-___bby-i");
    let text = json!({"version": "2.1", "blueprint": genes, "physiology": {"simulation_timestep": 0.1}}).to_string();
    let e = import_str(&text).err().unwrap().to_string();
    assert!(e.contains("area 'c_flat'") && e.contains("_____10c-c_flat-cx-___bby-i") && e.contains("missing"), "{e}");

    let e = import_error(&[("c_bad_", json!({"cx-___bbx-i": 0}))], json!({}));
    assert!(e.contains("area 'c_bad_'") && e.contains("___bbx"), "{e}");
    let e = import_error(&[("c_bad_", json!({"cx-_group-t": "SOMETHING"}))], json!({}));
    assert!(e.contains("area 'c_bad_'") && e.contains("_group") && e.contains("SOMETHING"), "{e}");
    let e = import_error(&[("c_bad_", json!({"nx-refrac-i": "long"}))], json!({}));
    assert!(e.contains("area 'c_bad_'") && e.contains("refrac"), "{e}");
    let e = import_error(&[("c_bad_", json!({"cx-dstmap-d": {"c_bad_": [["projector", [1, 1, 1], 1]]}}))], json!({}));
    assert!(e.contains("area 'c_bad_'") && e.contains("4 to 9"), "{e}");
}

#[test]
fn versions_it_does_not_know_are_refused_by_name() {
    let genome = |top: Value| {
        let mut g: Value = serde_json::from_str(&genome_json(&[("c_one__", json!({}))], json!({}))).unwrap();
        g.as_object_mut().unwrap().remove("version");
        g.as_object_mut().unwrap().extend(top.as_object().unwrap().clone());
        import_str(&g.to_string())
    };
    for ok in [json!({"version": "2.0"}), json!({"version": "3.0"}), json!({"genome_schema_version": 7, "version": "3.0"})] {
        assert!(genome(ok.clone()).is_ok(), "{ok}");
    }
    for (bad, field) in [
        (json!({"version": "1.0"}), "version"),
        (json!({"version": "4.0"}), "version"),
        (json!({"genome_schema_version": 8}), "genome_schema_version"),
    ] {
        let e = genome(bad.clone()).err().unwrap_or_else(|| panic!("{bad} imported")).to_string();
        assert!(e.contains(field) && e.contains("2.x") && e.contains("3.0"), "{e}");
    }
    let w = genome(json!({})).unwrap().warnings;
    assert!(has_warning(&w, &["no `version`"]), "{w:?}");
}

#[test]
fn a_3_0_genome_names_areas_by_their_2x_ids_and_keeps_the_rest_readable() {
    // FEAGI 3.0: base64 ids, the power area drives, the destination map keyed by base64; a vision
    // tile of unit 4 (no 2.x id) keeps its base64 id and gets a name; a 3.0 custom id of 8 letters
    let power = "X19fcG93ZXI=";
    let tile = "aXN2aQkABAA=";
    let custom = "Y3VzdG9tMDE="; // custom01
    let mut blueprint = serde_json::Map::new();
    for (id, group) in [(power, "CORE"), (tile, "IPU"), (custom, "CUSTOM")] {
        let mut genes = area_genes(id, json!({"cx-_group-t": group, "nx-fire_t-f": 0.10000000149011612}));
        genes.as_object_mut().unwrap().remove(&format!("_____10c-{id}-cx-__name-t"));
        blueprint.extend(genes.as_object().unwrap().clone());
    }
    blueprint.insert(
        format!("_____10c-{power}-cx-dstmap-d"),
        json!({custom: [{"morphology_id": "projector", "morphology_scalar": [1, 1, 1],
        "postSynapticCurrent_multiplier": 1, "plasticity_flag": false, "plasticity_window": 0, "synaptic_delay_bursts": 1}]}),
    );
    let text = json!({"version": "3.0", "genome_schema_version": 7, "genome_title": "v3", "blueprint": blueprint, "modulators": {},
        "physiology": {"simulation_timestep": 0.1}})
    .to_string();
    let Imported { genome: g, warnings } = import_str(&text).unwrap_or_else(|e| panic!("{e}"));
    assert!(warnings.is_empty(), "{warnings:?}");
    let ids: Vec<&str> = g.areas.iter().map(|a| a.id.as_str()).collect();
    assert_eq!(ids, ["_power", tile, "custom01"]);
    assert_eq!(g.area(tile).unwrap().name, "FEAGI svi unit 4 sub-unit 0");
    assert_eq!(g.area("_power").unwrap().neuron.threshold, 0.1);
    assert_eq!((g.mappings[0].source.as_str(), g.mappings[0].destination.as_str()), ("_power", "custom01"));
    let brain = Brain::build(&g, 1, false);
    let neuron = brain.layout.neuron_id(brain.layout.area_index("_power").unwrap(), [0, 0, 0, 0]).unwrap();
    let mut backend = CpuBackend::new(brain, Readback::All);
    assert!(backend.burst(InjectionSlice::EMPTY).unwrap().fired.contains(&neuron), "the 3.0 power area drives");
    // two ids that are one area are refused
    let mut twice = blueprint.clone();
    twice.extend(area_genes("_power", json!({"cx-_group-t": "CORE"})).as_object().unwrap().clone());
    let text = json!({"version": "3.0", "blueprint": twice}).to_string();
    let e = import_str(&text).err().unwrap().to_string();
    assert!(e.contains("_power") && e.contains(power) && e.contains("same area"), "{e}");
}

#[test]
fn load_attaches_the_file_to_import_errors() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("broken.json");
    std::fs::write(&path, genome_json(&[("c_bad_", json!({"cx-___bbz-i": -1}))], json!({}))).unwrap();
    let e = Genome::load(&path).unwrap_err().to_string();
    assert!(e.contains("broken.json") && e.contains("area 'c_bad_'") && e.contains("___bbz"), "{e}");
}

#[test]
fn function_morphologies_build_as_feagi_defines_them() {
    // expander_x from a 3-wide area onto an 8-wide one: source column 1 reaches the destination
    // columns whose 3-bit value has the middle bit set (2, 3, 6, 7); lateral_pairs_x pairs 0-1.
    let g = import(
        &[
            (
                "c_src_",
                json!({"cx-___bbx-i": 3, "cx-dstmap-d": {
                    "c_dst_": [["expander_x", [1, 1, 1], 1, false, 1, 1, 1]],
                    "c_src_": [["lateral_pairs_x", [1, 1, 1], 1, false, 1, 1, 1]],
                }}),
            ),
            ("c_dst_", json!({"cx-___bbx-i": 8})),
        ],
        json!({}),
    )
    .genome;
    let brain = Brain::build(&g, 1, false);
    let counts: Vec<(&str, u64)> = brain.connectome.mappings.iter().map(|m| (m.morphology.as_str(), m.synapses)).collect();
    // expander_x: column 0 -> 4 (MSB), column 1 -> 4, column 2 -> 4; lateral pairs: 0 <-> 1 only
    assert_eq!(counts, [("expander_x", 12), ("lateral_pairs_x", 2)]);
}

#[test]
fn plastic_rules_import_and_associative_memory_learns_whatever_its_flag() {
    let imported = import(
        &[
            (
                "c_src_",
                json!({"cx-dstmap-d": {
                    "c_dst_": [["projector", [1, 1, 1], 2, true, 3, 1, 0.5]],
                    "c_mem_": [["associative_memory", [1, 1, 1], 1, false, 4, 1, 1, 3]]
                }}),
            ),
            ("c_dst_", json!({})),
            ("c_mem_", json!({})),
        ],
        json!({"associative_memory": {"type": "functions", "parameters": {}}}),
    );
    let (g, w) = (&imported.genome, &imported.warnings);
    let window = neuroburst::model::plasticity::DEFAULT_WINDOW;
    assert!(has_warning(w, &["no plasticity_window", &format!("{window} bursts")]), "a 7-element rule takes the default: {w:?}");
    let by_dst = |d: &str| g.mappings.iter().find(|m| m.destination == d).unwrap();
    assert_eq!(by_dst("c_dst_").plasticity.as_ref().unwrap().window, window);
    let assoc = by_dst("c_mem_");
    assert_eq!(assoc.morphology, "associative_memory");
    assert_eq!(assoc.plasticity.as_ref().map(|p| (p.constant, p.window)), Some((4.0, 3)), "plastic though its flag is false");
    g.validate().unwrap();
}
