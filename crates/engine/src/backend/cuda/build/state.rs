//! What one GPU holds of a brain ([`GpuState`]): its neurons' state, the accumulators, the
//! injection, the fired lists of both sides, the connectome's resources, and what the early step,
//! learning, binned procedural synapses and several GPUs add; with [`Net`], the kernels' view of
//! it. Only the device: the host's side of a burst is [`crate::backend::cuda::burst::host_io::HostIo`].

use cudarc::driver::CudaSlice;

use crate::backend::cuda::build::connectome::Resources;
use crate::backend::cuda::burst::learn::GpuLearning;
use crate::backend::cuda::burst::procbin::ProcBins;
use crate::backend::cuda::burst::tiles::Tiles;
use crate::backend::cuda::layout::Net;

/// A brain's part on one GPU: neurons `base..base + neurons` of a brain of `rows - 1`.
pub(crate) struct GpuState {
    pub v: CudaSlice<i64>,
    pub rcc: CudaSlice<u32>,
    /// The accumulators of the bursts reading side 0 and side 1 (each propagation runs ahead into
    /// its own).
    pub acc: [CudaSlice<i64>; 2],
    pub inj: CudaSlice<u64>,
    pub inj_mask: CudaSlice<u32>,
    pub fired: [CudaSlice<u32>; 2],
    pub offs: [CudaSlice<u64>; 2],
    /// Each fired slot's row start less its offset (`offs`): pair k of the row is stored synapse k + shift.
    pub shifts: [CudaSlice<u64>; 2],
    pub misc: CudaSlice<u64>,
    pub res: Resources,
    /// Rows of the row pointer (neurons of the whole brain + 1).
    pub rows: usize,
    /// Some: one GPU of several, connected.
    pub multi: Option<Multi>,
    /// Some: the early step (the resident kernel).
    pub early: Option<Early>,
    /// Some: the brain learns (`learn.rs`).
    pub learning: Option<GpuLearning>,
    /// Some: a large brain's procedural synapses are binned (`procbin.rs`).
    pub proc_bins: Option<ProcBins>,
    /// Some: a large brain's stored synapses are binned by target tile (`tiles.rs`).
    pub tiles: Option<Tiles>,
    /// The kernels' view of the buffers above.
    pub net: Net,
    /// This GPU's neurons: `base..base + neurons`.
    pub neurons: u32,
    pub base: u32,
    pub count_shift: u32,
    /// The largest synaptic input of one burst a neuron can get, or a bound of it within i32 (None:
    /// drawn again, unbounded).
    pub input_bound: Option<u64>,
    /// The synaptic accumulators are 64-bit (the brain's input bound exceeds i32).
    pub wide_acc: bool,
}

/// The early step (the resident kernel). Whether a neuron fires depends on the sensory injection
/// only when it is injected: right after the propagation, `prestep` steps every neuron with its
/// synaptic input alone, from state buffer r into the other one (bursts reading side r), before
/// the host has the injection; the burst then only injects and runs `fix`, which steps the
/// injected neurons again from buffer r with their whole input and mends the fired list and the
/// read-back. The burst's latency no longer includes the step over every neuron.
pub(crate) struct Early {
    /// The second state buffer (`v`, `rcc` are the first).
    pub v: CudaSlice<i64>,
    pub rcc: CudaSlice<u32>,
    /// One bit per neuron: fired in `prestep`.
    pub _spec: CudaSlice<u32>,
    /// Of each neuron `prestep` fired: fired slot | read-back slot << 32.
    pub _where: CudaSlice<u64>,
}

/// One GPU of several: the gathered fired list of the whole brain and where the GPUs' own lists lie.
pub(crate) struct Multi {
    pub fired: CudaSlice<u32>,
    pub offs: CudaSlice<u64>,
    pub shifts: CudaSlice<u64>,
    /// `Peer` tables, one per side (the side every GPU's last burst wrote).
    pub peers: [CudaSlice<u8>; 2],
    pub n_peers: u32,
}
