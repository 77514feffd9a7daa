//! The CUDA backend: the whole burst on one GPU, bit-identical to the CPU reference.
//!
//! - [`probe`]: is a usable GPU there (driver, device, NVRTC, our kernels compile)? Never panics.
//! - [`module`]: `kernels/burst.cu`, embedded, compiled by NVRTC at start-up (PTX cached on disk).
//! - [`memory`]: what a brain needs on the device (usable without a GPU, e.g. by `inspect`), and
//!   the mapped pinned host buffers that carry the injection up and the motor output down.
//! - [`backend`]: [`CudaBackend`], the [`crate::backend::Backend`] on the device.
//! - [`resident`]: one GPU's bursts run by a kernel that stays on the GPU (no API call per burst).
//!
//! Design (details in `kernels/burst.cu`): three kernels. `propagate` spreads the last burst's
//! spikes over (spike, synapse) pairs (a row-offset list built by the fired-list compaction; every
//! warp takes 256 consecutive pairs and finds their rows by binary search) with integer atomics
//! (exact, order-independent sums); `inject` adds the burst's sensory injection; `step` runs every
//! neuron, compacts the fired list on the device and writes the read-back neurons straight into
//! mapped pinned host memory; its last block publishes the counters, which the host polls. Every
//! output word carries a tag of its burst, so the GPU needs no system-scope fences. Only the
//! injection and the read-back list cross PCIe.
//!
//! On one GPU the propagation runs ahead: it needs only the last burst's fired list, so each burst
//! graph (copy the injection up, `inject`, `step`) ends with the next burst's propagation (clear
//! the other of two accumulators, `propagate` into it), which runs while the host collects the
//! output and waits for the next injection. A burst's latency is then the injection, the step and
//! the output. On several GPUs every burst graph gathers the fired lists from the other GPUs first,
//! then propagates, injects and steps.

mod backend;
mod engine;
mod graphs;
mod layout;
pub mod memory;
pub mod module;
mod multi;
mod peers;
mod probe;
mod resident;
mod staging;
mod state;

pub use backend::CudaBackend;
pub use engine::CudaShardEngine;
pub use memory::{device_bytes_needed, MemoryPlan};
pub use multi::MultiGpu;
pub use probe::{device_count, probe};
