//! One shard of a brain spread over processes or hosts: its own engine (CPU or GPUs, a
//! `ShardEngine`), a Zenoh peer session to every other shard, and the loop of [`super`]'s protocol.

use std::ops::Range;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ::zenoh::Session;

use super::checkpoints::ShardCheckpoints;
use super::config::OnShardLoss;
use super::inbox::Shared;
use super::options::{ClusterError, Outcome, Report, ShardOptions};
use super::outbox::{put, Outbox};
use super::record::{self, Line};
use super::wire::{self, Directive, Keys, Topic};
use crate::backend::shard::ShardEngine;
use crate::model::{Injection, Injections, NeuronState};
use crate::run::Io;

mod start;

pub use start::run;

/// Why a gather ended.
enum Gathered {
    Ready,
    Directive(Directive),
    Lost { shards: u64, reason: String },
    Rejoin(u64),
    Behind(String),
    Interrupted,
}

enum EpochEnd {
    Next(Directive),
    Done(Outcome),
}

struct Shard {
    o: ShardOptions,
    n: usize,
    me: usize,
    io: usize,
    ranges: Vec<Range<u32>>,
    motor: Vec<Range<u32>>,
    engine: Box<dyn ShardEngine>,
    initial: NeuronState,
    ckpts: ShardCheckpoints,
    /// The io shard's input and output.
    io_side: Box<dyn Io>,
    /// When the io shard's current burst began.
    io_started: Instant,
    /// The last burst of the current epoch (u64::MAX: until stopped).
    last: u64,
    keys: Keys,
    shared: Arc<Shared>,
    session: Session,
    epoch: u32,
    /// Own fired neurons of the current burst.
    own: Vec<u32>,
    /// Received spikes by shard, the whole brain's list, this shard's input, scratch.
    parts: Vec<Vec<u32>>,
    whole: Vec<u32>,
    input: Vec<Injection>,
    input_cols: Injections,
    /// Payload bytes put on the links since the last burst's fired list (each peer's copy).
    bytes_out: u64,
    /// The io shard's injection as the [`Io`] gives it.
    io_cols: Injections,
    /// What this shard sent lately, to send again while a peer's message is overdue.
    sent: Outbox,
    record: Option<std::io::BufWriter<std::fs::File>>,
    report: Report,
}

/// An error of the io shard's input or output.
fn io_error(e: anyhow::Error) -> ClusterError {
    ClusterError::Io(crate::errors::said_once(&e))
}

/// How long a shard waits for its Zenoh session to close.
const CLOSE_WAIT: Duration = Duration::from_secs(2);

/// While a message it waits for is overdue (a peer's spikes or its input), the shard sends its
/// own recent messages again this often (at most; a quarter of the burst timeout when that is
/// shorter). A message put while the link to a peer was still coming up (a rejoin) or was being
/// replaced reaches nobody, and Zenoh does not send it again: the peer would wait for it until
/// the timeout. Also while the shard waits for its input alone: a variant that resent only while
/// spikes were missing failed the cut-link rejoin test 4 times in 6 here; this one passed 19 of 19.
const RESEND: Duration = Duration::from_millis(100);

/// A member token that goes counts as a loss once it has stayed gone this long (at most; half
/// the burst timeout when that is shorter): the late removal of a restarted shard's old token can
/// arrive just before its new token.
const TOKEN_GRACE: Duration = Duration::from_millis(250);

impl Shard {
    fn is_io(&self) -> bool {
        self.me == self.io
    }

    /// The last burst the io shard announces: the earlier of `--bursts` and the end of its input
    /// (0: neither).
    fn io_last(&self) -> u64 {
        let mine = (self.o.bursts > 0).then_some(self.o.bursts);
        [mine, self.io_side.last_burst()].into_iter().flatten().min().unwrap_or(0)
    }

    fn all(&self) -> u64 {
        if self.n == 64 {
            u64::MAX
        } else {
            (1u64 << self.n) - 1
        }
    }

