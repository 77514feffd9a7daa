//! The live node (`neuroburst node`): subscriptions feed per-topic slots (latest message wins),
//! the burst thread runs the run loop ([`crate::run::bursts`]) on the node's pace (the wall
//! clock's drift-free grid at the configured rate, `/clock`, or reflex mode), a publisher thread
//! publishes the motor topics and BurstStats at its own rate; missed deadlines and dropped
//! messages are counted, and checkpoints saved on demand and at shutdown. The messages are those
//! of a replay: the configuration's `encoders` and `decoders` ([`crate::run::intake`],
//! [`crate::run::outputs`]) with the [`crate::ros`] codecs.
//! Signals and the transports' I/O live elsewhere (`cli/node.rs`, `transport/`); this module only
//! needs a [`Transport`] and a [`Control`].

pub mod configured;
pub mod fatal;
pub mod health;
pub mod lifecycle;
pub mod managed;
pub mod problems;
pub mod publish;
pub mod realtime;
pub mod services;
pub mod settings;
pub mod slots;
pub mod topics;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use anyhow::anyhow;

use crate::backend::BackendConfig;
use crate::checkpoint::CheckpointConfig;
use crate::decode::DecoderConfig;
use crate::encode::EncoderConfig;
use crate::genome::Genome;
use crate::model::Injections;
use crate::ros::registry;
use crate::run::trace;
use crate::run::Intake;
use crate::transport::{names, Qos, TopicSpec, Transport};
use crate::view::ViewConfig;
pub use configured::Configured;

pub use settings::{Mode, NodeConfig, RealtimeConfig, ReflexConfig};

/// Requests from outside the burst thread (signals, services, trigger topics, tests).
pub struct Control {
    /// The process ends (set it with [`Control::request_stop`]).
    pub stop: AtomicBool,
    /// The bursts stop: the process ends, a lifecycle transition leaves the active state, or a
    /// helper thread of the live topics failed ([`fatal::Fatal`]).
    pub interrupt: Arc<AtomicBool>,
    /// A checkpoint is asked for (set it with [`Control::request_save`]).
    pub save: AtomicBool,
    saves: Mutex<Vec<SaveReply>>,
    /// Settings that take effect at the next burst (a dynamic parameter was set).
    pub update: Arc<Mutex<Option<Update>>>,
    /// Learning switched (`backend.learning` set): 1 off, 2 on, 0 nothing asked.
    learning: std::sync::atomic::AtomicU8,
    /// Last burst run (for observers).
    pub burst: AtomicU64,
    /// Missed deadlines so far (for observers; the topics count them).
    pub missed: Arc<AtomicU64>,
    /// Start the phase trace again (set by an observer, cleared by the burst thread).
    pub reset_trace: AtomicBool,
    /// The live view, when served (`node --view`): set before [`run`].
    pub view: std::sync::OnceLock<Arc<crate::view::View>>,
}

impl Default for Control {
    fn default() -> Self {
        Control {
            stop: AtomicBool::new(false),
            interrupt: Arc::default(),
            save: AtomicBool::new(false),
            saves: Mutex::default(),
            update: Arc::default(),
            learning: Default::default(),
            burst: AtomicU64::new(0),
            missed: Arc::default(),
            reset_trace: AtomicBool::new(false),
            view: std::sync::OnceLock::new(),
        }
    }
}

impl Control {
    /// End the process: the bursts stop, the node finishes.
    pub fn request_stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
        self.interrupt.store(true, Ordering::Relaxed);
    }

    /// Save a checkpoint after the next burst (or at once when the node does not burst);
    /// `reply`, if any, hears the file written or why not.
    pub fn request_save(&self, reply: Option<SaveReply>) {
        self.saves.lock().unwrap_or_else(|p| p.into_inner()).extend(reply);
        self.save.store(true, Ordering::Relaxed);
    }

    /// Switch the brain's learning on or off, from the burst after the next on.
    pub fn request_learning(&self, on: bool) {
        self.learning.store(1 + on as u8, Ordering::Relaxed);
    }

    /// The learning switch asked for since the last call, if any.
    fn take_learning(&self) -> Option<bool> {
        match self.learning.swap(0, Ordering::Relaxed) {
            0 => None,
            v => Some(v == 2),
        }
    }

    fn take_save_replies(&self) -> Vec<SaveReply> {
        std::mem::take(&mut *self.saves.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

/// How a checkpoint's requester hears where it was written, or why not.
pub type SaveReply = Box<dyn FnOnce(Result<std::path::PathBuf, String>) + Send>;

/// What a dynamic parameter changes in a running node, from the next burst on.
#[derive(Clone, Debug, Default)]
pub struct Update {
    /// The decoders (their scales and limits may change), in the configuration's order.
    pub decoders: Vec<DecoderConfig>,
    pub log_interval_s: f64,
}

/// The sections of the configuration the live node reads, owned (what a managed node reads
/// again at every configure).
#[derive(Clone, Debug, Default)]
pub struct NodeSections {
    pub node: NodeConfig,
    pub encoders: Vec<EncoderConfig>,
    pub decoders: Vec<DecoderConfig>,
    pub backend: BackendConfig,
    pub checkpoint: CheckpointConfig,
    pub view: ViewConfig,
}

impl NodeSections {
    pub fn setup(&self) -> NodeSetup<'_> {
        NodeSetup {
            node: &self.node,
            encoders: &self.encoders,
            decoders: &self.decoders,
            backend: &self.backend,
            checkpoint: &self.checkpoint,
            view: &self.view,
        }
    }
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

/// The largest message topic `topic` (of type `type_name`) takes: `node.max_message_size`, or
/// its type's default.
pub fn topic_max_bytes(nc: &NodeConfig, type_name: &str) -> u64 {
    match nc.max_message_size {
        0 => crate::encode::default_max_message_bytes(type_name),
        n => n,
    }
}

/// The largest message any of the node's topics takes (the Zenoh session's limit): the largest
/// of its sensor and view topics', at least 1 MiB (services, parameters, `/clock`).
pub fn max_message_size(setup: &NodeSetup<'_>) -> u64 {
    let nc = setup.node;
    let types = setup.encoders.iter().filter_map(|e| {
        let topic = e.topic();
        nc.input_types.get(topic).map(String::as_str).or_else(|| e.message_types().first().copied())
    });
    let view = setup.view.topics.iter().map(|t| t.type_name.as_str());
    types.chain(view).map(|t| topic_max_bytes(nc, t)).fold(1 << 20, u64::max)
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

/// Run the node (configured and active at once, as without `node.lifecycle`) until
/// `control.stop` is set. The transport must outlive the run (its subscriptions feed the slots).
pub fn run(
    genome: &Genome,
    config: NodeSetup<'_>,
    resume: bool,
    transport: &mut dyn Transport,
    control: Arc<Control>,
    drive: Option<Drive>,
) -> anyhow::Result<Summary> {
    let mut brain = Configured::new(genome.clone(), config, resume, transport, &control, drive)?;
    let result = brain.activate(&control);
    // However the bursts ended, every motor topic gets its stop command.
    let summary = brain.finish(result.as_ref().err().map(crate::errors::said_once).as_deref(), transport);
    result.map(|()| summary)
}
