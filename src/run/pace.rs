//! The one pacer: when each burst runs, and what time it has. Whatever runs the brain (the
//! replay, the live node, the io shard of a cluster, the benchmarks) waits on a [`Pace`]:
//!
//! - **Free**: at once, as fast as the bursts go (a benchmark, a replay at pace 0 keeps bag
//!   time through [`Pace::Bag`]).
//! - **Wall** (the live node's default): ROS time is the system clock; bursts start on the
//!   drift-free [`Grid`], and a burst that overruns its period is a missed deadline.
//! - **Sim** (`use_sim_time`): ROS time is the latest `/clock` message (rosgraph_msgs/Clock, from
//!   Gazebo, Isaac Sim or `ros2 bag play --clock`). Burst k runs at simulated time
//!   `t0 + k / rate`, lock-stepped like a replay to bag time: as soon as `/clock` has reached it,
//!   whatever the simulation's speed; several bursts run back to back when the clock jumps, none
//!   while it stands still. Deadlines are the simulation's business, so none is counted. A clock
//!   that goes back (the simulation was reset) starts the grid again.
//! - **Reflex** (`node.mode: reflex`, wall clock only): as soon as a sensor message has been
//!   encoded, `reflex.bursts` bursts run back to back (the first injects it, the next carry its
//!   spikes on), each starting the moment the previous ended. The grid goes on when nothing
//!   arrives, and `rate_hz` stays the average rate: a burst run ahead of the grid gives up the
//!   next grid point, and the node is never more than `reflex.lead` bursts ahead of the clock
//!   (the ceiling) nor behind it (the floor). Only grid bursts have deadlines.
//! - **Bag**: burst k at its bag time from the [`super::schedule::BagSchedule`], played at a
//!   multiple of the wall clock (0: as fast as possible). Nothing but the speed depends on the
//!   wall clock, so the times, and what the bursts produce, are the same run after run.
//!
//! The node's settings that pick among them live here too: [`Mode`] (`node.mode`) and
//! [`ReflexConfig`] (`node.reflex`), which the bag's schedule reads as the live node does.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::grid::{Grid, SPIN};
use crate::ros::decode;
use crate::ros::rosgraph_msgs::Clock as ClockMsg;
use crate::transport::SampleHandler;

/// When the node bursts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// On the clock's grid, `rate_hz` bursts per second: a message waits for the next burst.
    #[default]
    Clock,
    /// As soon as a sensor message has been encoded, `reflex.bursts` bursts back to back; the
    /// clock's grid when nothing arrives. `rate_hz` stays the average rate: the node runs at most
    /// `reflex.lead` bursts ahead of the clock (later grid points are skipped), never behind it.
    Reflex,
}

/// Reflex mode's settings (`node.mode: reflex`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReflexConfig {
    /// Bursts run back to back after a sensor message (2: the sensor area fires in the first, an
    /// area one synapse away answers in the second).
    pub bursts: u32,
    /// Bursts the node may run ahead of the clock's grid (the ceiling: never more than
    /// `rate_hz` x T + `lead` bursts in any T seconds).
    pub lead: u32,
    /// The input topics whose messages start reflex bursts (as the encoders name them); empty:
    /// every input. The others wait for the grid, and spend none of the `lead` budget.
    pub triggers: Vec<String>,
    /// A trigger's message starts reflex bursts only when its encoding differs from its topic's
    /// previous one: a scan that says what the last one said is no news and waits for the grid.
    pub on_change: bool,
}

impl Default for ReflexConfig {
    fn default() -> Self {
        ReflexConfig { bursts: 2, lead: 8, triggers: vec![], on_change: true }
    }
}

/// Topic names as the encoders write them and as they are resolved (`scan`, `/scan`) are the same.
fn same_topic(a: &str, b: &str) -> bool {
    a.trim_start_matches('/') == b.trim_start_matches('/')
}

impl ReflexConfig {
    /// Whether messages of the input `topic` start reflex bursts.
    pub fn triggered_by(&self, topic: &str) -> bool {
        self.triggers.is_empty() || self.triggers.iter().any(|t| same_topic(t, topic))
    }

    /// A clear error for settings no reflex can run with; `inputs`: the encoders' topics.
    pub fn check(&self, inputs: &[&str]) -> Result<(), String> {
        if self.bursts == 0 || self.lead < self.bursts {
            return Err(format!(
                "node.reflex: bursts {} and lead {}: a reflex needs at least one burst, and lead must allow them (lead >= bursts)",
                self.bursts, self.lead
            ));
        }
        match self.triggers.iter().find(|t| !inputs.iter().any(|i| same_topic(t, i))) {
            Some(t) => Err(format!("node.reflex.triggers: no encoder reads topic {t}")),
            None => Ok(()),
        }
    }
}