    fn main(&mut self) -> Result<Outcome, ClusterError> {
        let mut d = match self.start()? {
            Some(d) => d,
            None => return Ok(Outcome::Interrupted),
        };
        loop {
            match self.epoch_loop(d)? {
                EpochEnd::Next(next) => d = next,
                EpochEnd::Done(outcome) => return Ok(outcome),
            }
        }
    }

    /// The start-up barrier. The io shard waits for every member token, then tells everyone to
    /// start from the latest checkpoint that all hold; the others wait for that directive.
    fn start(&mut self) -> Result<Option<Directive>, ClusterError> {
        let timeout = self.o.cluster.startup_timeout();
        let deadline = Instant::now() + timeout;
        let all = self.all();
        let mut g = self.shared.lock();
        loop {
            if self.o.stop.load(Ordering::Relaxed) {
                return Ok(None);
            }
            if self.is_io() && g.alive & all == all {
                let resume = (0..self.n).filter_map(|k| g.checkpoint_of(k)).min().unwrap_or(0);
                g.appeared = 0;
                drop(g);
                let d = Directive { from: self.me, epoch: 1, resume, members: all, last: self.io_last() };
                tracing::info!("all {} shards are up; starting from burst {resume}", self.n);
                self.publish_directive(&d)?;
                return Ok(Some(d));
            }
            if !self.is_io() {
                if let Some(d) = g.directive.filter(|d| d.members & (1 << self.me) != 0) {
                    tracing::info!(
                        "start directive from the io shard: epoch {}, from burst {}, members {}",
                        d.epoch,
                        d.resume,
                        wire::list(d.members)
                    );
                    return Ok(Some(d));
                }
            }
            let (g2, in_time) = self.shared.wait(g, deadline.min(Instant::now() + Duration::from_millis(100)));
            g = g2;
            if !in_time && Instant::now() >= deadline {
                let what = if self.is_io() {
                    let missing = all & !g.alive;
                    let eps: Vec<&str> = wire::shards_of(missing).map(|k| self.o.cluster.endpoints[k].as_str()).collect();
                    format!(
                        "shard(s) {} did not come up within {:.0} s (endpoints {})",
                        wire::list(missing),
                        timeout.as_secs_f64(),
                        eps.join(", ")
                    )
                } else {
                    format!(
                        "no start directive from the io shard {} ({}) within {:.0} s",
                        self.io,
                        self.o.cluster.endpoints[self.io],
                        timeout.as_secs_f64()
                    )
                };
                return Err(ClusterError::Startup(what));
            }
        }
    }

    fn publish_directive(&self, d: &Directive) -> Result<(), ClusterError> {
        put(&self.session, &self.keys.control(), &d.encode())
    }

    /// Restore the state of burst `c` (0: the initial state).
    fn restore(&mut self, c: u64) -> Result<(), ClusterError> {
        let state = if c == 0 { self.initial.clone() } else { self.ckpts.load(&self.o.genome, c)? };
        self.engine.restore(&state)?;
        self.sent.clear();
        self.own.clear();
        self.own.extend_from_slice(&state.fired);
        Ok(())
    }

    fn publish_spikes(&mut self, b: u64, members: u64) -> Result<(), ClusterError> {
        let (key, buf) = &mut self.sent.spikes[(b % 2) as usize];
        wire::encode_spikes(buf, self.me, self.epoch, b, &self.own);
        self.keys.data(Topic::Spikes, b, self.me, key);
        self.bytes_out += buf.len() as u64 * (members & !(1 << self.me)).count_ones() as u64;
        put(&self.session, key, buf)
    }

    /// Send this shard's recent messages again (see [`RESEND`]). A failed put is only logged:
    /// this is a second try, and the wait goes on.
    fn resend(&self) {
        for (key, bytes) in self.sent.all() {
            if let Err(e) = put(&self.session, key, bytes) {
                tracing::debug!("sending again: {e}");
            }
        }
    }

