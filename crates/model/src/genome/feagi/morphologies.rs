//! Morphologies from `neuron_morphologies`: `{name: {type, parameters, class}}`.

use std::collections::BTreeMap;

use serde_json::Value;

use super::{as_int, Warnings};
use crate::genome::morphology::TileSpec;
use crate::genome::{GenomeError, Morphology, PatternCoord, PatternVoxel};

/// The imported library.
#[derive(Default)]
pub(super) struct Library {
    /// Definitions for the genome's `morphologies`.
    pub defined: BTreeMap<String, Morphology>,
    /// Entries that could not be imported, with the reason (a sentence fragment).
    unsupported: BTreeMap<String, String>,
}

/// Whether a mapping can use a morphology name.
pub(super) enum Status<'a> {
    Usable,
    /// In the library but not importable; mappings using it are dropped.
    Unsupported(&'a str),
    /// Neither in the library nor built in.
    Unknown,
}

impl Library {
    pub fn status(&self, name: &str) -> Status<'_> {
        if let Some(why) = self.unsupported.get(name) {
            Status::Unsupported(why)
        } else if self.defined.contains_key(name) || Morphology::builtin(name).is_some() {
            Status::Usable
        } else {
            Status::Unknown
        }
    }
}

enum Converted {
    Defined(Morphology),
    /// A built-in morphology says the same: no definition needed.
    Builtin,
    Unsupported(String),
}

pub(super) fn import(library: Option<&Value>, w: &mut Warnings) -> Result<Library, GenomeError> {
    let mut out = Library::default();
    let entries = match library {
        None | Some(Value::Null) => return Ok(out),
        Some(Value::Object(entries)) => entries,
        Some(_) => return Err(GenomeError::invalid("genome", "neuron_morphologies", "must be an object {name: {type, parameters}}")),
    };
    for (name, entry) in entries {
        match convert(name, entry, w)? {
            Converted::Defined(m) => {
                out.defined.insert(name.clone(), m);
            }
            Converted::Builtin => {}
            Converted::Unsupported(why) => {
                w.push(format!("morphology '{name}' {why}; not imported, and mappings that use it are dropped"));
                out.unsupported.insert(name.clone(), why);
            }
        }
    }
    Ok(out)
}

const ENTRY_KEYS: [&str; 4] = ["type", "parameters", "class", "morphology_name"];

