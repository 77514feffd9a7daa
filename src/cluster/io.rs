//! The io shard's side of the brain: where every burst's injection comes from and where the whole
//! brain's fired list goes. The burst loop ([`super::run`]) asks a [`ShardIo`] for burst `t`'s
//! injection (then sends every shard its share) and hands it burst `t`'s fired neurons once every
//! member's have come in. Three kinds:
//!
//! - [`WorkloadIo`]: W's input, or none (the `_power` drive only), paced at `cluster.rate_hz`;
//! - [`super::bag_io::BagIo`]: a bag replayed lock-stepped to bag time, the motor topics recorded
//!   (what `neuroburst replay` does in one process);
//! - [`super::live_io::LiveIo`]: the live node's sensor topics in, its motor topics out, over the
//!   node's transport.

use std::time::Instant;

use super::options::ClusterError;
use crate::model::{Injection, Injections};
use crate::node::clock::Clock;
use crate::workload::Workload;

/// The io shard's input and output.
pub trait ShardIo: Send {
    /// One line for the logs.
    fn describe(&self) -> String;

    /// The last burst of the input (a bag's end); None where it goes on until stopped.
    fn last_burst(&self) -> Option<u64> {
        None
    }

    /// An epoch starts from the state of burst `c` (0: the initial state): the start, or every
    /// shard rolled back to `c` after a rejoin.
    fn start(&mut self, c: u64) -> Result<(), ClusterError>;

    /// Return when burst `t` is due.
    fn pace(&mut self, t: u64);

    /// Burst `t`'s injection into `out`, sorted by neuron (repeats add up).
    fn injection(&mut self, t: u64, out: &mut Vec<Injection>) -> Result<(), ClusterError>;

    /// The whole brain's fired neurons of burst `t`, ascending (a missing shard's count as none).
    fn fired(&mut self, t: u64, fired: &[u32]) -> Result<(), ClusterError>;

    /// Every shard saved its checkpoint of a burst; the io shard now holds checkpoints of `held`
    /// (no rollback goes before the oldest unless a shard lost its own).
    fn checkpointed(&mut self, _held: &[u64]) -> Result<(), ClusterError> {
        Ok(())
    }

    /// The run ended (completed, stopped or interrupted): finish the outputs. What it did, for
    /// the shard's summary line.
    fn finish(&mut self) -> Result<serde_json::Value, ClusterError>;
}

/// W's input every burst, or nothing (`--genome` without a bag or a transport: the brain runs on
/// its `_power` drive), at `cluster.rate_hz`.
pub struct WorkloadIo {
    workload: Option<Workload>,
    /// Bursts 1..=len computed before the start (benchmarks: their cost stays out of the timing).
    precomputed: Vec<Vec<Injection>>,
    scratch: Injections,
    /// The burst clock at `cluster.rate_hz` (None: 0, as fast as the shards go).
    clock: Option<Clock>,
    rate_hz: f64,
}

impl WorkloadIo {
    /// `precompute`: compute bursts 1..=precompute beforehand (0: none).
    pub fn new(workload: Option<Workload>, rate_hz: f64, precompute: u64) -> WorkloadIo {
        let precomputed = match &workload {
            Some(w) => (1..=precompute)
                .map(|t| {
                    let mut v = Injections::new();
                    w.injection(t, &mut v);
                    v.as_slice().to_vec()
                })
                .collect(),
            None => Vec::new(),
        };
        let clock = (rate_hz > 0.0).then(|| Clock::new(rate_hz, Instant::now()));
        WorkloadIo { workload, precomputed, scratch: Injections::new(), clock, rate_hz }
    }
}

impl ShardIo for WorkloadIo {
    fn describe(&self) -> String {
        match &self.workload {
            Some(w) => format!("the input of W({}, {}, {})", w.neurons, w.fanout, w.rate),
            None => "no sensor input (the _power drive only)".into(),
        }
    }

    fn start(&mut self, _c: u64) -> Result<(), ClusterError> {
        if let Some(c) = &mut self.clock {
            c.restart(self.rate_hz, Instant::now());
        }
        Ok(())
    }

    fn pace(&mut self, _t: u64) {
        // on the clock's grid: a late burst moves on to the next grid point, never caught up
        if let Some(c) = &mut self.clock {
            c.wait();
            c.finished(Instant::now());
        }
    }

    fn injection(&mut self, t: u64, out: &mut Vec<Injection>) -> Result<(), ClusterError> {
        out.clear();
        match &self.workload {
            Some(_) if (1..=self.precomputed.len() as u64).contains(&t) => out.extend_from_slice(&self.precomputed[t as usize - 1]),
            Some(w) => {
                w.injection(t, &mut self.scratch);
                out.extend(self.scratch.iter());
            }
            None => {}
        }
        Ok(())
    }

    fn fired(&mut self, _t: u64, _fired: &[u32]) -> Result<(), ClusterError> {
        Ok(())
    }

    fn finish(&mut self) -> Result<serde_json::Value, ClusterError> {
        Ok(serde_json::Value::Null)
    }
}

/// Sort an injection by neuron (stable: repeats keep their order; they add up anyway).
pub fn sort_injection(inj: &mut [Injection]) {
    if !inj.is_sorted_by_key(|i| i.neuron) {
        inj.sort_by_key(|i| i.neuron);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Potential;

    #[test]
    fn workload_input_is_w_and_precomputed_bursts_are_the_same() {
        let w = Workload { neurons: 1000, fanout: 5, rate: 0.05, seed: 3 };
        let mut plain = WorkloadIo::new(Some(w), 0.0, 0);
        let mut pre = WorkloadIo::new(Some(w), 0.0, 3);
        let (mut a, mut b, mut direct) = (vec![], vec![], Injections::new());
        for t in 1..=5 {
            plain.injection(t, &mut a).unwrap();
            pre.injection(t, &mut b).unwrap();
            w.injection(t, &mut direct);
            assert_eq!(a, direct.as_slice().to_vec());
            assert_eq!(b, direct.as_slice().to_vec());
        }
        let mut none = WorkloadIo::new(None, 0.0, 0);
        none.injection(1, &mut a).unwrap();
        assert!(a.is_empty());
    }

    #[test]
    fn injections_sort_by_neuron() {
        let i = |n, p| Injection { neuron: n, potential: Potential(p) };
        let mut v = vec![i(5, 1), i(2, 2), i(5, 3), i(0, 4)];
        sort_injection(&mut v);
        assert_eq!(v, vec![i(0, 4), i(2, 2), i(5, 1), i(5, 3)]);
    }
}
