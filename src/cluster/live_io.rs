//! The io shard as the live node: the configuration's `encoders` read their sensor topics and its
//! `decoders` publish their motor topics over the node's transport (`node` and `zenoh` sections,
//! as `neuroburst node`), while the brain is spread over the shards. The same pieces as the live
//! node ([`crate::live`]): a slot per topic where the latest sample wins, the intake's encoders,
//! the outputs' decoders, BurstStats on `node.stats_topic`, problems logged once per interval.
//!
//! Bursts run on the live node's drift-free clock at `cluster.rate_hz`, else `node.rate_hz`, else
//! the genome's `burst_rate_hz`. A burst's motor messages go out once every shard's spikes of it
//! have come in. After a rollback (a rejoin) the brain resumes from its checkpoint while the
//! topics go on: the robot's world does not roll back.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::json;

use super::io::{sort_injection, ShardIo};
use super::run::ClusterError;
use crate::config::Config;
use crate::live::clock::Clock;
use crate::live::intake::Slot;
use crate::live::problems::ProblemLog;
use crate::live::{input_type, topic_spec};
use crate::model::{Injection, Layout};
use crate::node::intake::Intake;
use crate::node::outputs::Outputs;
use crate::ros::neuroburst_msgs::BurstStats;
use crate::ros::{encode, RosMessage};
use crate::transport::{Publisher, Qos, Transport};

struct Input {
    /// The topic as configured: the intake's key.
    key: String,
    type_name: &'static str,
    slot: Arc<Slot>,
}

struct Output {
    topic: String,
    publisher: Box<dyn Publisher>,
    published: u64,
    errors: u64,
    last_error: Option<String>,
}

pub struct LiveIo {
    layout: Layout,
    intake: Intake,
    outputs: Outputs,
    inputs: Vec<Input>,
    pubs: Vec<Output>,
    stats_topic: String,
    stats_pub: Option<Box<dyn Publisher>>,
    stats: BurstStats,
    stat_areas: Vec<usize>,
    stats_period: Duration,
    next_stats: Instant,
    problems: ProblemLog,
    clock: Clock,
    rate: f64,
    burst_start: Instant,
    describe: String,
    /// Last: its subscriptions feed the slots until it is dropped.
    transport: Box<dyn Transport>,
}

fn ros_now_ns() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
}

impl LiveIo {
    /// Subscribe the encoders' topics and announce the decoders' on `transport`; bursts at
    /// `rate` per second.
    pub fn new(config: &Config, layout: Layout, mut transport: Box<dyn Transport>, rate: f64) -> Result<LiveIo, ClusterError> {
        let err = |e: &dyn std::fmt::Display| ClusterError::Io(format!("live topics: {e}"));
        let nc = &config.node;
        if !(rate.is_finite() && rate > 0.0) {
            return Err(err(&format!("{rate} bursts per second is not a usable rate")));
        }
        if config.encoders.is_empty() && config.decoders.is_empty() {
            tracing::warn!(
                "no encoders and no decoders in the configuration: the io shard subscribes to nothing and publishes only its stats"
            );
        }
        let intake = Intake::new(&config.encoders, &layout).map_err(|e| err(&e))?.quiet();
        let outputs = Outputs::new(&config.decoders, &layout).map_err(|e| err(&e))?;
        for topic in nc.input_types.keys() {
            if !intake.topics().any(|t| t == topic) {
                return Err(err(&format!("node.input_types: no encoder reads topic {topic}")));
            }
        }
        let describe = transport.describe();
        let mut inputs = vec![];
        for key in intake.topics().map(String::from).collect::<Vec<_>>() {
            let type_name = input_type(nc, &intake, &key).map_err(|e| err(&e))?;
            intake.check_type(&key, type_name).map_err(|e| err(&e))?;
            let spec = topic_spec(&key, nc, type_name, Qos::SENSOR).map_err(|e| err(&e))?;
            let slot = Slot::new(&spec.name);
            transport.subscribe(&spec, slot.handler()).map_err(|e| err(&e))?;
            tracing::info!("input {} ({type_name})", spec.name);
            inputs.push(Input { key, type_name, slot });
        }
        let mut pubs = vec![];
        for d in &outputs.decoders {
            let spec = topic_spec(d.config.topic(), nc, d.config.message_type(), Qos::COMMAND).map_err(|e| err(&e))?;
            let publisher = transport.publisher(&spec).map_err(|e| err(&e))?;
            tracing::info!("output area {} -> {} ({})", d.config.area(), spec.name, spec.type_name);
            pubs.push(Output { topic: spec.name, publisher, published: 0, errors: 0, last_error: None });
        }
        let stats_pub = match nc.stats_topic.as_str() {
            "" => None,
            t => Some(transport.publisher(&topic_spec(t, nc, BurstStats::TYPE, Qos::COMMAND).map_err(|e| err(&e))?).map_err(|e| err(&e))?),
        };
        let stats = BurstStats {
            area_ids: outputs.decoders.iter().map(|d| d.config.area().to_string()).chain(["all".to_string()]).collect(),
            ..Default::default()
        };
        let stats_period = Duration::from_secs_f64(1.0 / nc.stats_rate_hz.max(1e-6));
        Ok(LiveIo {
            stat_areas: outputs.decoders.iter().map(|d| d.area).collect(),
            layout,
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
            rate,
            burst_start: Instant::now(),
            describe,
            transport,
        })
    }