fn convert(name: &str, entry: &Value, w: &mut Warnings) -> Result<Converted, GenomeError> {
    let location = format!("morphology '{name}'");
    let invalid = |field: &str, message: String| GenomeError::invalid(location.clone(), field, message);
    let Value::Object(entry) = entry else {
        return Err(invalid("neuron_morphologies", "must be an object {type, parameters, class}".into()));
    };
    for key in entry.keys().filter(|k| !ENTRY_KEYS.contains(&k.as_str())) {
        w.once(&format!("morphology key {key}"), || format!("unknown morphology field `{key}` (first seen on {location}); ignored"));
    }
    let ty = entry.get("type").and_then(Value::as_str).ok_or_else(|| invalid("type", "missing or not text".into()))?;
    let empty = serde_json::Map::new();
    let params = match entry.get("parameters") {
        None | Some(Value::Null) => &empty,
        Some(Value::Object(p)) => p,
        Some(other) => return Err(invalid("parameters", format!("{other} is not an object"))),
    };
    let list = |key: &str| -> Result<&Vec<Value>, GenomeError> {
        match params.get(key) {
            Some(Value::Array(items)) => Ok(items),
            None => Err(invalid(&format!("parameters.{key}"), "missing".into())),
            Some(other) => Err(invalid(&format!("parameters.{key}"), format!("{other} is not a list"))),
        }
    };

    Ok(match ty {
        "vectors" => {
            let field = "parameters.vectors";
            let vectors = list("vectors")?
                .iter()
                .map(|v| int_triple(v).ok_or_else(|| invalid(field, format!("{v} is not a vector [dx, dy, dz] of whole numbers"))))
                .collect::<Result<Vec<_>, _>>()?;
            if vectors.is_empty() {
                Converted::Unsupported("has no vectors".into())
            } else if name == "block_to_block" && vectors == [[0, 0, 0]] {
                Converted::Builtin
            } else {
                Converted::Defined(Morphology::Vectors(vectors))
            }
        }
        "patterns" => {
            let field = "parameters.patterns";
            let patterns = list("patterns")?
                .iter()
                .map(|p| pattern_pair(p).map_err(|m| invalid(field, format!("{p}: {m}"))))
                .collect::<Result<Vec<_>, _>>()?;
            if patterns.is_empty() {
                Converted::Unsupported("has no patterns".into())
            } else if name == "all_to_all" && is_all_to_all(&patterns) {
                Converted::Builtin
            } else {
                Converted::Defined(Morphology::Patterns(patterns))
            }
        }
        "functions" => match Morphology::builtin(name) {
            Some(_) => Converted::Builtin,
            None => Converted::Unsupported(format!("is the FEAGI function `{name}`, which is not supported")),
        },
        "composite" => {
            let seed = params.get("src_seed");
            let src_seed = seed
                .and_then(int_triple)
                .filter(|s| s.iter().all(|&v| v >= 1 && v <= u32::MAX as i64))
                .map(|s| s.map(|v| v as u32))
                .ok_or_else(|| invalid("parameters.src_seed", format!("{} is not three whole numbers >= 1", show(seed))))?;
            let pattern = params.get("src_pattern");
            let src_pattern = match pattern {
                None | Some(Value::Null) => Vec::new(),
                Some(Value::Array(pairs)) => {
                    pairs.iter().map(|p| int_pair(p).filter(|p| p.iter().all(|&v| v >= 0))).collect::<Option<Vec<_>>>().ok_or_else(
                        || invalid("parameters.src_pattern", format!("{} is not a list of [choose, skip] pairs", show(pattern))),
                    )?
                }
                Some(other) => return Err(invalid("parameters.src_pattern", format!("{other} is not a list of [choose, skip] pairs"))),
            };
            let mapper = params
                .get("mapper_morphology")
                .and_then(Value::as_str)
                .ok_or_else(|| invalid("parameters.mapper_morphology", "missing or not text".into()))?;
            match Morphology::builtin(mapper) {
                Some(_) => Converted::Defined(Morphology::Tile(TileSpec { src_seed, src_pattern, mapper: mapper.to_string() })),
                None => Converted::Unsupported(format!(
                    "is a composite whose mapper '{mapper}' is not a built-in morphology ({})",
                    Morphology::BUILTIN_NAMES.join(", ")
                )),
            }
        }
        other => Converted::Unsupported(format!("has the unknown type `{other}`")),
    })
}

fn show(v: Option<&Value>) -> String {
    v.map_or_else(|| "nothing".to_string(), Value::to_string)
}

fn int_triple(v: &Value) -> Option<[i64; 3]> {
    match v.as_array()?.as_slice() {
        [x, y, z] => Some([as_int(x)?, as_int(y)?, as_int(z)?]),
        _ => None,
    }
}

fn int_pair(v: &Value) -> Option<[i64; 2]> {
    match v.as_array()?.as_slice() {
        [a, b] => Some([as_int(a)?, as_int(b)?]),
        _ => None,
    }
}

/// `[[x, y, z], [x, y, z]]`, each coordinate an integer or `*`, `?`, `!`.
fn pattern_pair(v: &Value) -> Result<[PatternVoxel; 2], String> {
    let voxel = |v: &Value| -> Result<PatternVoxel, String> {
        match v.as_array().map(Vec::as_slice) {
            Some([x, y, z]) => {
                let coord = |c: &Value| serde_json::from_value::<PatternCoord>(c.clone()).map_err(|e| e.to_string());
                Ok([coord(x)?, coord(y)?, coord(z)?])
            }
            _ => Err("a pattern voxel is [x, y, z]".to_string()),
        }
    };
    match v.as_array().map(Vec::as_slice) {
        Some([src, dst]) => Ok([voxel(src)?, voxel(dst)?]),
        _ => Err("a pattern is [source voxel, destination voxel]".to_string()),
    }
}

