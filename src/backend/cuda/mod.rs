//! The CUDA backend: the whole burst on one GPU, bit-identical to the CPU reference.
//!
//! - [`probe`]: is a usable GPU there (driver, device, NVRTC, our kernels compile)? Never panics.
//! - [`module`]: `kernels/burst.cu`, embedded, compiled by NVRTC at start-up (PTX cached on disk).
//! - [`memory`]: what a brain needs on the device (usable without a GPU, e.g. by `inspect`), and
//!   the mapped pinned host buffers that carry the injection up and the motor output down.
//! - [`backend`]: [`CudaBackend`], the [`crate::backend::Backend`] on the device.
//!
//! Design (details in `kernels/burst.cu`): per burst one CUDA graph of two kernels. `propagate`
//! spreads the last burst's spikes over (spike, synapse) pairs (a row-offset list built by the
//! fired-list compaction; every warp takes 256 consecutive pairs and finds their rows by binary
//! search) and adds the injection, both with integer atomics (exact, order-independent sums);
//! `step` runs every neuron, compacts the fired list on the device and writes the read-back
//! neurons straight into mapped pinned host memory; its last block publishes the counters, which
//! the host polls. Every output word carries a tag of its burst, so the GPU needs no system-scope
//! fences. Only the injection and the read-back list cross PCIe.

mod backend;
pub mod memory;
pub mod module;
mod multi;
mod probe;

pub use backend::CudaBackend;
pub use memory::{device_bytes_needed, MemoryPlan};
pub use multi::MultiGpu;
pub use probe::{device_count, probe};
