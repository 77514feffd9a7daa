//! `neuroburst bench`'s measurement: burst latency of the standard workload W(N, K, rho)
//! (docs/performance.md), from the host holding the burst's injection to the host holding that
//! burst's motor output, after warm-up.

use std::time::Instant;

use crate::backend::Backend;
use crate::model::Injections;
use crate::run::Pace;
use crate::view::Feed;
use crate::workload::{Learning, Workload};

/// How many bursts, and how fast.
#[derive(Clone, Copy, Debug)]
pub struct Timing {
    /// Bursts not measured, first.
    pub warmup: u64,
    /// Measured bursts.
    pub bursts: u64,
    /// Bursts per second, as a node runs them (0: back to back).
    pub hz: f64,
}

/// What the measured bursts gave.
#[derive(Default)]
pub struct Measured {
    /// Each measured burst's latency (us), in burst order.
    pub lat_us: Vec<f64>,
    pub fired: u64,
    pub motor: u64,
    pub injected: u64,
    /// Wall seconds of the measured bursts, the host's work between them included.
    pub wall_s: f64,
    /// Each measured burst's device time (us), where the backend times it.
    pub dev_us: Vec<f64>,
    /// Paced (`hz` > 0): the latencies (us) of a stretch of bursts run back to back after the
    /// paced ones ([`PERIOD_BURSTS`] at most), each a burst period (the work run ahead included).
    pub period_us: Vec<f64>,
}

/// Bursts a paced run adds back to back, to measure the period beside the latency.
pub const PERIOD_BURSTS: u64 = 500;

/// Run the warm-up and the measured bursts.
///
/// The loop runs on a worker of rayon's pool, the pool that computes each burst's injection: the
/// timed thread takes its share of that work and stays awake, as the node's burst thread does
/// (its clock spins through the last 200 us before a burst). Called from outside the pool, the
/// loop slept on a latch while the workers computed, and each burst started on a core that had
/// just been idle. Measured on H100 VMs in the same device calls: W(1M) p99 54-55 us that way
/// against 37-44 us on a worker, W(5M) p99 134-139 against 105-114 us, W(100k) p50 16.8-19.0
/// against 13.9-16.0 us in one call (equal in another); with one worker thread, the old loop's
/// W(1M) p50 was 50 us instead of 32.
pub fn measure(a: &Timing, w: &Workload, learning: &Learning, backend: &mut dyn Backend, view: Option<&Feed>) -> anyhow::Result<Measured> {
    // the drive, made before the start (as bench-loop's): the bursts a second are the engine's
    let pool = w.drive_pool(learning, a.warmup + a.bursts);
    let mut run = move || -> anyhow::Result<Measured> {
        let mut injection = Injections::new();
        backend.prepare_input(&mut injection);
        let mut m = Measured { lat_us: Vec::with_capacity(a.bursts as usize), ..Default::default() };
        // paced (--hz): the node's pacer (sleep, then spin through the last 200 us)
        let mut pace = Pace::rate(a.hz);
        let never = std::sync::atomic::AtomicBool::new(false);
        let mut measured_from = Instant::now();
        // paced (--hz), the period too: after the paced bursts, a stretch of the same drive back
        // to back (its first burst still finds the work ahead done, so it is left out)
        let paced_end = a.warmup + a.bursts;
        let end = if a.hz > 0.0 { paced_end + 1 + a.bursts.min(PERIOD_BURSTS) } else { paced_end };
        for t in 1..=end {
            let paced = t <= paced_end;
            if t == a.warmup + 1 {
                measured_from = Instant::now();
            }
            // the burst's period starts: its sensor input arrives now
            if paced {
                pace.wait(t, &never);
            }
            injection.clear();
            injection.extend_from(Workload::drive_at(&pool, t).as_slice());
            let start = Instant::now();
            let out = backend.burst(injection.as_slice())?;
            let us = start.elapsed().as_secs_f64() * 1e6;
            std::hint::black_box(out.fired.last());
            if !paced {
                if t > paced_end + 1 {
                    m.period_us.push(us);
                }
                continue;
            }
            // as the node's burst thread does: a frame copied only when the view asks for one
            if let Some(feed) = view.filter(|f| f.wanted()) {
                feed.offer(t * 1_000_000, out.fired);
            }
            if t > a.warmup {
                m.lat_us.push(us);
                m.fired += out.fired_total;
                m.motor += out.fired.len() as u64;
                m.injected += injection.len() as u64;
                m.dev_us.extend(backend.device_us());
            }
            pace.finished(Instant::now());
            if t == paced_end {
                m.wall_s = measured_from.elapsed().as_secs_f64();
            }
        }
        Ok(m)
    };
    // a worker of the global pool runs the loop (the backend moves with it: `Backend: Send`)
    let mut result = None;
    let slot = &mut result;
    rayon::scope(move |s| s.spawn(move |_| *slot = Some(run())));
    result.unwrap_or_else(|| Err(anyhow::anyhow!("the benchmark loop did not run")))
}
