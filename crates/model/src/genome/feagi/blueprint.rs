//! Areas from the blueprint's flat gene keys `_____10c-<cortical id>-<cx|nx>-<gene>-<type>`; the
//! cortical id is a 2.x id or a 3.0 base64 id ([`super::ids`]).

use std::collections::{BTreeMap, HashMap};

use serde_json::{Map, Value};

use super::ids::{io_name, Class, CorticalId};
use super::{as_int, Warnings};
use crate::genome::{Area, AreaKind, GenomeError, Leak, NeuronParams};

/// The prefix of every cortical gene key.
const PREFIX: &str = "_____10c-";

/// Genes this importer reads, with the scope and type FEAGI writes them with (used to name a
/// missing gene in an error).
const READ: [(&str, &str, &str); 28] = [
    ("__name", "cx", "t"),
    ("_group", "cx", "t"),
    ("___bbx", "cx", "i"),
    ("___bby", "cx", "i"),
    ("___bbz", "cx", "i"),
    ("rcordx", "cx", "i"),
    ("rcordy", "cx", "i"),
    ("rcordz", "cx", "i"),
    ("_n_cnt", "cx", "i"),
    ("synatt", "cx", "f"),
    ("pspuni", "cx", "b"),
    ("memory", "cx", "b"),
    ("de_gen", "cx", "f"),
    ("dstmap", "cx", "d"),
    ("pstcr_", "nx", "f"),
    ("fire_t", "nx", "f"),
    ("ftincx", "nx", "f"),
    ("ftincy", "nx", "f"),
    ("ftincz", "nx", "f"),
    ("fthlim", "nx", "f"),
    ("refrac", "nx", "i"),
    ("leak_c", "nx", "f"),
    ("leak_v", "nx", "f"),
    ("c_fr_c", "nx", "i"),
    ("snooze", "nx", "i"),
    ("excite", "nx", "f"),
    ("mp_acc", "nx", "b"),
    ("mp_psp", "nx", "b"),
];

/// Display and bookkeeping genes that change nothing in the simulation: ignored without a warning.
/// Memory genes (memory areas are warned about once, by `memory-b` or group MEMORY), and the
/// sensor hold of 3.0 (what an encoder does when a frame is missing, not the brain).
const IGNORED: [&str; 21] = [
    "2dcorx", "2dcory", "gd_vis", "subgrp", "pstcrm", "mem__t", "mem_gr", "mem_ls", "tmpdpt", "devcnt", "mplrn", "mpchg", "mpdlq", "mprtq",
    "mnwin", "scnsk", "memcap", "ltmevc", "twinrf", "snhold", "spktrn",
];

/// One area of the blueprint, and what the mappings need from it.
pub(super) struct ImportedArea {
    pub area: Area,
    /// `synatt-f`, percent (0..100): the chance that a candidate synapse *onto* this area is made.
    pub attractivity: f64,
    /// `pstcr_-f` was negative: the area's outgoing synapses are inhibitory.
    pub inhibitory: bool,
    /// The full `dstmap-d` key and its value, when present.
    pub dstmap: Option<(String, Value)>,
}

struct Gene {
    key: String,
    value: Value,
}

/// The areas, and the id neuroburst gives each cortical id written in the file.
pub(super) struct Areas {
    pub list: Vec<ImportedArea>,
    pub ids: HashMap<String, String>,
}

