//! `neuroburst bench-loop`: the closed loop over the wire (docs/realtime.md): a robot on Zenoh
//! loopback publishes a camera, an IMU and a laser scan and times a reflex through the live node
//! running W(N, K, rho) (or a genome) plus the bench's sensory areas.

use std::path::PathBuf;

use clap::Args;

use super::table;
use crate::bench::closed_loop::{robot::Rates, BrainSpec, LoopReport, Options};
use crate::genome::Genome;
use crate::run::pace::Mode;
use crate::run::trace::Percentiles;
use crate::workload::{Learning, Workload};

#[derive(Args, Debug)]
pub struct BenchLoopArgs {
    /// Neurons N of W(N, K, rho) beside the sensory areas (0: none).
    #[arg(long, default_value_t = 100_000)]
    pub neurons: u32,
    /// Synapses per neuron K.
    #[arg(long, default_value_t = 100)]
    pub fanout: u32,
    /// Fraction of W's neurons injected per burst, rho.
    #[arg(long, default_value_t = 0.01)]
    pub rho: f64,
    /// A genome instead of W (its areas beside the bench's).
    #[arg(long, value_name = "FILE", conflicts_with = "neurons")]
    pub genome: Option<PathBuf>,
    /// Every synapse of W plastic, with this window in bursts (FEAGI's rule, Δ+ = Δ- = 1).
    #[arg(long, value_name = "W", conflicts_with = "genome")]
    pub plastic: Option<u32>,
    /// Bursts per second (overrides node.rate_hz; default 1000).
    #[arg(long)]
    pub rate: Option<f64>,
    /// clock | reflex (overrides node.mode).
    #[arg(long, value_enum)]
    pub mode: Option<Mode>,
    /// Seconds counted, after the warm-up.
    #[arg(long, default_value_t = 10.0)]
    pub duration: f64,
    /// Seconds of warm-up once the first Twist arrived, not counted.
    #[arg(long, default_value_t = 2.0)]
    pub warmup: f64,
    /// Camera frames (640x480 rgb8), scans and IMU messages per second.
    #[arg(long, default_value_t = 30.0)]
    pub image_hz: f64,
    #[arg(long, default_value_t = 40.0)]
    pub scan_hz: f64,
    #[arg(long, default_value_t = 200.0)]
    pub imu_hz: f64,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub runtime: super::RuntimeArgs,
}

fn us(v: f64) -> String {
    if v >= 1000.0 {
        format!("{:.2} ms", v * 1e-3)
    } else {
        format!("{v:.0} us")
    }
}

fn row(name: &str, p: &Percentiles) -> Vec<String> {
    vec![name.to_string(), us(p.p50_us), us(p.p99_us), us(p.max_us), us(p.mean_us)]
}

fn print(r: &LoopReport) {
    println!(
        "# bench-loop: {} ({} neurons) on {}, {} mode at {} Hz, {} s counted",
        r.brain, r.neurons, r.hardware, r.mode, r.rate_hz, r.duration_s
    );
    println!(
        "# robot: camera 640x480 at {} Hz, scan at {} Hz, imu at {} Hz over Zenoh loopback (rmw format); drive: {}",
        r.sensors.image_hz, r.sensors.scan_hz, r.sensors.imu_hz, r.drive
    );
    let mut rows = vec![vec!["".into(), "p50".into(), "p99".into(), "max".into(), "mean".into()]];
    rows.push(row(&format!("sensor -> motor ({} trials)", r.trials), &r.latency));
    rows.push(row("  in the node (arrival -> publication)", &r.node_latency));
    rows.push(row("burst work (intake .. handoff)", &r.phases.burst_work));
    for (name, p) in &r.phases.phases {
        rows.push(row(&format!("  {name}"), p));
    }
    print!("{}", table::render(&rows));
    let b = &r.answer_bursts;
    println!("the answer in bursts (Twists from the stimulus to the answer): p50 {}, p99 {}, max {}", b.p50, b.p99, b.max);
    if let Some(x) = &r.reflex {
        let news = if x.on_change { " (news only: on_change)" } else { "" };
        println!("reflex: {} bursts, lead {}, triggered by {}{news}", x.bursts, x.lead, x.triggers.join(", "));
    }
    println!(
        "bursts {}, missed deadlines {}, dropped messages {}, trials without an answer {}",
        r.bursts, r.missed_deadlines, r.dropped_messages, r.lost
    );
}

pub fn main(a: BenchLoopArgs) -> anyhow::Result<()> {
    let mut config = a.runtime.config()?;
    config.log.progress = false;
    super::init(&config);
    config.node.rate_hz = a.rate.unwrap_or(if config.node.rate_hz > 0.0 { config.node.rate_hz } else { 1000.0 });
    if let Some(m) = a.mode {
        config.node.mode = m;
    }
    for (name, v) in
        [("--duration", a.duration), ("--warmup", a.warmup), ("--image-hz", a.image_hz), ("--scan-hz", a.scan_hz), ("--imu-hz", a.imu_hz)]
    {
        let ok =
            if name.ends_with("hz") { crate::time::rate_ok(v) } else { v.is_finite() && (0.0..=crate::time::MAX_SECONDS).contains(&v) };
        if !ok {
            anyhow::bail!("{name} {v}: not a usable value");
        }
    }
    crate::time::check_rate(config.node.rate_hz, "--rate").map_err(anyhow::Error::msg)?;
    let brain = match &a.genome {
        Some(path) => BrainSpec::Genome(Genome::load(path)?),
        None => {
            let w = Workload { neurons: a.neurons, fanout: a.fanout, rate: a.rho, seed: 1 };
            w.check().map_err(|e| anyhow::anyhow!("--neurons {} --fanout {} --rho {}: {e}", a.neurons, a.fanout, a.rho))?;
            BrainSpec::Workload(w, Learning { window: a.plastic, associative: 0 })
        }
    };
    let opts = Options {
        brain,
        duration: crate::time::seconds(a.duration),
        warmup: crate::time::seconds(a.warmup),
        rates: Rates { image_hz: a.image_hz, scan_hz: a.scan_hz, imu_hz: a.imu_hz },
    };
    let report = crate::bench::closed_loop::run(config.node, config.backend, opts)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print(&report);
    }
    Ok(())
}
