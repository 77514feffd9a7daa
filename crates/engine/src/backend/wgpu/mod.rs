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
//! The device needs 64-bit integers in shaders (potentials are `i64`, docs/model.md); the input
//! accumulators take 32-bit atomics only (the carry counted into the high word), so no device needs
//! 64-bit atomics. docs/wgpu.md says what runs where and how fast.

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

impl Sharded<WgpuEngine> {
    /// Take a brain built in one part (see [`Brain::build`]) onto the machine's wgpu device.
    pub fn open(brain: Brain, readback: Readback) -> Result<WgpuBackend, BackendError> {
        let gpu = device::WgpuDevice::open()?;
        let n = brain.layout.neurons;
        let c = brain.connectome;
        let engine = WgpuEngine::new(gpu, c.parts, brain.layout.params, c.contributions, c.plastic, c.procedural, n)?;
        Ok(Sharded::from_engines(vec![engine], n, readback, "wgpu"))
    }
}
