//! `neuroburst bench`: burst latency of the standard workload W(N, K, rho)
//! (docs/performance.md): from the host holding the burst's injection to the host holding that
//! burst's motor output, after warm-up; median and p99.

use clap::Args;
use serde_json::json;

use super::table;
use crate::backend::open::open;
use crate::backend::Readback;
use crate::bench::burst::{measure, Measured, Timing};
use crate::bench::percentile;
use crate::genome::Genome;
use crate::model::Layout;
use crate::view::View;
use crate::workload::{Learning, Workload};

#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Neurons N.
    #[arg(long, default_value_t = 100_000)]
    pub neurons: u32,
    /// Synapses per neuron K.
    #[arg(long, default_value_t = 100)]
    pub fanout: u32,
    /// Fraction of neurons injected (and firing) per burst, rho.
    #[arg(long, default_value_t = 0.01)]
    pub rate: f64,
    /// Measured bursts (after warm-up).
    #[arg(long, default_value_t = 1000)]
    pub bursts: u64,
    /// Warm-up bursts, not measured.
    #[arg(long, default_value_t = 100)]
    pub warmup: u64,
    /// Bursts per second, as a node runs them (0: back to back). Back to back, the GPU's work
    /// that runs ahead of a burst (the propagation, the early step) may still be under way when
    /// the next injection arrives; at a burst rate it is done by then.
    #[arg(long, default_value_t = 0.0)]
    pub hz: f64,
    /// Seed of the connectome.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Serve the live view to Foxglove on HOST:PORT while measuring (default 127.0.0.1:8765); the
    /// bench waits for a client first, to measure the bursts with the view watched.
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = "")]
    pub view: Option<String>,
    /// Every synapse plastic, with this window in bursts (FEAGI's rule, Δ+ = Δ- = 1).
    #[arg(long, value_name = "WINDOW")]
    pub plastic: Option<u32>,
    /// Add two areas of this many neurons, the first associative onto the second, injected like
    /// the workload: reports the synapses grown per second.
    #[arg(long, value_name = "NEURONS", default_value_t = 0)]
    pub associative: u32,
    /// Store no synapse: draw each fired neuron's again (`backend.connectome: procedural`).
    #[arg(long)]
    pub procedural: bool,
    /// Keep each of the K draws with this chance, in percent (the mapping's attractivity): the
    /// rows are then no closed form, so a GPU's are drawn on the host and streamed to it
    #[arg(long, value_name = "PERCENT", default_value_t = 100.0, value_parser = percent)]
    pub attractivity: f64,
    /// Divide the psp by each row's synapse count (the area's `psp_uniform_distribution` off, as
    /// in many FEAGI genomes), with the psp raised to K x attractivity to keep the input: with an
    /// attractivity below 100 the rows' lengths vary, so a GPU draws them again row by row
    /// (`kernels/rows.cu`), not in closed form.
    #[arg(long)]
    pub divide_psp: bool,
    /// Also write every measured burst's latency (us, in burst order, one per line) to this file.
    #[arg(long, value_name = "FILE")]
    pub latencies: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub runtime: super::RuntimeArgs,
}