/// ROS time from the system clock, in nanoseconds since the epoch.
pub fn system_now_ns() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
}

/// Sensor messages have been encoded: what reflex mode waits on.
#[derive(Default)]
pub struct Wake {
    /// Encoded messages so far.
    seq: AtomicU64,
    lock: Mutex<()>,
    moved: Condvar,
}

impl Wake {
    pub fn new() -> Arc<Wake> {
        Arc::new(Wake::default())
    }

    pub fn seq(&self) -> u64 {
        self.seq.load(Ordering::Acquire)
    }

    pub fn notify(&self) {
        let _g = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        self.seq.fetch_add(1, Ordering::AcqRel);
        self.moved.notify_all();
    }

    /// Wait until `seq` moves past `seen` or `until` passes.
    pub fn wait(&self, seen: u64, until: Instant) {
        let g = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        let left = until.saturating_duration_since(Instant::now());
        let _ = self.moved.wait_timeout_while(g, left, |_| self.seq() == seen);
    }
}

/// How far `/clock` may run ahead of the next burst before the bursts restart from it instead of
/// catching up back to back: 100 periods, or a simulated second where that is more (`ros2 bag
/// play --clock` publishes 40 times a simulated second, 25 periods of a 1 kHz brain each).
fn catch_up(period_ns: u64) -> u64 {
    period_ns.saturating_mul(100).max(1_000_000_000)
}

/// The latest `/clock` time, fed by the transport's callback.
#[derive(Default)]
pub struct SimTime {
    /// Nanoseconds; 0 until the first message.
    latest: AtomicU64,
    /// `/clock` messages that could not be decoded.
    pub malformed: AtomicU64,
    lock: Mutex<()>,
    moved: Condvar,
}

impl SimTime {
    pub fn new() -> Arc<SimTime> {
        Arc::new(SimTime::default())
    }

    /// The subscription callback of `/clock`.
    pub fn handler(self: &Arc<Self>) -> SampleHandler {
        let me = self.clone();
        Arc::new(move |s| match decode::<ClockMsg>(&s.payload) {
            Ok(c) => me.set(c.clock.nanos().max(1) as u64),
            Err(_) => {
                me.malformed.fetch_add(1, Ordering::Relaxed);
            }
        })
    }

    pub fn set(&self, ns: u64) {
        let _guard = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        self.latest.store(ns, Ordering::Release);
        self.moved.notify_all();
    }

    /// The latest time, or None before the first message.
    pub fn now(&self) -> Option<u64> {
        Some(self.latest.load(Ordering::Acquire)).filter(|&t| t > 0)
    }

    /// Wait until the clock reaches `t` (or, with `t` None, until it has a time at all), at most
    /// `timeout`; returns the latest time.
    fn wait_for(&self, t: Option<u64>, timeout: Duration) -> Option<u64> {
        let reached = |now: Option<u64>| now.is_some_and(|n| t.is_none_or(|t| n >= t));
        let guard = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        let _ = self.moved.wait_timeout_while(guard, timeout, |_| !reached(self.now())).unwrap_or_else(|p| p.into_inner());
        self.now()
    }
}

pub enum Pace {
    Free,
    Wall(Grid),
    Sim { time: Arc<SimTime>, period_ns: u64, next: Option<u64>, jumps: u64 },
    Reflex(Reflex),
    Bag(BagTime),
}

/// Bag time: burst k at `times[k - 1]`, at `speed` bag seconds per wall-clock second (0: as fast
/// as possible), counted from the epoch's start (the wall clock and the bag time of its first
/// burst).
pub struct BagTime {
    times: Vec<u64>,
    speed: f64,
    epoch: (Instant, u64),
    last: u64,
}

/// Reflex mode's state: the clock, the bursts still owed to the last message, and how far ahead
/// of the clock the node runs.
pub struct Reflex {
    clock: Grid,
    bursts: u32,
    lead: u32,
    wake: Arc<Wake>,
    /// Encoded messages already seen.
    seen: u64,
    /// Bursts still to run back to back for the last message.
    pending: u32,
    /// Bursts run ahead of the grid (grid points to give up).
    ahead: u32,
    /// The current burst is the grid's.
    on_grid: bool,
    /// Bursts that ran ahead of the grid, for the summary.
    pub early: u64,
}

