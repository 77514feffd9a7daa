//! The benchmarks: programs that time the engine and the loop and print median, p99 and the
//! machine (never timed tests). `neuroburst bench` ([`burst`]: one burst of W(N, K, rho) on a
//! backend), `neuroburst bench-loop` ([`closed_loop`]: a robot over Zenoh and the live node),
//! `neuroburst bench-cluster` ([`cluster`]: W spread over shard processes). The workload W itself
//! is [`crate::workload`], a brain like any other; the command lines are in `cli/bench*.rs`.

pub mod burst;
pub mod closed_loop;
pub mod cluster;

/// Percentile `q` (0..1) of sorted samples, nearest rank.
pub fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}
