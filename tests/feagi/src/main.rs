//! FEAGI's genome code on the command line, for neuroburst's tests:
//!
//! `neuroburst-feagi-peer resave IN OUT`: FEAGI's `load_genome_with_report` reads IN (any version
//! it knows) and `save_genome_to_json` writes it to OUT, as today's FEAGI saves a genome (3.0). It
//! fails when FEAGI cannot load IN or its validator reports a blocking error, and prints one JSON
//! line: the areas FEAGI loaded (base64 id, name, dimensions, the properties it holds), its
//! mapping rules (source, destination, morphology) and the migrators it ran.

use std::process::ExitCode;

use feagi_evolutionary::{load_genome_with_report, save_genome_to_json};
use serde_json::{json, Value};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [cmd, input, output] = args.as_slice() else {
        eprintln!("usage: neuroburst-feagi-peer resave IN OUT");
        return ExitCode::from(2);
    };
    if cmd != "resave" {
        eprintln!("unknown command {cmd}; usage: neuroburst-feagi-peer resave IN OUT");
        return ExitCode::from(2);
    }
    match resave(input, output) {
        Ok(summary) => {
            println!("{summary}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{input}: {e}");
            ExitCode::FAILURE
        }
    }
}

fn resave(input: &str, output: &str) -> Result<Value, String> {
    let text = std::fs::read_to_string(input).map_err(|e| e.to_string())?;
    let (genome, report) = load_genome_with_report(&text).map_err(|e| format!("FEAGI cannot load it: {e}"))?;
    if !report.blocking_errors.is_empty() {
        return Err(format!("FEAGI's validator: {:?}", report.blocking_errors));
    }
    let saved = save_genome_to_json(&genome).map_err(|e| format!("FEAGI cannot save it: {e}"))?;
    std::fs::write(output, &saved).map_err(|e| format!("{output}: {e}"))?;

    let mut areas = Vec::new();
    let mut rules = Vec::new();
    let mut ids: Vec<_> = genome.cortical_areas.keys().copied().collect();
    ids.sort_by_key(|id| id.as_base_64());
    for id in ids {
        let area = &genome.cortical_areas[&id];
        let d = area.dimensions;
        let mut properties = area.properties.clone();
        properties.remove("cortical_mapping_dst");
        areas.push(json!({"id": id.as_base_64(), "name": area.name, "dims": [d.width, d.height, d.depth], "properties": properties}));
        if let Some(Value::Object(dstmap)) = area.properties.get("cortical_mapping_dst") {
            for (dst, list) in dstmap {
                for rule in list.as_array().into_iter().flatten() {
                    let morphology = rule.get("morphology_id").cloned().unwrap_or(Value::Null);
                    rules.push(json!({"source": id.as_base_64(), "destination": dst, "morphology": morphology}));
                }
            }
        }
    }
    Ok(json!({"areas": areas, "rules": rules, "migrators": report.migrators_applied}))
}
