//! Requests from outside the burst thread (signals, services, trigger topics, tests): stop,
//! interrupt, checkpoints, settings for the next burst, learning on or off.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::decode::DecoderConfig;

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
    pub(super) fn take_learning(&self) -> Option<bool> {
        match self.learning.swap(0, Ordering::Relaxed) {
            0 => None,
            v => Some(v == 2),
        }
    }

    pub(super) fn take_save_replies(&self) -> Vec<SaveReply> {
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
