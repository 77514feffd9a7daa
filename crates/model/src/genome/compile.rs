//! A genome in the model's terms: its areas compiled into the [`Layout`] (fixed-point parameters
//! and id ranges), its plasticity entries into [`Rule`]s, and back: a genome listing what a brain
//! learned. The model knows nothing of the genome; the genome compiles into the model.

use super::{AreaKind, Genome, Leak, Plasticity};
use crate::model::fixed::{self, Potential};
use crate::model::plasticity::{Learned, Rule, MAX_WINDOW, OVERFLOW};
use crate::model::{AreaMeta, AreaParams, Layout, FLAG_GRADIENT, FLAG_MP_ACC, FLAG_NEVER_FIRE, FLAG_POWER, LEAK_FRACTION, LEAK_LINEAR};

impl Layout {
    /// Compile a (validated) genome's areas into fixed-point parameters and id ranges.
    pub fn from_genome(g: &Genome) -> Layout {
        let mut first: u32 = 0;
        let mut meta = Vec::with_capacity(g.areas.len());
        let mut params = Vec::with_capacity(g.areas.len());
        for a in &g.areas {
            let n = &a.neuron;
            let count = a.neurons() as u32;
            let q = |v: f64| Potential::from_f64(v).0;
            let (leak_kind, leak_keep, leak_linear) = match n.leak {
                Leak::Fraction(f) => (LEAK_FRACTION, fixed::leak_keep_factor(f), 0),
                Leak::Linear(u) => (LEAK_LINEAR, 1 << fixed::LEAK_BITS, q(u)),
            };
            let mut flags = 0;
            if n.mp_charge_accumulation {
                flags |= FLAG_MP_ACC;
            }
            if a.kind == AreaKind::Core && a.id == "_power" {
                flags |= FLAG_POWER;
            }
            if a.kind == AreaKind::Core && a.id == "_death" {
                flags |= FLAG_NEVER_FIRE;
            }
            let inc = n.threshold_gradient.map(q);
            if inc != [0; 3] {
                flags |= FLAG_GRADIENT;
            }
            params.push(AreaParams {
                threshold: q(n.threshold),
                threshold_inc: inc,
                threshold_limit: q(n.threshold_limit),
                leak_linear,
                excitability: fixed::excitability_threshold(n.excitability),
                first,
                count,
                dims: a.dims,
                neurons_per_voxel: a.neurons_per_voxel,
                leak_keep,
                leak_kind,
                refractory: n.refractory_period,
                fire_limit: n.consecutive_fire_limit,
                snooze: n.snooze_period,
                flags,
            });
            meta.push(AreaMeta { id: a.id.clone(), name: a.name.clone(), kind: a.kind });
            first += count;
        }
        Layout { meta, params, neurons: first }
    }
}

impl Rule {
    /// The rule of a genome's `plasticity` entry: `Δ± = clamp(constant × multiplier, 0, 255)`
    /// (rounded to the nearest integer), `window` in 1..=32. An error names the field
    /// (`plasticity.window`, ...) and says what is wrong.
    pub fn compile(p: &Plasticity) -> Result<Rule, (&'static str, String)> {
        let delta = |m: f64, field: &'static str| {
            let v = p.constant * m;
            if !p.constant.is_finite() || !m.is_finite() || v.abs() > OVERFLOW {
                return Err((field, format!("plasticity.constant x {field} = {v}: not a number in -{OVERFLOW}..={OVERFLOW}")));
            }
            Ok(v.round().clamp(0.0, 255.0) as u8)
        };
        if p.window == 0 || p.window > MAX_WINDOW {
            return Err(("plasticity.window", format!("{} bursts: must be 1..={MAX_WINDOW}", p.window)));
        }
        Ok(Rule {
            ltp: delta(p.ltp_multiplier, "plasticity.ltp_multiplier")?,
            ltd: delta(p.ltd_multiplier, "plasticity.ltd_multiplier")?,
            window: p.window,
        })
    }
}

/// `genome` with the learned synapses of every plastic mapping listed (`Mapping::synapses`).
pub fn learned_genome(genome: &Genome, learned: &Learned, burst: u64) -> Genome {
    let layout = Layout::from_genome(genome);
    let first = |id: &str| layout.area_index(id).map_or(0, |i| layout.params[i].first);
    let mut out = genome.clone();
    for (i, m) in out.mappings.iter_mut().enumerate() {
        if m.plasticity.is_none() {
            continue;
        }
        let (s0, d0) = (first(&m.source), first(&m.destination));
        let list = learned.synapses.iter().filter(|s| s.mapping == i as u32).map(|s| [s.source - s0, s.target - d0, s.weight as u32]);
        m.synapses = Some(list.collect());
    }
    out.description = format!("{} (learned: burst {burst})", genome.description).trim().to_string();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rule_compiles_from_the_genome_or_names_the_field() {
        let p = |constant, window| Plasticity { constant, ltp_multiplier: 2.0, ltd_multiplier: 0.5, window };
        assert_eq!(Rule::compile(&p(3.0, 2)), Ok(Rule { ltp: 6, ltd: 2, window: 2 }));
        assert_eq!(Rule::compile(&p(300.0, 2)).unwrap().ltp, 255, "clamped, as FEAGI does");
        assert_eq!(Rule::compile(&p(3.0, 0)).unwrap_err().0, "plasticity.window");
        assert!(Rule::compile(&p(3.0, 33)).unwrap_err().1.contains("33 bursts"));
        assert_eq!(Rule::compile(&p(f64::NAN, 2)).unwrap_err().0, "plasticity.ltp_multiplier");
        assert_eq!(Rule::compile(&p(1e300, 2)).unwrap_err().0, "plasticity.ltp_multiplier");
    }
}
