//! The live node's topics around the brain: the encoders' sensor topics in (latest message wins),
//! the decoders' motor topics out (their stop commands when every sensor is stale and when the
//! node stops), `/diagnostics` and BurstStats out, `/clock` in under `use_sim_time`, the burst
//! pacing and the problem log. Shared by `neuroburst node` and the io shard of a distributed brain.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::anyhow;

use super::health::Health;
use super::intake::Slot;
use super::pace::{Pace, SimTime};
use super::problems::ProblemLog;
use super::{input_type, topic_spec};
use crate::config::Config;
use crate::decode::MotorMessage;
use crate::model::{Injection, Injections, Layout};
use crate::node::intake::Intake;
use crate::node::outputs::{BurstProducts, Outputs};
use crate::ros::diagnostic_msgs::DiagnosticArray;
use crate::ros::neuroburst_msgs::BurstStats;
use crate::ros::rosgraph_msgs::Clock as ClockMsg;
use crate::ros::{encode, RosMessage};
use crate::transport::{names, Publisher, Qos, Transport};

/// A subscribed sensor topic.
pub struct Input {
    /// The topic as configured: the intake's key.
    pub key: String,
    type_name: &'static str,
    pub slot: Arc<Slot>,
}

/// A published motor topic.
pub struct Output {
    pub topic: String,
    publisher: Box<dyn Publisher>,
    pub published: u64,
    pub errors: u64,
    last_error: Option<String>,
}

pub struct LiveTopics {
    pub intake: Intake,
    pub outputs: Outputs,
    pub inputs: Vec<Input>,
    pub pubs: Vec<Output>,
    /// The node's fully qualified name (`/neuroburst`, `/robot1/brain1`).
    pub fqn: String,
    /// The backend's device, for `/diagnostics`.
    pub hardware: String,
    stats_topic: String,
    stats_pub: Option<Box<dyn Publisher>>,
    diagnostics_topic: String,
    diagnostics_pub: Option<Box<dyn Publisher>>,
    stats: BurstStats,
    stat_areas: Vec<usize>,
    stats_period: Duration,
    next_stats: Instant,
    /// Totals at the previous report (missed deadlines, dropped messages).
    reported: (u64, u64),
    problems: ProblemLog,
    /// When the bursts run, and their ROS time.
    pub pace: Pace,
    rate: f64,
    /// The ROS time of the current burst.
    now_ns: u64,
    blind: bool,
}

/// The node's fully qualified name: `/name` or `/namespace/name`.
pub fn fully_qualified(namespace: &str, name: &str) -> String {
    match names::normalize_namespace(namespace) {
        Ok(ns) if ns != "/" => format!("{ns}/{name}"),
        _ => format!("/{name}"),
    }
}

/// Announce a publisher of `type_name` on `topic`, or say why not: the error names the topic, the
/// type and the package that provides it.
fn announce(
    transport: &mut dyn Transport,
    topic: &str,
    nc: &super::NodeConfig,
    type_name: &str,
    qos: Qos,
) -> anyhow::Result<Box<dyn Publisher>> {
    let spec = topic_spec(topic, nc, type_name, qos)?;
    transport.publisher(&spec).map_err(|e| anyhow!("cannot publish {} ({type_name}): {e}", spec.name))
}

