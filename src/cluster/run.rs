//! One shard of a brain spread over processes or hosts: its own engine (CPU or GPUs, a
//! `ShardEngine`) and its [`Links`] to every other shard, run by the run loop
//! ([`crate::run::bursts`]) as a [`Stepper`] whose burst has the exchange as a stage: burst
//! `t` runs this shard's neurons on the whole brain's fired list of `t - 1`, publishes its own
//! fired neurons and gathers everyone's (and, but on the io shard, the input of `t + 1`). The io
//! shard's [`crate::run::Io`] gives the input and takes the whole brain's output, as in one
//! process.

use std::ops::Range;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use super::checkpoints::ShardCheckpoints;
use super::config::OnShardLoss;
use super::links::{Gathered, Links, Want};
use super::options::{ClusterError, Outcome, Report, ShardOptions};
use super::record::{self, Line};
use super::wire::{self, Directive};
use crate::backend::shard::ShardEngine;
use crate::model::{Injection, InjectionSlice, Injections, NeuronState};
use crate::run::{Io, Stepped, Stepper};

mod start;

pub use start::run;

/// How long a shard waits for its Zenoh session to close.
const CLOSE_WAIT: Duration = Duration::from_secs(2);

/// A shard's state: its engine and checkpoints, the current epoch, and the fired lists.
struct Shard {
    o: ShardOptions,
    links: Links,
    engine: Box<dyn ShardEngine>,
    initial: NeuronState,
    ckpts: ShardCheckpoints,
    /// The neurons the record counts as motor.
    motor: Vec<Range<u32>>,
    record: Option<std::io::BufWriter<std::fs::File>>,
    report: Report,
    /// Where the io shard's input ends (the directives carry it; 0: never).
    io_last: u64,
    /// The current epoch: its members, the burst it started from, its last burst (u64::MAX:
    /// until stopped).
    members: u64,
    c: u64,
    last: u64,
    /// The burst whose whole fired list `whole` holds (None: not gathered since the epoch's start).
    held: Option<u64>,
    /// Own fired neurons of the current burst, the peers' by shard, the whole brain's list.
    own: Vec<u32>,
    parts: Vec<Vec<u32>>,
    whole: Vec<u32>,
    /// This shard's input of the next burst (received, or the io shard's own share); as the
    /// engines take it (columns, sorted); the io shard's whole injection, sorted.
    input: Vec<Injection>,
    input_cols: Injections,
    /// The burst whose input the io shard sent ahead (its own share in `input`).
    sent_ahead: Option<u64>,
    io_cols: Injections,
    /// When the last whole fired list was complete.
    prev_done: Option<Instant>,
    degraded_logged: bool,
    /// Why the run ended, where the shard ended it.
    outcome: Option<Outcome>,
}

/// An error of the shard, for the run loop.
fn fail(e: impl Into<ClusterError>) -> anyhow::Error {
    anyhow::Error::new(e.into())
}

impl Shard {
    fn is_io(&self) -> bool {
        self.links.is_io()
    }

    /// Start epoch `d`: restore its burst's state; the bursts go on after it.
    fn enter(&mut self, d: Directive) -> Result<u64, ClusterError> {
        let c = d.resume;
        let state = if c == 0 { self.initial.clone() } else { self.ckpts.load(&self.o.genome, c)? };
        self.engine.restore(&state)?;
        self.own.clear();
        self.own.extend_from_slice(&state.fired);
        self.report.epochs = d.epoch;
        self.members = d.members;
        self.links.rebase(d.epoch, c, d.members);
        if d.epoch > 1 || c > 0 {
            tracing::info!("epoch {}: resumed from burst {c} with shards {}", d.epoch, wire::list(d.members));
        }
        let last = [self.o.bursts, d.last].into_iter().filter(|&x| x > 0).min().unwrap_or(u64::MAX);
        if last != self.last && last != u64::MAX && !self.is_io() {
            tracing::info!("the io shard's input ends at burst {last}");
        }
        (self.c, self.last, self.held, self.prev_done, self.degraded_logged) = (c, last, None, None, false);
        self.sent_ahead = None;
        Ok(c)
    }

