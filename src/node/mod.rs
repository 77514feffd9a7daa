//! The live node: subscriptions feed per-topic slots (latest message wins), a burst thread runs
//! bursts on a drift-free clock at the configured rate, publishes the motor topics and BurstStats
//! at its own rate, counts missed deadlines and dropped messages, and saves checkpoints on demand
//! and at shutdown. The messages are those of a replay: the configuration's `encoders` and
//! `decoders` ([`crate::replay::intake`], [`crate::replay::outputs`]) with the [`crate::ros`] codecs.
//! Signals and the transports' I/O live elsewhere (`cli/node.rs`, `transport/`); this module only
//! needs a [`Transport`] and a [`Control`].

pub mod clock;
pub mod health;
pub mod intake;
pub mod output;
pub mod pace;
pub mod problems;
pub mod realtime;
pub mod settings;
pub mod topics;
pub mod trace;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{anyhow, Context};

use crate::backend::open::open;
use crate::backend::{Backend, Readback};
use crate::checkpoint::Checkpoint;
use crate::config::Config;
use crate::genome::Genome;
use crate::model::{Injections, Layout};
use crate::replay::intake::Intake;
use crate::ros::builtin::Empty;
use crate::ros::{registry, RosMessage};
use crate::transport::{names, Qos, TopicSpec, Transport};
use topics::LiveTopics;

pub use settings::{Mode, NodeConfig, RealtimeConfig, ReflexConfig};

/// Requests from outside the burst thread (signals, trigger topics, tests).
#[derive(Debug, Default)]
pub struct Control {
    pub stop: AtomicBool,
    pub save: AtomicBool,
    /// Last burst run (for observers).
    pub burst: AtomicU64,
    /// Missed deadlines so far (for observers).
    pub missed: AtomicU64,
    /// Start the phase trace again (set by an observer, cleared by the burst thread).
    pub reset_trace: AtomicBool,
    /// The live view, when served (`node --view`): set before [`run`].
    pub view: std::sync::OnceLock<Arc<crate::view::View>>,
}

/// Extra injection added every burst before the sensors' (`neuroburst bench-loop` drives W this way).
pub type Drive = Box<dyn FnMut(u64, &mut Injections) + Send>;

/// What the node did, returned when it stops.
#[derive(Clone, Debug, Default)]
pub struct Summary {
    /// The backend's device.
    pub hardware: String,
    pub bursts: u64,
    pub missed_deadlines: u64,
    pub dropped_messages: u64,
    pub malformed_messages: u64,
    /// Losses of every link to the robot (router and peers); None where the transport cannot tell.
    pub link_losses: Option<u64>,
    /// Where the bursts' periods went.
    pub phases: trace::PhaseSummary,
    /// The node's own sensor -> motor latency (arrival to the publication of the burst after the
    /// one that injected the message).
    pub latency: trace::Percentiles,
}

/// The transport's view of topic `name` of type `type_name` (a type of [`registry`]).
pub fn topic_spec(name: &str, config: &NodeConfig, type_name: &str, qos: Qos) -> anyhow::Result<TopicSpec> {
    let resolved = names::resolve(name, &config.namespace, &config.name).map_err(anyhow::Error::msg)?;
    let hash = registry::type_hash(type_name)
        .ok_or_else(|| anyhow!("topic {name}: unknown message type {type_name:?} (known: {})", registry::type_names().join(", ")))?;
    Ok(TopicSpec::new(resolved, type_name, hash, qos))
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
    let mut topics = LiveTopics::open(config, &layout, transport, rate, "the node")?;
    if let Some(view) = control.view.get() {
        topics.set_view(view);
    }
    if !config.checkpoint.trigger_topic.is_empty() {
        let spec = topic_spec(&config.checkpoint.trigger_topic, nc, Empty::TYPE, Qos::COMMAND)?;
        let c = control.clone();
        transport.subscribe(&spec, Arc::new(move |_| c.save.store(true, Ordering::Relaxed)))?;
        tracing::info!("checkpoint trigger: {}", spec.name);
    }

    // The backend reads back the motor areas of the decoders only; with the live view, also
    // every area small enough to draw (at most view.max_points neurons).
    let mut motor_areas: Vec<usize> = topics.outputs.decoders.iter().map(|d| d.area).collect();
    if control.view.get().is_some() {
        motor_areas.extend((0..layout.meta.len()).filter(|&a| layout.params[a].count as usize <= config.view.max_points));
    }
    motor_areas.sort_unstable();
    motor_areas.dedup();
    let ranges = motor_areas.iter().map(|&a| layout.params[a].first..layout.params[a].first + layout.params[a].count).collect();
    let result = bursts(genome, config, resume, transport, &control, drive, &layout, &mut topics, ranges);
    // However the bursts ended, every motor topic gets its stop command.
    topics.stop(result.as_ref().err().map(crate::errors::said_once).as_deref());
    result.map(|s| Summary { latency: topics.report.latency.clone(), ..s })
}