/// Group the gene keys by area (ordered by neuroburst's id, the 2.x id for FEAGI's 3.0 ids that
/// have one) and build each area.
pub(super) fn import(blueprint: &Map<String, Value>, w: &mut Warnings) -> Result<Areas, GenomeError> {
    let mut by_raw: BTreeMap<String, BTreeMap<String, Gene>> = BTreeMap::new();
    for (key, value) in blueprint {
        let Some((id, gene)) = split_key(key) else {
            if value.is_object() && !key.starts_with(PREFIX) {
                return Err(GenomeError::invalid(
                    format!("area '{key}'"),
                    "blueprint",
                    "a nested (genome 1.x) blueprint entry; this importer reads FEAGI 2.x genomes, whose blueprint \
                     holds flat gene keys `_____10c-<cortical id>-<cx|nx>-<gene>-<type>`",
                ));
            }
            w.push(format!("blueprint key `{key}` is not a FEAGI gene key (`_____10c-<cortical id>-<cx|nx>-<gene>-<type>`); ignored"));
            continue;
        };
        by_raw.entry(id.to_string()).or_default().insert(gene.to_string(), Gene { key: key.clone(), value: value.clone() });
    }
    let mut ids = HashMap::new();
    // neuroburst's id -> (the id as written, decoded, the genes)
    type Written = (String, Option<CorticalId>, BTreeMap<String, Gene>);
    let mut by_area: BTreeMap<String, Written> = BTreeMap::new();
    for (raw, genes) in by_raw {
        let cid = CorticalId::from_base64(&raw);
        let id = cid.map_or_else(|| raw.clone(), |c| c.neuroburst_id());
        if let Some((other, _, _)) = by_area.get(&id) {
            return Err(GenomeError::invalid(
                format!("area '{id}'"),
                "blueprint",
                format!("cortical ids '{other}' and '{raw}' are the same area ('{id}'); a genome names each area once"),
            ));
        }
        ids.insert(raw.clone(), id.clone());
        by_area.insert(id, (raw, cid, genes));
    }
    let list = by_area.iter().map(|(id, (raw, cid, genes))| area(&Genes { id, raw, cid: *cid, genes }, w)).collect::<Result<_, _>>()?;
    Ok(Areas { list, ids })
}

/// `_____10c-iic000-cx-___bbx-i` -> (`iic000`, `___bbx`).
fn split_key(key: &str) -> Option<(&str, &str)> {
    let rest = key.strip_prefix(PREFIX)?;
    let mut parts = rest.rsplitn(4, '-');
    let (_ty, gene, scope, id) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    (!id.is_empty() && !gene.is_empty() && (scope == "cx" || scope == "nx")).then_some((id, gene))
}

/// The genes of one area, with typed accessors whose errors name the area and the gene key.
struct Genes<'a> {
    /// neuroburst's id of the area.
    id: &'a str,
    /// The cortical id as the file writes it, and decoded when it is a 3.0 id.
    raw: &'a str,
    cid: Option<CorticalId>,
    genes: &'a BTreeMap<String, Gene>,
}

impl Genes<'_> {
    fn location(&self) -> String {
        if self.raw == self.id {
            format!("area '{}'", self.id)
        } else {
            format!("area '{}' (FEAGI id {})", self.id, self.raw)
        }
    }

    /// The gene's key as written in the file, or as FEAGI would write it when it is absent.
    fn key(&self, gene: &str) -> String {
        match self.genes.get(gene) {
            Some(g) => g.key.clone(),
            None => {
                let (scope, ty) = READ.iter().find(|r| r.0 == gene).map_or(("cx", "?"), |r| (r.1, r.2));
                format!("{PREFIX}{}-{scope}-{gene}-{ty}", self.raw)
            }
        }
    }

    fn error(&self, gene: &str, message: impl Into<String>) -> GenomeError {
        GenomeError::invalid(self.location(), &self.key(gene), message)
    }

    fn get(&self, gene: &str) -> Option<&Value> {
        self.genes.get(gene).map(|g| &g.value).filter(|v| !v.is_null())
    }

    /// A `-f` gene as FEAGI holds it, a 32-bit float, written as its shortest decimal: FEAGI saves
    /// the 0.1 of a 2.x genome as 0.10000000149011612, and both read as 0.1.
    fn number(&self, gene: &str, default: f64) -> Result<f64, GenomeError> {
        match self.get(gene) {
            None => Ok(default),
            Some(v) => v.as_f64().filter(|f| f.is_finite()).map(as_f32).ok_or_else(|| self.error(gene, format!("{v} is not a number"))),
        }
    }

    fn integer(&self, gene: &str, default: i64) -> Result<i64, GenomeError> {
        match self.get(gene) {
            None => Ok(default),
            Some(v) => as_int(v).ok_or_else(|| self.error(gene, format!("{v} is not a whole number"))),
        }
    }

    /// A whole number in `min..=max`.
    fn count(&self, gene: &str, default: u32, min: u32, max: u32) -> Result<u32, GenomeError> {
        let v = self.integer(gene, default as i64)?;
        if v < min as i64 || v > max as i64 {
            return Err(self.error(gene, format!("{v} is out of range {min}..={max}")));
        }
        Ok(v as u32)
    }

    fn flag(&self, gene: &str) -> Result<bool, GenomeError> {
        match self.get(gene) {
            None => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(v) => Err(self.error(gene, format!("{v} is not true or false"))),
        }
    }

    fn text(&self, gene: &str) -> Result<Option<&str>, GenomeError> {
        match self.get(gene) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.as_str())),
            Some(v) => Err(self.error(gene, format!("{v} is not text"))),
        }
    }
}