impl LiveTopics {
    /// Check the encoders and decoders of `config`, subscribe the encoders' topics and announce
    /// the decoders' (and BurstStats) on `transport`; the clock paces `rate` bursts per second.
    /// `who` names the process in the warnings ("the node", "the io shard").
    pub fn open(config: &Config, layout: &Layout, transport: &mut dyn Transport, rate: f64, who: &str) -> anyhow::Result<LiveTopics> {
        let nc = &config.node;
        if !(rate.is_finite() && rate > 0.0) {
            return Err(anyhow!("node.rate_hz: {rate} bursts per second is not a usable rate"));
        }
        if config.encoders.is_empty() && config.decoders.is_empty() {
            tracing::warn!("no encoders and no decoders in the configuration: {who} subscribes to nothing and publishes only its stats");
        }
        let intake = Intake::new(&config.encoders, layout)?.quiet();
        let outputs = Outputs::new(&config.decoders, layout).map_err(anyhow::Error::msg)?;
        for topic in nc.input_types.keys() {
            if !intake.topics().any(|t| t == topic) {
                return Err(anyhow!("node.input_types: no encoder reads topic {topic}"));
            }
        }
        let fqn = fully_qualified(&nc.namespace, &nc.name);
        tracing::info!("node {fqn}");
        let mut inputs = vec![];
        for key in intake.topics().map(String::from).collect::<Vec<_>>() {
            let type_name = input_type(nc, &intake, &key)?;
            intake.check_type(&key, type_name)?;
            let spec = topic_spec(&key, nc, type_name, Qos::SENSOR)?;
            let slot = Slot::new(&spec.name);
            transport.subscribe(&spec, slot.handler()).map_err(|e| anyhow!("cannot subscribe to {} ({type_name}): {e}", spec.name))?;
            tracing::info!("input {} ({type_name})", spec.name);
            inputs.push(Input { key, type_name, slot });
        }
        let mut pubs = vec![];
        for d in &outputs.decoders {
            let publisher = announce(transport, d.config.topic(), nc, d.config.message_type(), Qos::COMMAND)?;
            let topic = topic_spec(d.config.topic(), nc, d.config.message_type(), Qos::COMMAND)?.name;
            tracing::info!("output area {} -> {topic} ({})", d.config.area(), d.config.message_type());
            pubs.push(Output { topic, publisher, published: 0, errors: 0, last_error: None });
        }
        let diagnostics_pub = match nc.diagnostics_topic.as_str() {
            "" => None,
            t => Some(announce(transport, t, nc, DiagnosticArray::TYPE, Qos::COMMAND)?),
        };
        // BurstStats is neuroburst's own type: a ROS 2 build without the neuroburst_msgs package
        // cannot publish it, and the node goes on with /diagnostics.
        let stats_pub = match nc.stats_topic.as_str() {
            "" => None,
            t => match announce(transport, t, nc, BurstStats::TYPE, Qos::COMMAND) {
                Ok(p) => Some(p),
                Err(e) => {
                    tracing::warn!(
                        "{e:#}; the stats go to {} only (build the neuroburst_msgs package beside neuroburst to get them)",
                        nc.diagnostics_topic
                    );
                    None
                }
            },
        };
        let pace = if nc.use_sim_time {
            let time = SimTime::new();
            let spec = topic_spec("/clock", nc, ClockMsg::TYPE, Qos::CLOCK)?;
            transport.subscribe(&spec, time.handler()).map_err(|e| anyhow!("cannot subscribe to /clock ({}): {e}", ClockMsg::TYPE))?;
            tracing::info!("use_sim_time: the bursts follow /clock at {rate} per simulated second");
            Pace::sim(rate, time)
        } else {
            Pace::wall(rate)
        };
        let stats = BurstStats {
            area_ids: outputs.decoders.iter().map(|d| d.config.area().to_string()).chain(["all".to_string()]).collect(),
            ..Default::default()
        };
        let stats_period = Duration::from_secs_f64(1.0 / nc.stats_rate_hz.max(1e-6));
        Ok(LiveTopics {
            stat_areas: outputs.decoders.iter().map(|d| d.area).collect(),
            intake,
            outputs,
            inputs,
            pubs,
            fqn,
            hardware: String::new(),
            stats_topic: nc.stats_topic.clone(),
            stats_pub,
            diagnostics_topic: nc.diagnostics_topic.clone(),
            diagnostics_pub,
            stats,
            stats_period,
            next_stats: Instant::now() + stats_period,
            reported: (0, 0),
            problems: ProblemLog::new(Duration::from_secs_f64(nc.log_interval_s.max(0.0))),
            pace,
            rate,
            now_ns: 0,
            blind: false,
        })
    }

    /// The bursts start now: the clock's first deadline and the stats period count from here.
    pub fn start(&mut self) {
        self.pace.start(self.rate);
        self.next_stats = Instant::now() + self.stats_period;
    }

    /// Wait for the next burst (the wall clock's grid, or `/clock` under simulation time); false
    /// when `stop` was set while waiting.
    pub fn wait(&mut self, stop: &AtomicBool) -> bool {
        match self.pace.wait(stop) {
            Some(t) => {
                self.now_ns = t;
                true
            }
            None => false,
        }
    }

    /// Bursts per (simulated) second.
    pub fn rate(&self) -> f64 {
        self.rate
    }

    /// The ROS time of the current burst (bag time's counterpart: what outputs are stamped with).
    pub fn now_ns(&self) -> u64 {
        self.now_ns
    }

    /// The latest message of every sensor topic, encoded: this burst's injection.
    pub fn injection(&mut self, out: &mut Injections) {
        self.offer_latest();
        self.intake.injection(out, self.now_ns);
        self.note_blind();
    }

    /// [`LiveTopics::injection`] as a list of entries (the cluster's wire format).
    pub fn injection_vec(&mut self, out: &mut Vec<Injection>) {
        self.offer_latest();
        self.intake.injection_vec(out, self.now_ns);
        self.note_blind();
    }

    /// Whether every sensor topic is stale (the decoders send their stop commands).
    pub fn blind(&self) -> bool {
        self.blind
    }

    fn note_blind(&mut self) {
        let blind = self.intake.blind();
        if blind != self.blind {
            self.blind = blind;
            if blind {
                tracing::warn!("{}: every sensor topic is stale: the motor topics get their stop commands", self.fqn);
            } else {
                tracing::info!("{}: sensor input again: the brain drives the motor topics", self.fqn);
            }
        }
    }

    fn offer_latest(&mut self) {
        for input in &self.inputs {
            if let Some(sample) = input.slot.take() {
                self.intake.offer(&input.key, input.type_name, &sample.payload, self.now_ns);
            }
        }
    }

