//! The live node: subscriptions feed per-topic slots (latest message wins), a burst thread runs
//! bursts on a drift-free clock at the configured rate, publishes the motor topics and BurstStats
//! at its own rate, counts missed deadlines and dropped messages, and saves checkpoints on demand
//! and at shutdown. The messages are those of a replay: the configuration's `encoders` and
//! `decoders` ([`crate::node::intake`], [`crate::node::outputs`]) with the [`crate::ros`] codecs.
//! Signals and the transports' I/O live elsewhere (`cli/node.rs`, `transport/`); this module only
//! needs a [`Transport`] and a [`Control`].

pub mod clock;
pub mod intake;
pub mod problems;
pub mod settings;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{anyhow, Context};

use crate::backend::open::open;
use crate::backend::{Backend, Readback};
use crate::checkpoint::Checkpoint;
use crate::config::Config;
use crate::genome::Genome;
use crate::model::{Injection, Layout};
use crate::node::intake::Intake;
use crate::node::outputs::Outputs;
use crate::ros::builtin::Empty;
use crate::ros::neuroburst_msgs::BurstStats;
use crate::ros::{encode, registry, RosMessage};
use crate::transport::{names, Publisher, Qos, TopicSpec, Transport};
use clock::Clock;
use intake::Slot;
use problems::ProblemLog;

pub use settings::{NodeConfig, TransportKind};

/// Requests from outside the burst thread (signals, trigger topics, tests).
#[derive(Debug, Default)]
pub struct Control {
    pub stop: AtomicBool,
    pub save: AtomicBool,
    /// Last burst run (for observers).
    pub burst: AtomicU64,
}

/// Extra injection computed every burst (the latency benchmark drives W this way).
pub type Drive = Box<dyn FnMut(u64, &mut Vec<Injection>) + Send>;

/// What the node did, returned when it stops.
#[derive(Clone, Debug, Default)]
pub struct Summary {
    pub bursts: u64,
    pub missed_deadlines: u64,
    pub dropped_messages: u64,
    pub malformed_messages: u64,
    /// Losses of every link to the robot (router and peers); None where the transport cannot tell.
    pub link_losses: Option<u64>,
}

/// The transport's view of topic `name` of type `type_name` (a type of [`registry`]).
pub fn topic_spec(name: &str, config: &NodeConfig, type_name: &str, qos: Qos) -> anyhow::Result<TopicSpec> {
    let resolved = names::resolve(name, &config.namespace, &config.name).map_err(anyhow::Error::msg)?;
    let hash = registry::type_hash(type_name)
        .ok_or_else(|| anyhow!("topic {name}: unknown message type {type_name:?} (known: {})", registry::type_names().join(", ")))?;
    Ok(TopicSpec::new(resolved, type_name, hash, qos))
}

/// A subscribed sensor topic.
struct Input {
    /// The topic as configured: the intake's key.
    key: String,
    type_name: &'static str,
    slot: Arc<Slot>,
}

/// A published motor topic.
struct Output {
    topic: String,
    publisher: Box<dyn Publisher>,
    errors: u64,
    last_error: Option<String>,
}

/// ROS time: the system clock, in nanoseconds since the epoch.
fn ros_now_ns() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
}

/// The message type to subscribe to `topic` with: `node.input_types`, or the first type its
/// encoder accepts.
pub fn input_type(nc: &NodeConfig, intake: &Intake, topic: &str) -> anyhow::Result<&'static str> {
    let accepted = intake.message_types(topic);
    match nc.input_types.get(topic) {
        Some(t) => accepted.iter().copied().find(|a| a == t).ok_or_else(|| {
            anyhow!("node.input_types: topic {topic}: its encoder does not accept {t} (it accepts {})", accepted.join(", "))
        }),
        None => accepted.first().copied().ok_or_else(|| anyhow!("topic {topic}: no encoder")),
    }
}

/// Sensor messages dropped and, of those, malformed, since the start.
fn dropped(inputs: &[Input], intake: &Intake) -> (u64, u64) {
    let malformed: u64 = inputs.iter().map(|i| intake.stats.get(&i.key).map_or(0, |s| s.dropped)).sum();
    (inputs.iter().map(|i| i.slot.lost()).sum::<u64>() + malformed, malformed)
}

