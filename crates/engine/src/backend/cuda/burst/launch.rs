//! How a GPU's bursts are launched ([`Launch`]): the path ([`Path`]: the resident kernel, alone or
//! linked to the other GPUs of the brain, or CUDA graphs), the kernels, the graphs or the resident
//! kernel, the side (fired list) the next burst reads, and the burst count. `resident.rs` and
//! `graphs.rs` launch; `staging.rs` hands them a burst.

use cudarc::driver::CudaGraph;

use crate::backend::cuda::burst::resident::Resident;
use crate::backend::cuda::gpus::exchange::Exchange;
use crate::backend::cuda::module::Kernels;

/// How the bursts run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Path {
    /// One GPU: the resident kernel (with the early step).
    Resident,
    /// One GPU without cooperative launch: CUDA graphs of the phase kernels.
    Graphs,
    /// One GPU of several, driven by the host: graphs that gather every GPU's fired list first
    /// (a brain whose procedural synapses are binned or drawn row by row, as on one GPU, and a GPU
    /// of a brain spread over processes, whose spikes the host brings).
    Shard,
    /// One GPU of several in the resident kernel: the GPUs exchange every burst's fired lists
    /// themselves (`exchange.rs`); the host only hands in the input and takes the output.
    Linked,
}

impl Path {
    /// The resident kernel runs the bursts (with the early step).
    pub(crate) fn resident(self) -> bool {
        matches!(self, Path::Resident | Path::Linked)
    }

    /// One GPU of several.
    pub(crate) fn sharded(self) -> bool {
        matches!(self, Path::Shard | Path::Linked)
    }
}

/// How the bursts run on one GPU.
pub(crate) struct Launch {
    pub kernels: Kernels,
    pub path: Path,
    /// Graph paths: the burst graph (inject, step) of the bursts reading side 0 and side 1.
    pub graphs: Vec<CudaGraph>,
    /// Graph paths: the propagation (gathering first on one GPU of several) of side 0 and side 1.
    pub pre: Vec<CudaGraph>,
    /// One GPU of several whose binned procedural synapses are summed with the others': the
    /// second half of side 0's and side 1's propagation (`pre` is the first), launched once every
    /// GPU's first half is queued (its seat at the meeting, `meeting.rs`).
    pub folds: Vec<CudaGraph>,
    pub seat: Option<crate::backend::cuda::gpus::meeting::Seat>,
    /// The propagation (and early step) of the side the next burst reads has been launched.
    pub pre_pending: bool,
    /// Blocks of `inject`.
    pub inj_grid: u32,
    pub prop_grid: u32,
    /// Side (fired list) the next burst reads.
    pub cur: usize,
    /// Bursts run so far.
    pub burst: u64,
    /// Some: the resident kernel runs the bursts ([`Path::Resident`], [`Path::Linked`]).
    pub resident: Option<Resident>,
    /// Some: one GPU of several in the resident kernel ([`Path::Linked`]).
    pub exchange: Option<Exchange>,
    /// Some: each burst's device time is measured (`graphs.rs`).
    pub timing: Option<crate::backend::cuda::burst::graphs::DeviceTiming>,
    /// Multiprocessors of the device.
    pub sm: u32,
}
