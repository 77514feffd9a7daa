//! One or several GPUs as one shard of a brain spread over processes or hosts ([`ShardEngine`]):
//! each burst the whole brain's fired list of the last burst arrives from the host (the other
//! shards' spikes came over the network); every GPU of the shard uploads it and gathers it as the
//! one "peer" of a GPU of several, propagates it over its synapses, then `inject` and `step` run
//! its own neurons, and every own fired neuron comes back (the read-back range is the GPU's whole
//! range). Several GPUs split the shard's range evenly and burst in parallel.

use std::ops::Range;

use cudarc::driver::CudaSlice;
use rayon::prelude::*;

use crate::backend::cuda::backend::CudaBackend;
use crate::backend::cuda::build::connectome::GpuShard;
use crate::backend::shard::{check_lengths, ShardEngine};
use crate::backend::{Backend, BackendError, BackendInfo, Readback};
use crate::brain::Brain;
use crate::model::{InjectionSlice, NeuronState};

/// One GPU of the shard.
struct Gpu {
    backend: CudaBackend,
    range: Range<u32>,
    spikes: CudaSlice<u32>,
    count: CudaSlice<u64>,
    fired: Vec<u32>,
    fired_v: Vec<i64>,
}

impl Gpu {
    fn burst(&mut self, spikes: &[u32], input: InjectionSlice<'_>) -> Result<(), BackendError> {
        self.backend.upload_spikes(spikes, &mut self.spikes, &mut self.count)?;
        let out = self.backend.burst(input.within(self.range.clone()))?;
        self.fired.clear();
        self.fired.extend_from_slice(out.fired);
        self.fired_v.clear();
        self.fired_v.extend_from_slice(out.potentials);
        Ok(())
    }
}

/// A shard of a brain run on one or several GPUs of this machine (a cluster member's engine).
pub struct CudaShardEngine {
    gpus: Vec<Gpu>,
    range: Range<u32>,
    fired: Vec<u32>,
    fired_v: Vec<i64>,
    info: BackendInfo,
}

impl CudaShardEngine {
    /// Put `brain`'s part for `range` on `devices`: the brain was built with one part per device
    /// inside `range`, ascending and contiguous (e.g. [`Brain::build_shard`] with `devices.len()`
    /// parts per shard).
    pub fn new(brain: Brain, range: Range<u32>, devices: &[usize]) -> Result<CudaShardEngine, BackendError> {
        let neurons = brain.layout.neurons;
        let (procedural, rows) = crate::backend::cuda::build::connectome::gpu_procedural(&brain.connectome)?;
        let mut parts: Vec<_> = brain
            .connectome
            .parts
            .into_iter()
            .filter(|p| p.targets_range.start >= range.start && p.targets_range.end <= range.end)
            .collect();
        parts.sort_by_key(|p| p.targets_range.start);
        let contiguous = parts.first().map(|p| p.targets_range.start) == Some(range.start)
            && parts.last().map(|p| p.targets_range.end) == Some(range.end)
            && parts.windows(2).all(|w| w[0].targets_range.end == w[1].targets_range.start);
        if devices.is_empty() || parts.len() != devices.len() || !contiguous {
            return Err(BackendError::Device(format!(
                "the shard's neurons {range:?} were built in {} parts for {} GPUs",
                parts.len(),
                devices.len()
            )));
        }
        let mut gpus = Vec::with_capacity(parts.len());
        for (part, &device) in parts.into_iter().zip(devices) {
            let r = part.targets_range.clone();
            let shard = GpuShard {
                part,
                params: brain.layout.params.clone(),
                contributions: brain.connectome.contributions.clone(),
                neurons,
                plastic: brain.connectome.plastic.clone(),
                procedural: procedural.clone(),
                rows: rows.clone(),
                recipe: None,
                part_rows: None,
                parts: None,
                streamed: None,
                together: false,
            };
            let mut backend = CudaBackend::new_shard(shard, Readback::Ranges(vec![r.clone()]), device, false)?;
            let (spikes, count) = backend.connect_host()?;
            gpus.push(Gpu { backend, range: r, spikes, count, fired: Vec::new(), fired_v: Vec::new() });
        }
        let infos: Vec<BackendInfo> = gpus.iter().map(|g| g.backend.info()).collect();
        let info = BackendInfo {
            backend: "cuda".into(),
            device: infos.iter().map(|i| i.device.as_str()).collect::<Vec<_>>().join("; "),
            memory_bytes: infos.iter().map(|i| i.memory_bytes).sum(),
            bytes_per_synapse: infos.iter().map(|i| i.bytes_per_synapse).sum::<f64>() / infos.len() as f64,
        };
        Ok(CudaShardEngine { gpus, range, fired: Vec::new(), fired_v: Vec::new(), info })
    }
}

impl ShardEngine for CudaShardEngine {
    fn range(&self) -> Range<u32> {
        self.range.clone()
    }

    fn info(&self) -> BackendInfo {
        self.info.clone()
    }

    fn burst(&mut self, t: u64, spikes: &[u32], input: InjectionSlice<'_>) -> Result<(), BackendError> {
        let last = self.gpus[0].backend.bursts();
        if t != last + 1 {
            return Err(BackendError::Device(format!("burst {t} asked of a GPU shard whose last burst was {last}")));
        }
        if self.gpus.len() == 1 {
            self.gpus[0].burst(spikes, input)?;
        } else {
            self.gpus.par_iter_mut().try_for_each(|g| g.burst(spikes, input))?;
        }
        self.fired.clear();
        self.fired_v.clear();
        for g in &self.gpus {
            self.fired.extend_from_slice(&g.fired);
            self.fired_v.extend_from_slice(&g.fired_v);
        }
        Ok(())
    }

    fn fired(&self) -> (&[u32], &[i64]) {
        (&self.fired, &self.fired_v)
    }

    fn set_learning(&mut self, on: bool, _last: u64) -> Result<(), BackendError> {
        self.gpus.iter_mut().try_for_each(|g| g.backend.switch_learning(on))
    }

    fn snapshot(&mut self) -> Result<NeuronState, BackendError> {
        let mut st = NeuronState { fired: self.fired.clone(), ..Default::default() };
        for g in &mut self.gpus {
            let s = g.backend.snapshot()?;
            st.burst = s.burst;
            st.potential.extend_from_slice(&s.potential);
            st.refractory.extend_from_slice(&s.refractory);
            st.consecutive.extend_from_slice(&s.consecutive);
            crate::backend::shard::merge_learned(&mut st.learned, s.learned);
        }
        Ok(st)
    }

    fn restore(&mut self, state: &NeuronState) -> Result<(), BackendError> {
        check_lengths(state, self.range.len())?;
        for g in &mut self.gpus {
            let r = (g.range.start - self.range.start) as usize..(g.range.end - self.range.start) as usize;
            let part = NeuronState {
                burst: state.burst,
                potential: state.potential[r.clone()].to_vec(),
                refractory: state.refractory[r.clone()].to_vec(),
                consecutive: state.consecutive[r].to_vec(),
                learned: state.learned.clone(),
                ..Default::default()
            };
            g.backend.restore(&part)?;
        }
        self.fired.clear();
        self.fired_v.clear();
        Ok(())
    }
}

impl Drop for CudaShardEngine {
    fn drop(&mut self) {
        for g in &mut self.gpus {
            if let Some(s) = g.backend.trace_summary() {
                tracing::warn!("GPU shard part {:?} ({}): {s}", g.range, g.backend.info().device);
            }
        }
    }
}
