//! Shards in one process: a brain cut along a [`crate::partition::ShardPlan`] into [`ShardEngine`]s,
//! each owning a contiguous range of neurons and every synapse onto them. Every burst each engine
//! reads the whole brain's fired list of the last burst (the exchange: here the concatenation of
//! the engines' own lists, in id order) and steps its own neurons.
//!
//! The same engines serve a brain spread over processes or hosts (the exchange then travels over
//! the network): an engine only ever sees the spikes it is handed and the injection of its range.

use std::ops::Range;

use rayon::prelude::*;

use super::{out_of_range, Backend, BackendError, BackendInfo, BurstOutput, Readback};
use crate::model::{InjectionSlice, Injections, NeuronState};

/// One shard of a brain.
pub trait ShardEngine: Send {
    /// The neurons this shard owns.
    fn range(&self) -> Range<u32>;

    /// What the shard's engine is and runs on.
    fn info(&self) -> BackendInfo;

    /// Run burst `t`: propagate `spikes` (every neuron of the whole brain that fired in burst
    /// `t - 1`, in any order), then step the own neurons with `input` (only own neurons, sorted by
    /// neuron). The own fired neurons are then in [`ShardEngine::fired`].
    fn burst(&mut self, t: u64, spikes: &[u32], input: InjectionSlice<'_>) -> Result<(), BackendError>;

    /// The own neurons that fired in the last burst, ascending, and their potentials at fire.
    fn fired(&self) -> (&[u32], &[i64]);

    /// Learn from burst `t - 1`'s firing (`spikes`, the whole brain's) now rather than as burst
    /// `t` starts (before a snapshot: every backend's snapshot then holds the same learning).
    /// Default: nothing (a brain that does not learn).
    fn learn_ahead(&mut self, _t: u64, _spikes: &[u32]) {}

    /// Learn or not from the firing of burst `last + 2` on ([`crate::model::plasticity::Switch`]);
    /// the learning from burst `last`'s firing is done. Default: nothing (a brain that does not
    /// learn).
    fn set_learning(&mut self, _on: bool, _last: u64) -> Result<(), BackendError> {
        Ok(())
    }

    /// The own neurons' state (`potential` etc. indexed from `range().start`); `fired` holds the
    /// own neurons that fired in the last burst.
    fn snapshot(&mut self) -> Result<NeuronState, BackendError>;

    /// Replace the own neurons' state (as [`ShardEngine::snapshot`] gives it; `fired` is ignored:
    /// the spikes of the last burst arrive with the next [`ShardEngine::burst`]).
    fn restore(&mut self, state: &NeuronState) -> Result<(), BackendError>;
}

/// The slice of `state` (whole brain) that belongs to `range`.
pub fn state_slice(state: &NeuronState, range: &Range<u32>) -> NeuronState {
    let r = range.start as usize..range.end as usize;
    NeuronState {
        burst: state.burst,
        potential: state.potential[r.clone()].to_vec(),
        refractory: state.refractory[r.clone()].to_vec(),
        consecutive: state.consecutive[r].to_vec(),
        fired: state.fired.iter().copied().filter(|n| range.contains(n)).collect(),
        // the whole brain's: an engine keeps every neuron's history and picks its own synapses
        learned: state.learned.clone(),
    }
}

/// Add one shard's learned state to the whole brain's: the histories are the same in every shard;
/// the synapses are merged in (source, target, mapping) order.
pub fn merge_learned(into: &mut crate::model::plasticity::Learned, shard: crate::model::plasticity::Learned) {
    if into.history.is_empty() {
        into.history = shard.history;
        into.grown = shard.grown;
        into.ahead = shard.ahead;
    }
    if !shard.synapses.is_empty() {
        into.synapses.extend(shard.synapses);
        into.synapses.sort_by_key(|s| (s.source, s.target, s.mapping));
    }
}

/// Check that a state holds `n` neurons and a burst counter a burst can follow.
pub fn check_lengths(st: &NeuronState, n: usize) -> Result<(), BackendError> {
    // (the next burst's number is one more, and a snapshot after it names the one after that: a
    // checkpoint at u64::MAX - 1 or above would overflow them)
    if st.burst >= u64::MAX - 1 {
        return Err(BackendError::BurstAtEnd(st.burst));
    }
    for len in [st.potential.len(), st.refractory.len(), st.consecutive.len()] {
        if len != n {
            return Err(BackendError::StateMismatch { got: len, expected: n });
        }
    }
    Ok(())
}

/// Check that a whole-brain state has `neurons` neurons and names no neuron past them.
pub fn check_state(st: &NeuronState, neurons: u32) -> Result<(), BackendError> {
    check_lengths(st, neurons as usize)?;
    if let Some(&bad) = st.fired.iter().find(|&&f| f >= neurons) {
        return Err(BackendError::InjectionOutOfRange { neuron: bad, neurons });
    }
    Ok(())
}

/// The fired neurons of `fired` (ascending) that the readback selects, into `out`.
pub fn select_readback(readback: &Readback, fired: &[u32], fired_v: &[i64], out: &mut Vec<u32>, out_v: &mut Vec<i64>) {
    out.clear();
    out_v.clear();
    for (&n, &v) in fired.iter().zip(fired_v) {
        if readback.contains(n) {
            out.push(n);
            out_v.push(v);
        }
    }
}

/// A brain as shards in one process, exchanging fired lists through host memory.
pub struct Sharded<E: ShardEngine> {
    engines: Vec<E>,
    neurons: u32,
    label: String,
    burst: u64,
    /// Every neuron fired in the last burst, ascending, with its potential at fire.
    fired: Vec<u32>,
    fired_v: Vec<i64>,
    readback: Readback,
    out: Vec<u32>,
    out_v: Vec<i64>,
    /// The input, sorted, when it came unsorted.
    sorted: Injections,
}

impl<E: ShardEngine> Sharded<E> {
    /// `engines` in id order, their ranges covering `0..neurons` without gaps.
    pub fn from_engines(engines: Vec<E>, neurons: u32, readback: Readback, label: impl Into<String>) -> Sharded<E> {
        let mut next = 0;
        for e in &engines {
            assert_eq!(e.range().start, next, "shard ranges must be ascending and contiguous");
            next = e.range().end;
        }
        assert_eq!(next, neurons, "shard ranges must cover every neuron");
        Sharded {
            engines,
            neurons,
            label: label.into(),
            burst: 0,
            fired: Vec::new(),
            fired_v: Vec::new(),
            readback,
            out: Vec::new(),
            out_v: Vec::new(),
            sorted: Injections::new(),
        }
    }

