//! A configured brain: what the lifecycle's configure builds (the genome loaded, the brain built
//! on its backend, the kernels compiled, the topics subscribed and announced) and what activate
//! bursts, deactivate stops (the motor topics get their stop commands, nothing is torn down) and
//! cleanup or shutdown releases.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;

use super::control::{Control, SaveReply};
use super::settings::{topic_spec, NodeSetup};
use super::topics::LiveTopics;
use super::{realtime, Drive, Summary};
use crate::backend::open::{open, Opened};
use crate::backend::{Backend, Readback};
use crate::checkpoint::{Checkpoint, CheckpointConfig};
use crate::genome::Genome;
use crate::model::Layout;
use crate::node::settings::RealtimeConfig;
use crate::ros::builtin::Empty;
use crate::ros::RosMessage;
use crate::transport::{Qos, Subscription, Transport};

pub struct Configured {
    genome: Genome,
    topics: LiveTopics,
    opened: Opened,
    checkpoint: CheckpointConfig,
    realtime: Option<RealtimeConfig>,
    view_stop: Arc<AtomicBool>,
    /// The checkpoint trigger topic's subscription.
    _trigger: Option<Subscription>,
    summary: Summary,
    /// The checkpoint being written, if one is.
    writer: Writer,
}

/// The checkpoint writer: one write at a time. A save asked while one is written waits (with
/// every reply asked meanwhile) until it is done: the requests are coalesced into the next write.
#[derive(Default)]
struct Writer(Option<std::thread::JoinHandle<()>>);

impl Writer {
    /// Whether a write is under way (one that ended is reaped).
    fn busy(&mut self) -> bool {
        if self.0.as_ref().is_some_and(|t| !t.is_finished()) {
            return true;
        }
        self.wait();
        false
    }

    /// Wait for the write under way, if any.
    fn wait(&mut self) {
        if let Some(t) = self.0.take() {
            let _ = t.join();
        }
    }
}

impl Configured {
    /// Configure: subscribe and announce the topics, build the brain on its backend, restore
    /// the checkpoint with `resume`. Nothing bursts yet.
    pub fn new(
        genome: Genome,
        config: NodeSetup<'_>,
        resume: bool,
        transport: &mut dyn Transport,
        control: &Arc<Control>,
        drive: Option<Drive>,
    ) -> anyhow::Result<Configured> {
        let nc = config.node;
        let layout = Layout::from_genome(&genome);
        let rate = if nc.rate_hz > 0.0 { nc.rate_hz } else { genome.burst_rate_hz };
        let fatal = Arc::new(super::fatal::Fatal::new(control.interrupt.clone()));
        let mut topics = LiveTopics::open(&config, &layout, transport, rate, "the node", fatal)?;
        topics.set_drive(drive);
        if let Some(view) = control.view.get() {
            topics.set_view(view);
        }
        let trigger = match config.checkpoint.trigger_topic.as_str() {
            "" => None,
            t => {
                let spec = topic_spec(t, nc, Empty::TYPE, Qos::COMMAND)?;
                let c = control.clone();
                let s = transport.subscribe(&spec, Arc::new(move |_| c.request_save(None)))?;
                tracing::info!("checkpoint trigger: {}", spec.name);
                Some(s)
            }
        };

        // The backend reads back the motor areas of the decoders only; with the live view, also
        // every area small enough to draw (at most view.max_points neurons).
        let mut motor_areas: Vec<usize> = topics.outputs.decoders.iter().map(|d| d.area).collect();
        if control.view.get().is_some() {
            motor_areas.extend((0..layout.meta.len()).filter(|&a| layout.params[a].count as usize <= config.view.max_points));
        }
        motor_areas.sort_unstable();
        motor_areas.dedup();
        let ranges: Vec<_> = motor_areas.iter().map(|&a| layout.params[a].first..layout.params[a].first + layout.params[a].count).collect();
        let read_back: Vec<bool> = (0..layout.meta.len()).map(|a| ranges.iter().any(|r| r.start == layout.params[a].first)).collect();
        let view_stop = Arc::new(AtomicBool::new(false));
        topics.set_feed(control.view.get().map(|v| crate::view::feed(v.clone(), read_back, view_stop.clone())).transpose()?);
        let mut opened = open(&genome, config.backend, Readback::Ranges(ranges), false).map_err(anyhow::Error::msg)?;
        topics.hardware = opened.backend.info().device;
        let checkpoint = &config.checkpoint.path;
        if resume {
            let c = Checkpoint::load(checkpoint, &genome)?;
            opened.backend.restore(&c.state).with_context(|| format!("{}: cannot restore the checkpoint", checkpoint.display()))?;
            tracing::info!("resumed from {} at burst {}", checkpoint.display(), c.state.burst);
            if c.state.learned.is_empty() && genome.mappings.iter().any(|m| m.plasticity.is_some()) {
                tracing::warn!(
                    "{}: the checkpoint holds no learned weights (written by an older neuroburst); the plastic synapses start \
                     from the genome's weights",
                    checkpoint.display()
                );
            }
        }
        tracing::info!("transport: {}", transport.describe());
        tracing::info!(
            "configured: {} neurons, {} synapses on {}, {} bursts per second",
            layout.neurons,
            opened.synapses,
            topics.hardware,
            topics.rate()
        );
        topics.count_missed(control.missed.clone());
        topics.take_updates(control.update.clone());
        let summary = Summary { hardware: topics.hardware.clone(), ..Summary::default() };
        Ok(Configured {
            genome,
            topics,
            opened,
            checkpoint: config.checkpoint.clone(),
            realtime: Some(config.node.realtime.clone()),
            view_stop,
            _trigger: trigger,
            summary,
            writer: Writer::default(),
        })
    }

