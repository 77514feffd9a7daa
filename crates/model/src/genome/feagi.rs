//! FEAGI genomes: a FEAGI 2.x or 3.0 JSON genome (flat gene keys; 6-character cortical ids in 2.x,
//! 8-byte base64 ids in 3.0, [`ids`]) becomes a [`Genome`], together with a warning for everything
//! that cannot be carried over exactly; [`export`] writes a genome back as FEAGI 3.0. The format is
//! described in docs/genome.md (section "FEAGI genomes"); this module documents
//! the choices.
//!
//! # What maps to what
//!
//! | FEAGI | here |
//! |---|---|
//! | `genome_title` (else `genome_id`) | `name`, lower-cased, every run of other characters turned into one `_` (`The Essential Genome` -> `the_essential_genome`) |
//! | `genome_description`, `genome_id`, `version` | `description` |
//! | `physiology.simulation_timestep` (legacy `burst_delay`), seconds | `burst_rate_hz = 1 / timestep` (30 with a warning when absent) |
//! | — | `seed: 0`: FEAGI draws synapses from an unseeded RNG, so there is no seed to carry over; change it in the YAML for another draw |
//! | `version` `2.0`/`2.1`/`3.0`, or `genome_schema_version` 2..=7 | read; any other version is refused |
//! | areas of `blueprint` | `areas`, ordered by id (byte order), which fixes the neuron ids; a 3.0 id is named by the 2.x id FEAGI made it from when there is one ([`ids`]), so a 2.x genome and FEAGI's 3.0 save of it are the same genome |
//! | `_group-t` IPU / OPU / CORE / CUSTOM / MEMORY | `sensor` / `motor` / `core` / `interneuron` / `interneuron` + warning |
//! | `___bbx/y/z-i` (required), `rcordx/y/z-i`, `_n_cnt-i`, `__name-t` | `dims`, `position`, `neurons_per_voxel`, `name` |
//! | `pstcr_-f` | `psp`, clamped to 0..255 with a warning; a negative value makes the area's outgoing mappings inhibitory (legacy FEAGI multiplies the rule's multiplier by it) |
//! | `pspuni-b` | `psp_uniform_distribution` (absent on `_power`: true, as in FEAGI) |
//! | every `-f` gene | the shortest decimal of the 32-bit float FEAGI holds (FEAGI saves 0.1 as 0.10000000149011612) |
//! | `fire_t-f`, `ftincx/y/z-f`, `fthlim-f` | `neuron.threshold` (default 1), `threshold_gradient`, `threshold_limit` |
//! | `refrac-i`, `c_fr_c-i`, `snooze-i` | `refractory_period`, `consecutive_fire_limit`, `snooze_period` |
//! | `leak_c-f` | `leak: {fraction: v}` when `v <= 1`, `leak: {linear: v}` (units per burst) when `v > 1` |
//! | `excite-f` | `excitability`: FEAGI's units (feagi-evolutionary `units::excitability_fraction`): `v` in 0..=1 is the fraction, `v > 1` an older genome's percent (`min(v / 100, 1)`) |
//! | `mp_acc-b` | `mp_charge_accumulation` |
//! | `synatt-f` | `attractivity` of every mapping *into* the area (see below) |
//! | `dstmap-d` | `mappings` (see below) |
//! | `neuron_morphologies` | `morphologies` (see below) |
//!
//! Warned about and ignored: `leak_v-f` (leak variability) when non-zero, `mp_psp-b` when true,
//! `de_gen-f` (degeneration) when non-zero, `memory-b` when true, unknown genes (once per gene
//! name). Ignored silently, as they change nothing in the simulation: `2dcorx/y`, `gd_vis`,
//! `subgrp`, `pstcrm` (psp maximum, a plasticity bound), `mem__t`, `mem_gr`, `mem_ls`, `tmpdpt`,
//! `devcnt`; the top-level `brain_regions` (grouping for display), `stats`, `signatures`,
//! `timestamp`, `hosts`, and the physiology keys other than the timestep.
//!
//! # Attractivity
//!
//! `synatt-f` is stored on an area, but it is a property of the synapses made *onto* it: legacy
//! FEAGI (feagi/feagi `src/evo/synapse.py`, `neighbor_builder`) keeps a candidate synapse when
//! `randrange(1, 100) < blueprint[destination]['synapse_attractivity']`. So every mapping gets the
//! destination area's `synatt-f` as its `attractivity` (percent). Current feagi-core reads a
//! rule-level `synapse_attractivity` instead; when a rule object has one, it wins. (FEAGI's
//! `randrange(1, 100) < a` keeps a pair with probability `(a - 1) / 99`; here it is `a / 100`, so
//! 100 and 0 mean the same and values in between differ by under 1 %.)
//!
//! # Mappings
//!
//! `dstmap-d` is `{destination id: [rule, ...]}`; a rule is an array
//! `[morphology_id, scalar, psc_multiplier, plasticity_flag(, plasticity_constant, ltp_multiplier,
//! ltd_multiplier, plasticity_window, synaptic_delay_bursts)]` (4 to 9 elements) or an object with
//! those names (FEAGI's `morphology_scalar`, `postSynapticCurrent_multiplier` or `psc_multiplier`,
//! ...). A synaptic delay other than 1 burst is imported as 1 with a warning. The scalar is `[sx, sy, sz]` or one
//! whole number for all three axes. `weight = |multiplier|` (clamped to 255 with a warning),
//! negative = inhibitory. A set plasticity flag makes the mapping plastic (docs/plasticity.md), as
//! does the `associative_memory` morphology whatever the flag; a rule without a window (or window 0, which
//! FEAGI's 3.0 save writes for it) takes [`crate::model::plasticity::DEFAULT_WINDOW`] (warned once). A rule whose morphology could not be imported (e.g.
//! `episodic_memory`) is dropped with a warning; a morphology that is neither defined nor built in,
//! or a destination that is not an area, is an error.
//!
//! # Morphologies
//!
//! Every representable entry of `neuron_morphologies` is imported, used or not, so that a converted
//! genome keeps its library: `vectors`, `patterns` (ints, `*`, `?`, `!`), and `composite` (`tile`,
//! whose mapper must be a built-in morphology). Entries that the built-ins already are need no
//! definition and are left out: the `functions` `projector`, `expander_x`, `reducer_x`, `randomizer`,
//! `lateral_pairs_x`, `last_to_first`, and `block_to_block` / `all_to_all` when they hold FEAGI's
//! standard definition. Other functions (`episodic_memory`, `memory`, `projector_xy`, ...), empty
//! vector or pattern lists and unknown types are skipped with a warning. The rules of the function
//! and composite morphologies, and where they come from in FEAGI, are on [`Morphology`]'s variants.
//!
//! [`Morphology`]: super::Morphology