/// The shortest decimal of the nearest 32-bit float (values beyond f32 stay as they are).
fn as_f32(v: f64) -> f64 {
    let f = v as f32;
    if f.is_finite() {
        f.to_string().parse().unwrap_or(v)
    } else {
        v
    }
}

fn area(g: &Genes, w: &mut Warnings) -> Result<ImportedArea, GenomeError> {
    let mut name = g.text("__name")?.unwrap_or("").trim().to_string();
    if name.is_empty() {
        name = g.cid.as_ref().and_then(io_name).unwrap_or_default();
    }
    // How warnings name the area: `area 'iic000' (vision_LL)`.
    let label = match (name.is_empty(), g.raw == g.id) {
        (true, _) => g.location(),
        (false, true) => format!("{} ({name})", g.location()),
        (false, false) => format!("area '{}' ({name}, FEAGI id {})", g.id, g.raw),
    };

    for gene in g.genes.keys() {
        if !READ.iter().any(|r| r.0 == gene) && !IGNORED.contains(&gene.as_str()) {
            w.once(&format!("gene {gene}"), || {
                format!("unknown FEAGI gene `{gene}` (first seen as `{}` on {label}); ignored", g.key(gene))
            });
        }
    }

    let kind = kind(g, &label, w)?;
    let dims = ["___bbx", "___bby", "___bbz"].map(|gene| match g.get(gene) {
        None => Err(g.error(gene, "missing: every area needs its dimensions (voxels along x, y and z)")),
        Some(_) => g.count(gene, 0, 1, u32::MAX),
    });
    let [x, y, z] = dims;
    let dims = [x?, y?, z?];
    let position = ["rcordx", "rcordy", "rcordz"].map(|gene| {
        let v = g.integer(gene, 0)?;
        i32::try_from(v).map_err(|_| g.error(gene, format!("{v} does not fit a 32-bit position")))
    });
    let [px, py, pz] = position;
    let position = [px?, py?, pz?];
    let neurons_per_voxel = g.count("_n_cnt", 1, 1, u32::MAX)?;

    let attractivity = g.number("synatt", 100.0)?;
    if !(0.0..=100.0).contains(&attractivity) {
        w.push(format!("{label}: synapse attractivity `{}` = {attractivity} is outside 0..100 %; clamped", g.key("synatt")));
    }
    let attractivity = attractivity.clamp(0.0, 100.0);

    let current = g.number("pstcr_", 1.0)?;
    let inhibitory = current < 0.0;
    if inhibitory {
        w.push(format!(
            "{label}: negative postsynaptic current `{}` = {current}: its outgoing synapses are imported as \
             inhibitory with psp {}",
            g.key("pstcr_"),
            (-current).min(255.0)
        ));
    }
    if current.abs() > 255.0 {
        w.push(format!("{label}: postsynaptic current `{}` = {current} is outside the psp range 0..255; clamped to 255", g.key("pstcr_")));
    }
    let psp = current.abs().min(255.0);

    let neuron = neuron_params(g, &label, w)?;
    if g.flag("mp_psp")? {
        w.push(format!(
            "{label}: `{}` (psp driven by the source's membrane potential) is not supported; the area's fixed psp is used",
            g.key("mp_psp")
        ));
    }
    let degeneration = g.number("de_gen", 0.0)?;
    if degeneration != 0.0 {
        w.push(format!("{label}: degeneration `{}` = {degeneration} is not supported; ignored", g.key("de_gen")));
    }

    let dstmap = g.genes.get("dstmap").filter(|d| !d.value.is_null()).map(|d| (d.key.clone(), d.value.clone()));
    let area = Area {
        id: g.id.to_string(),
        name,
        kind,
        dims,
        neurons_per_voxel,
        position,
        psp,
        // FEAGI's default for the power area: every synapse gets the full psp
        psp_uniform_distribution: if g.get("pspuni").is_none() && g.id == "_power" { true } else { g.flag("pspuni")? },
        neuron,
    };
    Ok(ImportedArea { area, attractivity, inhibitory, dstmap })
}

