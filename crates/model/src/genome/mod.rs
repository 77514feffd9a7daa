//! The genome: the project's own YAML format (strict, documented in `docs/genome.md`), its
//! validation, and importers of other formats ([`feagi`]).
//!
//! A genome describes *what* the brain is: cortical areas, their neuron parameters, the named
//! morphologies and the mappings between areas. The engine (`neuroburst-engine`, its `connectome`) turns it into synapses.

mod compile;
pub mod feagi;
pub mod morphology;
mod validate;
pub mod yaml;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use crate::model::AreaKind;
pub use compile::learned_genome;
pub use morphology::{Morphology, PatternCoord, PatternVoxel, RandomSpec};

/// A whole brain description.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Genome {
    /// Short name of the brain (used in logs, checkpoints and Zenoh keys).
    pub name: String,
    /// Free text.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// Bursts per second when running live or replaying a bag.
    #[serde(default = "default_burst_rate")]
    pub burst_rate_hz: f64,
    /// Seed of every random choice made while building the connectome (attractivity, random
    /// morphologies). The same genome and seed give the same connectome on every machine.
    #[serde(default)]
    pub seed: u64,
    /// The cortical areas, in the order their neuron ids are assigned.
    pub areas: Vec<Area>,
    /// Named morphologies, referenced by mappings. Built-in names (`projector`, `block_to_block`,
    /// `all_to_all`, ...) need no definition.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub morphologies: BTreeMap<String, Morphology>,
    /// Connections between areas.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mappings: Vec<Mapping>,
}

fn default_burst_rate() -> f64 {
    30.0
}

/// A cortical area: a 3-D voxel grid of neurons sharing one set of parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Area {
    /// Unique id (FEAGI's 6-character cortical id, or any name without whitespace).
    pub id: String,
    /// Human-readable name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Sensor, motor, interneuron, memory or core (what the area's neurons are for).
    pub kind: AreaKind,
    /// Voxels along x, y, z (each >= 1).
    pub dims: [u32; 3],
    /// Neurons per voxel (>= 1).
    #[serde(default = "one_u32")]
    pub neurons_per_voxel: u32,
    /// Position in the brain's 3-D space (informational).
    #[serde(default)]
    pub position: [i32; 3],
    /// Postsynaptic potential carried by this area's outgoing synapses (0..255); a mapping may
    /// override it.
    #[serde(default = "one_f64")]
    pub psp: f64,
    /// When true, every outgoing synapse carries the full `weight × psp`; otherwise it is divided by
    /// the source neuron's out-degree.
    #[serde(default)]
    pub psp_uniform_distribution: bool,
    /// Neuron parameters.
    #[serde(default)]
    pub neuron: NeuronParams,
}

fn one_u32() -> u32 {
    1
}
fn one_f64() -> f64 {
    1.0
}

/// The leak of the membrane potential, applied every burst in which the neuron neither fires nor
/// is refractory.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Leak {
    /// The fraction of the potential lost per burst, 0..1.
    Fraction(f64),
    /// Potential units lost per burst, toward 0 (FEAGI's legacy `leak_c` > 1).
    Linear(f64),
}

impl Default for Leak {
    fn default() -> Self {
        Leak::Fraction(0.0)
    }
}

/// Per-neuron parameters of an area (burst-model.md).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NeuronParams {
    /// Firing threshold.
    pub threshold: f64,
    /// Threshold increment per voxel along x, y, z.
    pub threshold_gradient: [f64; 3],
    /// Upper bound of the firing window; 0 = none.
    pub threshold_limit: f64,
    /// Leak kind and amount.
    pub leak: Leak,
    /// Bursts a neuron stays silent after firing.
    pub refractory_period: u32,
    /// Consecutive fires allowed before a snooze; 0 = unlimited.
    pub consecutive_fire_limit: u32,
    /// Extra refractory bursts once the consecutive fire limit is reached.
    pub snooze_period: u32,
    /// Probability (0..1) that a neuron in its firing window fires.
    pub excitability: f64,
    /// When false, the potential is cleared at the start of every burst.
    pub mp_charge_accumulation: bool,
}

