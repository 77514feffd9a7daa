//! The run loop: one loop for every way a brain runs. Each burst, an [`Io`] says when the burst
//! runs and what time it has (its [`Pace`]: bag time, the wall clock, `/clock`, or none), gives
//! the burst's injection (its [`Intake`]: the latest message of each topic, encoded), and takes the
//! fired neurons (its [`Outputs`]: the motor areas decoded into messages, recorded or published).
//! The brain between is a [`Stepper`]: a [`Backend`] in one process, or a shard of a cluster whose
//! burst has the spike exchange with its peers as a stage (`cluster::run`): the same loop,
//! [`bursts`], drives both.
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
use crate::model::{InjectionSlice, Injections};
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

    /// Whether burst `t + 1`'s input may be taken before burst `t` is decoded: the bursts run
    /// back to back (nothing to wait for) and the injection depends on nothing the decoders do.
    /// A cluster's io shard then sends it to the other shards while the spikes of burst `t` are
    /// exchanged (see [`Stepper::takes_ahead`]). False by default.
    fn ahead(&self) -> bool {
        false
    }

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

/// What a [`Stepper`] made of a burst.
pub enum Stepped<'a> {
    /// The burst ran: its number (a brain resumed from a checkpoint goes on from its burst), the
    /// whole brain's fired neurons read back (ascending) and the count of all that fired.
    Ran { number: u64, fired: &'a [u32], fired_total: u64 },
    /// The brain went back to the state after burst `c` (a cluster's rollback when a shard
    /// rejoins): the bursts go on from `c + 1`, the [`Io`] restarted there.
    RolledBack(u64),
    /// The brain cannot go on (a cluster's shard lost or left behind, or stopped while waiting
    /// for its peers): the run ends here; the stepper knows why.
    Ended,
}

/// The brain the loop bursts: a [`Backend`] in this process, or a shard of a cluster, whose burst
/// is its own neurons' burst between the exchanges of spikes (and input) with its peers.
pub trait Stepper {
    /// Called with the buffer the loop fills every burst, before the first (see
    /// [`Backend::prepare_input`]).
    fn prepare_input(&mut self, _input: &mut Injections) {}

    /// Where the bursts start: after burst `c` (0: the initial state; a cluster: the start
    /// directive's checkpoint). None: stopped before the start.
    fn begin(&mut self, _stop: &AtomicBool) -> anyhow::Result<Option<u64>> {
        Ok(Some(0))
    }

    /// The last burst, where the brain knows one (a cluster's directive: where the io shard's
    /// input ends).
    fn last_burst(&self) -> Option<u64> {
        None
    }

    /// Whether it takes burst `t + 1`'s injection with burst `t`'s, where the [`Io`] gives it
    /// ahead (a cluster's io shard sends it on while the spikes are exchanged). False by default.
    fn takes_ahead(&self) -> bool {
        false
    }

    /// Burst `t` with its injection (and, where both sides take it ahead, burst `t + 1`'s).
    fn step(
        &mut self,
        t: u64,
        input: InjectionSlice<'_>,
        next: Option<InjectionSlice<'_>>,
        stop: &AtomicBool,
    ) -> anyhow::Result<Stepped<'_>>;

    /// Burst `t`'s products were handed over to `io` (a cluster's checkpoints).
    fn after(&mut self, _t: u64, _io: &mut dyn Io) -> anyhow::Result<()> {
        Ok(())
    }
}

impl<'b> Stepper for dyn Backend + 'b {
    fn prepare_input(&mut self, input: &mut Injections) {
        Backend::prepare_input(self, input);
    }

    fn step(
        &mut self,
        t: u64,
        input: InjectionSlice<'_>,
        _next: Option<InjectionSlice<'_>>,
        _stop: &AtomicBool,
    ) -> anyhow::Result<Stepped<'_>> {
        let out = self.burst(input).map_err(|e| anyhow::anyhow!("burst {t}: {e}"))?;
        Ok(Stepped::Ran { number: out.burst, fired: out.fired, fired_total: out.fired_total })
    }
}