    /// The end of the run, for the loop.
    fn end(&mut self, outcome: Outcome) -> Stepped<'static> {
        self.outcome = Some(outcome);
        Stepped::Ended
    }

    /// The io shard: burst `t`'s injection, each member's share sent, its own kept in `input`.
    /// The shares are cut from the injection sorted: an unsorted one is sorted in a copy first.
    fn send_inputs(&mut self, t: u64, input: InjectionSlice<'_>) -> Result<(), ClusterError> {
        let sorted = self.io_cols.sorted_view(input);
        self.links.send_inputs(t, self.members, sorted, &mut self.input)
    }

    /// The exchange of burst `b`: publish this shard's fired neurons (the io shard then sends
    /// burst `b + 1`'s input where it has it ahead), gather every member's into the whole
    /// brain's list, in id order. None when it is complete; else how the epoch ended.
    fn exchange(&mut self, b: u64, ahead: Option<InjectionSlice<'_>>, stop: &AtomicBool) -> Result<Option<Stepped<'static>>, ClusterError> {
        self.links.publish_spikes(b, self.members, &self.own)?;
        if let Some(next) = ahead {
            // burst b's input is spent: its share of b + 1 takes its place
            self.send_inputs(b + 1, next)?;
            self.sent_ahead = Some(b + 1);
        }
        let wait_start = Instant::now();
        if let Some(ended) = self.wait_for(b, Want::Spikes, stop)? {
            return Ok(Some(ended));
        }
        let done = Instant::now();
        self.whole.clear();
        for k in 0..self.links.n() {
            if k == self.links.me {
                self.whole.extend_from_slice(&self.own);
            } else if self.members & (1 << k) != 0 {
                self.whole.extend_from_slice(&self.parts[k]);
            }
        }
        if let (Some(prev), true) = (self.prev_done, b > self.c + self.o.warmup) {
            self.report.period_us.push((done - prev).as_secs_f64() * 1e6);
            self.report.wait_us.push((done - wait_start).as_secs_f64() * 1e6);
            self.report.sent_bytes.push(self.links.bytes_out);
        }
        self.prev_done = Some(done);
        self.links.bytes_out = 0;
        self.report.last_burst = b;
        if self.members != self.links.all() && !self.degraded_logged {
            tracing::info!("burst {b}: running degraded with shards {} (no checkpoints while degraded)", wire::list(self.members));
            self.degraded_logged = true;
        }
        self.held = Some(b);
        Ok(None)
    }

    /// Wait for the spikes of burst `b` or the input of `b + 1` (see [`Links::gather`]), a loss
    /// going on degraded. None when they came; else how the epoch ended.
    fn wait_for(&mut self, b: u64, want: Want, stop: &AtomicBool) -> Result<Option<Stepped<'static>>, ClusterError> {
        let cfg = &self.o.cluster;
        // the io shard may itself wait a whole burst timeout for a peer it then finds lost
        // before it sends the next input: a shard waiting for that input gives it two, or the
        // equal timeouts race and a silent peer costs the brain its io shard
        let timeout = match (b == self.c, want) {
            (true, _) => cfg.startup_timeout(),
            (false, Want::Input) => 2 * cfg.burst_timeout(),
            (false, Want::Spikes) => cfg.burst_timeout(),
        };
        let deadline = Instant::now() + timeout;
        loop {
            match self.links.gather(b, self.members, want, (deadline, timeout), stop, &mut self.parts, &mut self.input) {
                Gathered::Ready => return Ok(None),
                Gathered::Directive(next) => return Ok(Some(Stepped::RolledBack(self.enter(next)?))),
                Gathered::Interrupted => return Ok(Some(self.end(Outcome::Interrupted))),
                Gathered::Behind(reason) => {
                    tracing::error!(
                        "shard {} was left behind: {reason}; the others went on without it: restart it with --resume to rejoin",
                        self.links.me
                    );
                    return Ok(Some(self.end(Outcome::Excluded { reason })));
                }
                Gathered::Rejoin(req) => {
                    let next = self.rejoin(req);
                    self.links.publish_directive(&next)?;
                    return Ok(Some(Stepped::RolledBack(self.enter(next)?)));
                }
                Gathered::Lost { shards, reason } => {
                    let cfg = &self.o.cluster;
                    let stops = cfg.on_shard_loss == OnShardLoss::Stop || shards & (1 << self.links.io) != 0;
                    for k in wire::shards_of(shards) {
                        let ep = &cfg.endpoints[k];
                        if stops {
                            let why = if shards & (1 << self.links.io) != 0 {
                                "the io shard carries the sensor input and motor output"
                            } else {
                                "cluster.on_shard_loss = stop"
                            };
                            tracing::error!("shard {k} ({ep}) lost at burst {b}: {reason}; {why}: stopping");
                        } else {
                            tracing::warn!(
                                "shard {k} ({ep}) lost at burst {b}: {reason}; continuing degraded without it (its spikes count as none) until it rejoins"
                            );
                        }
                    }
                    if stops {
                        return Ok(Some(self.end(Outcome::ShardLost { shards, burst: b, reason })));
                    }
                    self.members &= !shards;
                    self.degraded_logged = false;
                }
            }
        }
    }

    /// The io shard lets shards `req` rejoin: everyone resumes from the latest checkpoint this
    /// shard holds that is not newer than the newest one each of them holds.
    fn rejoin(&mut self, req: u64) -> Directive {
        let g = self.links.shared.lock();
        let theirs = wire::shards_of(req).filter_map(|k| g.checkpoint_of(k)).min().unwrap_or(0);
        drop(g);
        let resume = self.ckpts.list().into_iter().filter(|&b| b <= theirs).max().unwrap_or(0);
        let members = self.members | req;
        let d = Directive { from: self.links.me, epoch: self.links.epoch + 1, resume, members, last: self.io_last };
        tracing::info!(
            "shard(s) {} rejoin (checkpoints up to burst {theirs}): every shard resumes from burst {resume} in epoch {}, shards {}",
            wire::list(req),
            d.epoch,
            wire::list(d.members)
        );
        d
    }

    fn write_record(&mut self, b: u64) -> Result<(), ClusterError> {
        let Some(w) = self.record.as_mut() else { return Ok(()) };
        let (me, members, parts) = (self.links.me, self.members, &self.parts);
        let per_shard = (0..self.links.n())
            .map(|k| match k {
                k if k == me => self.own.len() as u64,
                k if members & (1 << k) != 0 => parts[k].len() as u64,
                _ => 0,
            })
            .collect();
        let whole = &self.whole;
        let motor: usize = self.motor.iter().map(|r| whole.partition_point(|&x| x < r.end) - whole.partition_point(|&x| x < r.start)).sum();
        let line = Line {
            epoch: self.links.epoch,
            burst: b,
            fired: whole.len() as u64,
            hash: record::fired_hash(whole),
            per_shard,
            motor: motor as u64,
        };
        line.write(w).map_err(|source| ClusterError::Record { path: self.o.record.clone().unwrap_or_default(), source })
    }
}

