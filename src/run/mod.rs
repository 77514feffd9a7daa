//! The run loop: one loop for every way a brain runs. Each burst, an [`Io`] says when the burst
//! runs and what time it has (its [`Pace`]: bag time, the wall clock, `/clock`, or none), gives
//! the burst's injection (its [`Intake`]: the latest message of each topic, encoded), and takes the
//! fired neurons (its [`Outputs`]: the motor areas decoded into messages, recorded or published).
//! The brain between is a [`Backend`] in one process ([`bursts`]), or the shards of a cluster
//! exchanging spikes (`cluster::run`, the same [`Io`] around the exchange).
//!
//! The [`Io`]s: the replay's bag (`replay::BagIo`), the live node's topics (`node::topics::LiveTopics`), W's
//! input for the benchmarks and the cluster (`cluster::io::WorkloadIo`). The loop records where
//! each burst's period goes ([`trace`]).

pub mod grid;
pub mod intake;
pub mod outputs;
pub mod pace;
pub mod schedule;
pub mod trace;

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use crate::backend::Backend;
use crate::model::Injections;
pub use intake::Intake;
pub use outputs::{BurstProducts, Outputs};
pub use pace::Pace;

/// Where a brain's bursts get their time and input, and where their output goes.
pub trait Io: Send {
    /// One line for the logs.
    fn describe(&self) -> String;

    /// Why the input or output cannot go on (a helper thread of it failed; it also set the stop
    /// flag): the run ends with this error. None while all is well.
    fn failed(&self) -> Option<String> {
        None
    }

    /// The last burst of the input (a bag's end); None where it goes on until stopped.
    fn last_burst(&self) -> Option<u64> {
        None
    }

    /// Bursts start after burst `c` (0: the initial state): the start, or, in a cluster, every
    /// shard rolled back to `c` after a rejoin.
    fn start(&mut self, c: u64) -> anyhow::Result<()>;

    /// Wait until burst `t` is due; its time (bag, ROS or simulation time, nanoseconds), or None
    /// when `stop` was set while waiting.
    fn wait(&mut self, t: u64, stop: &AtomicBool) -> Option<u64>;

    /// Input of burst `t` that stands for sensors the brain does not have (`bench-loop`'s W
    /// drive), into `out` before the sensors' injection. Nothing by default.
    fn drive(&mut self, _t: u64, _out: &mut Injections) {}

    /// Burst `t`'s injection, added to `out`.
    fn injection(&mut self, t: u64, out: &mut Injections) -> anyhow::Result<()>;

    /// Burst `t`'s fired neurons (those read back, ascending; in a cluster the whole brain's,
    /// a missing shard's counted as none) and the count of all that fired: decoded.
    fn decode(&mut self, t: u64, fired: &[u32], fired_total: u64) -> anyhow::Result<BurstProducts>;

    /// Burst `t`'s products out (recorded, published), the burst begun at `started`.
    fn hand_over(&mut self, t: u64, products: BurstProducts, fired: &[u32], started: Instant) -> anyhow::Result<()>;

    /// Every shard of a cluster saved its checkpoint of a burst; the io shard now holds
    /// checkpoints of `held` (no rollback goes before the oldest unless a shard lost its own).
    fn checkpointed(&mut self, _held: &[u64]) -> anyhow::Result<()> {
        Ok(())
    }

    /// The run ended (completed, stopped or interrupted): finish the outputs. What it did, for
    /// the summary.
    fn finish(&mut self, fatal: Option<&str>) -> anyhow::Result<serde_json::Value>;
}

/// What [`bursts`] did.
#[derive(Debug, Default)]
pub struct Ran {
    pub bursts: u64,
    /// Stopped by `stop` before the input's end.
    pub interrupted: bool,
    pub phases: trace::PhaseSummary,
}

/// Run `io`'s bursts through `backend` until the input ends or `stop` is set. `each` runs on
/// the burst thread after every burst, given the backend's burst number (what must see one
/// burst's state: checkpoints, samples of what the brain learned); it returns whether to start
/// the phase trace again.
pub fn bursts(
    io: &mut dyn Io,
    backend: &mut dyn Backend,
    stop: &AtomicBool,
    mut each: impl FnMut(u64, &mut dyn Backend) -> anyhow::Result<bool>,
) -> anyhow::Result<Ran> {
    io.start(0)?;
    let last = io.last_burst();
    let mut injection = Injections::new();
    backend.prepare_input(&mut injection);
    let mut trace = trace::PhaseTrace::default();
    let mut ran = Ran::default();
    let ns = |a: Instant, b: Instant| (b - a).as_nanos() as u64;
    let mut t = 0;
    loop {
        if last.is_some_and(|l| t >= l) {
            break;
        }
        if let Some(cause) = io.failed() {
            return Err(anyhow::anyhow!(cause));
        }
        if stop.load(Ordering::Relaxed) {
            ran.interrupted = true;
            break;
        }
        let waiting = Instant::now();
        if io.wait(t + 1, stop).is_none() {
            if let Some(cause) = io.failed() {
                return Err(anyhow::anyhow!(cause));
            }
            ran.interrupted = true;
            break;
        }
        t += 1;
        let start = Instant::now();
        injection.clear();
        io.drive(t, &mut injection);
        let driven = Instant::now();
        io.injection(t, &mut injection)?;
        let intake = Instant::now();
        let out = backend.burst(injection.as_slice()).map_err(|e| anyhow::anyhow!("burst {t}: {e}"))?;
        let burst = Instant::now();
        // the backend's count: a brain resumed from a checkpoint goes on from its burst
        let number = out.burst;
        let mut products = io.decode(t, out.fired, out.fired_total)?;
        products.burst = number;
        let decoded = Instant::now();
        io.hand_over(t, products, out.fired, start)?;
        let end = Instant::now();
        trace.record(&[ns(waiting, start), ns(driven, intake), ns(start, driven), ns(intake, burst), ns(burst, decoded), ns(decoded, end)]);
        ran.bursts = t;
        if each(number, backend)? {
            trace.clear();
        }
    }
    ran.phases = trace.summary();
    Ok(ran)
}
