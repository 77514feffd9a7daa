//! The CPU backend, the reference. The connectome is split into one part per thread by target
//! range; every thread accumulates the last burst's spikes onto its own targets (no atomics), then
//! steps its own neurons, then the fired lists are joined in id order.

use rayon::prelude::*;

use super::{Backend, BackendError, BackendInfo, BurstOutput, Readback};
use crate::brain::Brain;
use crate::connectome::{Codes, Part};
use crate::model::{fixed, step, AreaParams, Injection, NeuronState, FLAG_POWER};

struct Shard {
    conn: Part,
    /// Area index and global id range of each area piece this shard owns.
    segments: Vec<(usize, std::ops::Range<u32>)>,
    potential: Vec<i64>,
    refractory: Vec<u16>,
    consecutive: Vec<u16>,
    /// Input gathered for the coming burst (injection + synapses), in LSBs.
    input: Vec<i64>,
    fired: Vec<u32>,
    fired_v: Vec<i64>,
}

impl Shard {
    fn new(conn: Part, params: &[AreaParams]) -> Shard {
        let n = conn.targets_range.len();
        let segments = params
            .iter()
            .enumerate()
            .filter_map(|(a, p)| {
                let lo = p.first.max(conn.targets_range.start);
                let hi = (p.first + p.count).min(conn.targets_range.end);
                (lo < hi).then_some((a, lo..hi))
            })
            .collect();
        Shard {
            conn,
            segments,
            potential: vec![0; n],
            refractory: vec![0; n],
            consecutive: vec![0; n],
            input: vec![0; n],
            fired: Vec::new(),
            fired_v: Vec::new(),
        }
    }

    fn propagate(&mut self, spikes: &[u32], table: &[i32]) {
        match &self.conn.codes {
            Codes::U16(codes) => accumulate(&mut self.input, &self.conn, codes, table, spikes),
            Codes::U32(codes) => accumulate(&mut self.input, &self.conn, codes, table, spikes),
        }
    }

    fn step_all(&mut self, params: &[AreaParams], t: u64) {
        self.fired.clear();
        self.fired_v.clear();
        let base = self.conn.targets_range.start;
        for (a, range) in &self.segments {
            let p = &params[*a];
            let drive = if p.flags & FLAG_POWER != 0 { fixed::ONE } else { 0 };
            for n in range.clone() {
                let i = (n - base) as usize;
                let input = std::mem::take(&mut self.input[i]).wrapping_add(drive);
                let threshold = p.threshold_of(n - p.first);
                if let Some(v) = step(
                    p,
                    threshold,
                    &mut self.potential[i],
                    &mut self.refractory[i],
                    &mut self.consecutive[i],
                    input,
                    n,
                    t,
                ) {
                    self.fired.push(n);
                    self.fired_v.push(v);
                }
            }
        }
    }
}

/// Add the contributions of every synapse of the spiking sources onto their targets.
fn accumulate<C: Copy + Into<u32>>(input: &mut [i64], conn: &Part, codes: &[C], table: &[i32], spikes: &[u32]) {
    for &s in spikes {
        let row = conn.row(s);
        for (&t, &c) in conn.targets[row.clone()].iter().zip(&codes[row]) {
            let slot = &mut input[t as usize];
            *slot = slot.wrapping_add(table[c.into() as usize] as i64);
        }
    }
}

/// The reference backend.
pub struct CpuBackend {
    params: Vec<AreaParams>,
    neurons: u32,
    shards: Vec<Shard>,
    contributions: Vec<i32>,
    burst: u64,
    /// Every neuron fired in the last burst, ascending, with its potential at fire.
    fired: Vec<u32>,
    fired_v: Vec<i64>,
    readback: Readback,
    out: Vec<u32>,
    out_v: Vec<i64>,
}

