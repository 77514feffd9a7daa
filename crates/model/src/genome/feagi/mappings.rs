//! Mappings from each area's `dstmap-d`: `{destination id: [rule, ...]}`, the destination named by
//! its cortical id as the blueprint writes it (2.x or 3.0 base64).

use std::collections::HashMap;

use serde_json::Value;

use super::blueprint::{Areas, ImportedArea};
use super::morphologies::{Library, Status};
use super::{as_int, Warnings};
use crate::genome::{GenomeError, Mapping, Plasticity, Sign};
use crate::model::plasticity::DEFAULT_WINDOW;

/// One rule, as FEAGI writes it.
#[derive(Debug)]
struct FeagiRule {
    morphology: String,
    scalar: [i32; 3],
    multiplier: f64,
    plastic: bool,
    constant: f64,
    ltp: f64,
    ltd: f64,
    /// `None` for a rule of fewer than 8 elements.
    window: Option<u32>,
    /// feagi-core's `synaptic_delay_bursts` (9th element); neuroburst's synapses take one burst.
    delay: Option<i64>,
    /// feagi-core's rule-level `synapse_attractivity`, when the rule is an object that has one.
    attractivity: Option<f64>,
}

/// The object form's field names, in the array form's order, then feagi-core's rule-level
/// attractivity (object form only).
const FIELDS: [&str; 10] = [
    "morphology_id",
    "morphology_scalar",
    "postSynapticCurrent_multiplier",
    "plasticity_flag",
    "plasticity_constant",
    "ltp_multiplier",
    "ltd_multiplier",
    "plasticity_window",
    "synaptic_delay_bursts",
    "synapse_attractivity",
];

pub(super) fn import(areas: &Areas, library: &Library, w: &mut Warnings) -> Result<Vec<Mapping>, GenomeError> {
    let by_id: HashMap<&str, &ImportedArea> = areas.list.iter().map(|a| (a.area.id.as_str(), a)).collect();
    let mut out = Vec::new();
    for src in &areas.list {
        let Some((key, dstmap)) = &src.dstmap else {
            continue;
        };
        let source = src.area.id.as_str();
        let location = format!("area '{source}'");
        let invalid = |message: String| GenomeError::invalid(location.clone(), key, message);
        let Value::Object(dstmap) = dstmap else {
            return Err(invalid(format!("{dstmap} is not an object {{destination id: [rule, ...]}}")));
        };
        // in the order of the destinations' ids, whichever way the file writes them
        let mut dstmap: Vec<(&String, &String, &Value)> =
            dstmap.iter().map(|(written, rules)| (areas.ids.get(written).unwrap_or(written), written, rules)).collect();
        dstmap.sort_by(|a, b| a.0.cmp(b.0));
        for (destination, written, rules) in dstmap {
            let Some(dst) = by_id.get(destination.as_str()) else {
                return Err(invalid(format!("maps to '{written}', but no area has that id")));
            };
            let Value::Array(rules) = rules else {
                return Err(invalid(format!("the rules for '{destination}' are not a list")));
            };
            for (i, rule) in rules.iter().enumerate() {
                let rule = parse(rule, w).map_err(|m| invalid(format!("rule #{i} for '{destination}': {m}")))?;
                let about = format!("mapping '{source}' -> '{destination}' (morphology '{}')", rule.morphology);
                match library.status(&rule.morphology) {
                    Status::Usable => {}
                    Status::Unsupported(why) => {
                        w.push(format!("{about}: the morphology {why}; the mapping is dropped"));
                        continue;
                    }
                    Status::Unknown => {
                        return Err(invalid(format!(
                            "rule #{i} for '{destination}' uses morphology '{}', which `neuron_morphologies` does not \
                             define and is not built in",
                            rule.morphology
                        )))
                    }
                }
                if !rule.multiplier.is_finite() {
                    return Err(invalid(format!("rule #{i} for '{destination}': the multiplier is not a number")));
                }
                if rule.multiplier.abs() > 255.0 {
                    w.push(format!(
                        "{about}: postsynaptic current multiplier {} is outside the weight range 0..255; clamped",
                        rule.multiplier
                    ));
                }
                let negative = (rule.multiplier < 0.0) != src.inhibitory;
                let attractivity = match rule.attractivity {
                    Some(a) => {
                        if !(0.0..=100.0).contains(&a) {
                            w.push(format!("{about}: synapse attractivity {a} is outside 0..100 %; clamped"));
                        }
                        a.clamp(0.0, 100.0)
                    }
                    None => dst.attractivity,
                };
                // an associative mapping is plastic whatever its flag says (as in FEAGI)
                let associative = rule.morphology == "associative_memory";
                if let Some(d) = rule.delay.filter(|&d| d != 1) {
                    w.push(format!(
                        "{about}: a synaptic delay of {d} bursts is not supported (a synapse takes one burst); imported with 1"
                    ));
                }
                let plasticity = (rule.plastic || associative).then(|| {
                    // FEAGI writes window 0 for a rule that had none (a 7-element 2.x rule)
                    let window = rule.window.filter(|&n| n > 0).unwrap_or_else(|| {
                        w.once("plasticity window", || {
                            format!(
                                "{about}: the rule has no plasticity_window (a 7-element rule, or 0); using {DEFAULT_WINDOW} \
                                 bursts (first of such rules; the others too)"
                            )
                        });
                        DEFAULT_WINDOW
                    });
                    Plasticity { constant: rule.constant, ltp_multiplier: rule.ltp, ltd_multiplier: rule.ltd, window }
                });
                out.push(Mapping {
                    source: source.to_string(),
                    destination: destination.to_string(),
                    morphology: rule.morphology,
                    scalar: rule.scalar,
                    weight: rule.multiplier.abs().min(255.0),
                    psp: None,
                    sign: if negative { Sign::Inhibitory } else { Sign::Excitatory },
                    attractivity,
                    plasticity,
                    max_synapses: None,
                    synapses: None,
                    procedural: false,
                });
            }
        }
    }
    Ok(out)
}

