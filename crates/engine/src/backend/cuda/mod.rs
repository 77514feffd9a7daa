//! The CUDA backend: the whole burst on one GPU, bit-identical to the CPU reference.
//!
//! - [`probe`]: is a usable GPU there (driver, device, NVRTC, our kernels compile)? Never panics.
//! - [`module`]: `kernels/*.cu`, embedded, compiled by NVRTC at start-up (PTX cached on disk).
//! - `layout`: the host's mirrors of the kernels' structs, the output's layout.
//! - [`memory`]: what a brain needs on the device (usable without a GPU, e.g. by `inspect`), the
//!   mapped pinned host buffers that carry the injection up and the motor output down, and
//!   page-locked input columns.
//! - `backend`: [`CudaBackend`], what it owns, how it is put together and the `Backend` trait.
//! - `build/`: where a brain is built: `connectome` (what a GPU gets of the connectome, its
//!   upload), `on_gpu` (a closed-form connectome built on the GPU), `state` (`GpuState`: the
//!   brain's part on the device, and the kernels' `Net`).
//! - `burst/`: where a burst is launched: `launch` (how the bursts run: the resident kernel or
//!   graphs), `staging` (a burst from the host: input, launch, read-back), `host_io` (the host's
//!   buffers), `resident` (the kernel that stays on the GPU), `graphs` (the graphs, and the work
//!   run ahead of a burst), `tiles` and `procbin` (a large brain's synapses binned), `learn`
//!   (plasticity), `snapshot` (snapshots and restores).
//! - `gpus/`: where GPUs meet: `multi` ([`MultiGpu`]: several GPUs of one host), `peers`,
//!   `exchange` (the linked resident kernels' spike exchange), `meeting`, `engine`
//!   ([`CudaShardEngine`]: a GPU shard of a brain over processes).
//!
//! Every GPU runs its bursts in the resident kernel (no API call per burst: the host writes a
//! command into mapped memory), one GPU alone or each of several with its share, exchanging the
//! fired ids over NVLink itself (`exchange.rs`); the brains the resident kernel cannot run take
//! CUDA graphs. The phases (`kernels/`): `propagate` spreads the last burst's
//! spikes over (spike, synapse) pairs with integer atomics (exact, order-independent sums), ahead
//! of the injection; `inject` adds the burst's sensory injection; `step` runs every neuron,
//! compacts the fired list on the device and writes the read-back neurons straight into mapped
//! pinned host memory (on one GPU, the early step: every neuron stepped before the injection, the
//! injected ones again after it, `fix`). Every output word carries a tag of its burst, so the GPU
//! needs no system-scope fences. Only the injection and the read-back list cross PCIe
//! (docs/cuda.md).

mod backend;
mod build;
mod burst;
mod gpus;
mod layout;
pub mod memory;
pub mod module;
mod probe;

pub use backend::{CudaBackend, GpuBuild};
pub use build::on_gpu::LONGEST as GPU_BUILD_LONGEST_ROW;
pub use gpus::engine::CudaShardEngine;
pub use gpus::multi::MultiGpu;
pub use memory::{device_bytes_needed, MemoryPlan};
pub use probe::{device_count, free_memory, probe};