    fn send(&mut self, motor: &[(usize, MotorMessage)]) {
        for (i, m) in motor {
            let o = &mut self.pubs[*i];
            match o.publisher.publish(&m.payload) {
                Ok(()) => o.published += 1,
                Err(e) => {
                    o.errors += 1;
                    o.last_error = Some(e.to_string());
                }
            }
        }
    }

    /// The node stops (a signal, or a fatal error): every motor topic gets its stop command (a
    /// zero Twist, the joints held), the last message the robot hears from this node; a fatal
    /// error goes to `/diagnostics` as ERROR.
    pub fn stop(&mut self, fatal: Option<&str>) {
        let now = self.pace.now_ns();
        let stops = self.outputs.stop_messages(now);
        self.send(&stops);
        if !stops.is_empty() {
            tracing::info!(
                "{}: stop commands sent on {}",
                self.fqn,
                stops.iter().map(|(i, _)| self.pubs[*i].topic.as_str()).collect::<Vec<_>>().join(", ")
            );
        }
        // the last status: stopped, or the error that stopped the node
        self.publish_health(now, true, fatal);
    }

    /// Publish a burst's motor messages, close the burst (begun at `start`) on the clock and in
    /// BurstStats, and every stats period publish BurstStats and `/diagnostics` and log the
    /// period's problems.
    pub fn publish(&mut self, products: &BurstProducts, start: Instant) {
        self.send(&products.motor);
        let end = Instant::now();
        self.pace.finished(end);
        let us = (end - start).as_secs_f32() * 1e6;
        let s = &mut self.stats;
        s.burst = products.burst;
        s.bursts += 1;
        s.burst_duration_us = us;
        s.burst_duration_max_us = s.burst_duration_max_us.max(us);
        if end >= self.next_stats {
            self.next_stats = end + self.stats_period;
            self.report(end, products);
        }
    }

    /// Sensor messages dropped and, of those, malformed, since the start.
    pub fn dropped(&self) -> (u64, u64) {
        let malformed: u64 = self.inputs.iter().map(|i| self.intake.stats.get(&i.key).map_or(0, |s| s.dropped)).sum();
        (self.inputs.iter().map(|i| i.slot.lost()).sum::<u64>() + malformed, malformed)
    }

    /// Publish `/diagnostics` for the period that ends now.
    fn publish_health(&mut self, time_ns: u64, stopping: bool, fatal: Option<&str>) {
        let Some(p) = self.diagnostics_pub.as_mut() else { return };
        let (missed, dropped) = (self.stats.missed_deadlines, self.stats.dropped_messages);
        let health = Health {
            node: &self.fqn,
            hardware: &self.hardware,
            stats: &self.stats,
            new_missed: missed.saturating_sub(self.reported.0),
            new_dropped: dropped.saturating_sub(self.reported.1),
            received: self.inputs.iter().map(|i| (i.slot.topic.as_str(), i.slot.counters.received.load(Ordering::Relaxed))).collect(),
            stale: self.intake.stale_topics().collect(),
            blind: self.blind,
            stopping,
            fatal,
        };
        if let Err(e) = p.publish(&encode(&health.message(time_ns))) {
            self.problems.check(
                Instant::now(),
                &self.diagnostics_topic,
                "diagnostics publish errors",
                self.stats.burst,
                Some(&e.to_string()),
            );
        }
        self.reported = (missed, dropped);
    }

    fn report(&mut self, end: Instant, products: &BurstProducts) {
        let burst = products.burst;
        (self.stats.dropped_messages, self.stats.malformed_messages) = self.dropped();
        self.stats.missed_deadlines = self.pace.missed();
        self.stats.fired = self.stat_areas.iter().map(|&a| products.fired_per_area[a]).chain([products.fired_total as u32]).collect();
        if let Some(p) = self.stats_pub.as_mut() {
            if let Err(e) = p.publish(&encode(&self.stats)) {
                self.problems.check(end, &self.stats_topic, "stats publish errors", burst, Some(&e.to_string()));
            }
        }
        self.publish_health(self.now_ns, false, None);
        self.stats.bursts = 0;
        self.stats.burst_duration_max_us = 0.0;
        self.problems.check(end, "bursts", "missed deadlines", self.pace.missed(), None);
        for i in &self.inputs {
            let (t, c) = (&i.slot.topic, &i.slot.counters);
            let malformed = self.intake.stats.get(&i.key).map_or(0, |s| s.dropped);
            self.problems.check(end, t, "malformed messages dropped", malformed, self.intake.last_errors.get(&i.key).map(String::as_str));
            self.problems.check(
                end,
                t,
                "messages without a valid rmw_zenoh attachment dropped",
                c.bad_attachment.load(Ordering::Relaxed),
                None,
            );
            self.problems.check(end, t, "messages replaced by a newer one before a burst", c.replaced.load(Ordering::Relaxed), None);
        }
        for o in &self.pubs {
            self.problems.check(end, &o.topic, "publish errors", o.errors, o.last_error.as_deref());
        }
    }
}
