//! The live node's publisher thread: the burst thread hands every burst's products over (a
//! bounded channel, never waited on: when it is full the record is dropped and counted) and this
//! thread publishes the motor messages at once, measures the node's sensor -> motor latency,
//! publishes BurstStats and `/diagnostics` at their rate and logs the period's problems. A
//! transport that blocks (congestion, a slow link) delays this thread, never a burst.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, SyncSender, TryRecvError, TrySendError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::health::Health;
use super::problems::ProblemLog;
use super::slots::Slot;
use crate::decode::MotorMessage;
use crate::ros::neuroburst_msgs::BurstStats;
use crate::ros::{encode, RosMessage};
use crate::run::trace::{Durations, Percentiles};
use crate::transport::Publisher;

/// A published motor topic.
pub struct MotorPublisher {
    pub topic: String,
    /// The message type (`geometry_msgs/msg/Twist`).
    pub type_name: &'static str,
    pub publisher: Box<dyn Publisher>,
    pub published: u64,
    pub errors: u64,
    pub last_error: Option<String>,
}

/// What the burst thread hands over.
pub enum Record {
    Burst(PublishJob),
    /// The bursts pause (the lifecycle's deactivate): the stop commands; the stats go on.
    Pause {
        motor: Vec<(usize, MotorMessage)>,
        time_ns: u64,
    },
    /// New settings (a parameter set while the node runs): the problem log's interval.
    Settings {
        log_interval: Duration,
    },
    /// The node stops: the stop commands, the final status (and the fatal error, if one).
    Stop {
        motor: Vec<(usize, MotorMessage)>,
        time_ns: u64,
        fatal: Option<String>,
    },
}

pub struct PublishJob {
    pub burst: u64,
    /// The burst's ROS time.
    pub time_ns: u64,
    pub motor: Vec<(usize, MotorMessage)>,
    /// Arrival of the sensor messages first injected in this burst.
    pub arrivals: Vec<Instant>,
    /// The burst's work (intake to handoff), microseconds.
    pub work_us: f32,
    /// Totals so far.
    pub missed: u64,
    /// Fired neurons of the stats' areas, then of the whole brain.
    pub fired: Vec<u32>,
    /// The sensor topics stale at this burst (configuration order of the inputs).
    pub stale: Vec<bool>,
    pub blind: bool,
}

/// The publisher thread's state.
pub struct OutputSide {
    pub pubs: Vec<MotorPublisher>,
    pub fqn: String,
    pub hardware: String,
    /// The sensor topics' slots (their counters).
    pub slots: Vec<Arc<Slot>>,
    pub stats_topic: String,
    pub stats_pub: Option<Box<dyn Publisher>>,
    pub diagnostics_topic: String,
    pub diagnostics_pub: Option<Box<dyn Publisher>>,
    pub stats: BurstStats,
    pub stats_period: Duration,
    /// Poll for records instead of sleeping (`node.realtime.busy_poll`).
    pub busy: bool,
    pub problems: ProblemLog,
    /// Records the channel could not take.
    pub dropped_records: Arc<std::sync::atomic::AtomicU64>,
    /// The live view, shown the motor messages and the stats.
    pub view: Option<Arc<crate::view::View>>,
    /// Raised when handling a record fails (a panic): the bursts end, this thread still sends the
    /// stop commands.
    pub fatal: Arc<super::fatal::Fatal>,
}

/// What the publisher thread did, returned when it ends.
#[derive(Clone, Debug, Default)]
pub struct OutputReport {
    /// (topic, published, errors) per motor topic.
    pub published: Vec<(String, u64, u64)>,
    /// The node's sensor -> motor latency over the whole run.
    pub latency: Percentiles,
}

struct Run {
    side: OutputSide,
    /// Totals at the previous report (missed deadlines, dropped messages).
    reported: (u64, u64),
    /// Arrivals of the messages injected in the last burst: answered by this burst's outputs.
    pending: Vec<Instant>,
    window: Durations,
    total: Durations,
    last: Option<PublishJob>,
}