mod blueprint;
pub mod export;
pub mod ids;
mod mappings;
mod morphologies;

use std::collections::HashSet;
use std::path::PathBuf;

use serde_json::{Map, Value};

use super::{Genome, GenomeError};

/// An imported genome and what could not be carried over exactly, one sentence per warning, each
/// naming the area, mapping or morphology it is about.
#[derive(Debug)]
pub struct Imported {
    /// The genome in neuroburst's own terms.
    pub genome: Genome,
    /// What the import could not carry over exactly, one line each (said to the user).
    pub warnings: Vec<String>,
}

/// Import a FEAGI genome from its JSON text. The result is validated. A JSON syntax error is a
/// [`GenomeError::Parse`] naming line and column; [`Genome::load`] puts the file name in front.
pub fn import_str(text: &str) -> Result<Imported, GenomeError> {
    let root: Value = serde_json::from_str(text)
        .map_err(|e| GenomeError::Parse { path: PathBuf::from("<feagi genome>"), message: format!("not valid FEAGI genome JSON: {e}") })?;
    let Value::Object(root) = root else {
        return Err(GenomeError::invalid("genome", "(top level)", "a FEAGI genome is a JSON object"));
    };
    let mut w = Warnings::default();
    check_top_level(&root, &mut w)?;

    let library = morphologies::import(root.get("neuron_morphologies"), &mut w)?;
    let blueprint = match root.get("blueprint") {
        Some(Value::Object(b)) => b,
        Some(_) => return Err(GenomeError::invalid("genome", "blueprint", "must be an object of gene keys")),
        None => return Err(GenomeError::invalid("genome", "blueprint", "missing: a FEAGI genome lists its areas there")),
    };
    let areas = blueprint::import(blueprint, &mut w)?;
    let mappings = mappings::import(&areas, &library, &mut w)?;
    let areas = areas.list;

    let genome = Genome {
        name: genome_name(&root),
        description: description(&root),
        burst_rate_hz: burst_rate(&root, &mut w)?,
        seed: 0,
        areas: areas.into_iter().map(|a| a.area).collect(),
        morphologies: library.defined,
        mappings,
    };
    genome.validate()?;
    Ok(Imported { genome, warnings: w.list })
}

