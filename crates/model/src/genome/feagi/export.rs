//! A genome written as FEAGI genome 3.0 (flat gene keys, base64 cortical ids), for FEAGI's own
//! loader (feagi-evolutionary `load_genome_from_json`), with a warning for what FEAGI's format
//! cannot hold. Read back by [`super::import_str`], it is the same genome, up to what the warnings
//! say and FEAGI's 32-bit floats.
//!
//! | neuroburst | FEAGI 3.0 |
//! |---|---|
//! | area id | its FEAGI id ([`CorticalId::from_legacy`]): a 3.0 id's base64 text as is; `_power`, `_death`, `iicK00`, `omot00`, `ogaz00` as FEAGI's migrator writes them; an interneuron (or a core area other than `_power` / `_death`) of at most 8 printable characters starting with `c` (`_` for core) padded with `_`; any other interneuron or core area `c` + its first characters (made unique); any other sensor / motor area FEAGI's miscellaneous input / output unit (`imis` / `omis`) of the next free unit index |
//! | `name` (or the id when empty), `kind` | `__name-t`, `_group-t` (IPU, OPU, CORE, CUSTOM) |
//! | `dims`, `position`, `neurons_per_voxel` | `___bbx/y/z-i`, `rcordx/y/z-i`, `_n_cnt-i` |
//! | `psp`, `psp_uniform_distribution` | `pstcr_-f`, `pspuni-b` |
//! | neuron parameters | `fire_t-f`, `ftincx/y/z-f`, `fthlim-f`, `refrac-i`, `c_fr_c-i`, `snooze-i` and `snooze-f` (FEAGI's saver writes the one, its loader reads the other), `excite-f` (a fraction), `mp_acc-b`, `leak_c-f` (a fraction, or units per burst when above 1) |
//! | mappings | `dstmap-d` rule objects: `postSynapticCurrent_multiplier` = ±weight (negative: inhibitory), plasticity, `synaptic_delay_bursts` 1, and `synapse_attractivity` when it differs from the destination's `synatt-f` (the attractivity of the first mapping into it) |
//! | `morphologies` | `neuron_morphologies`, with FEAGI's standard entries for the built-ins |
//! | `burst_rate_hz` | `physiology.simulation_timestep` |

use std::collections::{BTreeMap, HashMap, HashSet};

use serde_json::{json, Map, Value};

use super::ids::{Class, CorticalId};
use crate::genome::{Area, AreaKind, Genome, Leak, Mapping, Morphology, Sign};

/// A genome in FEAGI's format, and what it could not hold.
/// FEAGI's core areas (feagi-structures `CoreCorticalType`).
const FEAGI_CORE: [[u8; 8]; 7] = [*b"___power", *b"___death", *b"___fatig", *b"___pain_", *b"___pleas", *b"___fear_", *b"___hope_"];

/// A genome as FEAGI 2.x JSON, and what FEAGI cannot say of it.
pub struct Exported {
    /// The FEAGI 2.x genome document.
    pub json: Value,
    /// What the export could not carry over exactly, one line each.
    pub warnings: Vec<String>,
}

/// FEAGI's standard definitions of the morphologies neuroburst knows by name.
fn standard(name: &str) -> Option<Value> {
    Some(match name {
        "block_to_block" => json!({"type": "vectors", "parameters": {"vectors": [[0, 0, 0]]}, "class": "core"}),
        "all_to_all" => json!({"type": "patterns", "parameters": {"patterns": [[["?", "?", "?"], ["*", "*", "*"]]]}, "class": "core"}),
        n if Morphology::builtin(n).is_some() => json!({"type": "functions", "parameters": {}, "class": "core"}),
        _ => return None,
    })
}

/// The name of a built-in morphology variant (a genome may define `m: projector`).
fn builtin_name(m: &Morphology) -> Option<&'static str> {
    Morphology::BUILTIN_NAMES.into_iter().find(|n| Morphology::builtin(n).as_ref() == Some(m))
}