    /// Sensor messages dropped and, of those, malformed, since the start.
    fn dropped(&self) -> (u64, u64) {
        let malformed: u64 = self.inputs.iter().map(|i| self.intake.stats.get(&i.key).map_or(0, |s| s.dropped)).sum();
        (self.inputs.iter().map(|i| i.slot.lost()).sum::<u64>() + malformed, malformed)
    }

    /// Publish BurstStats and log the problems of the last interval.
    fn report(&mut self, end: Instant, burst: u64, fired_per_area: &[u32], fired_total: u64) {
        (self.stats.dropped_messages, self.stats.malformed_messages) = self.dropped();
        self.stats.missed_deadlines = self.clock.missed;
        self.stats.fired = self.stat_areas.iter().map(|&a| fired_per_area[a]).chain([fired_total as u32]).collect();
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

impl ShardIo for LiveIo {
    fn describe(&self) -> String {
        format!("live topics at {} Hz over {}", self.rate, self.describe)
    }

    fn start(&mut self, c: u64) -> Result<(), ClusterError> {
        if c > 0 {
            tracing::info!("the brain resumes from burst {c}; the live topics go on");
        }
        Ok(())
    }

    fn pace(&mut self, _t: u64) {
        self.clock.wait();
        self.burst_start = Instant::now();
    }

    fn injection(&mut self, _t: u64, out: &mut Vec<Injection>) -> Result<(), ClusterError> {
        for input in &self.inputs {
            if let Some(sample) = input.slot.take() {
                self.intake.offer(&input.key, input.type_name, &sample.payload);
            }
        }
        *out = self.intake.injection();
        sort_injection(out);
        Ok(())
    }

    fn fired(&mut self, t: u64, fired: &[u32]) -> Result<(), ClusterError> {
        let products = self.outputs.decode(t, fired, fired.len() as u64, &self.layout, ros_now_ns());
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
        let us = (end - self.burst_start).as_secs_f32() * 1e6;
        self.stats.burst = t;
        self.stats.bursts += 1;
        self.stats.burst_duration_us = us;
        self.stats.burst_duration_max_us = self.stats.burst_duration_max_us.max(us);
        if end >= self.next_stats {
            self.next_stats = end + self.stats_period;
            self.report(end, t, &products.fired_per_area, products.fired_total);
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<serde_json::Value, ClusterError> {
        let (dropped, malformed) = self.dropped();
        let published: serde_json::Map<String, serde_json::Value> =
            self.pubs.iter().map(|o| (o.topic.clone(), json!({"published": o.published, "errors": o.errors}))).collect();
        let received: serde_json::Map<String, serde_json::Value> =
            self.inputs.iter().map(|i| (i.slot.topic.clone(), i.slot.counters.received.load(Ordering::Relaxed).into())).collect();
        Ok(json!({
            "transport": self.describe,
            "received": received,
            "published": published,
            "missed_deadlines": self.clock.missed,
            "dropped_messages": dropped,
            "malformed_messages": malformed,
            "link_losses": self.transport.link_losses(),
        }))
    }
}