/// Warnings in the order found; `once` keeps one per key (e.g. per unknown gene name).
#[derive(Default)]
struct Warnings {
    list: Vec<String>,
    seen: HashSet<String>,
}

impl Warnings {
    fn push(&mut self, message: String) {
        self.list.push(message);
    }

    fn once(&mut self, key: &str, message: impl FnOnce() -> String) {
        if self.seen.insert(key.to_string()) {
            self.list.push(message());
        }
    }
}

const TOP_LEVEL_KEYS: [&str; 18] = [
    "genome_id",
    "genome_title",
    "genome_description",
    "version",
    "neuron_morphologies",
    "physiology",
    "blueprint",
    "brain_regions",
    "stats",
    "signatures",
    "timestamp",
    "hosts",
    "genome_schema_version",
    "classifiers",
    "modulators",
    "brain_regions_root",
    "change_history",
    "visualization_voxel_granularity_overrides",
];

/// The newest `genome_schema_version` this importer knows (feagi-evolutionary 0.0.53); a flat
/// genome of any of 2..=7 has the same gene keys.
const NEWEST_SCHEMA: u64 = 7;

/// The version: `version` 2.x or 3.0, or `genome_schema_version` 2..=7 (FEAGI's own detector reads
/// the integer first); anything else is refused.
fn check_top_level(root: &Map<String, Value>, w: &mut Warnings) -> Result<(), GenomeError> {
    let known = "neuroburst reads FEAGI genomes 2.x (6-character cortical ids) and 3.0 (base64 ids), \
                 `genome_schema_version` 2..=7";
    match (root.get("genome_schema_version"), root.get("version").map(value_text)) {
        (Some(n), _) => {
            let ok = n.as_u64().is_some_and(|n| (2..=NEWEST_SCHEMA).contains(&n));
            if !ok {
                return Err(GenomeError::invalid("genome", "genome_schema_version", format!("{n}: {known}")));
            }
        }
        (None, Some(v)) if v == "2" || v.starts_with("2.") || v == "3" || v.starts_with("3.") => {}
        (None, Some(v)) => return Err(GenomeError::invalid("genome", "version", format!("{v:?}: {known}"))),
        (None, None) => w.push("the genome has no `version`; reading it as a FEAGI 2.x / 3.0 genome".to_string()),
    }
    for key in root.keys().filter(|k| !TOP_LEVEL_KEYS.contains(&k.as_str())) {
        w.push(format!("unknown top-level key `{key}`; ignored"));
    }
    for key in ["modulators", "classifiers"] {
        if root.get(key).and_then(Value::as_object).is_some_and(|m| !m.is_empty()) {
            w.push(format!("`{key}` (FEAGI {key}) are not simulated by neuroburst; ignored"));
        }
    }
    Ok(())
}

/// A JSON value as text: strings without their quotes, anything else as JSON.
fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn root_text<'a>(root: &'a Map<String, Value>, key: &str) -> &'a str {
    root.get(key).and_then(Value::as_str).unwrap_or("").trim()
}

/// Lower-case ASCII letters and digits; every run of anything else becomes one `_`.
fn clean_name(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.is_empty() && !out.ends_with('_') {
            out.push('_');
        }
    }
    while out.ends_with('_') {
        out.pop();
    }
    out
}