impl Reflex {
    pub fn new(rate_hz: f64, bursts: u32, lead: u32, wake: Arc<Wake>) -> Reflex {
        let seen = wake.seq();
        Reflex { clock: Grid::new(rate_hz, Instant::now()), bursts, lead, wake, seen, pending: 0, ahead: 0, on_grid: false, early: 0 }
    }

    /// Whether to burst at `now`; else how long to wait at most.
    fn decide(&mut self, now: Instant) -> Result<(), Instant> {
        let seq = self.wake.seq();
        if seq != self.seen {
            self.seen = seq;
            self.pending = self.bursts;
        }
        // grid points passed while ahead were run early: give them up
        while self.ahead > 0 && now >= self.clock.deadline() {
            self.ahead -= 1;
            self.clock.skip();
        }
        if now >= self.clock.deadline() {
            self.on_grid = true;
            self.pending = self.pending.saturating_sub(1);
            return Ok(());
        }
        if self.pending > 0 && self.ahead < self.lead {
            self.on_grid = false;
            self.pending -= 1;
            self.ahead += 1;
            self.early += 1;
            return Ok(());
        }
        Err(self.clock.deadline())
    }

    fn wait(&mut self, stop: &AtomicBool) -> bool {
        loop {
            if stop.load(Ordering::Relaxed) {
                return false;
            }
            let now = Instant::now();
            let deadline = match self.decide(now) {
                Ok(()) => return true,
                Err(d) => d,
            };
            // sleep until a message or shortly before the grid point, then spin to it
            if deadline - now > SPIN && !self.clock.busy {
                self.wake.wait(self.seen, (deadline - SPIN).min(now + Duration::from_millis(50)));
            } else {
                std::hint::spin_loop();
            }
        }
    }

    fn finished(&mut self, end: Instant) {
        if self.on_grid {
            self.clock.finished(end);
        }
    }
}

impl Pace {
    /// The wall clock's grid; `busy`: spin to each burst instead of sleeping.
    pub fn wall(rate_hz: f64, busy: bool) -> Pace {
        let mut grid = Grid::new(rate_hz, Instant::now());
        grid.busy = busy;
        Pace::Wall(grid)
    }

    pub fn reflex(rate_hz: f64, bursts: u32, lead: u32, wake: Arc<Wake>, busy: bool) -> Pace {
        let mut r = Reflex::new(rate_hz, bursts, lead, wake);
        r.clock.busy = busy;
        Pace::Reflex(r)
    }

    pub fn sim(rate_hz: f64, time: Arc<SimTime>) -> Pace {
        Pace::Sim { time, period_ns: (1e9 / rate_hz).round().max(1.0) as u64, next: None, jumps: 0 }
    }

    /// The bursts at these bag times (non-empty), `speed` bag seconds per wall-clock second.
    pub fn bag(times: Vec<u64>, speed: f64) -> Pace {
        let first = times.first().copied().unwrap_or(0);
        Pace::Bag(BagTime { times, speed, epoch: (Instant::now(), first), last: first })
    }

    /// The bursts' rate on the wall clock's grid, or as fast as they go (`rate_hz` 0).
    pub fn rate(rate_hz: f64) -> Pace {
        if rate_hz > 0.0 {
            Pace::wall(rate_hz, false)
        } else {
            Pace::Free
        }
    }

    /// The bursts start now, after burst `from` (0: the first): the grid's first deadline, or
    /// bag time from burst `from`'s.
    pub fn start(&mut self, from: u64) {
        let now = Instant::now();
        match self {
            Pace::Wall(c) => c.restart(now),
            Pace::Reflex(r) => r.clock.restart(now),
            Pace::Bag(b) => b.epoch = (now, b.times.get(from.max(1) as usize - 1).copied().unwrap_or(b.last)),
            Pace::Sim { .. } | Pace::Free => {}
        }
    }