/// The kind from `_group-t` (or, when it is absent, from the cortical id's class).
/// Memory areas become interneuron areas with a warning.
fn kind(g: &Genes, label: &str, w: &mut Warnings) -> Result<AreaKind, GenomeError> {
    let (group, inferred) = match g.text("_group")? {
        Some(group) => (group.trim().to_ascii_uppercase(), false),
        None => {
            let first = g.cid.map_or_else(|| g.raw.as_bytes().first().copied(), |c| Some(c.0[0]));
            let group = match first.and_then(Class::of) {
                Some(Class::Core) => "CORE",
                Some(Class::Input) => "IPU",
                Some(Class::Output) => "OPU",
                Some(Class::Custom) => "CUSTOM",
                Some(Class::Memory) => "MEMORY",
                Some(Class::Modulator) | None => return Err(g.error("_group", "missing, and the cortical id does not tell the group")),
            };
            (group.to_string(), true)
        }
    };
    let (kind, memory_group) = match group.as_str() {
        "IPU" => (AreaKind::Sensor, false),
        "OPU" => (AreaKind::Motor, false),
        "CORE" => (AreaKind::Core, false),
        "CUSTOM" => (AreaKind::Interneuron, false),
        "MEMORY" => (AreaKind::Interneuron, true),
        other => return Err(g.error("_group", format!("unknown group {other:?}; expected IPU, OPU, CORE, CUSTOM or MEMORY"))),
    };
    if inferred {
        w.push(format!("{label}: no `{}`; group {group} inferred from the cortical id", g.key("_group")));
    }
    let memory_flag = g.flag("memory")?;
    if memory_group || memory_flag {
        let why = match (memory_group, memory_flag) {
            (true, true) => format!("group MEMORY, `{}` true", g.key("memory")),
            (true, false) => "group MEMORY".to_string(),
            _ => format!("`{}` true", g.key("memory")),
        };
        let imported_as = match kind {
            AreaKind::Sensor => "a plain sensor",
            AreaKind::Motor => "a plain motor",
            AreaKind::Core => "a plain core",
            AreaKind::Interneuron => "a plain interneuron",
        };
        w.push(format!("{label}: memory areas are not supported yet; imported as {imported_as} area ({why})"));
    }
    Ok(kind)
}

fn neuron_params(g: &Genes, label: &str, w: &mut Warnings) -> Result<NeuronParams, GenomeError> {
    let threshold_limit = g.number("fthlim", 0.0)?;
    if threshold_limit < 0.0 {
        return Err(g.error("fthlim", format!("{threshold_limit} is negative (0 means no limit)")));
    }
    let leak = g.number("leak_c", 0.0)?;
    let leak = match leak {
        l if l < 0.0 => return Err(g.error("leak_c", format!("{l} is negative"))),
        l if l <= 1.0 => Leak::Fraction(l),
        l => Leak::Linear(l),
    };
    let variability = g.number("leak_v", 0.0)?;
    if variability != 0.0 {
        w.push(format!("{label}: leak variability `{}` = {variability} is not supported; ignored", g.key("leak_v")));
    }
    // FEAGI's units (feagi-evolutionary `units::excitability_fraction`): a fraction in 0..=1; a value
    // above 1 can only be an older genome's percent
    let excite = g.number("excite", 1.0)?;
    if !(0.0..=100.0).contains(&excite) {
        w.push(format!("{label}: excitability `{}` = {excite} is outside 0..=1 (or 0..=100 %); clamped", g.key("excite")));
    }
    let excitability = if excite > 1.0 { (excite / 100.0).min(1.0) } else { excite.max(0.0) };
    let max16 = u16::MAX as u32;
    Ok(NeuronParams {
        threshold: g.number("fire_t", 1.0)?,
        threshold_gradient: [g.number("ftincx", 0.0)?, g.number("ftincy", 0.0)?, g.number("ftincz", 0.0)?],
        threshold_limit,
        leak,
        refractory_period: g.count("refrac", 0, 0, max16)?,
        consecutive_fire_limit: g.count("c_fr_c", 0, 0, max16)?,
        snooze_period: g.count("snooze", 0, 0, max16)?,
        excitability,
        mp_charge_accumulation: g.flag("mp_acc")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gene_keys_split_into_area_and_gene() {
        assert_eq!(split_key("_____10c-iic000-cx-___bbx-i"), Some(("iic000", "___bbx")));
        assert_eq!(split_key("_____10c-_power-nx-pstcr_-f"), Some(("_power", "pstcr_")));
        assert_eq!(split_key("_____10c-iic000-qx-___bbx-i"), None);
        assert_eq!(split_key("iic000"), None);
        assert_eq!(split_key("_____10c--cx-___bbx-i"), None);
    }
}