fn genome_name(root: &Map<String, Value>) -> String {
    [root_text(root, "genome_title"), root_text(root, "genome_id")]
        .into_iter()
        .map(clean_name)
        .find(|n| !n.is_empty())
        .unwrap_or_else(|| "feagi_genome".to_string())
}

fn description(root: &Map<String, Value>) -> String {
    let title = root_text(root, "genome_title");
    let mut origin = String::from("Imported from the FEAGI genome");
    if !title.is_empty() {
        origin.push_str(&format!(" \"{title}\""));
    }
    let id = root_text(root, "genome_id");
    if !id.is_empty() {
        origin.push_str(&format!(" (id {id})"));
    }
    if let Some(v) = root.get("version") {
        origin.push_str(&format!(", version {}", value_text(v)));
    }
    origin.push('.');
    match root_text(root, "genome_description") {
        "" => origin,
        d => format!("{d}. {origin}"),
    }
}

fn burst_rate(root: &Map<String, Value>, w: &mut Warnings) -> Result<f64, GenomeError> {
    let physiology = root.get("physiology").and_then(Value::as_object);
    let found = physiology.and_then(|p| ["simulation_timestep", "burst_delay"].into_iter().find_map(|k| p.get(k).map(|v| (k, v))));
    let Some((key, value)) = found else {
        w.push("the genome has no `physiology.simulation_timestep` (or legacy `burst_delay`); using 30 bursts per second".to_string());
        return Ok(30.0);
    };
    let (lo, hi) = (1.0 / crate::time::MAX_RATE_HZ, 1.0 / crate::time::MIN_RATE_HZ);
    let seconds = value.as_f64().filter(|t| (lo..=hi).contains(t)).ok_or_else(|| {
        GenomeError::invalid("genome", &format!("physiology.{key}"), format!("{value} is not a number of seconds per burst in {lo}..={hi}"))
    })?;
    let hz = 1.0 / seconds;
    // 1 / 0.06666666666666667 is 15 up to rounding: keep the whole number people wrote down.
    Ok(if (hz - hz.round()).abs() < 1e-9 * hz.max(1.0) { hz.round() } else { hz })
}

/// An integer, also from a float with no fractional part (FEAGI writes `1` and `1.0` alike).
fn as_int(v: &Value) -> Option<i64> {
    v.as_i64().or_else(|| v.as_f64().filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15).map(|f| f as i64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_cleaned() {
        assert_eq!(clean_name("The Essential Genome"), "the_essential_genome");
        assert_eq!(clean_name("  2022-07-10_21:53:10 G "), "2022_07_10_21_53_10_g");
        assert_eq!(clean_name("!!!"), "");
    }

    #[test]
    fn timestep_becomes_a_burst_rate() {
        let mut w = Warnings::default();
        let root = |v: Value| serde_json::from_value::<Map<String, Value>>(v).unwrap();
        let r = root(serde_json::json!({"physiology": {"simulation_timestep": 0.06666666666666667}}));
        assert_eq!(burst_rate(&r, &mut w).unwrap(), 15.0);
        let r = root(serde_json::json!({"physiology": {"burst_delay": 0.025}}));
        assert_eq!(burst_rate(&r, &mut w).unwrap(), 40.0);
        let r = root(serde_json::json!({"physiology": {"simulation_timestep": 0.3}}));
        assert!((burst_rate(&r, &mut w).unwrap() - 1.0 / 0.3).abs() < 1e-12);
        assert!(w.list.is_empty());
        let r = root(serde_json::json!({"physiology": {"simulation_timestep": 0}}));
        let e = burst_rate(&r, &mut w).unwrap_err().to_string();
        assert!(e.contains("physiology.simulation_timestep"), "{e}");
        let r = root(serde_json::json!({}));
        assert_eq!(burst_rate(&r, &mut w).unwrap(), 30.0);
        assert_eq!(w.list.len(), 1);
    }

    #[test]
    fn syntax_errors_name_line_and_column() {
        let Err(GenomeError::Parse { message, .. }) = import_str("{\n  \"blueprint\": {\n") else {
            panic!("a truncated genome must be a parse error")
        };
        assert!(message.contains("line 3"), "{message}");
        assert!(message.contains("column"), "{message}");
    }
}
