//! Backends run bursts. They all implement [`Backend`]; the CPU backend ([`cpu`]) is the
//! reference, and every other backend must produce the same fired sets bit for bit.

mod config;
pub mod cpu;
pub mod cuda;
pub mod learn;
pub mod open;
pub mod select;
pub mod shard;
pub mod wgpu;

use std::ops::Range;

use crate::model::{InjectionSlice, Injections, NeuronState};

pub use config::{BackendConfig, CudaLaunch};
pub use select::{choose, BackendKind, Choice, GpuProbe, Probes};

/// Which fired neurons a backend hands back after every burst.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Readback {
    /// Every fired neuron (for `run --spikes-out`, parity checks and small brains).
    All,
    /// Only neurons in these id ranges (the motor areas): all that crosses PCIe on a GPU.
    Ranges(Vec<Range<u32>>),
}

impl Readback {
    /// Whether neuron `n` is read back.
    pub fn contains(&self, n: u32) -> bool {
        match self {
            Readback::All => true,
            Readback::Ranges(r) => r.iter().any(|r| r.contains(&n)),
        }
    }
}

/// What one burst produced. The slices borrow the backend's own buffers (no allocation per burst).
#[derive(Debug)]
pub struct BurstOutput<'a> {
    /// Number of this burst (the first is 1).
    pub burst: u64,
    /// Fired neurons selected by the [`Readback`], ascending.
    pub fired: &'a [u32],
    /// Potential at fire of each of `fired`, in LSBs.
    pub potentials: &'a [i64],
    /// How many neurons fired in the whole brain.
    pub fired_total: u64,
}

/// Description of a backend for logs and benchmark tables.
#[derive(Clone, Debug, serde::Serialize)]
pub struct BackendInfo {
    /// `cpu`, `cuda`, ...
    pub backend: String,
    /// e.g. `2 threads` or `NVIDIA H100 80GB HBM3`
    pub device: String,
    /// Bytes the brain occupies on the device (state and connectome).
    pub memory_bytes: u64,
    /// Bytes per stored synapse on the device, row pointers and contribution table included.
    pub bytes_per_synapse: f64,
}

/// Errors from backends.
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    #[error("injection names neuron {neuron}, but the brain has {neurons} neurons")]
    /// An injection names a neuron the brain does not have.
    InjectionOutOfRange {
        /// The id named.
        neuron: u32,
        /// The neurons the backend runs (ids below).
        neurons: u32,
    },
    #[error("state has {got} neurons, the brain has {expected}")]
    /// A restored state is of another brain.
    StateMismatch {
        /// Neurons of the state.
        got: usize,
        /// Neurons of the brain.
        expected: usize,
    },
    #[error("the burst counter is {0}, at its end: no burst can follow it")]
    /// The burst counter (a restored state's) is at its end (u64::MAX - 1 or above).
    BurstAtEnd(u64),
    #[error("{0}")]
    /// The device failed (a CUDA error, said as the driver said it).
    Device(String),
}

/// The error for `input`, some of whose ids lie outside `own` (the neurons a backend runs): it
/// names the first such id.
pub(crate) fn out_of_range(input: InjectionSlice<'_>, own: Range<u32>) -> BackendError {
    let neuron = input.ids().iter().copied().find(|n| !own.contains(n)).unwrap_or(own.end);
    BackendError::InjectionOutOfRange { neuron, neurons: own.end }
}

/// The one small trait every backend implements.
pub trait Backend: Send {
    /// What the backend is and runs on.
    fn info(&self) -> BackendInfo;

    /// Run the next burst with this sensory input (any order; repeated neurons add up).
    fn burst(&mut self, input: InjectionSlice<'_>) -> Result<BurstOutput<'_>, BackendError>;

    /// Called with the buffer the caller fills for every burst, before the first: the backend may
    /// take a hold on its memory ([`Injections::hold_ids`]). The CUDA backend page-locks the id
    /// column, so a burst's copy to the GPU reads it in place instead of copying it to a buffer of
    /// its own first. Any input still works; this only spares a copy. Default: nothing.
    fn prepare_input(&mut self, _input: &mut Injections) {}

    /// Copy out the whole neuron state (for checkpoints and parity checks).
    fn snapshot(&mut self) -> Result<NeuronState, BackendError>;

    /// Replace the whole neuron state.
    fn restore(&mut self, state: &NeuronState) -> Result<(), BackendError>;

    /// Learn (the plastic mappings' rule and growth) or not, from the firing of the burst after
    /// the next on; before the first burst, from the start ([`crate::model::plasticity::Switch`],
    /// docs/plasticity.md). Default: nothing (a brain that does not learn).
    fn set_learning(&mut self, _on: bool) -> Result<(), BackendError> {
        Ok(())
    }

    /// Ask for the device's own time of each burst from now on; false where the backend cannot
    /// time it (the CPU, the resident kernel: a burst there has no start and end of its own).
    fn time_device(&mut self) -> bool {
        false
    }

    /// The device's time of the last burst, in microseconds, once [`Backend::time_device`] said
    /// yes: its propagation (which runs ahead of it, hidden from its latency while the host
    /// prepares the input) and its burst, the idle time between them left out.
    fn device_us(&mut self) -> Option<f64> {
        None
    }
}

/// Probe CUDA device `device`; never panics (see [`cuda::probe`]).
pub(crate) fn gpu_probe(device: usize) -> GpuProbe {
    cuda::probe(device)
}

/// How many GPUs the driver sees (0 without a usable driver).
pub fn gpu_count() -> usize {
    cuda::device_count()
}

/// Bytes a brain needs on one GPU (connectome and state), computed without a GPU.
pub fn gpu_bytes_needed(brain: &crate::brain::Brain) -> u64 {
    cuda::device_bytes_needed(brain)
}
