//! The rules a genome must satisfy before a connectome is built from it. Each failure names the
//! area, mapping or morphology and the field.

use std::collections::HashSet;

use super::{Genome, GenomeError, Leak, Morphology, PatternCoord};

const MAX_NEURONS: u64 = u32::MAX as u64 - 1;
/// The largest offset a morphology may name along an axis (a vector component, a pattern's
/// coordinate, a tile pattern's count): more than any area is wide, and small enough that a
/// vector times a mapping's scalar plus a coordinate never overflows.
const MAX_OFFSET: i64 = i32::MAX as i64;
/// The most synapses a random fan-out gives each neuron.
const MAX_FANOUT: u32 = 1_000_000;

fn check(ok: bool, location: &str, field: &str, message: impl FnOnce() -> String) -> Result<(), GenomeError> {
    if ok {
        Ok(())
    } else {
        Err(GenomeError::invalid(location, field, message()))
    }
}

fn finite_in(v: f64, lo: f64, hi: f64, location: &str, field: &str) -> Result<(), GenomeError> {
    check(v.is_finite() && v >= lo && v <= hi, location, field, || format!("{v} is out of range {lo}..={hi}"))
}

pub(super) fn validate(g: &Genome) -> Result<(), GenomeError> {
    check(!g.name.trim().is_empty(), "genome", "name", || "must not be empty".into())?;
    check(crate::time::rate_ok(g.burst_rate_hz), "genome", "burst_rate_hz", || {
        format!("{} bursts per second is outside {}..={}", g.burst_rate_hz, crate::time::MIN_RATE_HZ, crate::time::MAX_RATE_HZ)
    })?;
    check(!g.areas.is_empty(), "genome", "areas", || "a genome needs at least one area".into())?;

    let mut ids = HashSet::new();
    let mut total: u64 = 0;
    for (i, a) in g.areas.iter().enumerate() {
        let loc = if a.id.is_empty() { format!("area #{i}") } else { format!("area '{}'", a.id) };
        check(!a.id.is_empty() && !a.id.chars().any(char::is_whitespace), &loc, "id", || {
            format!("{:?} must be non-empty and have no whitespace", a.id)
        })?;
        check(ids.insert(a.id.as_str()), &loc, "id", || "duplicate area id".into())?;
        check(a.dims.iter().all(|&d| d >= 1), &loc, "dims", || format!("{:?}: every dimension must be at least 1", a.dims))?;
        check(a.neurons_per_voxel >= 1, &loc, "neurons_per_voxel", || "must be at least 1".into())?;
        // every size in checked arithmetic: a product that does not fit is refused, never wrapped
        check(a.voxels() <= MAX_NEURONS, &loc, "dims", || {
            format!("{:?} is more than {MAX_NEURONS} voxels (the most neurons a brain may have)", a.dims)
        })?;
        check(a.neurons() <= MAX_NEURONS, &loc, "neurons_per_voxel", || {
            format!("{} voxels x {} neurons is more than {MAX_NEURONS} neurons", a.voxels(), a.neurons_per_voxel)
        })?;
        total = total.saturating_add(a.neurons());
        check(total <= MAX_NEURONS, &loc, "dims", || format!("the brain would have more than {MAX_NEURONS} neurons"))?;
        finite_in(a.psp, 0.0, 255.0, &loc, "psp")?;
        let n = &a.neuron;
        check(n.threshold.is_finite(), &loc, "neuron.threshold", || format!("{} is not a number", n.threshold))?;
        for (axis, v) in ["x", "y", "z"].iter().zip(n.threshold_gradient) {
            check(v.is_finite(), &loc, &format!("neuron.threshold_gradient.{axis}"), || format!("{v} is not a number"))?;
        }
        finite_in(n.threshold_limit, 0.0, f64::MAX, &loc, "neuron.threshold_limit")?;
        match n.leak {
            Leak::Fraction(f) => finite_in(f, 0.0, 1.0, &loc, "neuron.leak.fraction")?,
            Leak::Linear(u) => finite_in(u, 0.0, f64::MAX, &loc, "neuron.leak.linear")?,
        }
        check(n.refractory_period as u64 + n.snooze_period as u64 <= u16::MAX as u64, &loc, "neuron.refractory_period", || {
            format!("refractory_period + snooze_period must be at most {}", u16::MAX)
        })?;
        check(n.consecutive_fire_limit <= u16::MAX as u32, &loc, "neuron.consecutive_fire_limit", || {
            format!("{} is larger than {}", n.consecutive_fire_limit, u16::MAX)
        })?;
        finite_in(n.excitability, 0.0, 1.0, &loc, "neuron.excitability")?;
    }

    for (name, m) in &g.morphologies {
        let loc = format!("morphology '{name}'");
        match m {
            Morphology::Vectors(v) => {
                check(!v.is_empty(), &loc, "vectors", || "needs at least one vector".into())?;
                if let Some((i, v)) = v.iter().enumerate().find(|(_, v)| v.iter().any(|c| c.unsigned_abs() > MAX_OFFSET as u64)) {
                    return Err(GenomeError::invalid(
                        loc,
                        &format!("vectors[{i}]"),
                        format!("{v:?}: every component must be within ±{MAX_OFFSET}"),
                    ));
                }
            }
            Morphology::Patterns(p) => {
                check(!p.is_empty(), &loc, "patterns", || "needs at least one pattern".into())?;
                let exact = |c: &PatternCoord| matches!(c, PatternCoord::Exact(v) if v.unsigned_abs() > MAX_OFFSET as u64);
                if let Some(i) = p.iter().position(|pair| pair.iter().flatten().any(exact)) {
                    return Err(GenomeError::invalid(
                        loc,
                        &format!("patterns[{i}]"),
                        format!("every coordinate must be within ±{MAX_OFFSET}"),
                    ));
                }
            }
            Morphology::Random(r) => match (r.probability, r.fanout) {
                (Some(p), None) => finite_in(p, 0.0, 1.0, &loc, "random.probability")?,
                (None, Some(f)) => check(f <= MAX_FANOUT, &loc, "random.fanout", || {
                    format!("{f} synapses a neuron is more than {MAX_FANOUT} (a fired neuron's synapses are drawn every burst)")
                })?,
                _ => return Err(GenomeError::invalid(loc, "random", "give exactly one of `probability` and `fanout`")),
            },
            Morphology::Tile(t) => {
                check(t.src_seed.iter().all(|&s| s >= 1), &loc, "tile.src_seed", || "every dimension must be at least 1".into())?;
                check(t.src_pattern.iter().flatten().all(|&v| (0..=MAX_OFFSET).contains(&v)), &loc, "tile.src_pattern", || {
                    format!("{:?}: every [choose, skip] must be within 0..={MAX_OFFSET}", t.src_pattern)
                })?;
                let mapper = g.resolve_morphology(&t.mapper);
                check(
                    matches!(&mapper, Some(m) if !matches!(m, Morphology::Tile(_) | Morphology::Random(_))),
                    &loc,
                    "tile.mapper",
                    || format!("'{}' is not a known voxel morphology", t.mapper),
                )?;
            }
            _ => {}
        }
    }

    for (i, m) in g.mappings.iter().enumerate() {
        let loc = format!("mapping #{i} ({} -> {})", m.source, m.destination);
        check(ids.contains(m.source.as_str()), &loc, "source", || format!("no area has id '{}'", m.source))?;
        check(ids.contains(m.destination.as_str()), &loc, "destination", || format!("no area has id '{}'", m.destination))?;
        check(g.resolve_morphology(&m.morphology).is_some(), &loc, "morphology", || {
            format!(
                "unknown morphology '{}' (define it under `morphologies`, or use a built-in: {})",
                m.morphology,
                Morphology::BUILTIN_NAMES.join(", ")
            )
        })?;
        finite_in(m.weight, 0.0, 255.0, &loc, "weight")?;
        if let Some(p) = m.psp {
            finite_in(p, 0.0, 255.0, &loc, "psp")?;
        }
        finite_in(m.attractivity, 0.0, 100.0, &loc, "attractivity")?;
        plastic(g, m, &loc)?;
    }
    Ok(())
}

