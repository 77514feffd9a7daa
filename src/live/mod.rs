//! The live node: subscriptions feed per-topic slots (latest message wins), a burst thread runs
//! bursts on a drift-free clock at the configured rate, publishes the motor topics every burst
//! and BurstStats at its own rate, counts missed deadlines and dropped messages, and saves
//! checkpoints on demand and at shutdown. Signals and the transports' I/O live elsewhere
//! (`cli/node.rs`, `transport/`); this module only needs a [`Transport`] and a [`Control`].

pub mod cdr;
pub mod clock;
pub mod codecs;
pub mod intake;
pub mod problems;
pub mod settings;
pub mod stats;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context};

use crate::backend::open::open;
use crate::backend::{Backend, Readback};
use crate::checkpoint::Checkpoint;
use crate::config::Config;
use crate::genome::Genome;
use crate::model::{Injection, Layout};
use crate::transport::{names, Publisher, Qos, TopicSpec, Transport};
use clock::Clock;
use codecs::{SensorEncoder, TwistDecoder};
use intake::Slot;
use problems::ProblemLog;
use stats::BurstStats;

pub use settings::{InputConfig, NodeConfig, OutputConfig, TransportKind};

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

/// A topic spec for `type_name` with the built-in hash table.
pub fn topic_spec(name: &str, config: &NodeConfig, type_name: &str, qos: Qos) -> anyhow::Result<TopicSpec> {
    let resolved = names::resolve(name, &config.namespace, &config.name).map_err(anyhow::Error::msg)?;
    let hash = codecs::type_hash(type_name).ok_or_else(|| anyhow!("topic {name}: unknown message type {type_name:?}"))?;
    Ok(TopicSpec::new(resolved, type_name, hash, qos))
}

struct Input {
    slot: Arc<Slot>,
    encoder: SensorEncoder,
    hold: bool,
    held: Vec<Injection>,
    last_error: Option<String>,
}

struct Output {
    topic: String,
    decoder: TwistDecoder,
    publisher: Box<dyn Publisher>,
    errors: u64,
    last_error: Option<String>,
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
    let area = |id: &str, topic: &str| {
        layout.area_index(id).ok_or_else(|| anyhow!("topic {topic}: the genome {:?} has no area {id:?}", genome.name))
    };
    let rate = if nc.rate_hz > 0.0 { nc.rate_hz } else { genome.burst_rate_hz };
    if !(rate.is_finite() && rate > 0.0) {
        return Err(anyhow!("node.rate_hz: {rate} bursts per second is not a usable rate"));
    }

    // The backend reads back the motor areas of the outputs only.
    let mut out_areas = vec![];
    for o in &nc.outputs {
        if o.type_name != codecs::TWIST {
            return Err(anyhow!("output {}: no built-in decoder for {:?} (known: {})", o.topic, o.type_name, codecs::TWIST));
        }
        out_areas.push(area(&o.area, &o.topic)?);
    }
    let ranges = out_areas.iter().map(|&a| layout.params[a].first..layout.params[a].first + layout.params[a].count).collect();
    let mut opened = open(genome, &config.backend, Readback::Ranges(ranges), false).map_err(anyhow::Error::msg)?;
    let backend: &mut dyn Backend = opened.backend.as_mut();
    if resume {
        let c = Checkpoint::load(&config.checkpoint.path, genome)?;
        backend.restore(&c.state).with_context(|| format!("{}: cannot restore the checkpoint", config.checkpoint.path.display()))?;
        tracing::info!("resumed from {} at burst {}", config.checkpoint.path.display(), c.state.burst);
    }

    tracing::info!("transport: {}", transport.describe());
    let mut inputs = vec![];
    for i in &nc.inputs {
        let spec = topic_spec(&i.topic, nc, &i.type_name, Qos::SENSOR)?;
        let encoder = SensorEncoder::new(&i.type_name, area(&i.area, &i.topic)?, i.gain).map_err(|e| anyhow!("input {}: {e}", i.topic))?;
        let slot = Slot::new(&spec.name);
        transport.subscribe(&spec, slot.handler())?;
        tracing::info!("input {} ({}) -> area {}", spec.name, spec.type_name, i.area);
        inputs.push(Input { slot, encoder, hold: i.hold, held: vec![], last_error: None });
    }
    let mut outputs = vec![];
    for (o, &a) in nc.outputs.iter().zip(&out_areas) {
        let spec = topic_spec(&o.topic, nc, &o.type_name, Qos::COMMAND)?;
        let publisher = transport.publisher(&spec)?;
        tracing::info!("output area {} -> {} ({})", o.area, spec.name, spec.type_name);
        let decoder = TwistDecoder { area: a, max_linear: o.max_linear, max_angular: o.max_angular };
        outputs.push(Output { topic: spec.name, decoder, publisher, errors: 0, last_error: None });
    }
    let mut stats_pub = match nc.stats_topic.as_str() {
        "" => None,
        t => Some(transport.publisher(&topic_spec(t, nc, codecs::BURST_STATS, Qos::COMMAND)?)?),
    };
    if !config.checkpoint.trigger_topic.is_empty() {
        let spec = topic_spec(&config.checkpoint.trigger_topic, nc, codecs::EMPTY, Qos::COMMAND)?;
        let c = control.clone();
        transport.subscribe(&spec, Arc::new(move |_| c.save.store(true, Ordering::Relaxed)))?;
        tracing::info!("checkpoint trigger: {}", spec.name);
    }