    /// The io shard: the injection of burst `t`, each member's share sent, this shard's kept.
    fn send_inputs(&mut self, t: u64, members: u64) -> Result<(), ClusterError> {
        let cols = &mut self.io_cols;
        cols.clear();
        self.io_side.drive(t, cols);
        self.io_side.injection(t, cols).map_err(io_error)?;
        cols.sort();
        for k in 0..self.n {
            if members & (1 << k) == 0 {
                continue;
            }
            let share = cols.as_slice().within(self.ranges[k].clone());
            if k == self.me {
                self.input.clear();
                self.input.extend(share.iter());
            } else {
                let (key, buf) = &mut self.sent.inputs[k][(t % 2) as usize];
                wire::encode_input(buf, k, self.epoch, t, share.iter());
                self.keys.data(Topic::Input, t, k, key);
                self.bytes_out += buf.len() as u64;
                put(&self.session, key, buf)?;
            }
        }
        Ok(())
    }

    /// Wait for the spikes of burst `b` from every member (and, but on the io shard, the input
    /// of burst `b + 1`), then move them out of the inbox.
    ///
    /// A shard that wakes far past its own wake-up time was stalled itself (stopped, starved):
    /// it gives the peers one fresh timeout, in which the messages that piled up meanwhile are
    /// read (and show it whether the others went on without it), before it judges them.
    fn gather(&mut self, b: u64, members: u64, need_input: bool, deadline: Instant, timeout: Duration) -> Gathered {
        let me_bit = 1u64 << self.me;
        let io_bit = 1u64 << self.io;
        let mut deadline = deadline;
        let mut extended = false;
        let resend_every = RESEND.min(timeout / 4);
        let grace = TOKEN_GRACE.min(timeout / 2);
        let mut next_resend = Instant::now() + resend_every;
        let mut g = self.shared.lock();
        loop {
            if let Some(d) = g.directive.filter(|d| d.epoch > self.epoch) {
                if d.members & me_bit != 0 {
                    return Gathered::Directive(d);
                }
                return Gathered::Behind(format!("the io shard's directive of epoch {} leaves this shard out", d.epoch));
            }
            if self.is_io() {
                let req = g.appeared & !members & g.alive;
                if req != 0 {
                    g.appeared &= !req;
                    return Gathered::Rejoin(req);
                }
            }
            let missing = g.missing(b, members);
            let input_missing = need_input && !g.has_input(b + 1);
            if missing == 0 && !input_missing {
                g.take(b, members, &mut self.parts, need_input.then_some(&mut self.input));
                return Gathered::Ready;
            }
            let now = Instant::now();
            let (lost, recheck) = g.gone_for(grace, now);
            let lost = lost & g.seen;
            let gone = (missing & lost) | if input_missing && lost & io_bit != 0 { io_bit } else { 0 };
            if gone != 0 {
                return Gathered::Lost { shards: gone, reason: "its member token is gone (the process ended or cannot be reached)".into() };
            }
            if self.o.stop.load(Ordering::Relaxed) {
                return Gathered::Interrupted;
            }
            if now >= next_resend && now < deadline {
                drop(g);
                self.resend();
                next_resend = Instant::now() + resend_every;
                g = self.shared.lock();
                continue;
            }
            if now >= deadline {
                // the peers fell silent: a message far ahead now says they went on without this one
                if let Some((s, at)) = g.ahead {
                    return Gathered::Behind(format!("shard {s} is at burst {at} while this shard waits for burst {b}"));
                }
                let shards = missing | if input_missing { io_bit } else { 0 };
                let what = if missing != 0 { "spikes" } else { "input" };
                return Gathered::Lost {
                    shards,
                    reason: format!("no {what} of burst {b} within {} ms (stalled or unreachable)", timeout.as_millis()),
                };
            }
            let wake = deadline.min(now + Duration::from_millis(100)).min(next_resend);
            let wake = recheck.map_or(wake, |r| wake.min(r));
            g = self.shared.wait(g, wake).0;
            let late = Instant::now().saturating_duration_since(wake);
            if !extended && late > (timeout / 2).max(Duration::from_millis(50)) {
                tracing::warn!(
                    "this shard was stalled for {} ms: waiting {} ms more before judging its peers",
                    late.as_millis(),
                    timeout.as_millis()
                );
                deadline = Instant::now() + timeout;
                extended = true;
            }
        }
    }