/// One pattern that accepts any source voxel and reaches every destination voxel.
fn is_all_to_all(patterns: &[[PatternVoxel; 2]]) -> bool {
    matches!(patterns, [[src, dst]]
        if src.iter().all(|c| matches!(c, PatternCoord::Any | PatternCoord::Same))
            && dst.iter().all(|c| *c == PatternCoord::Any))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn one(name: &str, entry: Value) -> (Library, Vec<String>) {
        let mut w = Warnings::default();
        let lib = import(Some(&json!({ name: entry })), &mut w).unwrap();
        (lib, w.list)
    }

    #[test]
    fn standard_definitions_of_builtins_need_no_definition() {
        let (lib, warnings) = one("block_to_block", json!({"type": "vectors", "parameters": {"vectors": [[0, 0, 0]]}}));
        assert!(lib.defined.is_empty() && warnings.is_empty());
        let (lib, _) = one("all_to_all", json!({"type": "patterns", "parameters": {"patterns": [[["?", "?", "?"], ["*", "*", "*"]]]}}));
        assert!(lib.defined.is_empty());
        assert!(matches!(lib.status("all_to_all"), Status::Usable));
        let (lib, _) = one("projector", json!({"type": "functions", "parameters": {}}));
        assert!(lib.defined.is_empty());
        // a genome that redefines a built-in name keeps its own definition
        let (lib, _) = one("block_to_block", json!({"type": "vectors", "parameters": {"vectors": [[1, 0, 0]]}}));
        assert_eq!(lib.defined["block_to_block"], Morphology::Vectors(vec![[1, 0, 0]]));
    }

    #[test]
    fn patterns_and_composites_convert() {
        let (lib, _) = one("p", json!({"type": "patterns", "parameters": {"patterns": [[[0, "*", "?"], ["!", 2, 0]]]}}));
        assert_eq!(
            lib.defined["p"],
            Morphology::Patterns(vec![[
                [PatternCoord::Exact(0), PatternCoord::Any, PatternCoord::Same],
                [PatternCoord::Except, PatternCoord::Exact(2), PatternCoord::Exact(0)]
            ]])
        );
        let tile = json!({"type": "composite", "parameters": {"src_seed": [16, 16, 1], "src_pattern": [[1, 0], [1, 0], [1, 0]], "mapper_morphology": "projector"}});
        let (lib, _) = one("tile", tile);
        assert_eq!(
            lib.defined["tile"],
            Morphology::Tile(TileSpec { src_seed: [16, 16, 1], src_pattern: vec![[1, 0]; 3], mapper: "projector".into() })
        );
    }

    #[test]
    fn unsupported_entries_warn_by_name() {
        let (lib, warnings) = one("episodic_memory", json!({"type": "functions", "parameters": {}}));
        assert!(matches!(lib.status("episodic_memory"), Status::Unsupported(_)));
        assert!(warnings[0].contains("'episodic_memory'"), "{warnings:?}");
        let (_, warnings) = one("odd", json!({"type": "composite", "parameters": {"src_seed": [1, 1, 1], "mapper_morphology": "odd2"}}));
        assert!(warnings[0].contains("'odd'") && warnings[0].contains("'odd2'"), "{warnings:?}");
        let (_, warnings) = one("later", json!({"type": "sweeper", "parameters": {}}));
        assert!(warnings[0].contains("'later'") && warnings[0].contains("sweeper"), "{warnings:?}");
        assert!(matches!(Library::default().status("nope"), Status::Unknown));
    }

    #[test]
    fn malformed_entries_name_the_morphology_and_field() {
        let mut w = Warnings::default();
        let bad = json!({"m": {"type": "vectors", "parameters": {"vectors": [[0, 1]]}}});
        let e = import(Some(&bad), &mut w).err().unwrap().to_string();
        assert!(e.contains("morphology 'm'") && e.contains("parameters.vectors"), "{e}");
        let bad = json!({"m": {"type": "patterns", "parameters": {"patterns": [[[0, 0, "x"], [0, 0, 0]]]}}});
        let e = import(Some(&bad), &mut w).err().unwrap().to_string();
        assert!(e.contains("morphology 'm'") && e.contains("\"x\""), "{e}");
    }
}
