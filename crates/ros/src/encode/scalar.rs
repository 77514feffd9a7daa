//! Shared by the encoders: a resolved target area, and FEAGI's scalar-on-z convention.

use crate::model::{Injection, Layout, Potential};

/// A sensor area the encoder writes into.
#[derive(Clone, Debug, PartialEq)]
pub struct AreaTarget {
    /// The area's id.
    pub id: String,
    /// Its index in the layout.
    pub index: usize,
    /// Its voxels along x, y, z.
    pub dims: [u32; 3],
    /// Its neurons per voxel.
    pub neurons_per_voxel: u32,
    /// First neuron id of the area.
    pub first: u32,
}

impl AreaTarget {
    /// The sensor area `id` of `layout`, or why it cannot be written to.
    pub fn resolve(layout: &Layout, id: &str) -> Result<AreaTarget, String> {
        let index = layout.area_index(id).ok_or_else(|| format!("the genome has no area {id:?}"))?;
        let p = &layout.params[index];
        Ok(AreaTarget { id: id.to_string(), index, dims: p.dims, neurons_per_voxel: p.neurons_per_voxel, first: p.first })
    }

    /// Inject `potential` into every neuron of voxel (x, y, z) (ignored outside the area).
    pub fn inject(&self, out: &mut Vec<Injection>, [x, y, z]: [u32; 3], potential: f64) {
        let [dx, dy, dz] = self.dims;
        if x >= dx || y >= dy || z >= dz {
            return;
        }
        let p = Potential::from_f64(potential);
        let voxel = (x * dy + y) * dz + z;
        for k in 0..self.neurons_per_voxel {
            out.push(Injection { neuron: self.first + voxel * self.neurons_per_voxel + k, potential: p });
        }
    }
}

/// FEAGI's scalar as a position along z: `v` in `[lo, hi]` -> voxel `0..zdim` (clamped); None for
/// NaN or an empty range.
pub fn z_position(v: f64, lo: f64, hi: f64, zdim: u32) -> Option<u32> {
    if !v.is_finite() || hi.is_nan() || lo.is_nan() || hi <= lo || zdim == 0 {
        return None;
    }
    let f = ((v - lo) / (hi - lo)).clamp(0.0, 1.0);
    Some(((f * zdim as f64) as u32).min(zdim - 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalar_on_z() {
        assert_eq!(z_position(0.0, 0.0, 1.0, 4), Some(0));
        assert_eq!(z_position(0.3, 0.0, 1.0, 4), Some(1));
        assert_eq!(z_position(1.0, 0.0, 1.0, 4), Some(3));
        assert_eq!(z_position(9.0, 0.0, 1.0, 4), Some(3));
        assert_eq!(z_position(f64::NAN, 0.0, 1.0, 4), None);
        assert_eq!(z_position(0.5, 1.0, 1.0, 4), None);
    }
}
