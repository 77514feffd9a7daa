//! The burst model (docs/model.md): the compiled, fixed-point form of a genome's
//! areas, and the per-neuron step every backend must reproduce bit for bit.
//!
//! Nothing here knows about ROS, Zenoh, bags or CUDA.

pub mod fixed;
mod injections;
mod layout;
pub mod neuron;
pub mod plasticity;
pub mod rng;

pub use fixed::Potential;
pub use injections::{ColumnHold, InjectionSlice, Injections, Values, PAGE};
pub use layout::{AreaKind, AreaMeta, Layout, NeuronCoord};
pub use neuron::{step, NeuronState};

/// `AreaParams::flags`: the potential carries over between bursts.
pub const FLAG_MP_ACC: u32 = 1;
/// `AreaParams::flags`: the area is `_power`, driven with 1.0 every burst.
pub const FLAG_POWER: u32 = 2;
/// `AreaParams::flags`: the area is `_death`, it never fires.
pub const FLAG_NEVER_FIRE: u32 = 4;
/// `AreaParams::flags`: a threshold gradient is set (per-neuron thresholds differ).
pub const FLAG_GRADIENT: u32 = 8;

/// The leak is a fraction of the potential (`leak_keep`) or a linear amount (`leak_linear`).
pub const LEAK_FRACTION: u32 = 0;
/// The leak is `leak_linear` LSBs a burst.
pub const LEAK_LINEAR: u32 = 1;

/// One area's neuron parameters in fixed point, as the backends use them. `#[repr(C)]`: the CUDA
/// kernels read the same bytes (`kernels/common.cuh`, `struct AreaParams`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct AreaParams {
    /// Threshold at voxel (0, 0, 0), in LSBs.
    pub threshold: i64,
    /// Threshold increment per voxel along x, y, z, in LSBs.
    pub threshold_inc: [i64; 3],
    /// Upper bound of the firing window, in LSBs; 0 = none.
    pub threshold_limit: i64,
    /// Linear leak in LSBs per burst (when `leak_kind == LEAK_LINEAR`).
    pub leak_linear: i64,
    /// Fire iff `pcg_hash(n, t) < excitability` (2^32 = always).
    pub excitability: u64,
    /// First neuron id of the area.
    pub first: u32,
    /// Number of neurons.
    pub count: u32,
    /// Voxels along x, y and z.
    pub dims: [u32; 3],
    /// Neurons in each voxel.
    pub neurons_per_voxel: u32,
    /// Fractional leak keep factor, 2^16 = no leak.
    pub leak_keep: u32,
    /// [`LEAK_FRACTION`] or [`LEAK_LINEAR`].
    pub leak_kind: u32,
    /// Bursts a neuron stays silent after it fires.
    pub refractory: u32,
    /// Bursts a neuron may fire in a row before it snoozes (0: no limit).
    pub fire_limit: u32,
    /// Bursts a neuron snoozes after the fire limit.
    pub snooze: u32,
    /// `FLAG_*` bits.
    pub flags: u32,
}

impl AreaParams {
    /// Voxel coordinates of the area's `local`-th neuron (ids run `for x { for y { for z { for k }}}`).
    #[inline(always)]
    pub fn voxel_of(&self, local: u32) -> [u32; 3] {
        let voxel = local / self.neurons_per_voxel;
        let z = voxel % self.dims[2];
        let y = (voxel / self.dims[2]) % self.dims[1];
        let x = voxel / (self.dims[2] * self.dims[1]);
        [x, y, z]
    }

    /// Threshold of the area's `local`-th neuron, gradient included.
    #[inline(always)]
    pub fn threshold_of(&self, local: u32) -> i64 {
        if self.flags & FLAG_GRADIENT == 0 {
            return self.threshold;
        }
        let [x, y, z] = self.voxel_of(local);
        self.threshold
            .saturating_add(self.threshold_inc[0].saturating_mul(x as i64))
            .saturating_add(self.threshold_inc[1].saturating_mul(y as i64))
            .saturating_add(self.threshold_inc[2].saturating_mul(z as i64))
    }
}

/// Sensory input for one neuron in one burst. Several injections of one neuron add up.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Injection {
    /// The neuron's id.
    pub neuron: u32,
    /// The potential added to it.
    pub potential: Potential,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn area_params_layout_matches_the_kernel() {
        // kernels/common.cuh mirrors this struct: 7 x 8 bytes, then 11 x 4 bytes, padded to 8.
        assert_eq!(std::mem::size_of::<AreaParams>(), 104);
        assert_eq!(std::mem::align_of::<AreaParams>(), 8);
        assert_eq!(std::mem::size_of::<Injection>(), 16);
    }
}