    /// Run one epoch from directive `d`: restore, then burst until the end, a loss that stops
    /// the shard, or the next directive.
    fn epoch_loop(&mut self, d: Directive) -> Result<EpochEnd, ClusterError> {
        let c = d.resume;
        self.restore(c)?;
        self.epoch = d.epoch;
        self.report.epochs = d.epoch;
        let mut members = d.members;
        {
            let mut g = self.shared.lock();
            g.rebase(d.epoch, c);
            g.appeared &= !members;
        }
        if d.epoch > 1 || c > 0 {
            tracing::info!("epoch {}: resumed from burst {c} with shards {}", d.epoch, wire::list(members));
        }
        let cfg = self.o.cluster.clone();
        let last = [self.o.bursts, d.last].into_iter().filter(|&x| x > 0).min().unwrap_or(u64::MAX);
        if last != self.last && last != u64::MAX && !self.is_io() {
            tracing::info!("the io shard's input ends at burst {last}");
        }
        self.last = last;
        if self.is_io() {
            self.io_side.start(c).map_err(io_error)?;
        }
        let mut prev_done: Option<Instant> = None;
        let mut b = c;
        let mut degraded_logged = false;
        loop {
            self.publish_spikes(b, members)?;
            let more = b < last;
            if self.is_io() && more {
                if self.io_side.wait(b + 1, &self.o.stop).is_none() {
                    return match self.io_side.failed() {
                        Some(cause) => Err(ClusterError::Io(cause)),
                        None => Ok(EpochEnd::Done(Outcome::Interrupted)),
                    };
                }
                self.io_started = Instant::now();
                self.send_inputs(b + 1, members)?;
            }
            let timeout = if b == c { cfg.startup_timeout() } else { cfg.burst_timeout() };
            let wait_start = Instant::now();
            let deadline = wait_start + timeout;
            loop {
                match self.gather(b, members, !self.is_io() && more, deadline, timeout) {
                    Gathered::Ready => break,
                    Gathered::Directive(next) => return Ok(EpochEnd::Next(next)),
                    Gathered::Interrupted => return Ok(EpochEnd::Done(Outcome::Interrupted)),
                    Gathered::Behind(reason) => {
                        tracing::error!(
                            "shard {} was left behind: {reason}; the others went on without it: restart it with --resume to rejoin",
                            self.me
                        );
                        return Ok(EpochEnd::Done(Outcome::Excluded { reason }));
                    }
                    Gathered::Rejoin(req) => {
                        let next = self.rejoin(req, members);
                        self.publish_directive(&next)?;
                        return Ok(EpochEnd::Next(next));
                    }
                    Gathered::Lost { shards, reason } => {
                        let io_lost = shards & (1 << self.io) != 0;
                        for k in wire::shards_of(shards) {
                            let ep = &cfg.endpoints[k];
                            if cfg.on_shard_loss == OnShardLoss::Stop || io_lost {
                                let why = if io_lost {
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
                        if cfg.on_shard_loss == OnShardLoss::Stop || io_lost {
                            return Ok(EpochEnd::Done(Outcome::ShardLost { shards, burst: b, reason }));
                        }
                        members &= !shards;
                        degraded_logged = false;
                    }
                }
            }
            let done = Instant::now();
            // The whole brain's fired list of burst b, in id order.
            self.whole.clear();
            for k in 0..self.n {
                if k == self.me {
                    self.whole.extend_from_slice(&self.own);
                } else if members & (1 << k) != 0 {
                    self.whole.extend_from_slice(&self.parts[k]);
                }
            }
            if b > c {
                let timed = b > c + self.o.warmup;
                if let (Some(prev), true) = (prev_done, timed) {
                    self.report.period_us.push((done - prev).as_secs_f64() * 1e6);
                    self.report.wait_us.push((done - wait_start).as_secs_f64() * 1e6);
                    self.report.sent_bytes.push(self.bytes_out);
                }
                self.write_record(b, members)?;
                if self.is_io() {
                    let products = self.io_side.decode(b, &self.whole, self.whole.len() as u64).map_err(io_error)?;
                    self.io_side.hand_over(b, products, &self.whole, self.io_started).map_err(io_error)?;
                }
            }
            prev_done = Some(done);
            self.bytes_out = 0;
            self.report.last_burst = b;
            let full = members == self.all();
            if !full && !degraded_logged {
                tracing::info!("burst {b}: running degraded with shards {} (no checkpoints while degraded)", wire::list(members));
                degraded_logged = true;
            }
            if full && b > c && cfg.checkpoint_interval > 0 && b.is_multiple_of(cfg.checkpoint_interval) {
                let mut st = self.engine.snapshot()?;
                st.burst = b;
                st.fired.clone_from(&self.own);
                let path = self.ckpts.save(&self.o.genome, st)?;
                tracing::debug!("checkpoint {}", path.display());
                if self.is_io() {
                    self.io_side.checkpointed(&self.ckpts.list()).map_err(io_error)?;
                }
            }
            if !more {
                return Ok(EpochEnd::Done(Outcome::Completed));
            }
            if self.o.stop.load(Ordering::Relaxed) {
                return Ok(EpochEnd::Done(Outcome::Interrupted));
            }
            let t0 = Instant::now();
            // the engines take the input as columns, sorted (this shard's share arrived sorted)
            self.input_cols.clear();
            self.input_cols.extend(self.input.iter().copied());
            self.input_cols.sort();
            self.engine.burst(b + 1, &self.whole, self.input_cols.as_slice())?;
            if b + 1 > c + self.o.warmup + 1 {
                self.report.compute_us.push(t0.elapsed().as_secs_f64() * 1e6);
            }
            self.own.clear();
            self.own.extend_from_slice(self.engine.fired().0);
            self.report.bursts_run += 1;
            b += 1;
        }
    }

    /// The io shard lets shards `req` rejoin: everyone resumes from the latest checkpoint this
    /// shard holds that is not newer than the newest one each of them holds.
    fn rejoin(&mut self, req: u64, members: u64) -> Directive {
        let g = self.shared.lock();
        let theirs = wire::shards_of(req).filter_map(|k| g.checkpoint_of(k)).min().unwrap_or(0);
        drop(g);
        let resume = self.ckpts.list().into_iter().filter(|&b| b <= theirs).max().unwrap_or(0);
        let d = Directive { from: self.me, epoch: self.epoch + 1, resume, members: members | req, last: self.io_last() };
        tracing::info!(
            "shard(s) {} rejoin (checkpoints up to burst {theirs}): every shard resumes from burst {resume} in epoch {}, shards {}",
            wire::list(req),
            d.epoch,
            wire::list(d.members)
        );
        d
    }

    fn write_record(&mut self, b: u64, members: u64) -> Result<(), ClusterError> {
        let Some(w) = self.record.as_mut() else { return Ok(()) };
        let mut per_shard = vec![0u64; self.n];
        for (k, c) in per_shard.iter_mut().enumerate() {
            *c = if k == self.me {
                self.own.len() as u64
            } else if members & (1 << k) != 0 {
                self.parts[k].len() as u64
            } else {
                0
            };
        }
        let whole = &self.whole;
        let motor: usize = self.motor.iter().map(|r| whole.partition_point(|&x| x < r.end) - whole.partition_point(|&x| x < r.start)).sum();
        let line = Line {
            epoch: self.epoch,
            burst: b,
            fired: whole.len() as u64,
            hash: record::fired_hash(whole),
            per_shard,
            motor: motor as u64,
        };
        line.write(w).map_err(|source| ClusterError::Record { path: self.o.record.clone().unwrap_or_default(), source })
    }
}