    /// The shards' engines, in the order of their neurons.
    pub fn engines(&self) -> &[E] {
        &self.engines
    }
}

impl<E: ShardEngine> Backend for Sharded<E> {
    fn info(&self) -> BackendInfo {
        let infos: Vec<BackendInfo> = self.engines.iter().map(|e| e.info()).collect();
        let memory: u64 = infos.iter().map(|i| i.memory_bytes).sum();
        let synapse_bytes: f64 = infos.iter().map(|i| i.bytes_per_synapse).sum::<f64>() / infos.len().max(1) as f64;
        let device = if infos.len() == 1 {
            infos[0].device.clone()
        } else {
            format!("{} shards ({}), each {}", infos.len(), self.label, infos[0].device)
        };
        BackendInfo { backend: infos[0].backend.clone(), device, memory_bytes: memory, bytes_per_synapse: synapse_bytes }
    }

    fn burst(&mut self, input: InjectionSlice<'_>) -> Result<BurstOutput<'_>, BackendError> {
        if input.id_bounds().is_some_and(|(_, max)| max >= self.neurons) {
            return Err(out_of_range(input, 0..self.neurons));
        }
        // each engine takes its share by binary search: sorted input goes as it is
        let input = self.sorted.sorted_view(input);
        let t = self.burst.checked_add(1).filter(|&t| t < u64::MAX).ok_or(BackendError::BurstAtEnd(self.burst))?;
        let spikes = &self.fired;
        let run = |e: &mut E| {
            let share = input.within(e.range());
            e.burst(t, spikes, share)
        };
        if self.engines.len() == 1 {
            run(&mut self.engines[0])?;
        } else {
            self.engines.par_iter_mut().map(run).collect::<Result<(), BackendError>>()?;
        }
        self.burst = t;
        // the exchange: every shard's fired list, in id order
        self.fired.clear();
        self.fired_v.clear();
        for e in &self.engines {
            let (f, v) = e.fired();
            self.fired.extend_from_slice(f);
            self.fired_v.extend_from_slice(v);
        }
        let (fired, potentials) = match &self.readback {
            Readback::All => (&self.fired[..], &self.fired_v[..]),
            Readback::Ranges(_) => {
                select_readback(&self.readback, &self.fired, &self.fired_v, &mut self.out, &mut self.out_v);
                (&self.out[..], &self.out_v[..])
            }
        };
        Ok(BurstOutput { burst: t, fired, potentials, fired_total: self.fired.len() as u64 })
    }

    fn snapshot(&mut self) -> Result<NeuronState, BackendError> {
        let mut st = NeuronState { burst: self.burst, fired: self.fired.clone(), ..Default::default() };
        let (t, spikes) = (self.burst + 1, &self.fired);
        self.engines.par_iter_mut().for_each(|e| e.learn_ahead(t, spikes));
        for e in &mut self.engines {
            let s = e.snapshot()?;
            st.potential.extend_from_slice(&s.potential);
            st.refractory.extend_from_slice(&s.refractory);
            st.consecutive.extend_from_slice(&s.consecutive);
            merge_learned(&mut st.learned, s.learned);
        }
        Ok(st)
    }

    fn set_learning(&mut self, on: bool) -> Result<(), BackendError> {
        if self.burst > 0 {
            // the learning from the last burst's firing, under the setting it was run with
            let (t, spikes) = (self.burst + 1, &self.fired);
            self.engines.par_iter_mut().for_each(|e| e.learn_ahead(t, spikes));
        }
        let last = self.burst;
        self.engines.iter_mut().try_for_each(|e| e.set_learning(on, last))
    }

    fn restore(&mut self, st: &NeuronState) -> Result<(), BackendError> {
        check_state(st, self.neurons)?;
        for e in &mut self.engines {
            e.restore(&state_slice(st, &e.range()))?;
        }
        self.burst = st.burst;
        self.fired = st.fired.clone();
        self.fired.sort_unstable();
        self.fired.dedup();
        self.fired_v = vec![0; self.fired.len()];
        Ok(())
    }
}