impl CpuBackend {
    /// Take a built brain; its connectome's parts become the threads' shards.
    pub fn new(brain: Brain, readback: Readback) -> CpuBackend {
        let params = brain.layout.params.clone();
        let shards = brain.connectome.parts.into_iter().map(|p| Shard::new(p, &params)).collect();
        CpuBackend {
            params,
            neurons: brain.layout.neurons,
            shards,
            contributions: brain.connectome.contributions,
            burst: 0,
            fired: Vec::new(),
            fired_v: Vec::new(),
            readback,
            out: Vec::new(),
            out_v: Vec::new(),
        }
    }

    fn shard_of(&self, n: u32) -> usize {
        self.shards.partition_point(|s| s.conn.targets_range.end <= n)
    }
}

impl Backend for CpuBackend {
    fn info(&self) -> BackendInfo {
        let bytes: u64 = self.shards.iter().map(|s| s.conn.bytes() + s.potential.len() as u64 * (8 + 2 + 2 + 8)).sum();
        BackendInfo {
            backend: "cpu".into(),
            device: format!("{} threads, {} shards", rayon::current_num_threads(), self.shards.len()),
            memory_bytes: bytes,
        }
    }

    fn burst(&mut self, injection: &[Injection]) -> Result<BurstOutput<'_>, BackendError> {
        for inj in injection {
            if inj.neuron >= self.neurons {
                return Err(BackendError::InjectionOutOfRange { neuron: inj.neuron, neurons: self.neurons });
            }
        }
        for inj in injection {
            let s = self.shard_of(inj.neuron);
            let shard = &mut self.shards[s];
            let slot = &mut shard.input[(inj.neuron - shard.conn.targets_range.start) as usize];
            *slot = slot.wrapping_add(inj.potential.0);
        }
        let t = self.burst + 1;
        let spikes = &self.fired;
        let params = &self.params;
        let table = &self.contributions;
        self.shards.par_iter_mut().for_each(|shard| {
            shard.propagate(spikes, table);
            shard.step_all(params, t);
        });
        self.burst = t;
        self.fired.clear();
        self.fired_v.clear();
        for s in &self.shards {
            self.fired.extend_from_slice(&s.fired);
            self.fired_v.extend_from_slice(&s.fired_v);
        }
        let (fired, potentials) = match &self.readback {
            Readback::All => (&self.fired[..], &self.fired_v[..]),
            Readback::Ranges(_) => {
                self.out.clear();
                self.out_v.clear();
                for (&n, &v) in self.fired.iter().zip(&self.fired_v) {
                    if self.readback.contains(n) {
                        self.out.push(n);
                        self.out_v.push(v);
                    }
                }
                (&self.out[..], &self.out_v[..])
            }
        };
        Ok(BurstOutput { burst: t, fired, potentials, fired_total: self.fired.len() as u64 })
    }

    fn snapshot(&mut self) -> Result<NeuronState, BackendError> {
        let mut st = NeuronState { burst: self.burst, fired: self.fired.clone(), ..Default::default() };
        for s in &self.shards {
            st.potential.extend_from_slice(&s.potential);
            st.refractory.extend_from_slice(&s.refractory);
            st.consecutive.extend_from_slice(&s.consecutive);
        }
        Ok(st)
    }

    fn restore(&mut self, st: &NeuronState) -> Result<(), BackendError> {
        let n = self.neurons as usize;
        for len in [st.potential.len(), st.refractory.len(), st.consecutive.len()] {
            if len != n {
                return Err(BackendError::StateMismatch { got: len, expected: n });
            }
        }
        if let Some(&bad) = st.fired.iter().find(|&&f| f >= self.neurons) {
            return Err(BackendError::InjectionOutOfRange { neuron: bad, neurons: self.neurons });
        }
        for s in &mut self.shards {
            let r = s.conn.targets_range.start as usize..s.conn.targets_range.end as usize;
            s.potential.copy_from_slice(&st.potential[r.clone()]);
            s.refractory.copy_from_slice(&st.refractory[r.clone()]);
            s.consecutive.copy_from_slice(&st.consecutive[r]);
            s.input.iter_mut().for_each(|x| *x = 0);
        }
        self.burst = st.burst;
        self.fired = st.fired.clone();
        self.fired_v = vec![0; st.fired.len()];
        Ok(())
    }
}
