//! The live node (`neuroburst node`): subscriptions feed per-topic slots (latest message wins),
//! the burst thread runs the run loop ([`crate::run::bursts`]) on the node's pace (the wall
//! clock's drift-free grid at the configured rate, `/clock`, or reflex mode), a publisher thread
//! publishes the motor topics and BurstStats at its own rate; missed deadlines and dropped
//! messages are counted, and checkpoints saved on demand and at shutdown. The messages are those
//! of a replay: the configuration's `encoders` and `decoders` ([`crate::run::intake`],
//! [`crate::run::outputs`]) with the [`crate::ros`] codecs.
//! Signals and the transports' I/O live elsewhere (`cli/node.rs`, `transport/`); this module only
//! needs a [`Transport`] and a [`Control`].

pub mod health;
pub mod lifecycle;
pub mod problems;
pub mod publish;
pub mod realtime;
pub mod settings;
pub mod slots;
pub mod topics;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{anyhow, Context};

use crate::backend::open::open;
use crate::backend::{Backend, BackendConfig, Readback};
use crate::checkpoint::{Checkpoint, CheckpointConfig};
use crate::decode::DecoderConfig;
use crate::encode::EncoderConfig;
use crate::genome::Genome;
use crate::model::{Injections, Layout};
use crate::ros::builtin::Empty;
use crate::ros::{registry, RosMessage};
use crate::run::trace;
use crate::run::Intake;
use crate::transport::{names, Qos, TopicSpec, Transport};
use crate::view::ViewConfig;
use topics::LiveTopics;

pub use settings::{Mode, NodeConfig, RealtimeConfig, ReflexConfig};

/// Requests from outside the burst thread (signals, trigger topics, tests).
#[derive(Debug, Default)]
pub struct Control {
    pub stop: AtomicBool,
    pub save: AtomicBool,
    /// Last burst run (for observers).
    pub burst: AtomicU64,
    /// Missed deadlines so far (for observers; the topics count them).
    pub missed: Arc<AtomicU64>,
    /// Start the phase trace again (set by an observer, cleared by the burst thread).
    pub reset_trace: AtomicBool,
    /// The live view, when served (`node --view`): set before [`run`].
    pub view: std::sync::OnceLock<Arc<crate::view::View>>,
}

/// The sections of the configuration the live node reads.
#[derive(Clone, Copy)]
pub struct NodeSetup<'a> {
    pub node: &'a NodeConfig,
    pub encoders: &'a [EncoderConfig],
    pub decoders: &'a [DecoderConfig],
    pub backend: &'a BackendConfig,
    pub checkpoint: &'a CheckpointConfig,
    pub view: &'a ViewConfig,
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
    config: NodeSetup<'_>,
    resume: bool,
    transport: &mut dyn Transport,
    control: Arc<Control>,
    drive: Option<Drive>,
) -> anyhow::Result<Summary> {
    let nc = config.node;
    let layout = Layout::from_genome(genome);
    let rate = if nc.rate_hz > 0.0 { nc.rate_hz } else { genome.burst_rate_hz };
    let mut topics = LiveTopics::open(&config, &layout, transport, rate, "the node")?;
    topics.set_drive(drive);
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
    let view_stop = Arc::new(AtomicBool::new(false));
    let result = bursts(genome, &config, resume, transport, &control, &layout, &mut topics, ranges, &view_stop);
    view_stop.store(true, Ordering::Relaxed);
    // However the bursts ended, every motor topic gets its stop command.
    let _ = crate::run::Io::finish(&mut topics, result.as_ref().err().map(crate::errors::said_once).as_deref());
    result.map(|s| Summary { latency: topics.report.latency.clone(), ..s })
}

#[allow(clippy::too_many_arguments)]
fn bursts(
    genome: &Genome,
    config: &NodeSetup<'_>,
    resume: bool,
    transport: &mut dyn Transport,
    control: &Arc<Control>,
    layout: &Layout,
    topics: &mut LiveTopics,
    ranges: Vec<std::ops::Range<u32>>,
    view_stop: &Arc<AtomicBool>,
) -> anyhow::Result<Summary> {
    let read_back: Vec<bool> = (0..layout.meta.len()).map(|a| ranges.iter().any(|r| r.start == layout.params[a].first)).collect();
    topics.set_feed(control.view.get().map(|v| crate::view::feed(v.clone(), read_back, view_stop.clone())).transpose()?);
    let mut opened = open(genome, config.backend, Readback::Ranges(ranges), false).map_err(anyhow::Error::msg)?;
    let backend: &mut dyn Backend = opened.backend.as_mut();
    topics.hardware = backend.info().device;
    let checkpoint = &config.checkpoint.path;
    if resume {
        let c = Checkpoint::load(checkpoint, genome)?;
        backend.restore(&c.state).with_context(|| format!("{}: cannot restore the checkpoint", checkpoint.display()))?;
        tracing::info!("resumed from {} at burst {}", checkpoint.display(), c.state.burst);
        if c.state.learned.is_empty() && genome.mappings.iter().any(|m| m.plasticity.is_some()) {
            tracing::warn!(
                "{}: the checkpoint holds no learned weights (written by an older neuroburst); the plastic synapses start from \
                 the genome's weights",
                checkpoint.display()
            );
        }
    }

    tracing::info!("transport: {}", transport.describe());
    let mut summary = Summary { hardware: topics.hardware.clone(), ..Summary::default() };
    tracing::info!("bursting at {} Hz ({} neurons, {} synapses, {})", topics.rate(), layout.neurons, opened.synapses, topics.hardware);

    // the publisher thread first: it must not inherit the burst thread's core
    topics.start_publisher()?;
    realtime::apply_logged(&config.node.realtime);
    topics.count_missed(control.missed.clone());
    let mut last = 0;
    let ran = crate::run::bursts(topics, backend, &control.stop, |burst, backend| {
        last = burst;
        control.burst.store(burst, Ordering::Relaxed);
        if control.save.swap(false, Ordering::Relaxed) {
            save(genome, backend, checkpoint, false);
        }
        Ok(control.reset_trace.swap(false, Ordering::Relaxed))
    })?;
    summary.bursts = last;
    summary.missed_deadlines = topics.pace.missed();
    (summary.dropped_messages, summary.malformed_messages) = topics.dropped();
    summary.link_losses = transport.link_losses();
    summary.phases = ran.phases;
    if config.checkpoint.on_shutdown {
        save(genome, backend, checkpoint, true);
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