/// What [`bursts`] did.
#[derive(Debug, Default)]
pub struct Ran {
    pub bursts: u64,
    /// Stopped by `stop` before the input's end.
    pub interrupted: bool,
    /// The stepper ended the run ([`Stepped::Ended`]).
    pub ended: bool,
    pub phases: trace::PhaseSummary,
}

/// Run `io`'s bursts through `brain` until the input ends or `stop` is set. `each` runs on the
/// burst thread after every burst, given the burst's number (what must see one burst's state:
/// checkpoints, samples of what the brain learned); it returns whether to start the phase trace
/// again.
pub fn bursts<S: Stepper + ?Sized>(
    io: &mut dyn Io,
    brain: &mut S,
    stop: &AtomicBool,
    mut each: impl FnMut(u64, &mut S) -> anyhow::Result<bool>,
) -> anyhow::Result<Ran> {
    let mut injection = Injections::new();
    brain.prepare_input(&mut injection);
    // burst t + 1's injection, taken ahead (see `Io::ahead`)
    let (ahead, mut next, mut have_next) = (io.ahead() && brain.takes_ahead(), Injections::new(), false);
    let mut trace = trace::PhaseTrace::default();
    let mut ran = Ran::default();
    let ns = |a: Instant, b: Instant| (b - a).as_nanos() as u64;
    let Some(mut t) = brain.begin(stop)? else {
        ran.interrupted = true;
        return Ok(ran);
    };
    io.start(t)?;
    loop {
        let last = [io.last_burst(), brain.last_burst()].into_iter().flatten().min();
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
        let (start, driven, intake);
        if have_next {
            std::mem::swap(&mut injection, &mut next);
            have_next = false;
            t += 1;
            (start, driven, intake) = (waiting, waiting, waiting);
        } else {
            if io.wait(t + 1, stop).is_none() {
                if let Some(cause) = io.failed() {
                    return Err(anyhow::anyhow!(cause));
                }
                ran.interrupted = true;
                break;
            }
            t += 1;
            start = Instant::now();
            injection.clear();
            io.drive(t, &mut injection);
            driven = Instant::now();
            io.injection(t, &mut injection)?;
            intake = Instant::now();
        }
        if ahead && last.is_none_or(|l| t < l) && io.wait(t + 1, stop).is_some() {
            next.clear();
            io.drive(t + 1, &mut next);
            io.injection(t + 1, &mut next)?;
            have_next = true;
        }
        let (number, fired, fired_total) = match brain.step(t, injection.as_slice(), have_next.then(|| next.as_slice()), stop)? {
            Stepped::Ran { number, fired, fired_total } => (number, fired, fired_total),
            Stepped::RolledBack(c) => {
                io.start(c)?;
                (t, have_next) = (c, false);
                trace.clear();
                continue;
            }
            Stepped::Ended => {
                ran.ended = true;
                break;
            }
        };
        let burst = Instant::now();
        let mut products = io.decode(t, fired, fired_total)?;
        products.burst = number;
        let decoded = Instant::now();
        io.hand_over(t, products, fired, start)?;
        let end = Instant::now();
        trace.record(&[ns(waiting, start), ns(driven, intake), ns(start, driven), ns(intake, burst), ns(burst, decoded), ns(decoded, end)]);
        ran.bursts = t;
        brain.after(t, io)?;
        if each(number, brain)? {
            trace.clear();
        }
    }
    ran.phases = trace.summary();
    Ok(ran)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Potential;

    /// An input whose burst `t` injects neuron `t`, ending at burst 6; it logs what it is asked.
    #[derive(Default)]
    struct Script {
        ahead: bool,
        log: Vec<String>,
    }

    impl Io for Script {
        fn describe(&self) -> String {
            "script".into()
        }
        fn last_burst(&self) -> Option<u64> {
            Some(6)
        }
        fn ahead(&self) -> bool {
            self.ahead
        }
        fn start(&mut self, c: u64) -> anyhow::Result<()> {
            self.log.push(format!("start {c}"));
            Ok(())
        }
        fn wait(&mut self, t: u64, _stop: &AtomicBool) -> Option<u64> {
            Some(t)
        }
        fn injection(&mut self, t: u64, out: &mut Injections) -> anyhow::Result<()> {
            self.log.push(format!("in {t}"));
            out.push(t as u32, Potential(1));
            Ok(())
        }
        fn decode(&mut self, t: u64, fired: &[u32], fired_total: u64) -> anyhow::Result<BurstProducts> {
            self.log.push(format!("out {t} {fired:?}"));
            Ok(BurstProducts { burst: t, fired_total, motor: vec![], fired_per_area: vec![] })
        }
        fn hand_over(&mut self, _t: u64, _p: BurstProducts, _f: &[u32], _s: Instant) -> anyhow::Result<()> {
            Ok(())
        }
        fn finish(&mut self, _fatal: Option<&str>) -> anyhow::Result<serde_json::Value> {
            Ok(serde_json::Value::Null)
        }
    }

    /// Fires the neurons injected; rolls back to burst 2 once at burst 4; ends at burst 5 when asked.
    struct Echo {
        fired: Vec<u32>,
        rolled: bool,
        end_at: Option<u64>,
        seen: Vec<(u64, Option<u32>)>,
    }

    impl Stepper for Echo {
        fn takes_ahead(&self) -> bool {
            true
        }
        fn step(
            &mut self,
            t: u64,
            input: InjectionSlice<'_>,
            next: Option<InjectionSlice<'_>>,
            _stop: &AtomicBool,
        ) -> anyhow::Result<Stepped<'_>> {
            self.seen.push((t, next.and_then(|n| n.iter().next()).map(|i| i.neuron)));
            if t == 4 && !self.rolled {
                self.rolled = true;
                return Ok(Stepped::RolledBack(2));
            }
            if self.end_at == Some(t) {
                return Ok(Stepped::Ended);
            }
            self.fired = input.iter().map(|i| i.neuron).collect();
            Ok(Stepped::Ran { number: t, fired: &self.fired, fired_total: self.fired.len() as u64 })
        }
    }

    #[test]
    fn the_loop_takes_input_ahead_restarts_after_a_rollback_and_ends_when_the_stepper_does() {
        let stop = AtomicBool::new(false);
        for ahead in [false, true] {
            let mut io = Script { ahead, ..Default::default() };
            let mut echo = Echo { fired: vec![], rolled: false, end_at: None, seen: vec![] };
            let ran = bursts(&mut io, &mut echo, &stop, |_, _| Ok(false)).unwrap();
            assert_eq!(ran.bursts, 6);
            // bursts 1-3, the rollback at 4 (its output never decoded), then 3-6 again
            let outs: Vec<&String> = io.log.iter().filter(|l| l.starts_with("out") || l.starts_with("start")).collect();
            assert_eq!(
                outs,
                ["start 0", "out 1 [1]", "out 2 [2]", "out 3 [3]", "start 2", "out 3 [3]", "out 4 [4]", "out 5 [5]", "out 6 [6]"]
            );
            // ahead: burst t's step sees t + 1's input (none past the last burst, none kept across the rollback)
            let nexts: Vec<Option<u32>> = echo.seen.iter().map(|s| s.1).collect();
            let want = if ahead { vec![Some(2), Some(3), Some(4), Some(5), Some(4), Some(5), Some(6), None] } else { vec![None; 8] };
            assert_eq!(nexts, want, "ahead {ahead}");
        }
        let mut io = Script::default();
        let mut echo = Echo { fired: vec![], rolled: true, end_at: Some(5), seen: vec![] };
        let ran = bursts(&mut io, &mut echo, &stop, |_, _| Ok(false)).unwrap();
        assert!(ran.ended && !ran.interrupted);
        assert_eq!(ran.bursts, 4);
    }
}