    /// Wait for burst `k` (k = 1, 2, ...); its time, or None when `stop` was set while waiting.
    pub fn wait(&mut self, k: u64, stop: &AtomicBool) -> Option<u64> {
        match self {
            Pace::Free => Some(system_now_ns()),
            Pace::Wall(c) => {
                c.wait();
                Some(system_now_ns())
            }
            Pace::Reflex(r) => r.wait(stop).then(system_now_ns),
            Pace::Bag(b) => {
                let t = b.times[k as usize - 1];
                if b.speed > 0.0 {
                    let (at, t_c) = b.epoch;
                    let due = at + crate::time::seconds(t.saturating_sub(t_c) as f64 * 1e-9 / b.speed);
                    if let Some(wait) = due.checked_duration_since(Instant::now()) {
                        std::thread::sleep(wait);
                    }
                }
                b.last = t;
                Some(t)
            }
            Pace::Sim { time, period_ns, next, jumps } => loop {
                if stop.load(Ordering::Relaxed) {
                    return None;
                }
                let now = time.wait_for(*next, Duration::from_millis(50));
                let Some(now) = now else { continue };
                match *next {
                    None => {
                        *next = Some(now + *period_ns);
                        return Some(now);
                    }
                    Some(t) if now + 2 * *period_ns < t => {
                        tracing::warn!(
                            "/clock went back from {:.3} s to {:.3} s: the bursts follow it",
                            t as f64 * 1e-9,
                            now as f64 * 1e-9
                        );
                        *next = Some(now + *period_ns);
                        return Some(now);
                    }
                    Some(t) if now.saturating_sub(t) > catch_up(*period_ns) => {
                        // a jump forward: the grid restarts from the new time instead of running
                        // every burst in between back to back (an hour at 100 Hz: 360,000)
                        if *jumps == 0 {
                            tracing::warn!(
                                "/clock jumped from {:.3} s to {:.3} s: the bursts restart from there (further jumps are counted, not logged)",
                                t as f64 * 1e-9,
                                now as f64 * 1e-9
                            );
                        }
                        *jumps += 1;
                        *next = Some(now + *period_ns);
                        return Some(now);
                    }
                    Some(t) if now >= t => {
                        *next = Some(t + *period_ns);
                        return Some(t);
                    }
                    Some(_) => {}
                }
            },
        }
    }

    /// The burst begun at the last [`Pace::wait`] ended at `end` (wall clock): count a missed
    /// deadline (the wall clock's grid only).
    pub fn finished(&mut self, end: Instant) {
        match self {
            Pace::Wall(c) => {
                c.finished(end);
            }
            Pace::Reflex(r) => r.finished(end),
            Pace::Sim { .. } | Pace::Bag(_) | Pace::Free => {}
        }
    }

    /// Bursts that ended after their deadline (the wall clock's grid; 0 otherwise).
    pub fn missed(&self) -> u64 {
        match self {
            Pace::Wall(c) => c.missed,
            Pace::Reflex(r) => r.clock.missed,
            Pace::Sim { .. } | Pace::Bag(_) | Pace::Free => 0,
        }
    }

    /// The time now: the system clock, the latest `/clock` (0 before the first), or the bag time
    /// of the last burst.
    pub fn now_ns(&self) -> u64 {
        match self {
            Pace::Wall(_) | Pace::Reflex(_) | Pace::Free => system_now_ns(),
            Pace::Sim { time, .. } => time.now().unwrap_or(0),
            Pace::Bag(b) => b.last,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sim_bursts_follow_the_clock_at_any_speed() {
        let time = SimTime::new();
        let mut p = Pace::sim(100.0, time.clone());
        let stop = AtomicBool::new(false);
        time.set(5_000_000_000);
        assert_eq!(p.wait(1, &stop), Some(5_000_000_000));
        // the clock jumps 35 ms: three bursts back to back, on the 10 ms grid
        time.set(5_035_000_000);
        assert_eq!(p.wait(0, &stop), Some(5_010_000_000));
        assert_eq!(p.wait(0, &stop), Some(5_020_000_000));
        assert_eq!(p.wait(0, &stop), Some(5_030_000_000));
        // a clock that stands still runs no burst: stop ends the wait
        let t = {
            let time = time.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(120));
                time.set(5_041_000_000);
            })
        };
        assert_eq!(p.wait(0, &stop), Some(5_040_000_000));
        t.join().unwrap();
        stop.store(true, Ordering::Relaxed);
        assert_eq!(p.wait(0, &stop), None);
        // reset to an earlier time: the grid starts again there
        stop.store(false, Ordering::Relaxed);
        time.set(1_000_000_000);
        assert_eq!(p.wait(0, &stop), Some(1_000_000_000));
        assert_eq!(p.missed(), 0);
        // a jump of an hour: the grid restarts at the new time, not 360,000 bursts back to back
        time.set(3_601_000_000_000);
        assert_eq!(p.wait(0, &stop), Some(3_601_000_000_000));
        time.set(3_601_015_000_000);
        assert_eq!(p.wait(0, &stop), Some(3_601_010_000_000));
        // a jump within a simulated second is caught up burst by burst
        time.set(3_601_500_000_000);
        assert_eq!(p.wait(0, &stop), Some(3_601_020_000_000));
    }
}
