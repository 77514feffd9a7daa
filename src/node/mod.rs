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
pub mod control;
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

use std::sync::Arc;

use crate::genome::Genome;
use crate::model::Injections;
use crate::run::trace;
use crate::transport::Transport;
pub use configured::Configured;
pub use control::{Control, SaveReply, Update};
pub use settings::{max_message_size, NodeSections, NodeSetup};
pub use settings::{Mode, NodeConfig, RealtimeConfig, ReflexConfig};

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