/// Run the node until `control.stop` is set. The transport must outlive the run (its
/// subscriptions feed the slots).
pub fn run(
    genome: &Genome,
    config: &Config,
    resume: bool,
    transport: &mut dyn Transport,
    control: Arc<Control>,
    drive: Option<Drive>,
) -> anyhow::Result<Summary> {
    let nc = &config.node;
    let layout = Layout::from_genome(genome);
    let rate = if nc.rate_hz > 0.0 { nc.rate_hz } else { genome.burst_rate_hz };
    if !(rate.is_finite() && rate > 0.0) {
        return Err(anyhow!("node.rate_hz: {rate} bursts per second is not a usable rate"));
    }
    if config.encoders.is_empty() && config.decoders.is_empty() {
        tracing::warn!("no encoders and no decoders in the configuration: the node subscribes to nothing and publishes only its stats");
    }
    let mut intake = Intake::new(&config.encoders, &layout)?.quiet();
    let mut outputs = Outputs::new(&config.decoders, &layout).map_err(anyhow::Error::msg)?;
    for topic in nc.input_types.keys() {
        if !intake.topics().any(|t| t == topic) {
            return Err(anyhow!("node.input_types: no encoder reads topic {topic}"));
        }
    }

    // The backend reads back the motor areas of the decoders only.
    let mut motor_areas: Vec<usize> = outputs.decoders.iter().map(|d| d.area).collect();
    motor_areas.sort_unstable();
    motor_areas.dedup();
    let ranges = motor_areas.iter().map(|&a| layout.params[a].first..layout.params[a].first + layout.params[a].count).collect();
    let mut opened = open(genome, &config.backend, Readback::Ranges(ranges), false).map_err(anyhow::Error::msg)?;
    let backend: &mut dyn Backend = opened.backend.as_mut();
    if resume {
        let c = Checkpoint::load(&config.checkpoint.path, genome)?;
        backend.restore(&c.state).with_context(|| format!("{}: cannot restore the checkpoint", config.checkpoint.path.display()))?;
        tracing::info!("resumed from {} at burst {}", config.checkpoint.path.display(), c.state.burst);
    }

    tracing::info!("transport: {}", transport.describe());
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
        pubs.push(Output { topic: spec.name, publisher, errors: 0, last_error: None });
    }
    let mut stats_pub = match nc.stats_topic.as_str() {
        "" => None,
        t => Some(transport.publisher(&topic_spec(t, nc, BurstStats::TYPE, Qos::COMMAND)?)?),
    };
    if !config.checkpoint.trigger_topic.is_empty() {
        let spec = topic_spec(&config.checkpoint.trigger_topic, nc, Empty::TYPE, Qos::COMMAND)?;
        let c = control.clone();
        transport.subscribe(&spec, Arc::new(move |_| c.save.store(true, Ordering::Relaxed)))?;
        tracing::info!("checkpoint trigger: {}", spec.name);
    }

    let mut drive = drive;
    let mut problems = ProblemLog::new(Duration::from_secs_f64(nc.log_interval_s.max(0.0)));
    let stats_period = Duration::from_secs_f64(1.0 / nc.stats_rate_hz.max(1e-6));
    let stat_areas: Vec<usize> = outputs.decoders.iter().map(|d| d.area).collect();
    let mut stats = BurstStats {
        area_ids: outputs.decoders.iter().map(|d| d.config.area().to_string()).chain(["all".to_string()]).collect(),
        ..Default::default()
    };
    let mut clock = Clock::new(rate, Instant::now());
    let mut next_stats = Instant::now() + stats_period;
    let mut summary = Summary::default();
    tracing::info!("bursting at {rate} Hz ({} neurons, {} synapses, {})", layout.neurons, opened.synapses, backend.info().device);

    while !control.stop.load(Ordering::Relaxed) {
        clock.wait();
        let start = Instant::now();
        for input in &inputs {
            if let Some(sample) = input.slot.take() {
                intake.offer(&input.key, input.type_name, &sample.payload);
            }
        }
        let mut injection = intake.injection();
        if let Some(d) = drive.as_mut() {
            d(summary.bursts + 1, &mut injection);
        }
        let out = backend.burst(&injection)?;
        let products = outputs.burst(&out, &layout, ros_now_ns());
        for (i, m) in &products.motor {
            let o = &mut pubs[*i];
            if let Err(e) = o.publisher.publish(&m.payload) {
                o.errors += 1;
                o.last_error = Some(e.to_string());
            }
        }
        let end = Instant::now();
        clock.finished(end);
        let burst = products.burst;
        summary.bursts = burst;
        control.burst.store(burst, Ordering::Relaxed);
        let us = (end - start).as_secs_f32() * 1e6;
        stats.burst = burst;
        stats.bursts += 1;
        stats.burst_duration_us = us;
        stats.burst_duration_max_us = stats.burst_duration_max_us.max(us);

        if end >= next_stats {
            next_stats = end + stats_period;
            (summary.dropped_messages, summary.malformed_messages) = dropped(&inputs, &intake);
            summary.missed_deadlines = clock.missed;
            stats.fired = stat_areas.iter().map(|&a| products.fired_per_area[a]).chain([products.fired_total as u32]).collect();
            stats.missed_deadlines = summary.missed_deadlines;
            stats.dropped_messages = summary.dropped_messages;
            stats.malformed_messages = summary.malformed_messages;
            if let Some(p) = stats_pub.as_mut() {
                if let Err(e) = p.publish(&encode(&stats)) {
                    problems.check(end, &nc.stats_topic, "stats publish errors", burst, Some(&e.to_string()));
                }
            }
            stats.bursts = 0;
            stats.burst_duration_max_us = 0.0;
            problems.check(end, "bursts", "missed deadlines", clock.missed, None);
            for i in &inputs {
                let (t, c) = (&i.slot.topic, &i.slot.counters);
                let malformed = intake.stats.get(&i.key).map_or(0, |s| s.dropped);
                problems.check(end, t, "malformed messages dropped", malformed, intake.last_errors.get(&i.key).map(String::as_str));
                problems.check(
                    end,
                    t,
                    "messages without a valid rmw_zenoh attachment dropped",
                    c.bad_attachment.load(Ordering::Relaxed),
                    None,
                );
                problems.check(end, t, "messages replaced by a newer one before a burst", c.replaced.load(Ordering::Relaxed), None);
            }
            for o in &pubs {
                problems.check(end, &o.topic, "publish errors", o.errors, o.last_error.as_deref());
            }
        }
        if control.save.swap(false, Ordering::Relaxed) {
            save(genome, backend, &config.checkpoint.path);
        }
    }
    summary.missed_deadlines = clock.missed;
    (summary.dropped_messages, summary.malformed_messages) = dropped(&inputs, &intake);
    summary.link_losses = transport.link_losses();
    if config.checkpoint.on_shutdown {
        save(genome, backend, &config.checkpoint.path);
    }
    tracing::info!(
        "stopped after {} bursts: {} missed deadlines, {} dropped messages ({} malformed), {} link losses",
        summary.bursts,
        summary.missed_deadlines,
        summary.dropped_messages,
        summary.malformed_messages,
        summary.link_losses.map_or("unknown".to_string(), |n| n.to_string())
    );
    Ok(summary)
}

/// Snapshot and write a checkpoint; failures are logged, the node goes on.
fn save(genome: &Genome, backend: &mut dyn Backend, path: &std::path::Path) {
    let start = Instant::now();
    let result = backend.snapshot().map_err(anyhow::Error::from).and_then(|state| {
        let burst = state.burst;
        Checkpoint::new(genome, state).save(path)?;
        Ok(burst)
    });
    match result {
        Ok(burst) => {
            tracing::info!("checkpoint of burst {burst} written to {} in {:.1} ms", path.display(), start.elapsed().as_secs_f64() * 1e3)
        }
        Err(e) => tracing::error!("checkpoint {}: {e:#}", path.display()),
    }
}