impl OutputSide {
    /// Run until the burst thread sends [`Record::Stop`] (or goes away).
    pub fn run(self, records: Receiver<Record>) -> OutputReport {
        let period = self.stats_period;
        let mut r =
            Run { side: self, reported: (0, 0), pending: vec![], window: Durations::default(), total: Durations::default(), last: None };
        let mut next_stats = Instant::now() + period;
        loop {
            let record = if r.side.busy {
                match records.try_recv() {
                    Ok(x) => Ok(x),
                    Err(TryRecvError::Empty) => {
                        std::hint::spin_loop();
                        Err(RecvTimeoutError::Timeout)
                    }
                    Err(TryRecvError::Disconnected) => Err(RecvTimeoutError::Disconnected),
                }
            } else {
                records.recv_timeout(next_stats.saturating_duration_since(Instant::now()))
            };
            let fatal = r.side.fatal.clone();
            let who = "the publisher thread";
            match record {
                Ok(Record::Burst(b)) => {
                    fatal.guard(who, || r.burst(b));
                }
                Ok(Record::Pause { motor, time_ns }) => {
                    fatal.guard(who, || {
                        r.send(&motor);
                        r.show(&motor, time_ns);
                    });
                }
                Ok(Record::Settings { log_interval }) => r.side.problems.set_interval(log_interval),
                Ok(Record::Stop { motor, time_ns, fatal: cause }) => {
                    // the stop commands first, each on its own: one that fails does not keep the others
                    for m in &motor {
                        fatal.guard(who, || r.send(std::slice::from_ref(m)));
                    }
                    fatal.guard(who, || {
                        r.show(&motor, time_ns);
                        r.health(time_ns, true, cause.as_deref());
                    });
                    break;
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break,
            }
            let now = Instant::now();
            if now >= next_stats {
                next_stats = now + period;
                fatal.guard(who, || r.report(now));
            }
        }
        OutputReport {
            published: r.side.pubs.iter().map(|o| (o.topic.clone(), o.published, o.errors)).collect(),
            latency: r.total.percentiles(),
        }
    }
}

impl Run {
    fn send(&mut self, motor: &[(usize, MotorMessage)]) {
        for (i, m) in motor {
            let o = &mut self.side.pubs[*i];
            match o.publisher.publish(&m.payload) {
                Ok(()) => o.published += 1,
                Err(e) => {
                    o.errors += 1;
                    o.last_error = Some(e.to_string());
                }
            }
        }
    }

    /// The motor messages to the live view, once they are published.
    fn show(&self, motor: &[(usize, MotorMessage)], time_ns: u64) {
        if let Some(view) = &self.side.view {
            for (i, m) in motor {
                let o = &self.side.pubs[*i];
                view.ros(&o.topic, o.type_name, &m.payload, time_ns, false);
            }
        }
    }

    fn burst(&mut self, b: PublishJob) {
        self.send(&b.motor);
        let now = Instant::now();
        for a in self.pending.drain(..) {
            let ns = now.saturating_duration_since(a).as_nanos() as u64;
            self.window.record(ns);
            self.total.record(ns);
        }
        self.show(&b.motor, b.time_ns);
        self.pending.extend_from_slice(&b.arrivals);
        let s = &mut self.side.stats;
        s.burst = b.burst;
        s.bursts += 1;
        s.burst_duration_us = b.work_us;
        s.burst_duration_max_us = s.burst_duration_max_us.max(b.work_us);
        self.last = Some(b);
    }

    /// Sensor messages dropped and, of those, malformed, since the start.
    fn dropped(&self) -> (u64, u64) {
        let slots = &self.side.slots;
        (slots.iter().map(|s| s.counters.lost()).sum(), slots.iter().map(|s| s.counters.malformed.get()).sum())
    }