/// A mapping's plasticity: its rule compiles; an `associative_memory` mapping has a rule and a
/// dense pair table of bounded size; `max_synapses` only on associative mappings.
fn plastic(g: &Genome, m: &crate::genome::Mapping, loc: &str) -> Result<(), GenomeError> {
    use crate::model::plasticity::{Rule, MAX_ASSOCIATIVE_PAIRS};
    let associative = g.resolve_morphology(&m.morphology) == Some(Morphology::AssociativeMemory);
    if let Some(p) = &m.plasticity {
        Rule::compile(p).map_err(|(field, message)| GenomeError::invalid(loc, field, message))?;
    }
    if associative {
        check(m.plasticity.is_some(), loc, "plasticity", || {
            "an associative_memory mapping learns, so it needs a rule {constant, ltp_multiplier, ltd_multiplier, window}".into()
        })?;
        let size = |id: &str| g.areas.iter().find(|a| a.id == id).map_or(0, |a| a.neurons());
        let pairs = size(&m.source).saturating_mul(size(&m.destination));
        check(pairs <= MAX_ASSOCIATIVE_PAIRS, loc, "morphology", || {
            format!(
                "associative_memory between {} and {} neurons holds {pairs} possible pairs; at most {MAX_ASSOCIATIVE_PAIRS} are supported",
                size(&m.source),
                size(&m.destination)
            )
        })?;
    }
    if let Some(list) = &m.synapses {
        check(m.plasticity.is_some(), loc, "synapses", || "only a plastic mapping lists its learned synapses".into())?;
        let size = |id: &str| g.areas.iter().find(|a| a.id == id).map_or(0, |a| a.neurons());
        let (ns, nd) = (size(&m.source), size(&m.destination));
        if let Some((k, e)) = list.iter().enumerate().find(|(_, &[s, d, w])| s as u64 >= ns || d as u64 >= nd || w > 255) {
            return Err(GenomeError::invalid(
                loc,
                &format!("synapses[{k}]"),
                format!("{e:?}: [source, destination, weight] with source < {ns}, destination < {nd}, weight <= 255"),
            ));
        }
    }
    if !associative {
        check(m.max_synapses.is_none(), loc, "max_synapses", || {
            format!("only an associative_memory mapping grows synapses; morphology '{}' builds a fixed set", m.morphology)
        })?;
    }
    Ok(())
}