    let mut drive = drive;
    let mut problems = ProblemLog::new(Duration::from_secs_f64(nc.log_interval_s.max(0.0)));
    let stats_period = Duration::from_secs_f64(1.0 / nc.stats_rate_hz.max(1e-6));
    let mut stats =
        BurstStats { area_ids: nc.outputs.iter().map(|o| o.area.clone()).chain(["all".to_string()]).collect(), ..Default::default() };
    let mut injection = Vec::new();
    let mut clock = Clock::new(rate, Instant::now());
    let mut next_stats = Instant::now() + stats_period;
    let mut summary = Summary::default();
    tracing::info!("bursting at {rate} Hz ({} neurons, {} synapses, {})", layout.neurons, opened.synapses, backend.info().device);

    while !control.stop.load(Ordering::Relaxed) {
        clock.wait();
        let start = Instant::now();
        injection.clear();
        for input in &mut inputs {
            if let Some(sample) = input.slot.take() {
                input.held.clear();
                if let Err(e) = input.encoder.encode(&layout, &sample.payload, &mut input.held) {
                    input.slot.counters.malformed.fetch_add(1, Ordering::Relaxed);
                    input.last_error = Some(e.to_string());
                    input.held.clear();
                }
                injection.extend_from_slice(&input.held);
            } else if input.hold {
                injection.extend_from_slice(&input.held);
            }
        }
        if let Some(d) = drive.as_mut() {
            d(summary.bursts + 1, &mut injection);
        }
        let out = backend.burst(&injection)?;
        let burst = out.burst;
        for o in &mut outputs {
            let cdr = o.decoder.decode(&layout, out.fired);
            if let Err(e) = o.publisher.publish(&cdr) {
                o.errors += 1;
                o.last_error = Some(e.to_string());
            }
        }
        let fired_total = out.fired_total;
        if stats_pub.is_some() {
            let mut per_area = vec![0u32; out_areas.len() + 1];
            for &n in out.fired {
                let a = layout.area_of(n);
                if let Some(i) = out_areas.iter().position(|&x| x == a) {
                    per_area[i] += 1;
                }
            }
            per_area[out_areas.len()] = fired_total as u32;
            stats.fired = per_area;
        }
        let end = Instant::now();
        clock.finished(end);
        summary.bursts = burst;
        control.burst.store(burst, Ordering::Relaxed);
        let us = (end - start).as_secs_f32() * 1e6;
        stats.burst = burst;
        stats.bursts += 1;
        stats.burst_duration_us = us;
        stats.burst_duration_max_us = stats.burst_duration_max_us.max(us);

        if end >= next_stats {
            next_stats = end + stats_period;
            summary.missed_deadlines = clock.missed;
            summary.dropped_messages = inputs.iter().map(|i| i.slot.dropped()).sum();
            summary.malformed_messages = inputs.iter().map(|i| i.slot.counters.malformed.load(Ordering::Relaxed)).sum();
            stats.missed_deadlines = summary.missed_deadlines;
            stats.dropped_messages = summary.dropped_messages;
            stats.malformed_messages = summary.malformed_messages;
            if let Some(p) = stats_pub.as_mut() {
                if let Err(e) = p.publish(&stats.encode()) {
                    problems.check(end, &nc.stats_topic, "stats publish errors", burst, Some(&e.to_string()));
                }
            }
            stats.bursts = 0;
            stats.burst_duration_max_us = 0.0;
            problems.check(end, "bursts", "missed deadlines", clock.missed, None);
            for i in &inputs {
                let c = &i.slot.counters;
                let t = &i.slot.topic;
                problems.check(end, t, "malformed messages dropped", c.malformed.load(Ordering::Relaxed), i.last_error.as_deref());
                problems.check(
                    end,
                    t,
                    "messages without a valid rmw_zenoh attachment dropped",
                    c.bad_attachment.load(Ordering::Relaxed),
                    None,
                );
                problems.check(end, t, "messages replaced by a newer one before a burst", c.replaced.load(Ordering::Relaxed), None);
            }
            for o in &outputs {
                problems.check(end, &o.topic, "publish errors", o.errors, o.last_error.as_deref());
            }
        }
        if control.save.swap(false, Ordering::Relaxed) {
            save(genome, backend, &config.checkpoint.path);
        }
    }
    summary.missed_deadlines = clock.missed;
    summary.dropped_messages = inputs.iter().map(|i| i.slot.dropped()).sum();
    summary.malformed_messages = inputs.iter().map(|i| i.slot.counters.malformed.load(Ordering::Relaxed)).sum();
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
