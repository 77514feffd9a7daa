//! Where every neuron is: areas as contiguous id ranges, and (area, x, y, z, k) <-> id arithmetic.

use serde::{Deserialize, Serialize};

use super::AreaParams;

/// What an area is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AreaKind {
    /// Receives injected sensor input (FEAGI's IPU).
    Sensor,
    /// Its firing is decoded into motor commands (FEAGI's OPU); it comes back from the GPU every burst.
    Motor,
    /// Everything in between (FEAGI's custom and memory areas).
    Interneuron,
    /// Core areas: `_power` is driven with 1.0 every burst, `_death` never fires.
    Core,
}

/// The descriptive half of an area (the numeric half is [`AreaParams`]).
#[derive(Clone, Debug, PartialEq)]
pub struct AreaMeta {
    /// The area's id in the genome.
    pub id: String,
    /// Its human name.
    pub name: String,
    /// Sensor, motor, interneuron, memory or core.
    pub kind: AreaKind,
}

/// A neuron's place: area index and `[x, y, z, k]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct NeuronCoord {
    /// Index of its area in the layout.
    pub area: usize,
    /// Its voxel `[x, y, z]` and `k`, which of the voxel's neurons it is.
    pub xyzk: [u32; 4],
}

/// The compiled areas of a brain.
#[derive(Clone, Debug, PartialEq)]
pub struct Layout {
    /// Each area's id, name and kind, in the order of the neuron ids.
    pub meta: Vec<AreaMeta>,
    /// Each area's neuron parameters, in the same order.
    pub params: Vec<AreaParams>,
    /// How many neurons the brain has (ids `0..neurons`).
    pub neurons: u32,
}

impl Layout {
    /// Index of the area that holds neuron `n`.
    pub fn area_of(&self, n: u32) -> usize {
        self.params.partition_point(|p| p.first + p.count <= n)
    }

    /// The index of the area of id `id`, if there is one.
    pub fn area_index(&self, id: &str) -> Option<usize> {
        self.meta.iter().position(|m| m.id == id)
    }

    /// Where neuron `n` is: its area and place in the area.
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
