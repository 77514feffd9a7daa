//! The live node's topics around the brain: the encoders' sensor topics in (latest message wins),
//! the decoders' motor topics and BurstStats out, the deadline clock and the problem log. Shared by
//! `neuroburst node` and the io shard of a distributed brain.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::anyhow;

use super::clock::Clock;
use super::intake::Slot;
use super::problems::ProblemLog;
use super::{input_type, topic_spec};
use crate::config::Config;
use crate::model::{Injection, Injections, Layout};
use crate::node::intake::Intake;
use crate::node::outputs::{BurstProducts, Outputs};
use crate::ros::neuroburst_msgs::BurstStats;
use crate::ros::{encode, RosMessage};
use crate::transport::{Publisher, Qos, Transport};

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

/// ROS time: the system clock, in nanoseconds since the epoch.
pub fn ros_now_ns() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
}

pub struct LiveTopics {
    pub intake: Intake,
    pub outputs: Outputs,
    pub inputs: Vec<Input>,
    pub pubs: Vec<Output>,
    stats_topic: String,
    stats_pub: Option<Box<dyn Publisher>>,
    stats: BurstStats,
    stat_areas: Vec<usize>,
    stats_period: Duration,
    next_stats: Instant,
    problems: ProblemLog,
    pub clock: Clock,
    clock_rate: f64,
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
        let mut inputs = vec![];
        for key in intake.topics().map(String::from).collect::<Vec<_>>() {
            let type_name = input_type(nc, &intake, &key)?;
            intake.check_type(&key, type_name)?;
            let spec = topic_spec(&key, nc, type_name, Qos::SENSOR)?;
            let slot = Slot::new(&spec.name);
            transport.subscribe(&spec, slot.handler())?;
            tracing::info!("input {} ({type_name})", spec.name);
            inputs.push(Input { key, type_name, slot });
        }
        let mut pubs = vec![];
        for d in &outputs.decoders {
            let spec = topic_spec(d.config.topic(), nc, d.config.message_type(), Qos::COMMAND)?;
            let publisher = transport.publisher(&spec)?;
            tracing::info!("output area {} -> {} ({})", d.config.area(), spec.name, spec.type_name);
            pubs.push(Output { topic: spec.name, publisher, published: 0, errors: 0, last_error: None });
        }
        let stats_pub = match nc.stats_topic.as_str() {
            "" => None,
            t => Some(transport.publisher(&topic_spec(t, nc, BurstStats::TYPE, Qos::COMMAND)?)?),
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
            stats_topic: nc.stats_topic.clone(),
            stats_pub,
            stats,
            stats_period,
            next_stats: Instant::now() + stats_period,
            problems: ProblemLog::new(Duration::from_secs_f64(nc.log_interval_s.max(0.0))),
            clock: Clock::new(rate, Instant::now()),
            clock_rate: rate,
        })
    }

    /// The bursts start now: the clock's first deadline and the stats period count from here.
    pub fn start(&mut self) {
        let now = Instant::now();
        self.clock = Clock::new(self.clock_rate, now);
        self.next_stats = now + self.stats_period;
    }

    /// The latest message of every sensor topic, encoded: this burst's injection.
    pub fn injection(&mut self, out: &mut Injections) {
        self.offer_latest();
        self.intake.injection(out);
    }

    /// [`LiveTopics::injection`] as a list of entries (the cluster's wire format).
    pub fn injection_vec(&mut self, out: &mut Vec<Injection>) {
        self.offer_latest();
        self.intake.injection_vec(out);
    }

    fn offer_latest(&mut self) {
        for input in &self.inputs {
            if let Some(sample) = input.slot.take() {
                self.intake.offer(&input.key, input.type_name, &sample.payload);
            }
        }
    }

    /// Publish a burst's motor messages, close the burst (begun at `start`) on the clock and in
    /// BurstStats, and every stats period publish BurstStats and log the period's problems.
    pub fn publish(&mut self, products: &BurstProducts, start: Instant) {
        for (i, m) in &products.motor {
            let o = &mut self.pubs[*i];
            match o.publisher.publish(&m.payload) {
                Ok(()) => o.published += 1,
                Err(e) => {
                    o.errors += 1;
                    o.last_error = Some(e.to_string());
                }
            }
        }
        let end = Instant::now();
        self.clock.finished(end);
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

    fn report(&mut self, end: Instant, products: &BurstProducts) {
        let burst = products.burst;
        (self.stats.dropped_messages, self.stats.malformed_messages) = self.dropped();
        self.stats.missed_deadlines = self.clock.missed;
        self.stats.fired = self.stat_areas.iter().map(|&a| products.fired_per_area[a]).chain([products.fired_total as u32]).collect();
        if let Some(p) = self.stats_pub.as_mut() {
            if let Err(e) = p.publish(&encode(&self.stats)) {
                self.problems.check(end, &self.stats_topic, "stats publish errors", burst, Some(&e.to_string()));
            }
        }
        self.stats.bursts = 0;
        self.stats.burst_duration_max_us = 0.0;
        self.problems.check(end, "bursts", "missed deadlines", self.clock.missed, None);
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