/// `g` as a FEAGI 2.x genome (the inverse of the import, as far as FEAGI can say it).
pub fn export(g: &Genome) -> Exported {
    let mut warnings = Vec::new();
    let ids = cortical_ids(g, &mut warnings);

    // morphologies: the standard ones, then the genome's (a function under another name is
    // written as the function's own name in the rules that use it)
    let mut library: BTreeMap<String, Value> =
        Morphology::BUILTIN_NAMES.iter().filter_map(|n| standard(n).map(|v| (n.to_string(), v))).collect();
    let mut renamed: HashMap<&str, &str> = HashMap::new();
    let mut unsupported: HashSet<&str> = HashSet::new();
    for (name, m) in &g.morphologies {
        let entry = match m {
            Morphology::Vectors(v) => json!({"type": "vectors", "parameters": {"vectors": v}, "class": "custom"}),
            Morphology::Patterns(p) => json!({"type": "patterns", "parameters": {"patterns": p}, "class": "custom"}),
            Morphology::Tile(t) => json!({"type": "composite", "class": "custom", "parameters": {
                "src_seed": t.src_seed, "src_pattern": t.src_pattern, "mapper_morphology": t.mapper}}),
            Morphology::Random(_) => {
                warnings.push(format!(
                    "morphology '{name}': FEAGI has no random morphology; not written, and the mappings that use it are dropped"
                ));
                unsupported.insert(name);
                continue;
            }
            // a built-in under its own name is in the library already; under another name the
            // rules use the built-in's
            other => {
                if let Some(b) = builtin_name(other).filter(|b| b != name) {
                    renamed.insert(name, b);
                }
                continue;
            }
        };
        library.insert(name.clone(), entry);
    }

    // the attractivity FEAGI keeps on the destination area: that of the first mapping into it
    let mut attractivity: HashMap<&str, f64> = HashMap::new();
    for m in &g.mappings {
        attractivity.entry(m.destination.as_str()).or_insert(m.attractivity);
    }
    let mut dstmaps: HashMap<&str, Map<String, Value>> = HashMap::new();
    for (i, m) in g.mappings.iter().enumerate() {
        let about = format!("mapping #{i} '{}' -> '{}' (morphology '{}')", m.source, m.destination, m.morphology);
        if unsupported.contains(m.morphology.as_str()) {
            warnings.push(format!("{about}: dropped (FEAGI has no such morphology)"));
            continue;
        }
        let Some(source) = g.area(&m.source) else { continue };
        let rule =
            rule(m, source, attractivity[m.destination.as_str()], renamed.get(m.morphology.as_str()).copied(), &about, &mut warnings);
        let dst = ids[m.destination.as_str()].base64();
        let list = dstmaps.entry(m.source.as_str()).or_default().entry(dst).or_insert_with(|| json!([]));
        if let Value::Array(rules) = list {
            rules.push(rule);
        }
    }

    let mut blueprint = Map::new();
    for a in &g.areas {
        let prefix = format!("_____10c-{}", ids[a.id.as_str()].base64());
        let dstmap = Value::Object(dstmaps.remove(a.id.as_str()).unwrap_or_default());
        let synatt = attractivity.get(a.id.as_str()).copied().unwrap_or(100.0);
        let core = ids[a.id.as_str()].class() == Some(Class::Core);
        for (gene, value) in area_genes(a, core, synatt, dstmap, &mut warnings) {
            blueprint.insert(format!("{prefix}-{gene}"), value);
        }
    }

    let json = json!({
        "genome_id": g.name,
        "genome_title": g.name,
        "genome_description": g.description,
        "version": "3.0",
        "genome_schema_version": 3,
        "timestamp": 0.0,
        "physiology": {"simulation_timestep": 1.0 / g.burst_rate_hz},
        "neuron_morphologies": library,
        "blueprint": blueprint,
        "brain_regions": {},
        "hosts": {},
    });
    Exported { json, warnings }
}

