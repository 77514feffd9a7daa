//! Where a burst's period goes: the burst thread stamps the end of every phase of every burst,
//! and the durations land in histograms (fixed memory, no allocation per burst) that the node's
//! summary and `neuroburst bench-loop` report as p50, p99 and max.

use hdrhistogram::Histogram;
use serde::Serialize;

/// The phases of one burst period, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Waiting for the burst's time (the clock's grid, a sensor message in reflex mode).
    Wait,
    /// The new sensor messages taken and their injections gathered.
    Intake,
    /// The extra drive (`neuroburst bench-loop`'s W drive; nothing in the node).
    Drive,
    /// The backend's burst, read-back included.
    Burst,
    /// The decoders: fired neurons -> motor messages.
    Decode,
    /// Handing the burst's products over to the publisher (and, before, publishing them).
    Handoff,
}

pub const PHASES: [Phase; 6] = [Phase::Wait, Phase::Intake, Phase::Drive, Phase::Burst, Phase::Decode, Phase::Handoff];

impl Phase {
    pub fn name(self) -> &'static str {
        match self {
            Phase::Wait => "wait",
            Phase::Intake => "intake",
            Phase::Drive => "drive",
            Phase::Burst => "burst",
            Phase::Decode => "decode",
            Phase::Handoff => "handoff",
        }
    }
}

/// Percentiles of one series, in microseconds.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct Percentiles {
    pub count: u64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub max_us: f64,
    pub mean_us: f64,
}

/// A histogram of durations in nanoseconds, 1 ns to 100 s at 3 significant digits.
pub struct Durations(Histogram<u64>);

impl Default for Durations {
    fn default() -> Self {
        Durations(Histogram::new_with_bounds(1, 100_000_000_000, 3).expect("valid histogram bounds"))
    }
}

impl Durations {
    pub fn record(&mut self, ns: u64) {
        self.0.saturating_record(ns.max(1));
    }

    pub fn clear(&mut self) {
        self.0.reset();
    }

    pub fn len(&self) -> u64 {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn percentiles(&self) -> Percentiles {
        if self.0.is_empty() {
            return Percentiles::default();
        }
        let us = |ns: u64| ns as f64 * 1e-3;
        Percentiles {
            count: self.0.len(),
            p50_us: us(self.0.value_at_quantile(0.5)),
            p99_us: us(self.0.value_at_quantile(0.99)),
            max_us: us(self.0.max()),
            mean_us: self.0.mean() * 1e-3,
        }
    }
}

/// One histogram per phase, and one for the work of a burst (every phase but the wait).
#[derive(Default)]
pub struct PhaseTrace {
    phases: [Durations; 6],
    work: Durations,
}

/// What a [`PhaseTrace`] saw.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct PhaseSummary {
    /// Per phase, in the order of [`PHASES`]: (name, percentiles).
    pub phases: Vec<(String, Percentiles)>,
    /// From the end of the wait to the end of the handoff.
    pub burst_work: Percentiles,
}

impl PhaseTrace {
    /// One burst period: the durations of the phases in the order of [`PHASES`], nanoseconds.
    pub fn record(&mut self, ns: &[u64; 6]) {
        for (h, &d) in self.phases.iter_mut().zip(ns) {
            h.record(d);
        }
        self.work.record(ns[1..].iter().sum());
    }

    /// Start again (no allocation).
    pub fn clear(&mut self) {
        self.phases.iter_mut().for_each(Durations::clear);
        self.work.clear();
    }

    pub fn summary(&self) -> PhaseSummary {
        PhaseSummary {
            phases: PHASES.iter().zip(&self.phases).map(|(p, h)| (p.name().to_string(), h.percentiles())).collect(),
            burst_work: self.work.percentiles(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_known_durations() {
        let mut d = Durations::default();
        for us in 1..=100u64 {
            d.record(us * 1000);
        }
        let p = d.percentiles();
        assert_eq!(p.count, 100);
        assert!((p.p50_us - 50.0).abs() < 0.1, "{p:?}");
        assert!((p.p99_us - 99.0).abs() < 0.1, "{p:?}");
        assert!((p.max_us - 100.0).abs() < 0.1, "{p:?}");
    }
}