pub fn main(a: BenchArgs) -> anyhow::Result<()> {
    let w = Workload { neurons: a.neurons, fanout: a.fanout, rate: a.rate, seed: a.seed };
    w.check().map_err(|e| anyhow::anyhow!("--neurons {} --fanout {} --rate {}: {e}", a.neurons, a.fanout, a.rate))?;
    anyhow::ensure!(a.bursts >= 1, "--bursts must be at least 1");
    if a.hz != 0.0 {
        crate::time::check_rate(a.hz, "--hz (0: back to back)").map_err(anyhow::Error::msg)?;
    }
    let mut config = a.runtime.config()?;
    if let Some(addr) = &a.view {
        crate::view::parse_addr(addr)?;
    }
    if a.json {
        config.log.progress = false;
    }
    if a.procedural {
        config.backend.connectome = crate::connectome::storage::Storage::Procedural;
    }
    super::init(&config);
    let learning = Learning { window: a.plastic, associative: a.associative };
    let mut genome: Genome = w.learning_genome(&learning);
    genome.mappings.iter_mut().for_each(|m| m.attractivity = a.attractivity);
    if a.divide_psp {
        let psp = a.fanout as f64 * a.attractivity / 100.0;
        anyhow::ensure!(psp <= 255.0, "--divide-psp: K x attractivity ({psp}) must be 255 at most (a psp)");
        genome.areas.iter_mut().for_each(|x| (x.psp, x.psp_uniform_distribution) = (psp, false));
    }
    let mut opened = open(&genome, &config.backend, Readback::Ranges(vec![w.motor()]), config.log.progress).map_err(anyhow::Error::msg)?;
    let backend = opened.backend.as_mut();
    backend.time_device();

    let stop_view = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let feed = match &a.view {
        Some(addr) => {
            let view = std::sync::Arc::new(View::start(addr, &genome, &config.view)?);
            view.wait_for_client(&stop_view);
            let motor = w.motor();
            let read_back = Layout::from_genome(&genome).params.iter().map(|p| p.first == motor.start).collect();
            Some(crate::view::feed(view, read_back, stop_view.clone())?)
        }
        None => None,
    };
    let measured = measure(&Timing { warmup: a.warmup, bursts: a.bursts, hz: a.hz }, &w, &learning, backend, feed.as_ref());
    stop_view.store(true, std::sync::atomic::Ordering::Relaxed);
    let Measured { mut lat_us, fired, motor, injected, wall_s, mut dev_us, mut period_us } = measured?;
    dev_us.sort_by(f64::total_cmp);
    // the device's own time of a burst (its propagation included), where the backend times it
    let device = (!dev_us.is_empty()).then(|| (percentile(&dev_us, 0.5), percentile(&dev_us, 0.99)));
    // bursts a second sustained: the GPU's work run ahead of a burst (the propagation) counts here;
    // the drive was made before the start (each burst copies its injection in)
    let rate_hz = a.bursts as f64 / wall_s.max(1e-9);
    if let Some(path) = &a.latencies {
        let text: String = lat_us.iter().map(|l| format!("{l:.3}\n")).collect();
        std::fs::write(path, text).map_err(|e| anyhow::anyhow!("--latencies {}: {e}", path.display()))?;
    }
    let total_s: f64 = lat_us.iter().sum::<f64>() / 1e6;
    lat_us.sort_by(f64::total_cmp);
    let info = backend.info();
    let p50 = percentile(&lat_us, 0.5);
    let p99 = percentile(&lat_us, 0.99);
    let bursts = a.bursts as f64;
    let host_peak = crate::memory::peak_rss();
    // every neuron has K synapses (K x attractivity on average), so each spike is that many events
    let events_per_s = fired as f64 * a.fanout as f64 * a.attractivity / 100.0 / total_s;
    // the period (back to back: the bursts measured; paced: the stretch run back to back after
    // them) and, paced, the latency a robot sees: p50, p99 and the events a second at each p50
    let events_per_burst = fired as f64 * a.fanout as f64 * a.attractivity / 100.0 / bursts;
    period_us.sort_by(f64::total_cmp);
    let period = if a.hz > 0.0 { &period_us } else { &lat_us };
    let at = |v: &Vec<f64>| (!v.is_empty()).then(|| (percentile(v, 0.5), percentile(v, 0.99)));
    let (period, latency) = (at(period), if a.hz > 0.0 { at(&lat_us) } else { None });
    let per_s = |p: Option<(f64, f64)>| p.map(|(p50, _)| events_per_burst / (p50 * 1e-6));
    // what the brain learned: plastic synapses, and the associative pairs grown while measured
    let learned = if a.plastic.is_some() || a.associative > 0 { Some(backend.snapshot()?.learned) } else { None };
    let grown = learned.as_ref().map_or(0, |l| l.grown.len());
    let grown_per_s = grown as f64 / total_s;
    let obj = json!({
        "backend": info.backend,
        "device": info.device,
        "neurons": a.neurons,
        "fanout": a.fanout,
        "rate": a.rate,
        "synapses": opened.synapses,
        "procedural_synapses": opened.drawn,
        "attractivity": a.attractivity,
        "divide_psp": a.divide_psp,
        "host_peak_bytes": host_peak,
        "bytes_per_neuron": info.memory_bytes as f64 / a.neurons as f64,
        "bursts": a.bursts,
        "warmup": a.warmup,
        "hz": a.hz,
        "p50_us": p50,
        "p99_us": p99,
        "device_p50_us": device.map(|d| d.0),
        "device_p99_us": device.map(|d| d.1),
        "mean_us": total_s * 1e6 / bursts,
        "bursts_per_s": rate_hz,
        "min_us": lat_us.first().copied().unwrap_or(0.0),
        "max_us": lat_us.last().copied().unwrap_or(0.0),
        "fired_per_burst": fired as f64 / bursts,
        "motor_fired_per_burst": motor as f64 / bursts,
        "injected_per_burst": injected as f64 / bursts,
        "events_per_s": events_per_s,
        "bytes_per_synapse": info.bytes_per_synapse,
        "memory_bytes": info.memory_bytes,
        "build_s": opened.build_seconds,
        "threads": rayon::current_num_threads(),
        "view": a.view.is_some(),
        "plastic_window": a.plastic,
        "plastic_synapses": learned.as_ref().map_or(0, |l| l.synapses.len()),
        "associative_neurons": a.associative,
        "grown": grown,
        "grown_per_s": grown_per_s,
    });
    let mut obj = obj;
    for (k, v) in [
        ("period_p50_us", period.map(|p| p.0)),
        ("period_p99_us", period.map(|p| p.1)),
        ("events_per_s_period", per_s(period)),
        ("latency_p50_us", latency.map(|p| p.0)),
        ("latency_p99_us", latency.map(|p| p.1)),
        ("events_per_s_latency", per_s(latency)),
    ] {
        obj[k] = json!(v);
    }
    if a.json {
        println!("{obj}");
        return Ok(());
    }
    let pace = if a.hz > 0.0 { format!("at {} Hz", a.hz) } else { "back to back".into() };
    println!(
        "W(N={}, K={}, rho={}) on {} ({}), {} bursts {pace} after {} warm-up",
        a.neurons, a.fanout, a.rate, info.backend, info.device, a.bursts, a.warmup
    );
    let mut rows = vec![
        vec!["metric".to_string(), "value".to_string()],
        vec!["burst latency p50".into(), format!("{p50:.1} us")],
        vec!["burst latency p99".into(), format!("{p99:.1} us")],
        vec!["burst latency mean".into(), format!("{:.1} us", total_s * 1e6 / bursts)],
    ];
    if let (Some((p50, p99)), true) = (period, a.hz > 0.0) {
        rows.push(vec!["burst period p50 / p99".into(), format!("{p50:.1} / {p99:.1} us (then, back to back)")]);
    }
    if let Some(e) = per_s(period) {
        rows.push(vec!["synaptic events/s at the period".into(), format!("{e:.3e}")]);
    }
    if let Some(e) = per_s(latency) {
        rows.push(vec!["synaptic events/s at the latency".into(), format!("{e:.3e}")]);
    }
    if let Some((d50, d99)) = device {
        rows.push(vec!["device time p50".into(), format!("{d50:.1} us (the propagation run ahead included)")]);
        rows.push(vec!["device time p99".into(), format!("{d99:.1} us")]);
    }
    rows.extend([
        vec!["bursts per second".into(), format!("{rate_hz:.1} (the work run ahead and the host's input included)")],
        vec!["fired per burst".into(), format!("{:.1}", fired as f64 / bursts)],
        vec!["synaptic events/s".into(), format!("{events_per_s:.3e}")],
        vec!["synapses stored".into(), opened.synapses.to_string()],
        vec!["synapses drawn again".into(), opened.drawn.to_string()],
        vec!["bytes per stored synapse".into(), format!("{:.2}", info.bytes_per_synapse)],
        vec!["bytes per neuron".into(), format!("{:.1}", info.memory_bytes as f64 / a.neurons as f64)],
        vec!["memory".into(), table::bytes(info.memory_bytes)],
        vec!["connectome build".into(), format!("{:.2} s", opened.build_seconds)],
        vec!["host peak memory".into(), host_peak.map_or("unknown".into(), table::bytes)],
    ]);
    if let Some(l) = &learned {
        rows.push(vec!["plastic synapses".into(), l.synapses.len().to_string()]);
        rows.push(vec!["associative pairs grown".into(), format!("{grown} ({grown_per_s:.3e} per s of bursts)")]);
    }
    print!("{}", table::render(&rows));
    println!("{obj}");
    Ok(())
}

/// A percentage in 0..=100.
fn percent(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(p) if (0.0..=100.0).contains(&p) => Ok(p),
        Ok(p) => Err(format!("{p} is not within 0..=100")),
        Err(e) => Err(format!("{s:?} is not a number: {e}")),
    }
}