/// Every area's FEAGI id (see the module's table), unique.
fn cortical_ids<'a>(g: &'a Genome, warnings: &mut Vec<String>) -> HashMap<&'a str, CorticalId> {
    let mut out = HashMap::new();
    let mut taken = HashSet::new();
    let mut later = Vec::new();
    for a in &g.areas {
        let start = match a.kind {
            AreaKind::Interneuron => b'c',
            AreaKind::Core => b'_',
            AreaKind::Sensor => b'i',
            AreaKind::Motor => b'o',
        };
        let fits = |c: &CorticalId| match (a.kind, c.class()) {
            (AreaKind::Sensor, Some(Class::Input)) | (AreaKind::Motor, Some(Class::Output)) => true,
            (AreaKind::Interneuron, Some(Class::Custom | Class::Memory)) => true,
            (AreaKind::Core, Some(Class::Core)) => FEAGI_CORE.contains(&c.0),
            _ => false,
        };
        // a printable input / output id would be read for binary flags: only the legacy names FEAGI
        // maps (`iic400`, ...) count
        let legacy = || CorticalId::from_legacy(&a.id, start).filter(|c| c.io().is_none() || !c.0[4..].iter().all(u8::is_ascii_graphic));
        let own = CorticalId::from_base64(&a.id).or_else(legacy).filter(fits);
        match own.filter(|c| !taken.contains(c)) {
            Some(c) => {
                taken.insert(c);
                out.insert(a.id.as_str(), c);
            }
            None => later.push(a),
        }
    }
    let (mut inputs, mut outputs) = (0u16, 0u16);
    for a in later {
        let c = match a.kind {
            AreaKind::Sensor | AreaKind::Motor => {
                let output = a.kind == AreaKind::Motor;
                let next = if output { &mut outputs } else { &mut inputs };
                loop {
                    let c = CorticalId::misc(output, *next);
                    *next = next.wrapping_add(1);
                    if !taken.contains(&c) {
                        break c;
                    }
                }
            }
            _ => {
                let stem: Vec<u8> = a.id.bytes().filter(|b| b.is_ascii_alphanumeric() || *b == b'_').take(7).collect();
                let mut bytes = [b'_'; 8];
                bytes[0] = b'c';
                bytes[1..1 + stem.len()].copy_from_slice(&stem);
                let mut n = 0u32;
                let mut c = CorticalId(bytes);
                while taken.contains(&c) {
                    let tail = n.to_string();
                    c.0[8 - tail.len()..].copy_from_slice(tail.as_bytes());
                    n += 1;
                }
                c
            }
        };
        if a.kind == AreaKind::Core {
            warnings.push(format!("area '{}': not one of FEAGI's core areas; written as a FEAGI custom area", a.id));
        }
        warnings.push(format!("area '{}' has no FEAGI id; written as {} ({})", a.id, c.base64(), String::from_utf8_lossy(&c.0[..4])));
        taken.insert(c);
        out.insert(a.id.as_str(), c);
    }
    out
}

