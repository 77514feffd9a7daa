//! The node's burst thread as a lifecycle: it takes the transitions the lifecycle's services ask
//! for (`node.lifecycle: true`), or configures and activates itself at the start (the default),
//! and bursts while active.
//!
//! - configure: the genome loaded, the brain built on its backend (the kernels compiled), the
//!   topics subscribed and announced; a failure (a bad genome, no memory) is logged with its
//!   reason, answered as failed, and leaves the node unconfigured;
//! - activate: bursting; deactivate: no bursts, the motor topics get their stop command;
//! - cleanup: the brain released (unconfigured again); shutdown: released, and the node ends.

use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::Duration;

use anyhow::anyhow;

use super::lifecycle::{LifecycleState, Transition};
use super::services::{Shared, TransitionRequest};
use super::{Configured, Summary};
use crate::genome::Genome;
use crate::transport::Transport;

/// Run the node's lifecycle until it is shut down or `control.stop` is set. Without `managed`,
/// configure and activate come first, and a configure that fails ends the node with its error.
pub fn run(
    shared: Arc<Shared>,
    transport: &mut dyn Transport,
    commands: Receiver<TransitionRequest>,
    managed: bool,
) -> anyhow::Result<Summary> {
    let control = shared.control.clone();
    let mut node = Node { shared: shared.clone(), brain: None, summary: Summary::default() };
    if !managed {
        for t in [Transition::Configure, Transition::Activate] {
            shared.begin(t.id(), "", Box::new(|_| {})).map_err(|e| anyhow!(e))?;
            let cmd = commands.recv().map_err(|_| anyhow!("the node stopped"))?;
            let done = node.take(cmd.transition, transport);
            shared.end(cmd.transition, done.is_ok());
            done?;
        }
    }
    let result = loop {
        if control.stop.load(Ordering::Relaxed) {
            break Ok(());
        }
        if shared.state() == LifecycleState::Active {
            if let Some(brain) = node.brain.as_mut() {
                if let Err(e) = burst(brain, &control) {
                    if !managed {
                        break Err(e);
                    }
                    // a managed node goes through ErrorProcessing and waits, unconfigured
                    let cause = crate::errors::said_once(&e);
                    let state = shared.error_processing(&cause, || {
                        node.release(Some(&cause), transport);
                        true
                    });
                    if state == LifecycleState::Finalized {
                        break Ok(());
                    }
                }
            }
            if !control.stop.load(Ordering::Relaxed) {
                control.interrupt.store(false, Ordering::Relaxed);
            }
            // the transition that interrupted the bursts is waiting
        }
        match commands.recv_timeout(Duration::from_millis(20)) {
            Ok(cmd) => {
                let t = cmd.transition;
                let ok = match node.take(t, transport) {
                    Ok(()) => true,
                    Err(e) => {
                        tracing::error!("lifecycle: {} failed: {}", t.label(), crate::errors::said_once(&e));
                        false
                    }
                };
                let state = shared.end(t, ok);
                (cmd.reply)(ok);
                if state == LifecycleState::Finalized {
                    break Ok(());
                }
            }
            Err(RecvTimeoutError::Timeout) => match node.brain.as_mut() {
                Some(brain) => brain.idle(&control),
                None => node.refuse_saves(),
            },
            Err(RecvTimeoutError::Disconnected) => break Ok(()),
        }
    };
    let fatal = result.as_ref().err().map(crate::errors::said_once);
    node.release(fatal.as_deref(), transport);
    result.map(|()| node.summary)
}

/// Burst until interrupted; a panic on the way is an error like any other (the brain is then
/// released: its stop commands are sent), never a burst thread that dies silently.
fn burst(brain: &mut Configured, control: &super::Control) -> anyhow::Result<()> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| brain.activate(control))) {
        Ok(r) => r,
        Err(panic) => Err(anyhow!("the burst thread panicked: {}", super::fatal::panic_message(panic.as_ref()))),
    }
}

struct Node {
    shared: Arc<Shared>,
    brain: Option<Configured>,
    summary: Summary,
}

impl Node {
    /// The burst thread's work for transition `t`.
    fn take(&mut self, t: Transition, transport: &mut dyn Transport) -> anyhow::Result<()> {
        match t {
            Transition::Configure => {
                let (sections, genome, resume) = {
                    let p = self.shared.params.lock().unwrap_or_else(|p| p.into_inner());
                    (p.sections(), p.genome(), p.resume())
                };
                let path = genome.ok_or_else(|| anyhow!("no genome: set the parameter `genome` (or pass --genome FILE)"))?;
                let genome = Genome::load(&path)?;
                let control = &self.shared.control;
                self.brain = Some(Configured::new(genome, sections.setup(), resume, transport, control, None)?);
            }
            Transition::Activate => {}
            Transition::Deactivate => {
                if let Some(b) = self.brain.as_mut() {
                    b.deactivate();
                }
            }
            Transition::Cleanup | Transition::UnconfiguredShutdown | Transition::InactiveShutdown | Transition::ActiveShutdown => {
                self.release(None, transport)
            }
        }
        Ok(())
    }

    /// Release the brain, if one is built: its stop commands, its checkpoint.
    fn release(&mut self, fatal: Option<&str>, transport: &mut dyn Transport) {
        if let Some(b) = self.brain.take() {
            self.summary = b.finish(fatal, transport);
        }
        self.refuse_saves();
    }

    /// No brain: a checkpoint asked for cannot be written.
    fn refuse_saves(&self) {
        let control = &self.shared.control;
        if control.save.swap(false, Ordering::Relaxed) {
            let state = self.shared.state().label();
            for reply in control.take_save_replies() {
                reply(Err(format!("no brain to save: the node is {state}")));
            }
        }
    }
}