    /// Activate: burst until `control.interrupt` is set (a signal, or a transition away from
    /// active), saving the checkpoints asked for and taking dynamic parameters at the next burst.
    pub fn activate(&mut self, control: &Control) -> anyhow::Result<()> {
        // the publisher thread first: it must not inherit the burst thread's core
        self.topics.start_publisher()?;
        if let Some(rt) = self.realtime.take() {
            realtime::apply_logged(&rt);
        }
        tracing::info!("active: bursting at {} Hz", self.topics.rate());
        let (genome, path, topics, writer) = (&self.genome, &self.checkpoint.path, &mut self.topics, &mut self.writer);
        let mut last = self.summary.bursts;
        let ran = crate::run::bursts(topics, self.opened.backend.as_mut(), &control.interrupt, |burst, backend| {
            last = burst;
            control.burst.store(burst, Ordering::Relaxed);
            switch_learning(control, backend)?;
            if !writer.busy() && control.save.swap(false, Ordering::Relaxed) {
                writer.0 = save(genome, backend, path, false, control.take_save_replies());
            }
            Ok(control.reset_trace.swap(false, Ordering::Relaxed))
        })?;
        self.summary.bursts = last;
        self.summary.phases = ran.phases;
        Ok(())
    }

    /// Between bursts (inactive): take the dynamic parameters and save the checkpoints asked for.
    pub fn idle(&mut self, control: &Control) {
        if let Some(u) = control.update.lock().unwrap_or_else(|p| p.into_inner()).take() {
            self.topics.apply(&u);
        }
        if let Err(e) = switch_learning(control, self.opened.backend.as_mut()) {
            tracing::error!("{e:#}");
        }
        if !self.writer.busy() && control.save.swap(false, Ordering::Relaxed) {
            self.writer.0 = save(&self.genome, self.opened.backend.as_mut(), &self.checkpoint.path, false, control.take_save_replies());
        }
    }

    /// Deactivate: the bursts have stopped; every motor topic gets its stop command.
    pub fn deactivate(&mut self) {
        self.topics.pause();
    }

    /// Release the brain (cleanup, shutdown, or the end of the bursts): the stop commands and the
    /// final status, the checkpoint when `checkpoint.on_shutdown`. What the node did.
    pub fn finish(mut self, fatal: Option<&str>, transport: &dyn Transport) -> Summary {
        self.view_stop.store(true, Ordering::Relaxed);
        let _ = crate::run::Io::finish(&mut self.topics, fatal);
        let mut summary = self.summary;
        summary.missed_deadlines = self.topics.pace.missed();
        (summary.dropped_messages, summary.malformed_messages) = self.topics.dropped();
        summary.link_losses = transport.link_losses();
        summary.latency = self.topics.publisher.report.latency.clone();
        self.writer.wait();
        if self.checkpoint.on_shutdown && fatal.is_none() {
            save(&self.genome, self.opened.backend.as_mut(), &self.checkpoint.path, true, vec![]);
        }
        tracing::info!(
            "stopped after {} bursts: {} missed deadlines, {} dropped messages ({} malformed), {} link losses",
            summary.bursts,
            summary.missed_deadlines,
            summary.dropped_messages,
            summary.malformed_messages,
            summary.link_losses.map_or("unknown".to_string(), |n| n.to_string())
        );
        summary
    }
}

/// Switch learning as asked (`backend.learning` set while the brain runs): from the learning of
/// the burst after the next on.
fn switch_learning(control: &Control, backend: &mut dyn Backend) -> anyhow::Result<()> {
    if let Some(on) = control.take_learning() {
        backend.set_learning(on).context("switching learning")?;
        tracing::info!("learning {}", if on { "on" } else { "off: the weights stay as they are" });
    }
    Ok(())
}

/// Snapshot the brain (on the burst thread: the state must be that of one burst) and write the
/// checkpoint, beside the bursts unless `wait` (the writer thread, returned); each of `replies`
/// hears where it went, or why not. Failures are logged, the node goes on.
fn save(
    genome: &Genome,
    backend: &mut dyn Backend,
    path: &std::path::Path,
    wait: bool,
    replies: Vec<SaveReply>,
) -> Option<std::thread::JoinHandle<()>> {
    let start = Instant::now();
    let answer = |replies: Vec<SaveReply>, r: Result<PathBuf, String>| replies.into_iter().for_each(|reply| reply(r.clone()));
    let state = match backend.snapshot() {
        Ok(s) => s,
        Err(e) => {
            let why = format!("checkpoint {}: {}", path.display(), crate::errors::chain(&e));
            tracing::error!("{why}");
            answer(replies, Err(why));
            return None;
        }
    };
    let (checkpoint, path) = (Checkpoint::new(genome, state), path.to_path_buf());
    let write = move || {
        let burst = checkpoint.state.burst;
        match checkpoint.save(&path) {
            Ok(()) => {
                tracing::info!(
                    "checkpoint of burst {burst} written to {} in {:.1} ms",
                    path.display(),
                    start.elapsed().as_secs_f64() * 1e3
                );
                answer(replies, Ok(path));
            }
            Err(e) => {
                let why = format!("checkpoint {}: {}", path.display(), crate::errors::chain(&e));
                tracing::error!("{why}");
                answer(replies, Err(why));
            }
        }
    };
    if wait {
        write();
        return None;
    }
    std::thread::Builder::new()
        .name("checkpoint".into())
        .spawn(write)
        .map_err(|e| tracing::error!("checkpoint: cannot start the writer thread: {e}"))
        .ok()
}