fn parse(rule: &Value, w: &mut Warnings) -> Result<FeagiRule, String> {
    match rule {
        Value::Array(items) if (4..=9).contains(&items.len()) => from_fields(|i| items.get(i)),
        Value::Array(items) => Err(format!("a rule list has 4 to 9 elements ({}), not {}", FIELDS[..9].join(", "), items.len())),
        Value::Object(fields) => {
            for key in fields.keys().filter(|k| !FIELDS.contains(&k.as_str()) && *k != "psc_multiplier") {
                w.once(&format!("rule field {key}"), || format!("unknown mapping rule field `{key}`; ignored"));
            }
            // FEAGI's short name for the multiplier
            let short = fields.get("psc_multiplier");
            from_fields(|i| if i == 2 { fields.get(FIELDS[2]).or(short) } else { fields.get(FIELDS[i]) })
        }
        other => Err(format!("{other} is neither a rule list nor a rule object")),
    }
}

/// Build a rule from its fields by position (see [`FIELDS`]); absent optional fields take their
/// defaults.
fn from_fields<'a>(field: impl Fn(usize) -> Option<&'a Value>) -> Result<FeagiRule, String> {
    let present = |i: usize| field(i).filter(|v| !v.is_null());
    let number = |i: usize, default: f64| -> Result<f64, String> {
        match present(i) {
            None => Ok(default),
            Some(v) => v.as_f64().ok_or_else(|| format!("`{}` {v} is not a number", FIELDS[i])),
        }
    };
    let morphology = match present(0) {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        Some(v) => return Err(format!("`morphology_id` {v} is not a morphology name")),
        None => return Err("`morphology_id` is missing".to_string()),
    };
    let plastic = match present(3) {
        None => false,
        Some(Value::Bool(b)) => *b,
        Some(v) => match v.as_f64() {
            Some(f) => f != 0.0,
            None => return Err(format!("`plasticity_flag` {v} is not true or false")),
        },
    };
    let window = match present(7) {
        None => None,
        Some(v) => Some(
            as_int(v).and_then(|i| u32::try_from(i).ok()).ok_or_else(|| format!("`plasticity_window` {v} is not a whole number >= 0"))?,
        ),
    };
    let delay = match present(8) {
        None => None,
        Some(v) => Some(as_int(v).ok_or_else(|| format!("`synaptic_delay_bursts` {v} is not a whole number"))?),
    };
    Ok(FeagiRule {
        delay,
        morphology,
        scalar: scalar(present(1))?,
        multiplier: number(2, 1.0)?,
        plastic,
        constant: number(4, 1.0)?,
        ltp: number(5, 1.0)?,
        ltd: number(6, 1.0)?,
        window,
        attractivity: present(9).map(|v| v.as_f64().ok_or_else(|| format!("`synapse_attractivity` {v} is not a number"))).transpose()?,
    })
}

/// `[sx, sy, sz]`, or one number for all three axes; whole numbers.
fn scalar(v: Option<&Value>) -> Result<[i32; 3], String> {
    let whole = |v: &Value| as_int(v).and_then(|i| i32::try_from(i).ok());
    let bad = |v: &Value| format!("`morphology_scalar` {v} is not [sx, sy, sz] of whole numbers");
    match v {
        None => Ok([1, 1, 1]),
        Some(Value::Array(items)) => match items.as_slice() {
            [x, y, z] => Ok([whole(x).ok_or_else(|| bad(x))?, whole(y).ok_or_else(|| bad(y))?, whole(z).ok_or_else(|| bad(z))?]),
            _ => Err(bad(v.unwrap())),
        },
        Some(one) => whole(one).map(|s| [s; 3]).ok_or_else(|| bad(one)),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn rule(v: Value) -> Result<FeagiRule, String> {
        parse(&v, &mut Warnings::default())
    }

    #[test]
    fn array_and_object_rules() {
        let r = rule(json!(["projector", [1, 2, 3], -2, true, 0.5, 2, 3, 7])).unwrap();
        assert_eq!((r.morphology.as_str(), r.scalar, r.multiplier, r.plastic), ("projector", [1, 2, 3], -2.0, true));
        assert_eq!((r.constant, r.ltp, r.ltd, r.window), (0.5, 2.0, 3.0, Some(7)));
        let r = rule(json!(["projector", [1, 1, 1], 1, false, 1, 1, 1])).unwrap();
        assert_eq!(r.window, None);
        let r =
            rule(json!({"morphology_id": "m", "morphology_scalar": 2, "postSynapticCurrent_multiplier": 3.5, "synapse_attractivity": 50}))
                .unwrap();
        assert_eq!((r.scalar, r.multiplier, r.plastic, r.attractivity), ([2, 2, 2], 3.5, false, Some(50.0)));
    }

    #[test]
    fn malformed_rules_say_why() {
        assert!(rule(json!(["projector", [1, 1, 1]])).unwrap_err().contains("4 to 9"));
        assert!(rule(json!(["projector", [1, 1], 1, false, 1, 1, 1])).unwrap_err().contains("morphology_scalar"));
        assert!(rule(json!([3, [1, 1, 1], 1, false, 1, 1, 1])).unwrap_err().contains("morphology_id"));
        assert!(rule(json!({"morphology_scalar": [1, 1, 1]})).unwrap_err().contains("missing"));
        assert!(rule(json!(["m", [1, 1, 1], "x", false, 1, 1, 1])).unwrap_err().contains("postSynapticCurrent_multiplier"));
    }
}
