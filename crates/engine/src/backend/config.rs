//! The `backend` section of the configuration: which backend runs the brain, on what, sharded how.

use serde::{Deserialize, Serialize};

use super::BackendKind;

/// Which backend runs the brain, and on what.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BackendConfig {
    /// auto | cpu | cuda | wgpu
    pub kind: BackendKind,
    /// CUDA device ordinal.
    pub device: usize,
    /// Smallest brain that `auto` puts on a GPU.
    pub gpu_min_neurons: u64,
    /// CPU backend threads; 0 = one per core.
    pub cpu_threads: usize,
    /// Shards: a count or `auto`. With the CUDA backend one shard per GPU (`auto`: as many GPUs as
    /// keep `shard_min_neurons` each); with the CPU backend CPU shards in one process (`auto`: 1).
    pub shards: crate::partition::ShardCount,
    /// GPUs to shard over (device ordinals); empty = `device`, `device + 1`, ...
    pub gpus: Vec<usize>,
    /// round_robin | by_cortical_area
    pub strategy: crate::partition::Strategy,
    /// `shards: auto` gives each GPU at least this many neurons. Measured on H100s
    /// (docs/sharding.md): from 10M neurons on, several GPUs burst W(N, 100, 1%) both faster back
    /// to back and with no more latency when paced; at 5M, one GPU answers sooner when paced.
    pub shard_min_neurons: u64,
    /// auto | stored | procedural: where the synapses live (docs/capacity.md). `auto` stores what
    /// fits the memory and draws the largest mappings again when their sources fire.
    pub connectome: crate::connectome::storage::Storage,
    /// Whether the plastic mappings learn (docs/plasticity.md); a running node switches it at
    /// the next burst.
    pub learning: bool,
    /// auto | graphs: how one GPU's bursts are launched (docs/cuda.md).
    pub cuda_launch: CudaLaunch,
}

/// How one GPU's bursts are launched (`backend.cuda_launch`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CudaLaunch {
    /// The resident kernel, where the device has cooperative launch and the brain allows it;
    /// else CUDA graphs.
    #[default]
    Auto,
    /// CUDA graphs of one kernel a phase, whatever the device: slower (a launch a phase, no work
    /// run ahead of the command), but each phase is a kernel that Nsight Compute can profile,
    /// which it cannot do to a kernel that waits for the host.
    Graphs,
}

impl Default for BackendConfig {
    fn default() -> Self {
        BackendConfig {
            kind: BackendKind::Auto,
            device: 0,
            gpu_min_neurons: 50_000,
            cpu_threads: 0,
            shards: crate::partition::ShardCount::Count(1),
            gpus: Vec::new(),
            strategy: crate::partition::Strategy::RoundRobin,
            shard_min_neurons: 5_000_000,
            connectome: crate::connectome::storage::Storage::Auto,
            learning: true,
            cuda_launch: CudaLaunch::Auto,
        }
    }
}