    /// Publish `/diagnostics` for the period that ends now.
    fn health(&mut self, time_ns: u64, stopping: bool, fatal: Option<&str>) {
        let (missed, dropped) = (self.side.stats.missed_deadlines, self.side.stats.dropped_messages);
        let last = self.last.as_ref();
        let side = &mut self.side;
        let Some(p) = side.diagnostics_pub.as_mut() else { return };
        let health = Health {
            node: &side.fqn,
            hardware: &side.hardware,
            stats: &side.stats,
            new_missed: missed.saturating_sub(self.reported.0),
            new_dropped: dropped.saturating_sub(self.reported.1),
            received: side.slots.iter().map(|s| (s.topic.as_str(), s.counters.received.get())).collect(),
            stale: last.map_or(vec![], |l| side.slots.iter().zip(&l.stale).filter(|(_, &s)| s).map(|(s, _)| s.topic.as_str()).collect()),
            blind: last.is_some_and(|l| l.blind),
            stopping,
            fatal,
        };
        if let Err(e) = p.publish(&encode(&health.message(time_ns))) {
            side.problems.check(
                Instant::now(),
                &side.diagnostics_topic,
                "diagnostics publish errors",
                side.stats.burst,
                Some(&e.to_string()),
            );
        }
        self.reported = (missed, dropped);
    }

    fn report(&mut self, now: Instant) {
        let Some(last) = self.last.as_ref() else { return };
        let (time_ns, missed) = (last.time_ns, last.missed);
        (self.side.stats.dropped_messages, self.side.stats.malformed_messages) = self.dropped();
        let s = &mut self.side.stats;
        s.missed_deadlines = missed;
        s.fired.clone_from(&last.fired);
        let l = self.window.percentiles();
        (s.latency_samples, s.latency_p50_us, s.latency_p99_us, s.latency_max_us) =
            (l.count as u32, l.p50_us as f32, l.p99_us as f32, l.max_us as f32);
        self.window.clear();
        let side = &mut self.side;
        let stats = encode(&side.stats);
        if let Some(view) = &side.view {
            view.ros(&side.stats_topic, BurstStats::TYPE, &stats, time_ns, false);
        }
        if let Some(p) = side.stats_pub.as_mut() {
            if let Err(e) = p.publish(&stats) {
                side.problems.check(now, &side.stats_topic, "stats publish errors", side.stats.burst, Some(&e.to_string()));
            }
        }
        self.health(time_ns, false, None);
        let side = &mut self.side;
        side.stats.bursts = 0;
        side.stats.burst_duration_max_us = 0.0;
        side.problems.check(now, "bursts", "missed deadlines", missed, None);
        side.problems.check(
            now,
            "publisher",
            "burst records dropped (the publisher fell behind)",
            side.dropped_records.load(Ordering::Relaxed),
            None,
        );
        for slot in &side.slots {
            let (t, c) = (&slot.topic, &slot.counters);
            let last_error = slot.last_error.lock().unwrap_or_else(|p| p.into_inner()).clone();
            side.problems.check(now, t, "malformed messages dropped", c.malformed.get(), last_error.as_deref());
            side.problems.check(now, t, "messages without a valid rmw_zenoh attachment dropped", c.bad_attachment.get(), None);
            side.problems.check(now, t, "messages replaced by a newer one before a burst", c.replaced.get(), None);
        }
        for o in &side.pubs {
            side.problems.check(now, &o.topic, "publish errors", o.errors, o.last_error.as_deref());
        }
    }
}

/// Records the burst thread may hand over before the publisher takes them.
const RECORDS: usize = 1024;

/// The burst thread's end of the publisher thread: the thread's state until it starts, then the
/// channel to it (never waited on by a burst).
pub struct PublisherLink {
    side: Option<OutputSide>,
    records: Option<SyncSender<Record>>,
    thread: Option<JoinHandle<OutputReport>>,
    dropped_records: Arc<AtomicU64>,
    /// The resolved name of each decoder's motor topic (`/cmd_vel`), for the logs.
    motor_topics: Vec<String>,
    fqn: String,
    fatal: Arc<super::fatal::Fatal>,
    /// What the publisher thread did (after [`PublisherLink::stop`]).
    pub report: OutputReport,
}

impl PublisherLink {
    /// The link to a publisher thread of state `side`, not started.
    pub fn new(side: OutputSide) -> PublisherLink {
        PublisherLink {
            records: None,
            thread: None,
            dropped_records: side.dropped_records.clone(),
            motor_topics: side.pubs.iter().map(|o| o.topic.clone()).collect(),
            fqn: side.fqn.clone(),
            fatal: side.fatal.clone(),
            report: OutputReport::default(),
            side: Some(side),
        }
    }