impl Default for NeuronParams {
    fn default() -> Self {
        NeuronParams {
            threshold: 1.0,
            threshold_gradient: [0.0; 3],
            threshold_limit: 0.0,
            leak: Leak::default(),
            refractory_period: 0,
            consecutive_fire_limit: 0,
            snooze_period: 0,
            excitability: 1.0,
            mp_charge_accumulation: false,
        }
    }
}

/// Excitatory or inhibitory.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Sign {
    #[default]
    /// The synapses add their weight to the target's potential.
    Excitatory,
    /// The synapses subtract their weight from the target's potential.
    Inhibitory,
}

/// A mapping's plasticity rule (docs/plasticity.md): `Δ± = clamp(constant × multiplier, 0, 255)`
/// on 8-bit per-synapse weights, over a window of `window` bursts (1..=32).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Plasticity {
    /// The constant of FEAGI's rule: the weight's change per co-firing, before the multipliers.
    pub constant: f64,
    #[serde(default = "one_f64")]
    /// Potentiation's factor (the target fired just after the source).
    pub ltp_multiplier: f64,
    #[serde(default = "one_f64")]
    /// Depression's factor (the target fired without the source before it).
    pub ltd_multiplier: f64,
    #[serde(default)]
    /// How many bursts back a source's firing counts toward the target's.
    pub window: u32,
}

/// Connections from every neuron of `source` to the neurons of `destination` that the morphology
/// selects.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Mapping {
    /// The id of the area whose neurons fire.
    pub source: String,
    /// The id of the area whose neurons receive.
    pub destination: String,
    /// Name of a morphology in `morphologies` or a built-in one.
    pub morphology: String,
    /// Scales the morphology's vectors (FEAGI's `morphology_scalar`).
    #[serde(default = "unit_scalar")]
    pub scalar: [i32; 3],
    /// Synaptic weight, 0..255.
    #[serde(default = "one_f64")]
    pub weight: f64,
    /// Postsynaptic potential, 0..255; defaults to the source area's `psp`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub psp: Option<f64>,
    #[serde(default)]
    /// Excitatory (adds) or inhibitory (subtracts).
    pub sign: Sign,
    /// Percent chance (0..100) that a matching neuron pair gets a synapse.
    #[serde(default = "hundred")]
    pub attractivity: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// FEAGI's plasticity on this mapping's synapses; none: their weights stay.
    pub plasticity: Option<Plasticity>,
    /// An `associative_memory` mapping grows at most this many synapses (default: the smaller of
    /// |source| × |destination| and 1,000,000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_synapses: Option<u64>,
    /// A learned brain's synapses (`neuroburst export`): `[source, destination, weight]`, neuron
    /// indexes within the two areas. A plastic mapping that lists them has exactly these synapses
    /// with these weights (its morphology draws none); an associative one has grown these pairs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub synapses: Option<Vec<[u32; 3]>>,
    /// Store no synapses: draw a source's again whenever it fires (docs/capacity.md). A plastic
    /// mapping, or one that lists its synapses, stays stored.
    #[serde(default, skip_serializing_if = "is_false")]
    pub procedural: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn unit_scalar() -> [i32; 3] {
    [1, 1, 1]
}
fn hundred() -> f64 {
    100.0
}