fn rule(m: &Mapping, source: &Area, synatt: f64, renamed: Option<&str>, about: &str, warnings: &mut Vec<String>) -> Value {
    let mut weight = m.weight;
    if let Some(psp) = m.psp.filter(|&p| p != source.psp) {
        if source.psp > 0.0 {
            weight = m.weight * psp / source.psp;
            warnings.push(format!(
                "{about}: FEAGI keeps the psp per source area ({}); the mapping's psp {psp} is folded into its multiplier ({weight})",
                source.psp
            ));
        } else {
            warnings.push(format!("{about}: FEAGI keeps the psp per source area (0 here); the mapping's psp {psp} is lost"));
        }
    }
    let multiplier = if m.sign == Sign::Inhibitory { -weight } else { weight };
    let mut rule = json!({
        "morphology_id": renamed.unwrap_or(&m.morphology),
        "morphology_scalar": m.scalar,
        "postSynapticCurrent_multiplier": multiplier,
        "plasticity_flag": m.plasticity.is_some(),
        "plasticity_constant": m.plasticity.as_ref().map_or(1.0, |p| p.constant),
        "ltp_multiplier": m.plasticity.as_ref().map_or(1.0, |p| p.ltp_multiplier),
        "ltd_multiplier": m.plasticity.as_ref().map_or(1.0, |p| p.ltd_multiplier),
        "plasticity_window": m.plasticity.as_ref().map_or(0, |p| p.window),
        "synaptic_delay_bursts": 1,
    });
    if m.attractivity != synatt {
        rule["synapse_attractivity"] = json!(m.attractivity);
    }
    if m.max_synapses.is_some() {
        warnings.push(format!("{about}: FEAGI has no synapse cap; `max_synapses` is not written"));
    }
    if let Some(s) = &m.synapses {
        warnings.push(format!(
            "{about}: a FEAGI genome holds no synapses; its {} learned synapses are not written (keep the checkpoint, or the YAML)",
            s.len()
        ));
    }
    rule
}

fn area_genes(a: &Area, core: bool, synatt: f64, dstmap: Value, warnings: &mut Vec<String>) -> Vec<(&'static str, Value)> {
    let n = &a.neuron;
    let group = match a.kind {
        AreaKind::Sensor => "IPU",
        AreaKind::Motor => "OPU",
        _ if core => "CORE",
        _ => "CUSTOM",
    };
    let leak = match n.leak {
        Leak::Fraction(f) => f,
        Leak::Linear(u) if u > 1.0 => u,
        Leak::Linear(u) => {
            warnings.push(format!(
                "area '{}': a linear leak of {u} units per burst cannot be written (FEAGI reads leak_c-f up to 1 as a fraction); written as 0",
                a.id
            ));
            0.0
        }
    };
    let name = if a.name.is_empty() { a.id.clone() } else { a.name.clone() };
    vec![
        ("cx-__name-t", json!(name)),
        ("cx-_group-t", json!(group)),
        ("cx-___bbx-i", json!(a.dims[0])),
        ("cx-___bby-i", json!(a.dims[1])),
        ("cx-___bbz-i", json!(a.dims[2])),
        ("cx-rcordx-i", json!(a.position[0])),
        ("cx-rcordy-i", json!(a.position[1])),
        ("cx-rcordz-i", json!(a.position[2])),
        ("cx-_n_cnt-i", json!(a.neurons_per_voxel)),
        ("cx-synatt-f", json!(synatt)),
        ("cx-pspuni-b", json!(a.psp_uniform_distribution)),
        ("cx-memory-b", json!(false)),
        ("cx-de_gen-f", json!(0.0)),
        ("cx-dstmap-d", dstmap),
        ("nx-pstcr_-f", json!(a.psp)),
        ("nx-fire_t-f", json!(n.threshold)),
        ("nx-ftincx-f", json!(n.threshold_gradient[0])),
        ("nx-ftincy-f", json!(n.threshold_gradient[1])),
        ("nx-ftincz-f", json!(n.threshold_gradient[2])),
        ("nx-fthlim-f", json!(n.threshold_limit)),
        ("nx-refrac-i", json!(n.refractory_period)),
        ("nx-leak_c-f", json!(leak)),
        ("nx-leak_v-f", json!(0.0)),
        ("nx-c_fr_c-i", json!(n.consecutive_fire_limit)),
        ("nx-snooze-i", json!(n.snooze_period)),
        // FEAGI's loader (feagi-evolutionary 0.0.53) reads the snooze from `snooze-f`, its saver
        // writes `snooze-i`: both, so that FEAGI keeps it
        ("nx-snooze-f", json!(n.snooze_period)),
        ("nx-excite-f", json!(n.excitability)),
        ("nx-mp_acc-b", json!(n.mp_charge_accumulation)),
        ("nx-mp_psp-b", json!(false)),
    ]
}
