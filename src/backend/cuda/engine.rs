//! One GPU as one shard of a brain spread over processes or hosts ([`ShardEngine`]): each burst
//! the whole brain's fired list of the last burst arrives from the host (the other shards' spikes
//! came over the network), is uploaded and gathered as the one "peer" of a GPU of several, then
//! propagated over this GPU's synapses; `inject` and `step` run its own neurons, and every own
//! fired neuron comes back (the read-back range is the shard's whole range).

use std::ops::Range;

use cudarc::driver::CudaSlice;

use super::backend::{CudaBackend, GpuShard};
use crate::backend::shard::ShardEngine;
use crate::backend::{Backend, BackendError, BackendInfo, Readback};
use crate::brain::Brain;
use crate::model::{Injection, NeuronState};

pub struct CudaShardEngine {
    gpu: CudaBackend,
    range: Range<u32>,
    spikes: CudaSlice<u32>,
    count: CudaSlice<u64>,
    fired: Vec<u32>,
    fired_v: Vec<i64>,
}

impl CudaShardEngine {
    /// Put `brain`'s part for `range` (built with one part for that range, e.g. by
    /// [`Brain::build_shard`] with one part per shard) on GPU `device`.
    pub fn new(brain: Brain, range: Range<u32>, device: usize) -> Result<CudaShardEngine, BackendError> {
        let neurons = brain.layout.neurons;
        let mut parts: Vec<_> = brain.connectome.parts.into_iter().filter(|p| p.targets_range == range).collect();
        let part = match (parts.pop(), parts.is_empty()) {
            (Some(p), true) => p,
            _ => return Err(BackendError::Device(format!("the brain was not built with one part for the shard's neurons {range:?}"))),
        };
        let shard = GpuShard { part, params: brain.layout.params, contributions: brain.connectome.contributions, neurons };
        let mut gpu = CudaBackend::new_shard(shard, Readback::Ranges(vec![range.clone()]), device)?;
        let (spikes, count) = gpu.connect_host()?;
        Ok(CudaShardEngine { gpu, range, spikes, count, fired: Vec::new(), fired_v: Vec::new() })
    }
}

impl ShardEngine for CudaShardEngine {
    fn range(&self) -> Range<u32> {
        self.range.clone()
    }

    fn info(&self) -> BackendInfo {
        self.gpu.info()
    }

    fn burst(&mut self, t: u64, spikes: &[u32], injection: &[Injection]) -> Result<(), BackendError> {
        if t != self.gpu.bursts() + 1 {
            return Err(BackendError::Device(format!("burst {t} asked of a GPU shard whose last burst was {}", self.gpu.bursts())));
        }
        self.gpu.upload_spikes(spikes, &mut self.spikes, &mut self.count)?;
        let out = self.gpu.burst(injection)?;
        self.fired.clear();
        self.fired.extend_from_slice(out.fired);
        self.fired_v.clear();
        self.fired_v.extend_from_slice(out.potentials);
        Ok(())
    }

    fn fired(&self) -> (&[u32], &[i64]) {
        (&self.fired, &self.fired_v)
    }

    fn snapshot(&mut self) -> Result<NeuronState, BackendError> {
        let mut st = self.gpu.snapshot()?;
        st.fired = self.fired.clone();
        Ok(st)
    }

    fn restore(&mut self, state: &NeuronState) -> Result<(), BackendError> {
        self.gpu.restore(state)?;
        self.fired.clear();
        self.fired_v.clear();
        Ok(())
    }
}