/// Errors from reading or checking a genome. Each names the file and, where it applies, the area,
/// mapping, morphology, field or line.
#[derive(Debug, thiserror::Error)]
pub enum GenomeError {
    #[error("{path}: cannot read the genome: {source}")]
    /// The file could not be read.
    Io {
        /// The genome file.
        path: PathBuf,
        #[source]
        /// What reading it said.
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    /// The file is not a genome document (YAML or FEAGI JSON): where and why.
    Parse {
        /// The genome file.
        path: PathBuf,
        /// Where and what the parser said.
        message: String,
    },
    #[error("{}{location}: field `{field}`: {message}", path_prefix(.path))]
    /// A value of the genome is out of its range or names what is not there.
    Invalid {
        /// The genome file, if it came from one.
        path: Option<PathBuf>,
        /// e.g. `area 'iic000'`, `mapping 3 (a -> b)`, `morphology 'm'`
        location: String,
        /// The field, as a path (`areas[2].dims`).
        field: String,
        /// What is wrong with it.
        message: String,
    },
}

fn path_prefix(p: &Option<PathBuf>) -> String {
    match p {
        Some(p) => format!("{}: ", p.display()),
        None => String::new(),
    }
}

impl GenomeError {
    pub(crate) fn invalid(location: impl Into<String>, field: &str, message: impl Into<String>) -> Self {
        GenomeError::Invalid { path: None, location: location.into(), field: field.to_string(), message: message.into() }
    }

    /// Attach the file name to an error from parsing (replacing the placeholder path) or checking.
    fn at(self, file: &Path) -> Self {
        match self {
            GenomeError::Parse { message, .. } => GenomeError::Parse { path: file.to_path_buf(), message },
            other => other.in_file(file),
        }
    }

    /// Attach the file name to an error found after parsing.
    pub fn in_file(self, file: &Path) -> Self {
        match self {
            GenomeError::Invalid { path: None, location, field, message } => {
                GenomeError::Invalid { path: Some(file.to_path_buf()), location, field, message }
            }
            other => other,
        }
    }
}

impl Genome {
    /// Load a genome file: the project's YAML, or a FEAGI JSON genome (by extension `.json` or by
    /// content), validated. Warnings (unsupported FEAGI features) are logged through `tracing`.
    pub fn load(path: &Path) -> Result<Genome, GenomeError> {
        let text = std::fs::read_to_string(path).map_err(|source| GenomeError::Io { path: path.to_path_buf(), source })?;
        let is_json = path.extension().is_some_and(|e| e.eq_ignore_ascii_case("json")) || text.trim_start().starts_with('{');
        let genome = if is_json {
            let imported = feagi::import_str(&text).map_err(|e| e.at(path))?;
            for w in &imported.warnings {
                tracing::warn!("{}: {}", path.display(), w);
            }
            imported.genome
        } else {
            Genome::from_yaml_str(&text).map_err(|e| e.at(path))?
        };
        genome.validate().map_err(|e| e.in_file(path))?;
        Ok(genome)
    }

    /// Parse (strictly) and validate the project's YAML format.
    pub fn from_yaml_str(text: &str) -> Result<Genome, GenomeError> {
        let genome: Genome =
            yaml::from_str(text).map_err(|e| GenomeError::Parse { path: PathBuf::from("<genome>"), message: e.to_string() })?;
        genome.validate()?;
        Ok(genome)
    }

    /// The genome in the project's YAML format.
    pub fn to_yaml(&self) -> String {
        yaml::to_string(self)
    }

    /// Check every cross-reference and range. See `validate.rs` for the rules.
    pub fn validate(&self) -> Result<(), GenomeError> {
        validate::validate(self)
    }

    /// The area of id `id`, if the genome has one.
    pub fn area(&self, id: &str) -> Option<&Area> {
        self.areas.iter().find(|a| a.id == id)
    }

    /// The morphology a mapping names: the genome's own definition first, then the built-ins.
    pub fn resolve_morphology(&self, name: &str) -> Option<Morphology> {
        self.morphologies.get(name).cloned().or_else(|| Morphology::builtin(name))
    }
}

impl Area {
    /// Voxels of the grid; `u64::MAX` where the product does not fit (validation refuses such an
    /// area: a genome's sizes never wrap).
    pub fn voxels(&self) -> u64 {
        self.dims.iter().fold(1u64, |v, &d| v.saturating_mul(d as u64))
    }
    /// Neurons of the area; `u64::MAX` where the product does not fit (see [`Area::voxels`]).
    pub fn neurons(&self) -> u64 {
        self.voxels().saturating_mul(self.neurons_per_voxel as u64)
    }
}
