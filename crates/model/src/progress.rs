//! Progress of long work (a connectome's build, a replay): a bar on a terminal, a log line every
//! few seconds when stderr is not one (a CI log, `ros2 launch`, a file), nothing for work that
//! ends within a second.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Work shorter than this shows nothing.
const QUIET: Duration = Duration::from_secs(1);
/// Seconds between two progress lines when stderr is not a terminal.
const LINE_EVERY: Duration = Duration::from_secs(5);

/// Progress of `total` steps; share it between threads (`inc` takes `&self`).
pub struct Progress {
    what: &'static str,
    unit: &'static str,
    total: u64,
    done: AtomicU64,
    start: Instant,
    /// A bar on a terminal; None: lines (or nothing when disabled).
    bar: Option<ProgressBar>,
    enabled: bool,
    shown: AtomicBool,
    last_line: Mutex<Instant>,
    message: Mutex<String>,
}

impl Progress {
    /// `what` is done in `total` `unit`s; `enabled`: `log.progress`.
    pub fn new(what: &'static str, unit: &'static str, total: u64, enabled: bool) -> Progress {
        let bar = (enabled && std::io::stderr().is_terminal()).then(|| {
            let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::hidden());
            let template = format!("{what} {{bar:40}} {{pos}}/{{len}} {unit} {{elapsed}} {{msg}}");
            bar.set_style(ProgressStyle::with_template(&template).unwrap_or_else(|_| ProgressStyle::default_bar()));
            bar
        });
        let start = Instant::now();
        Progress {
            what,
            unit,
            total,
            done: AtomicU64::new(0),
            start,
            bar,
            enabled,
            shown: AtomicBool::new(false),
            last_line: Mutex::new(start),
            message: Mutex::new(String::new()),
        }
    }

    /// `n` more steps done.
    pub fn inc(&self, n: u64) {
        let done = self.done.fetch_add(n, Ordering::Relaxed) + n;
        if !self.enabled || self.start.elapsed() < QUIET {
            return;
        }
        match &self.bar {
            Some(bar) => {
                if !self.shown.swap(true, Ordering::Relaxed) {
                    bar.set_draw_target(ProgressDrawTarget::stderr());
                }
                bar.set_position(done);
            }
            None => {
                let Ok(mut last) = self.last_line.try_lock() else { return };
                let now = Instant::now();
                if now - *last >= LINE_EVERY || (!self.shown.swap(true, Ordering::Relaxed)) {
                    *last = now;
                    let msg = self.message.lock().map(|m| m.clone()).unwrap_or_default();
                    let pct = if self.total > 0 { done as f64 * 100.0 / self.total as f64 } else { 0.0 };
                    tracing::info!(
                        "{}: {done}/{} {} ({pct:.0}%), {:.0} s{}{msg}",
                        self.what,
                        self.total,
                        self.unit,
                        self.start.elapsed().as_secs_f64(),
                        if msg.is_empty() { "" } else { ", " }
                    );
                }
            }
        }
    }

    /// A note shown beside the count (e.g. the bag time reached).
    pub fn message(&self, msg: String) {
        if let Some(bar) = &self.bar {
            bar.set_message(msg);
        } else if let Ok(mut m) = self.message.lock() {
            *m = msg;
        }
    }

    /// The work ended: clear the bar.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