#[allow(clippy::too_many_arguments)]
fn bursts(
    genome: &Genome,
    config: &Config,
    resume: bool,
    transport: &mut dyn Transport,
    control: &Arc<Control>,
    drive: Option<Drive>,
    layout: &Layout,
    topics: &mut LiveTopics,
    ranges: Vec<std::ops::Range<u32>>,
) -> anyhow::Result<Summary> {
    let read_back: Vec<bool> = (0..layout.meta.len()).map(|a| ranges.iter().any(|r| r.start == layout.params[a].first)).collect();
    let view_stop = Arc::new(AtomicBool::new(false));
    let feed = control.view.get().map(|v| crate::view::feed(v.clone(), read_back, view_stop.clone())).transpose()?;
    let mut opened = open(genome, &config.backend, Readback::Ranges(ranges), false).map_err(anyhow::Error::msg)?;
    let backend: &mut dyn Backend = opened.backend.as_mut();
    topics.hardware = backend.info().device;
    if resume {
        let c = Checkpoint::load(&config.checkpoint.path, genome)?;
        backend.restore(&c.state).with_context(|| format!("{}: cannot restore the checkpoint", config.checkpoint.path.display()))?;
        tracing::info!("resumed from {} at burst {}", config.checkpoint.path.display(), c.state.burst);
        if c.state.learned.is_empty() && genome.mappings.iter().any(|m| m.plasticity.is_some()) {
            tracing::warn!(
                "{}: the checkpoint holds no learned weights (written by an older neuroburst); the plastic synapses start from \
                 the genome's weights",
                config.checkpoint.path.display()
            );
        }
    }

    tracing::info!("transport: {}", transport.describe());

    let mut drive = drive;
    let mut injection = Injections::new();
    backend.prepare_input(&mut injection);
    let mut summary = Summary { hardware: topics.hardware.clone(), ..Summary::default() };
    tracing::info!("bursting at {} Hz ({} neurons, {} synapses, {})", topics.rate(), layout.neurons, opened.synapses, topics.hardware);

    let mut trace = trace::PhaseTrace::default();
    // the publisher thread first: it must not inherit the burst thread's core
    topics.start()?;
    realtime::apply_logged(&config.node.realtime);
    let ns = |a: Instant, b: Instant| (b - a).as_nanos() as u64;
    while !control.stop.load(Ordering::Relaxed) {
        let waiting = Instant::now();
        if !topics.wait(&control.stop) {
            break;
        }
        let start = Instant::now();
        injection.clear();
        if let Some(d) = drive.as_mut() {
            d(summary.bursts + 1, &mut injection);
        }
        let driven = Instant::now();
        topics.append_injection(&mut injection);
        let intake = Instant::now();
        let out = backend.burst(injection.as_slice())?;
        let burst = Instant::now();
        let (now, blind) = (topics.now_ns(), topics.blind());
        if let Some(f) = feed.as_ref().filter(|f| f.wanted()) {
            f.offer(now, out.fired);
        }
        let products = topics.outputs.burst(&out, layout, now, blind);
        let decoded = Instant::now();
        summary.bursts = products.burst;
        topics.publish(products, start);
        let end = Instant::now();
        trace.record(&[ns(waiting, start), ns(driven, intake), ns(start, driven), ns(intake, burst), ns(burst, decoded), ns(decoded, end)]);
        control.burst.store(summary.bursts, Ordering::Relaxed);
        control.missed.store(topics.pace.missed(), Ordering::Relaxed);
        if control.reset_trace.swap(false, Ordering::Relaxed) {
            trace.clear();
        }
        if control.save.swap(false, Ordering::Relaxed) {
            save(genome, backend, &config.checkpoint.path, false);
        }
    }
    view_stop.store(true, Ordering::Relaxed);
    summary.missed_deadlines = topics.pace.missed();
    (summary.dropped_messages, summary.malformed_messages) = topics.dropped();
    summary.link_losses = transport.link_losses();
    summary.phases = trace.summary();
    if config.checkpoint.on_shutdown {
        save(genome, backend, &config.checkpoint.path, true);
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

/// Snapshot the brain (on the burst thread: the state must be that of one burst) and write the
/// checkpoint, beside the bursts unless `wait`; failures are logged, the node goes on.
fn save(genome: &Genome, backend: &mut dyn Backend, path: &std::path::Path, wait: bool) {
    let start = Instant::now();
    let state = match backend.snapshot() {
        Ok(s) => s,
        Err(e) => return tracing::error!("checkpoint {}: {}", path.display(), crate::errors::chain(&e)),
    };
    let (checkpoint, path) = (Checkpoint::new(genome, state), path.to_path_buf());
    let write = move || {
        let burst = checkpoint.state.burst;
        match checkpoint.save(&path) {
            Ok(()) => {
                tracing::info!("checkpoint of burst {burst} written to {} in {:.1} ms", path.display(), start.elapsed().as_secs_f64() * 1e3)
            }
            Err(e) => tracing::error!("checkpoint {}: {}", path.display(), crate::errors::chain(&e)),
        }
    };
    if wait {
        write();
    } else if let Err(e) = std::thread::Builder::new().name("checkpoint".into()).spawn(write) {
        tracing::error!("checkpoint: cannot start the writer thread: {e}");
    }
}
