//! W's input for a brain's bursts ([`crate::run::Io`]): the io shard of a cluster runs on it when
//! it replays no bag and serves no topics (`replay::BagIo`, `node::topics::LiveTopics` then),
//! and so do the benchmarks.

use std::sync::atomic::AtomicBool;
use std::time::Instant;

use crate::model::Injections;
use crate::run::{BurstProducts, Io, Pace};
use crate::workload::Workload;

/// W's input every burst, or nothing (`--genome` without a bag or a transport: the brain runs on
/// its `_power` drive), at `rate_hz` on the wall clock's grid (0: as fast as the bursts go).
pub struct WorkloadIo {
    workload: Option<Workload>,
    /// Bursts 1..=len computed before the start (benchmarks: their cost stays out of the timing).
    precomputed: Vec<Injections>,
    scratch: Injections,
    pace: Pace,
}

impl WorkloadIo {
    /// `precompute`: compute bursts 1..=precompute beforehand (0: none).
    pub fn new(workload: Option<Workload>, rate_hz: f64, precompute: u64) -> WorkloadIo {
        let precomputed = match &workload {
            Some(w) => (1..=precompute)
                .map(|t| {
                    let mut v = Injections::new();
                    w.injection(t, &mut v);
                    v
                })
                .collect(),
            None => Vec::new(),
        };
        WorkloadIo { workload, precomputed, scratch: Injections::new(), pace: Pace::rate(rate_hz) }
    }
}

impl Io for WorkloadIo {
    fn describe(&self) -> String {
        match &self.workload {
            Some(w) => format!("the input of W({}, {}, {})", w.neurons, w.fanout, w.rate),
            None => "no sensor input (the _power drive only)".into(),
        }
    }

    /// W's input depends on the burst alone: taken ahead when the bursts run back to back.
    fn ahead(&self) -> bool {
        matches!(self.pace, Pace::Free)
    }

    fn start(&mut self, _c: u64) -> anyhow::Result<()> {
        self.pace.start(0);
        Ok(())
    }

    fn wait(&mut self, t: u64, stop: &AtomicBool) -> Option<u64> {
        self.pace.wait(t, stop)
    }

    fn injection(&mut self, t: u64, out: &mut Injections) -> anyhow::Result<()> {
        match &self.workload {
            Some(_) if (1..=self.precomputed.len() as u64).contains(&t) => out.extend_from(self.precomputed[t as usize - 1].as_slice()),
            Some(w) => {
                w.injection(t, &mut self.scratch);
                out.extend_from(self.scratch.as_slice());
            }
            None => {}
        }
        Ok(())
    }

    fn decode(&mut self, t: u64, _fired: &[u32], fired_total: u64) -> anyhow::Result<BurstProducts> {
        Ok(BurstProducts { burst: t, fired_total, motor: vec![], fired_per_area: vec![] })
    }

    /// Nothing goes out; the burst closes on the grid.
    fn hand_over(&mut self, _t: u64, _products: BurstProducts, _fired: &[u32], _started: Instant) -> anyhow::Result<()> {
        self.pace.finished(Instant::now());
        Ok(())
    }

    fn finish(&mut self, _fatal: Option<&str>) -> anyhow::Result<serde_json::Value> {
        Ok(serde_json::Value::Null)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workload_input_is_w_and_precomputed_bursts_are_the_same() {
        let w = Workload { neurons: 1000, fanout: 5, rate: 0.05, seed: 3 };
        let mut plain = WorkloadIo::new(Some(w), 0.0, 0);
        let mut pre = WorkloadIo::new(Some(w), 0.0, 3);
        let (mut direct, mut a, mut b) = (Injections::new(), Injections::new(), Injections::new());
        for t in 1..=5 {
            a.clear();
            b.clear();
            plain.injection(t, &mut a).unwrap();
            pre.injection(t, &mut b).unwrap();
            w.injection(t, &mut direct);
            assert_eq!(a.as_slice().to_vec(), direct.as_slice().to_vec());
            assert_eq!(b.as_slice().to_vec(), direct.as_slice().to_vec());
        }
        let mut none = WorkloadIo::new(None, 0.0, 0);
        a.clear();
        none.injection(1, &mut a).unwrap();
        assert!(a.is_empty());
    }
}
