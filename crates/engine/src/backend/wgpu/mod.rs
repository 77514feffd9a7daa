//! The wgpu backend: the burst on any GPU with a Vulkan, Metal or DX12 driver (AMD, Intel, Apple,
//! NVIDIA; Mesa's lavapipe on a CPU, which CI runs), bit for bit with the CPU reference.
//!
//! - `device`: the adapter, the device and its limits, its errors caught;
//! - `buffers`: the brain on the device and the passes of `kernels/burst.wgsl` (compiled by the
//!   driver at start-up, as NVRTC compiles the CUDA kernels);
//! - `engine`: [`WgpuEngine`], a burst as one upload, one submission and the fired list read back
//!   (and kept on the device as the next burst's spikes); learning on the host with the learner the
//!   CPU backend uses, procedural synapses drawn again on the host (the CPU backend's draw) and
//!   summed on the device;
//! - `trace`: where a burst's time goes (`NEUROBURST_WGPU_TRACE=1`).
//!
//! The device needs 64-bit integers in shaders (potentials are `i64`, docs/model.md) and buffers
//! both mapped and bound (every native backend); the input accumulators take 64-bit atomics where
//! the device has them, else 32-bit words and a carry (Metal), so no device needs 64-bit atomics.
//! docs/wgpu.md says what runs where and how fast.

mod buffers;
mod device;
mod engine;
mod trace;

pub use device::probe;
pub use engine::WgpuEngine;

use super::shard::Sharded;
use super::{BackendError, Readback};
use crate::brain::Brain;

/// One wgpu device running a whole brain.
pub type WgpuBackend = Sharded<WgpuEngine>;

/// How the input accumulators take their additions (the same sums either way, bit for bit).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WgpuAccumulators {
    /// One 64-bit atomic an addition where the device has them (wgpu's
    /// `SHADER_INT64_ATOMIC_ALL_OPS`: Vulkan's `shaderBufferInt64Atomics`), else as `Words32`.
    Best,
    /// Two 32-bit words and a carry (`kernels/acc32.wgsl`): the way on a device without 64-bit
    /// atomics (Metal); asked for by the tests to check it where the device has both.
    Words32,
}

impl Sharded<WgpuEngine> {
    /// Take a brain built in one part (see [`Brain::build`]) onto the machine's wgpu device.
    pub fn open(brain: Brain, readback: Readback) -> Result<WgpuBackend, BackendError> {
        Self::open_with(brain, readback, WgpuAccumulators::Best)
    }

    /// [`WgpuBackend::open`] with the accumulators' way of adding asked for.
    pub fn open_with(brain: Brain, readback: Readback, acc: WgpuAccumulators) -> Result<WgpuBackend, BackendError> {
        let gpu = device::WgpuDevice::open(acc)?;
        let n = brain.layout.neurons;
        let c = brain.connectome;
        let engine = WgpuEngine::new(gpu, c.parts, brain.layout.params, c.contributions, c.plastic, c.procedural, n)?;
        Ok(Sharded::from_engines(vec![engine], n, readback, "wgpu"))
    }
}