impl Stepper for Shard {
    /// The start-up barrier, then the start directive's epoch.
    fn begin(&mut self, stop: &AtomicBool) -> anyhow::Result<Option<u64>> {
        match self.links.start(&self.o.cluster, self.io_last, stop).map_err(fail)? {
            Some(d) => Ok(Some(self.enter(d).map_err(fail)?)),
            None => {
                self.outcome = Some(Outcome::Interrupted);
                Ok(None)
            }
        }
    }

    fn last_burst(&self) -> Option<u64> {
        (self.last != u64::MAX).then_some(self.last)
    }

    /// The io shard sends burst `t + 1`'s input on while the spikes of `t` are exchanged.
    fn takes_ahead(&self) -> bool {
        self.is_io()
    }

    fn step(
        &mut self,
        t: u64,
        input: InjectionSlice<'_>,
        next: Option<InjectionSlice<'_>>,
        stop: &AtomicBool,
    ) -> anyhow::Result<Stepped<'_>> {
        if self.is_io() {
            // sent ahead: its own share is in `input` already
            if self.sent_ahead != Some(t) {
                self.send_inputs(t, input).map_err(fail)?;
            }
            self.sent_ahead = None;
        }
        // after an epoch's start, the state's fired neurons are exchanged first
        if self.held != Some(t - 1) {
            if let Some(ended) = self.exchange(t - 1, None, stop).map_err(fail)? {
                return Ok(ended);
            }
        }
        if !self.is_io() {
            if let Some(ended) = self.wait_for(t - 1, Want::Input, stop).map_err(fail)? {
                return Ok(ended);
            }
        }
        let t0 = Instant::now();
        // the engines take the input as columns, sorted (this shard's share arrived sorted)
        self.input_cols.clear();
        self.input_cols.extend(self.input.iter().copied());
        self.input_cols.sort();
        self.engine.burst(t, &self.whole, self.input_cols.as_slice()).map_err(fail)?;
        if t > self.c + self.o.warmup + 1 {
            self.report.compute_us.push(t0.elapsed().as_secs_f64() * 1e6);
        }
        self.own.clear();
        self.own.extend_from_slice(self.engine.fired().0);
        self.report.bursts_run += 1;
        if let Some(ended) = self.exchange(t, next, stop).map_err(fail)? {
            return Ok(ended);
        }
        self.write_record(t).map_err(fail)?;
        Ok(Stepped::Ran { number: t, fired: &self.whole, fired_total: self.whole.len() as u64 })
    }

    /// Every `checkpoint_interval` bursts, while no shard is missing: this shard's checkpoint.
    fn after(&mut self, t: u64, io: &mut dyn Io) -> anyhow::Result<()> {
        let every = self.o.cluster.checkpoint_interval;
        if self.members != self.links.all() || every == 0 || !t.is_multiple_of(every) {
            return Ok(());
        }
        let mut st = self.engine.snapshot().map_err(fail)?;
        st.burst = t;
        st.fired.clone_from(&self.own);
        let path = self.ckpts.save(&self.o.genome, st).map_err(fail)?;
        tracing::debug!("checkpoint {}", path.display());
        if self.is_io() {
            io.checkpointed(&self.ckpts.list())?;
        }
        Ok(())
    }
}
