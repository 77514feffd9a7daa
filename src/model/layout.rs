//! Where every neuron is: areas as contiguous id ranges, and (area, x, y, z, k) <-> id arithmetic.

use super::fixed::{self, Potential};
use super::{AreaParams, FLAG_GRADIENT, FLAG_MP_ACC, FLAG_NEVER_FIRE, FLAG_POWER, LEAK_FRACTION, LEAK_LINEAR};
use crate::genome::{AreaKind, Genome, Leak};

/// The descriptive half of an area (the numeric half is [`AreaParams`]).
#[derive(Clone, Debug, PartialEq)]
pub struct AreaMeta {
    pub id: String,
    pub name: String,
    pub kind: AreaKind,
}

/// A neuron's place: area index and `[x, y, z, k]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct NeuronCoord {
    pub area: usize,
    pub xyzk: [u32; 4],
}

/// The compiled areas of a brain.
#[derive(Clone, Debug, PartialEq)]
pub struct Layout {
    pub meta: Vec<AreaMeta>,
    pub params: Vec<AreaParams>,
    pub neurons: u32,
}

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

    /// Index of the area that holds neuron `n`.
    pub fn area_of(&self, n: u32) -> usize {
        self.params.partition_point(|p| p.first + p.count <= n)
    }

    pub fn area_index(&self, id: &str) -> Option<usize> {
        self.meta.iter().position(|m| m.id == id)
    }

    pub fn coord(&self, n: u32) -> NeuronCoord {
        let area = self.area_of(n);
        let p = &self.params[area];
        let local = n - p.first;
        let [x, y, z] = p.voxel_of(local);
        NeuronCoord { area, xyzk: [x, y, z, local % p.neurons_per_voxel] }
    }

    /// Id of neuron `[x, y, z, k]` of `area`, or None if outside the area.
    pub fn neuron_id(&self, area: usize, [x, y, z, k]: [u32; 4]) -> Option<u32> {
        let p = self.params.get(area)?;
        if x >= p.dims[0] || y >= p.dims[1] || z >= p.dims[2] || k >= p.neurons_per_voxel {
            return None;
        }
        Some(p.first + ((x * p.dims[1] + y) * p.dims[2] + z) * p.neurons_per_voxel + k)
    }

    /// Id ranges of the motor areas: what comes back from a GPU every burst.
    pub fn motor_ranges(&self) -> Vec<std::ops::Range<u32>> {
        self.meta.iter().zip(&self.params).filter(|(m, _)| m.kind == AreaKind::Motor).map(|(_, p)| p.first..p.first + p.count).collect()
    }
}