    /// Show the motor messages and the stats in the live view (before [`PublisherLink::start`]).
    pub fn set_view(&mut self, view: &Arc<crate::view::View>) {
        if let Some(side) = self.side.as_mut() {
            for o in &side.pubs {
                view.advertise(&o.topic, o.type_name);
            }
            view.advertise(&side.stats_topic, BurstStats::TYPE);
            side.view = Some(view.clone());
        }
    }

    /// Start the publisher thread (once), its `/diagnostics` naming `hardware`.
    pub fn start(&mut self, hardware: &str) -> anyhow::Result<()> {
        if let Some(mut side) = self.side.take() {
            side.hardware = hardware.to_string();
            let (tx, rx) = sync_channel(RECORDS);
            self.thread = Some(std::thread::Builder::new().name("publish".into()).spawn(move || side.run(rx))?);
            self.records = Some(tx);
        }
        Ok(())
    }

    /// The node stops: the stop commands and the final status, sent by the thread (or here, when it
    /// never started); waits for it to end and keeps its report.
    pub fn stop(&mut self, motor: Vec<(usize, MotorMessage)>, time_ns: u64, fatal: Option<&str>) {
        let topics: Vec<String> = motor.iter().map(|(i, _)| self.motor_topics[*i].clone()).collect();
        let stop = Record::Stop { motor, time_ns, fatal: fatal.map(String::from) };
        if let (Some(tx), Some(thread)) = (self.records.take(), self.thread.take()) {
            let _ = tx.send(stop);
            drop(tx);
            self.report = thread.join().unwrap_or_default();
        } else if let Some(side) = self.side.take() {
            // stopped before the bursts started: publish here
            let (tx, rx) = sync_channel(1);
            let _ = tx.send(stop);
            self.report = side.run(rx);
        }
        if !topics.is_empty() {
            tracing::info!("{}: stop commands sent on {}", self.fqn, topics.join(", "));
        }
    }

    /// The bursts pause: the stop commands go out; the thread goes on.
    pub fn pause(&mut self, motor: Vec<(usize, MotorMessage)>, time_ns: u64) {
        if let Some(tx) = &self.records {
            if tx.send(Record::Pause { motor, time_ns }).is_ok() && !self.motor_topics.is_empty() {
                tracing::info!("{}: stop commands sent on {}", self.fqn, self.motor_topics.join(", "));
            }
        }
    }

    /// The problem log's new interval.
    pub fn set_log_interval(&mut self, log_interval: Duration) {
        match (&self.records, self.side.as_mut()) {
            (Some(tx), _) => {
                let _ = tx.try_send(Record::Settings { log_interval });
            }
            (None, Some(side)) => side.problems.set_interval(log_interval),
            _ => {}
        }
    }

    /// Hand a burst's record over. Never waits: a record the thread has no room for is dropped
    /// and counted.
    pub fn burst(&mut self, record: PublishJob) {
        if let Some(tx) = &self.records {
            match tx.try_send(Record::Burst(record)) {
                Ok(()) => {}
                Err(TrySendError::Full(_)) => {
                    self.dropped_records.fetch_add(1, Ordering::Relaxed);
                }
                // the publisher thread is gone: only a failure ends it before the stop
                Err(TrySendError::Disconnected(_)) => self.fatal.raise("the publisher thread", "it ended"),
            }
        }
    }
}
